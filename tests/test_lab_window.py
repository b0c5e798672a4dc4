"""full_context's window holds the whole persona history, chat format included.

A persona history is generated to its span in text tokens; as a chat it is longer (about 250
exchanges with their format at span 4,000), and a window sized to the span alone cut the oldest
turns from every full_context answer of the quick paper (24 of 24), so full_context was no
upper bound there.
"""

from __future__ import annotations

import json

import pytest

from memlab import lab
from memlab.bench.spec import RunSpec, window_for_span
from memlab.llm.fake import FakeLLM


@pytest.fixture
def windows(monkeypatch):
    """lab.make_llm builds FakeLLMs with the window asked for; the windows asked, in order."""
    asked: list[int] = []

    def make_llm(llm=None, model=None, **kwargs):
        asked.append(kwargs.get("n_ctx"))
        return FakeLLM(default="A", context_window=kwargs.get("n_ctx") or 4096)

    monkeypatch.setattr(lab, "make_llm", make_llm)
    return asked


def _spec(suite: str, condition: str, span: int, **fields) -> RunSpec:
    return RunSpec(suite=suite, condition=condition, span=span, llm="fake", embedder="hashing",
                   **fields)


def test_the_window_counts_every_stored_exchange_with_its_chat_format():
    spec = _spec("persona", "full_context", 1500)
    llm = FakeLLM()
    suite = lab.build_suite(spec, llm)
    stored = [e for e in suite.events() if e.store]
    text = sum(len(e.text.split()) + len((e.reply or "").split()) for e in stored)
    assert lab.window_for_conversation(suite, llm) == window_for_span(text + 8 * len(stored))
    assert lab.window_for_conversation(suite, llm) > spec.window


def test_a_persona_full_context_run_keeps_the_whole_history(tmp_path, windows):
    spec = _spec("persona", "full_context", 1500, answered=3)
    run_dir = lab.run(spec, tmp_path, progress=False)
    turns = [json.loads(line) for line in (run_dir / "turns.jsonl").read_text().splitlines()]
    questions = [t for t in turns if t["kind"] == "question" and t["answered"]]
    assert questions and all(t["truncated_turns"] == 0 for t in questions)
    assert windows[-1] > spec.window
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["llm"]["context_window"] == windows[-1]


@pytest.mark.parametrize(("suite", "condition"), [("ltm", "full_context"), ("persona", "rag")])
def test_other_runs_keep_the_window_of_their_span(tmp_path, windows, suite, condition):
    """LTM's evidence lies within its memory span; other conditions' prompts are short."""
    spec = _spec(suite, condition, 1000, answered=0)
    lab.run(spec, tmp_path, progress=False)
    assert windows == [spec.window]


def test_a_suite_of_several_conversations_needs_the_window_of_its_longest():
    """Each conversation of LoCoMo or LongMemEval is its own user's full_context history."""
    from memlab.bench.base import Suite, SuiteEvent

    class TwoUsers(Suite):
        whole_history = True

        def events(self):
            long, short = "word " * 3000, "word " * 1000
            return [SuiteEvent(index=0, kind="filler", text=long, reply="ok", user_id="a"),
                    SuiteEvent(index=1, kind="filler", text=short, reply="ok", user_id="b")]

        def score(self, responses):
            return []

    assert lab.window_for_conversation(TwoUsers(), FakeLLM()) == window_for_span(3000 + 1 + 8)


def test_a_model_the_caller_gives_is_kept(tmp_path, windows):
    given = FakeLLM(default="A", context_window=4096)
    spec = _spec("persona", "full_context", 1500, answered=0)
    lab.run(spec, tmp_path, llm=given, progress=False)
    assert windows == []  # nothing built in its place


def test_a_run_whose_window_grows_judges_through_its_own_journal(tmp_path, windows):
    """An LTM full_context run at 4k needs a window larger than its span's, so its models are
    built again; the jokes' judge must be that run's client, whose calls the journal records,
    so a replay of the cell (no model call) scores it. It was the first client before: the
    scaling grid's full_context cells at LTM 4k and 16k could not be replayed."""
    from memlab.records import _Models, score_cell

    spec = _spec("ltm", "full_context", 4000, answered=2,  # answered: a blank reply is not judged
                 suite_options={"types": ["jokes"], "examples": 2})
    run_dir = lab.run(spec, tmp_path, progress=False)
    assert len(windows) == 2 and windows[-1] > windows[0]  # built again, larger
    calls = [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    scores = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert {s["judge"] for s in scores} == {"llm"}
    assert len(calls) > len(scores) > 0  # the answers' calls and the judge's, all journaled
    copy = tmp_path / "copy" / run_dir.name
    copy.mkdir(parents=True)
    for name in ("manifest.json", "turns.jsonl", "calls.jsonl"):
        (copy / name).write_bytes((run_dir / name).read_bytes())
    judged = sum(reason.startswith("LLM judge") for s in scores for reason in s["reasoning"])
    assert judged > 0 and score_cell(copy, _Models()) == (len(scores), judged)
