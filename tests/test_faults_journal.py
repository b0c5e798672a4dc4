"""Torn journal tails (a kill mid-write, a power loss's NUL bytes) are cut, warned about, and a
run whose journals end in one resumes to the uninterrupted run's records."""

from __future__ import annotations

import logging

import pytest
from test_runner import TinySuite, comparable, fake_reply, run, scripted_factory

from memlab.bench.runlog import CallJournal, JsonlWriter, read_jsonl
from memlab.errors import LiveCallError
from memlab.llm.base import Completion, Message
from memlab.llm.fake import FakeLLM

GOOD = b'{"a": 1}\n{"a": 2, "text": "caf\xc3\xa9"}\n'
TAILS = {
    "nul_bytes": b"\x00" * 4096,
    "nul_line": b"\x00" * 100 + b"\n",
    "nul_after_partial_line": b'{"a": 3, "te' + b"\x00" * 500,
    "partial_json": b'{"a": 3, "text": "unfini',
    "invalid_utf8": b'{"a": "\xff\xfe"}\n',
    "not_an_object": b"[1, 2, 3]\n",
    "no_final_newline": b'{"a": 3}',
    "several_bad_lines": b'{"a": \n\x00\x00\n[1]\n\xff',
}


@pytest.mark.parametrize("tail", TAILS)
def test_torn_tail_is_cut_to_the_last_record_with_a_warning(tmp_path, caplog, tail):
    path = tmp_path / "turns.jsonl"
    path.write_bytes(GOOD + TAILS[tail])
    assert read_jsonl(path) == [{"a": 1}, {"a": 2, "text": "café"}]
    assert path.read_bytes() == GOOD + TAILS[tail]  # without repair: read, not changed
    with caplog.at_level(logging.WARNING, logger="memlab.bench.runlog"):
        assert read_jsonl(path, repair=True) == [{"a": 1}, {"a": 2, "text": "café"}]
    assert path.read_bytes() == GOOD
    assert str(path) in caplog.text and f"byte offset {len(GOOD)}" in caplog.text
    caplog.clear()
    assert read_jsonl(path, repair=True) == [{"a": 1}, {"a": 2, "text": "café"}]
    assert caplog.text == ""  # a clean file: no warning, nothing cut


def test_a_file_of_nul_bytes_only_is_emptied(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b"\x00" * 8192)
    assert read_jsonl(path, repair=True) == [] and path.read_bytes() == b""


def test_call_journal_opens_a_file_ending_in_nul_bytes_and_appends_after_the_cut(tmp_path):
    path = tmp_path / "calls.jsonl"
    journal = CallJournal(path, fsync=False)
    messages = [Message(role="user", content="hi")]
    done = Completion(text="hello", prompt_tokens=1, completion_tokens=1, latency_s=0.0,
                      model="m")
    journal.put("fake", "m", messages, {"t": 0}, done)
    journal.close()
    with path.open("ab") as fh:
        fh.write(b"\x00" * 1000)
    journal = CallJournal(path, fsync=False)
    assert journal.recorded == 1 and journal.paid == 1
    assert journal.get("fake", "m", messages, {"t": 0}).text == "hello"
    journal.put("fake", "m", [Message(role="user", content="again")], {"t": 0}, done)
    journal.close()
    assert [e["n"] for e in read_jsonl(path)] == [0, 1]
    assert b"\x00" not in path.read_bytes()


def test_writer_after_a_repaired_partial_line_starts_on_a_fresh_line(tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_bytes(GOOD + b'{"a": 3')
    read_jsonl(path, repair=True)
    writer = JsonlWriter(path, fsync=False)
    writer.write({"a": 4})
    writer.close()
    assert [r["a"] for r in read_jsonl(path)] == [1, 2, 4]


def test_resume_of_a_run_whose_journals_end_in_nul_bytes(tmp_path, caplog):
    suite = TinySuite()
    full = run(suite, "episodic", llm=FakeLLM([fake_reply]), results_dir=tmp_path / "a",
               progress=False, agent_factory=scripted_factory)
    part = tmp_path / "b" / full.name
    part.mkdir(parents=True)
    turns = (full / "turns.jsonl").read_bytes().splitlines(keepends=True)
    calls = (full / "calls.jsonl").read_bytes().splitlines(keepends=True)
    (part / "turns.jsonl").write_bytes(b"".join(turns[:8]) + b"\x00" * 4096)
    (part / "calls.jsonl").write_bytes(b"".join(calls[:3]) + calls[3][:20] + b"\x00" * 700)
    llm = FakeLLM([fake_reply])
    with caplog.at_level(logging.WARNING, logger="memlab.bench.runlog"):
        run(suite, "episodic", llm=llm, results_dir=tmp_path / "b", progress=False,
            agent_factory=scripted_factory)
    assert comparable(part / "turns.jsonl") == comparable(full / "turns.jsonl")
    assert [c["key"] for c in read_jsonl(part / "calls.jsonl")] == \
        [c["key"] for c in read_jsonl(full / "calls.jsonl")]
    assert llm.calls == len(calls) - 3  # the three recorded calls were replayed, not paid
    assert f"{part / 'turns.jsonl'}: torn tail of 4096 bytes" in caplog.text
    assert f"byte offset {len(b''.join(calls[:3]))}" in caplog.text
    assert read_jsonl(part / "scores.jsonl") == read_jsonl(full / "scores.jsonl")


def _asked(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def _verdict(text: str) -> Completion:
    return Completion(text=text, prompt_tokens=1, completion_tokens=1, latency_s=0.0, model="m")


def test_a_replay_answers_a_call_by_its_exact_request_never_by_position(tmp_path):
    """A resume replays a call by its position (a memory's recall may word the prompt anew); a
    replay of records re-asks a scorer's fixed prompts, so a scorer asking one call fewer must
    not read the next call's recorded verdict as its own."""
    path = tmp_path / "calls.jsonl"
    journal = CallJournal(path, fsync=False)
    journal.begin_step("score")
    for text, verdict in (("blank answer?", "yes"), ("right answer?", "no")):
        assert journal.get("fake", "m", _asked(text), {"t": 0}) is None  # asked, then paid
        journal.put("fake", "m", _asked(text), {"t": 0}, _verdict(verdict))
    journal.close()

    resume = CallJournal(path, fsync=False)
    resume.begin_step("score")
    assert resume.get("fake", "m", _asked("reworded?"), {"t": 0}).text == "yes"  # position 0
    assert resume.mismatched == 1

    replay = CallJournal(path, fsync=False, replay_only=True)
    replay.begin_step("score")
    assert replay.get("fake", "m", _asked("right answer?"), {"t": 0}).text == "no"
    assert replay.get("fake", "m", _asked("blank answer?"), {"t": 0}).text == "yes"
    assert replay.mismatched == 0
    with pytest.raises(LiveCallError, match="does not hold"):
        replay.get("fake", "m", _asked("reworded?"), {"t": 0})
