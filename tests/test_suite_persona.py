"""The Persona suite: generated history, the 7 question types, PersonaMem format round trip."""

import csv
import json

import pytest

from memlab.bench.base import Response
from memlab.bench.suites.persona import QUESTION_TYPES, PersonaSuite
from memlab.bench.suites.personamem import PersonaMemSuite, write_personamem
from memlab.errors import ConfigError

KINDS = {"outdated", "never_stated", "contradicting"}


@pytest.fixture(scope="module")
def suite32k():
    return PersonaSuite(span=32000, seed=7)


def test_32k_history_with_all_seven_question_types(suite32k):
    events = suite32k.events()
    history = [e for e in events if e.kind == "filler"]
    assert 32000 <= suite32k.history_tokens <= 34000
    assert all(e.reply for e in history)
    questions = [e for e in events if e.kind == "question"]
    assert set(QUESTION_TYPES) <= {q.test_type for q in questions}
    assert events.index(questions[0]) == len(history)  # questions follow the history
    sessions = {}
    for e in history:
        sessions[e.session_id] = sessions.get(e.session_id, 0) + 1
    topical = [n for s, n in sessions.items() if s.startswith("session-")]
    assert all(10 <= n <= 30 for n in topical) and len(topical) >= 12
    assert any(s.startswith("offtopic-") for s in sessions)


def test_question_metadata_feeds_the_metrics(suite32k):
    events = suite32k.events()
    for q in (e for e in events if e.kind == "question"):
        assert q.store is False and len(q.options) == 4 and len(set(q.options)) == 4
        kinds = q.metadata["distractor_kinds"]
        assert kinds[q.answer_index] == "correct" and kinds.count("correct") == 1
        assert set(kinds) - {"correct"} <= KINDS
        assert q.metadata["evidence_indices"] == [e["event_index"] for e in q.metadata["evidence"]]
        assert q.metadata["topic"] and q.metadata["evidence"]
        for ev in q.metadata["evidence"]:
            hist = events[ev["event_index"]]
            assert hist.session_id == ev["session_id"] and hist.metadata["evidence"] is True
    evolution = [e for e in events if e.test_type == "track_full_preference_evolution"]
    assert all(len(set(q.metadata["evidence_sessions"])) >= 2 for q in evolution)  # cross-episode
    probes = [e for e in events if e.metadata.get("probe")]
    assert probes
    for p in probes:  # cue-based: a fragment of the evidence as cue, the masked detail as answer
        evidence_text = events[p.metadata["evidence"][0]["event_index"]].text
        assert p.metadata["cue"] in evidence_text and p.metadata["masked"] in evidence_text
        assert p.options[p.answer_index] == p.metadata["masked"]


def test_preferences_change_with_dated_reasons(suite32k):
    suite32k.events()
    for pref in suite32k.plan.prefs:
        assert len(pref.history) >= 2
        assert all(a.liked != b.liked for a, b in zip(pref.history, pref.history[1:], strict=False))
        assert all(a.date < b.date for a, b in zip(pref.history, pref.history[1:], strict=False))


def test_scoring_by_final_answer_and_by_logprob_choice():
    suite = PersonaSuite(span=3000, seed=1)
    qs = [e for e in suite.events() if e.kind == "question"]
    letters = "abcd"
    right = {q.index: Response(index=q.index, reply=f"<final_answer>({letters[q.answer_index]})</final_answer>")
             for q in qs}
    assert all(s.score == 1 for s in suite.score(right))
    wrong = {q.index: Response(index=q.index, choice=(q.answer_index + 1) % 4) for q in qs}
    scores = suite.score(wrong)
    assert all(s.score == 0 and s.metadata["by_logprob"] for s in scores)
    assert {s.metadata["chosen_kind"] for s in scores} <= KINDS
    assert all(s.metadata["chosen"] is None for s in suite.score({}))


def test_generation_is_deterministic_and_sized():
    a = PersonaSuite(span=8000, seed=3).events()
    b = PersonaSuite(span=8000, seed=3).events()
    assert [e.model_dump() for e in a] == [e.model_dump() for e in b]
    assert len(PersonaSuite(span=16000, seed=3).events()) > len(a)


def test_described_parameters_do_not_depend_on_whether_events_were_generated():
    """A resume compares the folder's recorded suite parameters with a suite built afresh:
    history_tokens was 0 until events() ran, so every persona resume was refused."""
    fresh = PersonaSuite(span=600, seed=3).describe()
    generated = PersonaSuite(span=600, seed=3)
    generated.events()
    assert fresh == generated.describe() and fresh["history_tokens"] >= 600


def test_memlab_written_sample_loads_back_identically(tmp_path):
    suite = PersonaSuite(span=5000, seed=11)
    questions, contexts = write_personamem(suite, tmp_path, size="5k")
    assert questions.name == "questions_5k.csv" and contexts.name == "shared_contexts_5k.jsonl"
    loaded = PersonaMemSuite(questions, contexts)
    assert [e.model_dump() for e in loaded.events()] == [e.model_dump() for e in suite.events()]
    assert loaded.persona == suite.persona
    row = next(csv.DictReader(questions.open()))
    assert row["correct_answer"].startswith("(") and row["all_options"].startswith("['(a) ")


def test_loader_reads_published_personamem_rows(tmp_path):
    ctx = [{"role": "system", "content": "Current user persona: Name: Kai"},
           {"role": "user", "content": "User: I love rock climbing."},
           {"role": "assistant", "content": "Assistant: Nice!"},
           {"role": "user", "content": "User: I also paint."},
           {"role": "user", "content": "User: Lately I dislike climbing."},
           {"role": "assistant", "content": "Assistant: Noted."}]
    (tmp_path / "shared_contexts_32k.jsonl").write_text(json.dumps({"abc": ctx}) + "\n")
    options = repr(["(a) You love climbing.", '(b) You\'ve gone off climbing lately.',
                    "(c) You never climb.", "(d) You paint walls."])
    rows = [{"persona_id": "1", "question_id": "q1", "question_type": "recall_user_shared_facts",
             "topic": "hobbies", "user_question_or_message": "What do I think of climbing?",
             "correct_answer": "(a)", "all_options": options, "shared_context_id": "abc",
             "end_index_in_shared_context": "3"},
            {"persona_id": "1", "question_id": "q2", "question_type": "acknowledge_latest_user_preferences",
             "topic": "hobbies", "user_question_or_message": "Climbing tomorrow?",
             "correct_answer": "(b)", "all_options": options, "shared_context_id": "abc",
             "end_index_in_shared_context": "6"}]
    with (tmp_path / "questions_32k.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    suite = PersonaMemSuite(tmp_path / "questions_32k.csv", tmp_path / "shared_contexts_32k.jsonl")
    kinds = [(e.kind, e.text[:12]) for e in suite.events()]
    assert kinds == [("filler", "User: I love"), ("question", "What do I th"),
                     ("filler", "User: I also"), ("filler", "User: Lately"),
                     ("question", "Climbing tom")]
    events = suite.events()
    assert events[0].reply == "Assistant: Nice!" and events[2].reply is None
    assert events[4].options[1] == "You've gone off climbing lately." and events[4].answer_index == 1
    assert suite.persona.startswith("Current user persona")
    rows[0]["correct_answer"] = "(z)"
    with (tmp_path / "questions_32k.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(ConfigError, match="correct_answer"):
        PersonaMemSuite(tmp_path / "questions_32k.csv", tmp_path / "shared_contexts_32k.jsonl")


def test_description_does_not_depend_on_whether_events_were_asked_for(tmp_path):
    """A resumed run compares the suite's description with its manifest before the runner asks
    for the events: history_tokens was 0 then, so every persona run refused to resume."""
    from memlab.bench.runner import run
    from memlab.bench.spec import RunSpec
    from memlab.embed.hashing import HashingEmbedder
    from memlab.llm.fake import FakeLLM

    built = PersonaSuite(span=300, seed=1)
    built.events()
    assert PersonaSuite(span=300, seed=1).describe() == built.describe()
    assert built.describe()["history_tokens"] >= 300
    spec = RunSpec.parse({"suite": "persona", "condition": "vanilla", "span": 300, "seed": 1,
                          "llm": "fake", "embedder": "hashing", "answered": 0}, "spec")
    for _ in range(2):  # the second call finds the complete run (and must not refuse it)
        run_dir = run(spec, suite=PersonaSuite(span=300, seed=1), llm=FakeLLM(),
                      embedder=HashingEmbedder(), results_dir=tmp_path, progress=False)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def _small_talk(suite):
    """The user's sentences of topical small talk (not the openers or the needles)."""
    events = suite.events()
    openers = {e.session_id: e.index for e in events if e.metadata.get("turn") == 0}
    return [e.text for e in events if e.kind == "filler" and e.session_id.startswith("session-")
            and not e.metadata.get("evidence") and e.index != openers[e.session_id]]


def test_varied_small_talk_repeats_little_and_keeps_the_plan_and_questions():
    repeated = PersonaSuite(span=32000, seed=0, n_topics=5)
    varied = PersonaSuite(span=32000, seed=0, n_topics=5, chat="varied")
    said, varied_said = _small_talk(repeated), _small_talk(varied)
    assert len(set(said)) == 8  # the default: 8 sentences, again and again
    assert len(set(varied_said)) > 0.5 * len(varied_said) > 500
    assert max(varied_said.count(s) for s in set(varied_said)) <= 10
    assert 32000 <= varied.history_tokens <= 34000
    assert repeated.persona == varied.persona
    kinds = [sorted(e.test_type for e in s.events() if e.kind == "question")
             for s in (repeated, varied)]
    assert kinds[0] == kinds[1]  # the same question types, the same count
    items = {p.item for p in repeated.plan.prefs}
    assert not any(item in text for item in items for text in varied_said)
    assert "chat" not in repeated.describe() and varied.describe()["chat"] == "varied"
    assert _small_talk(PersonaSuite(span=32000, seed=0, n_topics=5, chat="varied")) == varied_said


def test_an_unknown_small_talk_is_refused_by_name():
    with pytest.raises(ConfigError, match="suite_options.chat.*repeated, varied"):
        PersonaSuite(span=4000, chat="mixed")
