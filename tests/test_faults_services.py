"""Faults with real servers: run state on Redis is tied to its run, survives kill -9 and outages.

Operating memory and the full history live on Redis under the run's namespace (run id + a hash
of the run folder), and the runner purges that namespace at the start of every attempt before
replaying the journal. So two runs in two folders on one Redis never see each other's memory,
and a resume rebuilds exactly what the killed process had, never doubled.

Run as a script it is the child process the tests start, kill and pause:
``python tests/test_faults_services.py run RESULTS CONDITION HANG_AT HANG_IN`` (the tiny suite
through the runner, hanging inside live model call HANG_AT, or in the first store operation
after it) and
``python tests/test_faults_services.py cli OUT PAUSE_AT`` (``memlab run`` on the persona suite,
pausing inside model call PAUSE_AT until the file GO appears).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from memory_fakes import memory_llm  # noqa: E402
from services import RedisServer  # noqa: E402
from test_runner import ROOT, TinySuite, comparable, fake_reply, run, tiny_spec  # noqa: E402

from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import default_agent_factory  # noqa: E402
from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.stores.base import run_namespace  # noqa: E402
from memlab.stores.kv import RedisKV  # noqa: E402

pytestmark = pytest.mark.services

SESSIONS = 5
KILL_POINTS = 5


def role_reply():
    """Replies for every role a memory asks (extraction, compression) and answers that depend
    on the whole prompt, so memory that differs changes the transcript."""
    return memory_llm(fake_reply).replies[0]


# ---------------------------------------------------------------------------- child processes
def child_run(results_dir: str, condition: str, hang_at: int, hang_in: str) -> None:
    """The tiny suite under ``condition`` (the real memory, Redis from the environment)."""
    calls, reply = {"n": 0}, role_reply()

    def counting(messages):
        calls["n"] += 1
        if hang_in == "llm" and calls["n"] == hang_at:
            hang(results_dir)
        return reply(messages)

    def factory(condition, **kwargs):
        agent = default_agent_factory(condition, **kwargs)
        observe = agent.memory.observe

        def hanging_observe(exchange):
            if hang_in == "store" and calls["n"] >= hang_at:
                hang(results_dir)  # call hang_at is journaled, this exchange not stored
            observe(exchange)

        agent.memory.observe = hanging_observe
        return agent

    run(TinySuite(sessions=SESSIONS), condition, llm=FakeLLM([counting]),
        embedder=HashingEmbedder(), results_dir=results_dir, agent_factory=factory,
        progress=False)


def hang(results_dir: str) -> None:
    Path(results_dir, "HANG").write_text("1")
    time.sleep(600)


class PausingLLM(FakeLLM):
    """The FakeLLM of ``role_reply``, pausing inside call ``$PAUSE_AT`` until ``$PAUSE_DIR/GO``
    exists (the test stops Redis meanwhile)."""

    def __init__(self, **kwargs):
        super().__init__([self._reply], **kwargs)
        self._inner, self._calls = role_reply(), 0

    def _reply(self, messages):
        self._calls += 1
        folder = Path(os.environ.get("PAUSE_DIR", "."))
        if self._calls == int(os.environ.get("PAUSE_AT", "-1")):
            (folder / "PAUSED").write_text("1")
            while not (folder / "GO").exists():
                time.sleep(0.02)
        return self._inner(messages)


def child_cli(out: str) -> int:
    from memlab import cli
    from memlab.llm.base import LLMS

    LLMS.register("pausing", PausingLLM, "FakeLLM that pauses (tests only)")
    return cli.main(["run", "-c", "hybrid", "-s", "persona", "--span", "300", "--llm", "pausing",
                     "--embedder", "hashing", "--out", out])


# ---------------------------------------------------------------------------- helpers
def child_env(redis_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMLAB_SQL_URL", "MEMLAB_CHROMA_URL")}
    return {**env, "MEMLAB_REDIS_URL": redis_url, "MEMLAB_LLM_CACHE": "false",
            "PYTHONPATH": str(ROOT), **extra}


def run_child(results: Path, condition: str, redis_url: str) -> None:
    subprocess.run([sys.executable, __file__, "run", str(results), condition, "-1", "none"],
                   cwd=ROOT, check=True, timeout=300, env=child_env(redis_url))


def kill_midway(results: Path, condition: str, redis_url: str, hang_at: int,
                hang_in: str) -> None:
    proc = subprocess.Popen([sys.executable, __file__, "run", str(results), condition,
                             str(hang_at), hang_in], cwd=ROOT, env=child_env(redis_url))
    deadline = time.time() + 120
    while not (results / "HANG").exists():
        assert proc.poll() is None, f"child ended before call {hang_at} ({hang_in})"
        assert time.time() < deadline, "child never reached the kill point"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (results / "HANG").unlink()


def run_dir(results: Path, condition: str) -> Path:
    return tiny_spec(TinySuite(sessions=SESSIONS), condition).run_dir(results)


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def assert_same_run(resumed: Path, clean: Path) -> None:
    """turns.jsonl (timing aside), scores and paid model calls equal the uninterrupted run's."""
    assert comparable(resumed / "turns.jsonl") == comparable(clean / "turns.jsonl")
    assert read_jsonl(resumed / "scores.jsonl") == read_jsonl(clean / "scores.jsonl")
    counts, clean_counts = manifest(resumed)["counts"], manifest(clean)["counts"]
    assert counts["llm_calls_paid"] == clean_counts["llm_calls_paid"]
    assert [c["key"] for c in read_jsonl(resumed / "calls.jsonl")] == [
        c["key"] for c in read_jsonl(clean / "calls.jsonl")]
    assert manifest(resumed)["status"] == "complete" and counts["diverged_turns"] == []


def history_turns(redis_url: str, folder: Path) -> int:
    """Exchanges in the run's full_history key(s) on Redis."""
    kv = RedisKV(redis_url, namespace=f"memlab:{run_namespace(folder)}:")
    return sum((kv.get(key) or "").count("User: ") for key in kv.keys("full_history:"))


# ---------------------------------------------------------------------------- tests
@pytest.mark.parametrize("condition", ["full_context", "hybrid"])
def test_two_runs_in_two_folders_on_one_redis_do_not_share_memory(
        condition, tmp_path, monkeypatch, redis_server):
    """Failed before run namespaces: the second run started with the first one's history."""
    monkeypatch.setenv("MEMLAB_REDIS_URL", redis_server.url)
    folders = []
    for name in ("first", "second"):
        folders.append(run(TinySuite(sessions=SESSIONS), condition,
                           llm=FakeLLM([role_reply()]), embedder=HashingEmbedder(),
                           results_dir=tmp_path / name, progress=False))
    first, second = folders
    assert comparable(second / "turns.jsonl") == comparable(first / "turns.jsonl")
    monkeypatch.delenv("MEMLAB_REDIS_URL")  # the same run on the in-process store
    alone = run(TinySuite(sessions=SESSIONS), condition, llm=FakeLLM([role_reply()]),
                embedder=HashingEmbedder(), results_dir=tmp_path / "in-process", progress=False)
    assert comparable(alone / "turns.jsonl") == comparable(first / "turns.jsonl")


@pytest.mark.parametrize("hang_in", ["llm", "store"])
def test_kill9_resume_on_redis_rebuilds_the_history_once(hang_in, tmp_path, redis_server):
    """Failed before the runner purged the run's namespace: the replay appended the history a
    second time to what the killed process had left on Redis."""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    run_child(clean, "full_context", redis_server.url)
    kill_midway(killed, "full_context", redis_server.url, hang_at=6, hang_in=hang_in)
    left = history_turns(redis_server.url, run_dir(killed, "full_context"))
    assert 0 < left < history_turns(redis_server.url, run_dir(clean, "full_context"))
    run_child(killed, "full_context", redis_server.url)
    assert_same_run(run_dir(killed, "full_context"), run_dir(clean, "full_context"))
    stored = sum(1 for t in read_jsonl(run_dir(killed, "full_context") / "turns.jsonl")
                 if t["turn_number"])
    assert history_turns(redis_server.url, run_dir(killed, "full_context")) == stored


def test_kill9_at_five_random_points_of_a_redis_hybrid_run(tmp_path, redis_server):
    """Five kills (random model calls, in the model or in the store after it), one resume each,
    then a last resume: the run equals the uninterrupted one."""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    run_child(clean, "hybrid", redis_server.url)
    total = manifest(run_dir(clean, "hybrid"))["counts"]["llm_calls_paid"]
    rng = random.Random(13)
    points = sorted(rng.sample(range(2, total), KILL_POINTS))
    for point in points:  # the journal replays earlier calls: count the live ones from there
        journaled = len(read_jsonl(run_dir(killed, "hybrid") / "calls.jsonl"))
        hang_in = rng.choice(["llm", "store"])
        kill_midway(killed, "hybrid", redis_server.url, hang_at=max(1, point - journaled),
                    hang_in=hang_in)
        assert manifest(run_dir(killed, "hybrid"))["status"] == "running"
    run_child(killed, "hybrid", redis_server.url)
    assert_same_run(run_dir(killed, "hybrid"), run_dir(clean, "hybrid"))
    assert manifest(run_dir(killed, "hybrid"))["resumes"] == KILL_POINTS


def test_redis_killed_mid_run_fails_in_one_line_and_the_resume_matches(tmp_path):
    """memlab run on Redis; Redis dies inside model call 30 and comes back empty: the run exits
    1 with one line naming Redis, and the resume equals an uninterrupted run."""
    with RedisServer() as redis:
        env = child_env(redis.url, PAUSE_DIR=str(tmp_path), PAUSE_AT="30")
        argv = [sys.executable, __file__, "cli"]
        proc = subprocess.Popen([*argv, str(tmp_path / "outage")], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while not (tmp_path / "PAUSED").exists():
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.02)
        redis.stop()
        (tmp_path / "GO").write_text("1")
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 1
        lines = [line for line in stderr.splitlines()  # the progress bar aside
                 if line.strip() and not line.startswith("persona/hybrid")]
        assert len(lines) == 1 and lines[0].startswith("memlab run: failed: "), stderr
        assert "Redis at redis://127.0.0.1" in lines[0] and "unavailable" in lines[0]

        redis.start()  # empty: no persistence
        env["PAUSE_AT"] = "-1"
        for folder in ("outage", "clean"):
            done = subprocess.run([*argv, str(tmp_path / folder)], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
    outage, clean = (next((tmp_path / f).iterdir()) for f in ("outage", "clean"))
    assert manifest(outage)["resumes"] == 1
    assert_same_run(outage, clean)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        child_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        raise SystemExit(child_cli(sys.argv[2]))
