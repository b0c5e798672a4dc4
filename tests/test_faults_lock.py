"""One writer per run folder: a second process (or `memlab run` twice) is refused with exit 2 and a
line naming the holder; a lock left by a killed process is taken over, by one taker only."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults_helpers import ROOT, digest, memlab_cli, visible_lines
from test_runner import TinySuite, fake_reply, run, tiny_spec

from memlab.bench.runlog import LOCK_FILE, read_jsonl, run_lock
from memlab.errors import RunLockedError
from memlab.llm.fake import FakeLLM

HOLD = """
import sys, time
from pathlib import Path
from memlab.bench.runlog import run_lock
with run_lock(Path(sys.argv[1])):
    Path(sys.argv[2]).write_text("held")
    time.sleep(float(sys.argv[3]))
"""

TAKE = """
import sys, time
from pathlib import Path
from memlab.bench.runlog import run_lock
from memlab.errors import RunLockedError
while not Path(sys.argv[2]).exists():
    time.sleep(0.001)
try:
    with run_lock(Path(sys.argv[1])):
        print("took", flush=True)
        time.sleep(1.0)
except RunLockedError as exc:
    print("refused", exc, flush=True)
"""


def _holder(folder: Path, seconds: float = 60) -> subprocess.Popen:
    """A child process holding ``folder``'s lock (``folder/held`` appears once it does)."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(folder / "held"),
                             str(seconds)], cwd=ROOT)
    deadline = time.time() + 30
    while not (folder / "held").exists():
        assert proc.poll() is None and time.time() < deadline, "the holder did not start"
        time.sleep(0.01)
    (folder / "held").unlink()
    return proc


def test_a_second_writer_in_another_process_is_refused_naming_the_holder(tmp_path):
    spec = tiny_spec(TinySuite(), "vanilla")
    holder = _holder(spec.run_dir(tmp_path))
    try:
        with pytest.raises(RunLockedError) as refused:
            run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                progress=False)
    finally:
        holder.kill()
        holder.wait()
    message = str(refused.value)
    assert f"pid {holder.pid} on host {socket.gethostname()} since 20" in message
    assert spec.run_id in message and "wait for it to finish" in message
    assert not (spec.run_dir(tmp_path) / "turns.jsonl").exists()  # refused before writing


def test_memlab_run_on_a_folder_being_written_exits_2_and_changes_nothing(tmp_path):
    run_dir = tmp_path / "out" / "ltm-vanilla-200-s0"
    holder = _holder(run_dir)
    try:
        (run_dir / "turns.jsonl").write_text('{"index": 0}\n')  # what the holder wrote so far
        before = digest(tmp_path / "out")
        done = memlab_cli("run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
                          "--embedder", "hashing", "--out", str(tmp_path / "out"),
                          env={"MEMLAB_CACHE_DIR": str(tmp_path / "cache")})
    finally:
        holder.kill()
        holder.wait()
    lines = visible_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"is being written by pid {holder.pid}" in lines[0] and "ltm-vanilla-200-s0" in lines[0]
    assert digest(tmp_path / "out") == before


def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_warning(tmp_path, caplog):
    spec = tiny_spec(TinySuite(), "vanilla")
    holder = _holder(spec.run_dir(tmp_path))
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    stale = json.loads((spec.run_dir(tmp_path) / LOCK_FILE).read_text())
    assert stale["pid"] == holder.pid  # kill -9 left its record behind
    with caplog.at_level(logging.WARNING, logger="memlab.bench.runlog"):
        run_dir = run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                      progress=False)
    assert f"taking over the lock left by pid {holder.pid}" in caplog.text
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
    assert (run_dir / LOCK_FILE).read_bytes() == b""  # released: emptied, not deleted


def test_two_takers_of_a_stale_lock_never_both_get_it(tmp_path):
    folder = tmp_path / "run"
    holder = _holder(folder)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    go = tmp_path / "go"
    takers = [subprocess.Popen([sys.executable, "-c", TAKE, str(folder), str(go)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True) for _ in range(4)]
    time.sleep(1.5)  # every taker is waiting for the start signal
    go.write_text("go")
    outcomes = sorted(p.communicate(timeout=60)[0].split()[0] for p in takers)
    assert outcomes == ["refused", "refused", "refused", "took"]


def test_the_lock_is_released_when_the_block_raises_and_in_process_twice_is_refused(tmp_path):
    with run_lock(tmp_path) as me:
        assert me["pid"] == os.getpid()
        with pytest.raises(RunLockedError, match=f"pid {os.getpid()}"), run_lock(tmp_path):
            pass
    with pytest.raises(ValueError), run_lock(tmp_path):
        raise ValueError("boom")
    with run_lock(tmp_path):  # free again
        pass


def test_two_runs_of_one_spec_at_once_leave_one_uninterrupted_run(tmp_path):
    """What `memlab grid --seeds 0,0` did before: both processes wrote the same folder."""
    script = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
              "from test_runner import TinySuite, fake_reply, run; "
              "from memlab.llm.fake import FakeLLM; from memlab.errors import RunLockedError\n"
              "try:\n"
              f"    run(TinySuite(sessions=6), 'vanilla', llm=FakeLLM([fake_reply]), "
              f"results_dir={str(tmp_path)!r}, progress=False); print('ran')\n"
              "except RunLockedError: print('refused')")
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outcomes = sorted(p.communicate(timeout=120)[0].split()[-1] for p in procs)
    run_dir = tiny_spec(TinySuite(sessions=6), "vanilla").run_dir(tmp_path)
    turns = read_jsonl(run_dir / "turns.jsonl")
    assert [t["index"] for t in turns] == [e.index for e in TinySuite(sessions=6).events()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["counts"]["llm_calls_paid"] == 12  # 6 needles + 6 questions, once each
    # either one ran and the other was refused, or the second found it complete and skipped it
    assert outcomes in (["ran", "refused"], ["ran", "ran"])
