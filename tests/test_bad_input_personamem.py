"""PersonaMem rows that cannot be placed are named, never dropped: out-of-range or non-integer
end indexes and repeated question ids, on small hand-written files in PersonaMem's format."""

from __future__ import annotations

import csv
import hashlib
import json

import pytest

from memlab.bench.suites.personamem import PersonaMemSuite
from memlab.errors import ConfigError

CONTEXT = [{"role": "system", "content": "Current user persona: Name: Kai"},
           {"role": "user", "content": "User: I love rock climbing."},
           {"role": "assistant", "content": "Assistant: Nice!"},
           {"role": "user", "content": "User: Lately I dislike climbing."},
           {"role": "assistant", "content": "Assistant: Noted."}]
OPTIONS = repr(["(a) You love climbing.", "(b) You've gone off it.", "(c) You never climb.",
                "(d) You paint walls."])


def row(i: int, end_index: str) -> dict[str, str]:
    return {"persona_id": "1", "question_id": f"q{i}", "question_type": "recall_user_shared_facts",
            "topic": "hobbies", "user_question_or_message": f"Question {i}?",
            "correct_answer": "(a)", "all_options": OPTIONS, "shared_context_id": "abc",
            "end_index_in_shared_context": end_index}


def write(folder, rows):
    contexts = folder / "shared_contexts_32k.jsonl"
    contexts.write_text(json.dumps({"abc": CONTEXT}) + "\n")
    questions = folder / "questions_32k.csv"
    with questions.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return questions, contexts


def digests(*paths):
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def nine_rows():
    return [row(i, str(1 + i % 5)) for i in range(9)]  # end indexes 1..5, all inside


def test_nine_valid_rows_load_as_nine_questions(tmp_path):
    suite = PersonaMemSuite(*write(tmp_path, nine_rows()))
    assert len([e for e in suite.events() if e.kind == "question"]) == 9
    assert suite.describe()["questions"] == 9


BAD = {
    "end_index_past_the_context": ("end_index_in_shared_context", "6",
                                   "row 6: field 'end_index_in_shared_context' 6 is outside"),
    "end_index_far_out": ("end_index_in_shared_context", "9999", "9999 is outside"),
    "end_index_negative": ("end_index_in_shared_context", "-1", "-1 is outside"),
    "end_index_not_integer": ("end_index_in_shared_context", "3.5",
                              "row 6: field 'end_index_in_shared_context' '3.5' is not an integer"),
    "end_index_empty": ("end_index_in_shared_context", "",
                        "row 6: field 'end_index_in_shared_context' is missing or empty"),
    "duplicate_question_id": ("question_id", "q1",
                              "row 6: field 'question_id' 'q1' repeats row 3"),
    "question_id_empty": ("question_id", "", "row 6: field 'question_id' is missing or empty"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_row_is_named_not_dropped_and_no_file_changes(tmp_path, case):
    field, value, message = BAD[case]
    rows = nine_rows()
    rows[4][field] = value  # the fifth data row is row 6 of the file (the header is row 1)
    questions, contexts = write(tmp_path, rows)
    before = digests(questions, contexts)
    with pytest.raises(ConfigError) as info:
        PersonaMemSuite(questions, contexts)
    assert str(questions) in str(info.value) and message in str(info.value)
    assert digests(questions, contexts) == before


def test_a_context_that_is_not_json_is_named(tmp_path):
    questions, contexts = write(tmp_path, nine_rows())
    contexts.write_text('{"abc": [{"role": "user", "content": "torn\n')
    before = digests(questions, contexts)
    with pytest.raises(ConfigError,
                       match=r"line 1 \(shared context 'abc'\): not valid JSON") as info:
        PersonaMemSuite(questions, contexts)
    assert str(contexts) in str(info.value) and digests(questions, contexts) == before


@pytest.mark.parametrize("which", ["questions", "contexts"])
def test_a_file_that_is_not_utf8_is_named_with_the_offset(tmp_path, which):
    questions, contexts = write(tmp_path, nine_rows())
    target = questions if which == "questions" else contexts
    data = target.read_bytes()
    target.write_bytes(data[:40] + b"\xe9t\xe9" + data[40:])  # latin-1 accents
    before = digests(questions, contexts)
    with pytest.raises(ConfigError) as info:
        PersonaMemSuite(questions, contexts)
    assert f"'{target}': not UTF-8 text (byte 0xe9 at offset" in str(info.value)
    assert "save it as UTF-8" in str(info.value) and digests(questions, contexts) == before
