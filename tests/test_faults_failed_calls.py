"""A run whose model calls fail ends `failed` (first error and count in the manifest, non-zero
exit, run again by the grid); a failure is never replayed: running it again after the fault is
fixed pays the failed call again and ends as if it had never failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faults_helpers import ROOT, ChatServer, memlab_cli, visible_lines
from test_runner import TinySuite, comparable, fake_reply, run, scripted_factory

from memlab.bench.failures import FAILED_DIR, cut_at_first_failure
from memlab.bench.runlog import CallJournal, read_jsonl
from memlab.bench.runner import is_complete
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import LLMError, LLMTimeoutError, RunFailedError
from memlab.llm.base import Completion, Message
from memlab.llm.fake import FakeLLM


def flaky(*failing: int, error: type[LLMError] = LLMTimeoutError) -> FakeLLM:
    """``fake_reply``, except that the model calls numbered ``failing`` (from 1) time out."""
    calls = {"n": 0}

    def reply(messages):
        calls["n"] += 1
        if calls["n"] in failing:
            raise error(f"http://127.0.0.1:9/v1: no answer within 1 s (call {calls['n']})")
        return fake_reply(messages)

    return FakeLLM([reply])


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def clean_run(root: Path, **fields) -> Path:
    return run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=root,
               progress=False, **fields)


def test_a_run_whose_answers_fail_ends_failed_with_the_first_error_and_count(tmp_path):
    with pytest.raises(RunFailedError, match=r"1 of 1 answering calls failed .* the first at "
                                             r"step main:0: LLMTimeoutError: .*call 1\)"):
        run(TinySuite(), "vanilla", llm=flaky(*range(1, 100)), results_dir=tmp_path,
            progress=False)
    run_dir = next(tmp_path.iterdir())
    recorded = manifest(run_dir)
    assert recorded["status"] == "failed" and recorded["error"].startswith("RunFailedError: 1 of")
    assert recorded["failed_calls"] == {
        "answering": 1, "failed": 1, "planned": 6, "max_share": 0.0, "memory_failed": 0,
        "first_step": "main:0",
        "first_error": "LLMTimeoutError: http://127.0.0.1:9/v1: no answer within 1 s (call 1)"}
    assert not is_complete(run_dir) and not (run_dir / "scores.jsonl").exists()
    last = read_jsonl(run_dir / "calls.jsonl")[-1]
    assert last["step"] == "main:0" and last["paid"] is False and "LLMTimeoutError" in last["error"]


def test_a_retry_after_the_outage_pays_the_failed_call_again_and_ends_as_uninterrupted(tmp_path):
    clean = clean_run(tmp_path / "clean")
    with pytest.raises(RunFailedError):
        run(TinySuite(), "vanilla", llm=flaky(3), results_dir=tmp_path / "b", progress=False)
    run_dir = tmp_path / "b" / clean.name
    failed_turn = read_jsonl(run_dir / "turns.jsonl")[-1]
    assert failed_turn["error"] and failed_turn["reply"] == ""
    healthy = FakeLLM([fake_reply])
    run(TinySuite(), "vanilla", llm=healthy, results_dir=tmp_path / "b", progress=False)
    assert comparable(run_dir / "turns.jsonl") == comparable(clean / "turns.jsonl")
    assert (run_dir / "scores.jsonl").read_bytes() == (clean / "scores.jsonl").read_bytes()
    assert healthy.calls == 4  # the failed call and the three after it; two replayed
    done = manifest(run_dir)
    assert done["status"] == "complete" and done["error"] is None
    assert done["counts"]["llm_calls_paid"] == manifest(clean)["counts"]["llm_calls_paid"] == 6
    assert done["retries"] == [{"step": f"main:{failed_turn['index']}", "attempt": 1,
                                "turns": 1, "calls": 1}]
    kept = read_jsonl(run_dir / FAILED_DIR / "1-turns.jsonl")  # moved aside, not deleted
    assert [t["index"] for t in kept] == [failed_turn["index"]] and kept[0]["error"]


def test_a_failed_memory_call_is_retried_too(tmp_path):
    """The forced sleep's compression call fails (the 10th call: 6 main + 3 pre-sleep probes)."""
    def go(root, llm):
        return run(TinySuite(), "sleep", llm=llm, results_dir=root, progress=False,
                   probes_sleep=True, agent_factory=scripted_factory)

    clean = go(tmp_path / "clean", FakeLLM([fake_reply]))
    with pytest.raises(LLMTimeoutError):
        go(tmp_path / "b", flaky(10))
    run_dir = tmp_path / "b" / clean.name
    assert manifest(run_dir)["status"] == "failed"
    go(tmp_path / "b", FakeLLM([fake_reply]))
    assert comparable(run_dir / "turns.jsonl") == comparable(clean / "turns.jsonl")
    assert manifest(run_dir)["retries"][0]["step"] == "sleep"
    assert "error" in read_jsonl(run_dir / FAILED_DIR / "1-calls.jsonl")[0]


def test_a_memory_call_that_meets_an_outage_fails_the_run_and_is_retried(tmp_path):
    """hybrid's extraction falls back to rules when its call fails: with an outage that would
    be another memory than the condition's (what bench_faults found: same turns, 3 calls
    fewer paid)."""
    def go(root, llm):
        return run(TinySuite(), "hybrid", llm=llm, results_dir=root, progress=False,
                   embedder=HashingEmbedder())

    clean = go(tmp_path / "clean", FakeLLM([fake_reply]))
    with pytest.raises(RunFailedError, match="a memory call failed at step main:0: "
                                             "LLMTimeoutError"):
        go(tmp_path / "b", flaky(2))  # call 1 answers the first needle, call 2 extracts it
    run_dir = tmp_path / "b" / clean.name
    assert manifest(run_dir)["failed_calls"]["memory_failed"] == 1
    go(tmp_path / "b", FakeLLM([fake_reply]))
    assert comparable(run_dir / "turns.jsonl") == comparable(clean / "turns.jsonl")
    assert manifest(run_dir)["counts"]["llm_calls_paid"] == \
        manifest(clean)["counts"]["llm_calls_paid"]


def test_a_memory_call_refused_for_its_request_is_recorded_not_fatal(tmp_path):
    """A request's own failure (here a plain LLMError, as a prompt over the window is) is the
    condition's behaviour on this model: recorded, the run completes."""
    run_dir = run(TinySuite(), "hybrid", llm=flaky(2, error=LLMError), results_dir=tmp_path,
                  progress=False, embedder=HashingEmbedder())
    done = manifest(run_dir)
    assert done["status"] == "complete" and done["counts"]["llm_calls_failed"] == 1
    assert done["failed_calls"]["memory_failed"] == 0


def test_failures_within_max_failed_share_are_recorded_and_the_run_completes(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("MEMLAB_MAX_FAILED_SHARE", "0.2")  # 1 of 6 answering calls
    run_dir = run(TinySuite(), "vanilla", llm=flaky(2), results_dir=tmp_path, progress=False)
    done = manifest(run_dir)
    assert done["status"] == "complete" and done["failed_calls"]["failed"] == 1
    assert sum(t["error"] is not None for t in read_jsonl(run_dir / "turns.jsonl")) == 1
    scores = [s["score"] for s in read_jsonl(run_dir / "scores.jsonl")]
    clean = [s["score"] for s in read_jsonl(clean_run(tmp_path / "clean") / "scores.jsonl")]
    assert clean[0] == 1.0 and scores == [0.0, *clean[1:]]  # call 2 was the first question


def test_more_failures_than_the_share_stop_the_run_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_MAX_FAILED_SHARE", "0.2")
    llm = flaky(2, 3)
    with pytest.raises(RunFailedError, match="2 of 3 answering calls failed"):
        run(TinySuite(), "vanilla", llm=llm, results_dir=tmp_path, progress=False)
    run_dir = next(tmp_path.iterdir())
    assert [t["error"] is not None for t in read_jsonl(run_dir / "turns.jsonl")
            if t["kind"] != "filler"] == [False, True, True]
    assert manifest(run_dir)["failed_calls"]["failed"] == 2


def test_a_failure_in_the_journal_is_never_played_back(tmp_path):
    path = tmp_path / "calls.jsonl"
    journal = CallJournal(path, fsync=False)
    messages = [Message(role="user", content="hi")]
    journal.begin_step("main:0")
    assert journal.get("fake", "m", messages, {}) is None
    journal.note_failure(LLMTimeoutError("down"))
    journal.close()
    again = CallJournal(path, fsync=False)
    again.begin_step("main:0")
    assert again.get("fake", "m", messages, {}) is None  # asked again, not answered "down"
    assert again.paid == 0 and again.recorded == 1
    ok = Completion(text="hello", prompt_tokens=1, completion_tokens=1, latency_s=0, model="m")
    again.put("fake", "m", messages, {}, ok)
    again.close()
    assert [("error" in e, e["paid"]) for e in read_jsonl(path)] == [(True, False), (False, True)]


def test_the_cut_moves_the_failed_step_and_later_ones_aside_and_numbers_attempts(tmp_path):
    with pytest.raises(RunFailedError):
        run(TinySuite(), "vanilla", llm=flaky(2), results_dir=tmp_path, progress=False)
    run_dir = next(tmp_path.iterdir())
    steps = [f"main:{e.index}" for e in TinySuite().events()]
    before = (run_dir / "turns.jsonl").read_bytes() + (run_dir / "calls.jsonl").read_bytes()
    cut = cut_at_first_failure(run_dir, steps)
    turns_left = read_jsonl(run_dir / "turns.jsonl")
    assert cut["step"] == f"main:{len(turns_left)}" and cut["attempt"] == 1
    moved = (run_dir / FAILED_DIR / "1-turns.jsonl").read_bytes()
    assert (run_dir / "turns.jsonl").read_bytes() + moved + (run_dir / "calls.jsonl").read_bytes() \
        + (run_dir / FAILED_DIR / "1-calls.jsonl").read_bytes() == before  # nothing lost
    assert cut_at_first_failure(run_dir, steps) is None  # nothing failed any more
    with pytest.raises(RunFailedError):
        run(TinySuite(), "vanilla", llm=flaky(1), results_dir=tmp_path, progress=False)
    run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path, progress=False)
    assert sorted(p.name for p in (run_dir / FAILED_DIR).iterdir()) == [
        "1-calls.jsonl", "1-turns.jsonl", "2-calls.jsonl", "2-turns.jsonl"]
    assert [r["attempt"] for r in manifest(run_dir)["retries"]] == [2]  # cut 1 was by hand


RUN = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "openai",
       "--embedder", "hashing"]


@pytest.fixture
def chat():
    server = ChatServer()
    yield server
    server.close()


def server_env(tmp_path: Path, server: ChatServer) -> dict[str, str]:
    return {"MEMLAB_OPENAI_BASE_URL": server.url, "MEMLAB_LLM_MODEL": "m",
            "MEMLAB_MAX_RETRIES": "0", "MEMLAB_CACHE_DIR": str(tmp_path / "cache"),
            "MEMLAB_LLM_CACHE": "0"}


def test_memlab_run_against_a_server_that_is_down_exits_1_then_resumes_when_it_is_up(tmp_path,
                                                                                      chat):
    environment = server_env(tmp_path, chat)
    assert memlab_cli(*RUN, "--out", str(tmp_path / "clean"), env=environment).returncode == 0
    paid_clean = chat.requests
    chat.down = True
    done = memlab_cli(*RUN, "--out", str(tmp_path / "out"), env=environment)
    lines = visible_lines(done.stderr)
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "RunFailedError: 1 of 1 answering calls failed" in lines[0]
    assert f"{chat.url}/chat/completions: HTTP 503" in lines[0]
    run_dir = tmp_path / "out" / "ltm-vanilla-200-s0"
    assert manifest(run_dir)["status"] == "failed"
    chat.down, chat.requests = False, 0
    assert memlab_cli(*RUN, "--out", str(tmp_path / "out"), env=environment).returncode == 0
    assert chat.requests == paid_clean  # the one failed answer was asked again, with the rest
    clean_dir = tmp_path / "clean" / "ltm-vanilla-200-s0"
    assert comparable(run_dir / "turns.jsonl") == comparable(clean_dir / "turns.jsonl")
    assert (run_dir / "scores.jsonl").read_bytes() == (clean_dir / "scores.jsonl").read_bytes()


GRID_SPEC = ("name: down\nconditions: [vanilla]\nsuites: [ltm]\nspans: {ltm: [200]}\n"
             "suite_options: {ltm: {examples: 1, types: [colours]}}\nllm: openai\n"
             "llm_model: m\nembedder: hashing\n")


@pytest.mark.integration
def test_the_grid_reports_a_failed_run_and_runs_it_again_next_time(tmp_path, chat):
    (tmp_path / "spec.yaml").write_text(GRID_SPEC)
    environment = server_env(tmp_path, chat)
    grid = ["grid", "--spec", str(tmp_path / "spec.yaml"), "--results", str(tmp_path / "res"),
            "--workers", "1"]
    chat.down = True
    first = memlab_cli(*grid, env=environment, cwd=ROOT, timeout=300)
    assert first.returncode == 1, first.stderr
    assert "0 run, 0 skipped (already complete), 1 failed" in first.stdout
    assert "FAILED ltm-vanilla-200-s0: RunFailedError: 1 of 1 answering calls" in first.stdout
    chat.down = False
    second = memlab_cli(*grid, env=environment, cwd=ROOT, timeout=300)
    assert second.returncode == 0 and "1 run, 0 skipped" in second.stdout, second.stdout
    assert manifest(tmp_path / "res" / "ltm-vanilla-200-s0")["retries"][0]["step"] == "main:0"
    third = memlab_cli(*grid, env=environment, cwd=ROOT, timeout=300)
    assert "0 run, 1 skipped" in third.stdout
