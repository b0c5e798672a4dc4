"""GoodAI's own benchmark runner, installed from its source into a venv of its own, drives a
memlab server on the six types GoodAI scores without an LLM, at a 1k span (FakeLLM: plumbing).

The venv is installed once into ``<MEMLAB_CACHE_DIR>/goodai`` (about a minute; later runs reuse
it, as ``memlab goodai-run`` does). Needs a display or ``xvfb-run`` (GoodAI's Tk window).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from services import require_or_skip

from memlab.bench.goodai import goodai_rescore
from memlab.integrations.goodai import RULE_ONLY_TYPES

SHARED = Path(__file__).resolve().parents[2] / "shared"
SOURCE = SHARED / "goodai-ltm-benchmark"
DEFINITIONS = SHARED / "data" / "goodai-ltm-v3-1k" / "definitions"

pytestmark = pytest.mark.integration


def goodai_run(tmp_path: Path, run_name: str, *extra: str) -> subprocess.CompletedProcess:
    if not SOURCE.is_dir() or not DEFINITIONS.is_dir():
        require_or_skip(f"GoodAI source or definitions not found under {SHARED}")
    if not os.environ.get("DISPLAY") and shutil.which("xvfb-run") is None:
        require_or_skip("no display and no xvfb-run (apt-get install xvfb)")
    return subprocess.run(
        [sys.executable, "-m", "memlab.cli", "goodai-run", "--goodai-src", str(SOURCE),
         "--definitions", str(DEFINITIONS), "-c", "rag", "--llm", "fake", "--embedder",
         "hashing", "--run-name", run_name, "--workdir", str(tmp_path / "server"), *extra],
        capture_output=True, text=True, timeout=1500, cwd=tmp_path)


def journals(workdir: Path) -> list[list[dict]]:
    return [[json.loads(line) for line in path.read_text().splitlines()]
            for path in sorted(workdir.glob("sessions/*/journal.jsonl"))]


def test_goodai_runner_drives_memlab_and_rescores_identically(tmp_path):
    done = goodai_run(tmp_path, "memlab-ci")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = Path(done.stdout.strip().splitlines()[-1].removeprefix("GoodAI result files: "))
    files = sorted(results.glob("memlab - rag/*/*_0.json"))
    assert len(files) == 3 * len(RULE_ONLY_TYPES)  # 3 published examples of each type
    report = goodai_rescore(results)  # memlab's current scorers vs GoodAI's own scores
    assert report.conformance() == (18, 18)
    runstats = json.loads((results / "memlab - rag" / "runstats.json").read_text())
    assert runstats["agent_costs_usd"] == 0 and runstats["agent_tokens"] > 0
    [steps] = journals(tmp_path / "server")  # one session for the whole interleaved run
    kinds = {s["kind"] for s in steps}
    assert kinds == {"turn", "observe"}  # filler stored with GoodAI's reply, not generated
    filler = [s for s in steps if s["kind"] == "observe"]
    assert all(s["user"].startswith("Here are some trivia questions") for s in filler)
    master = [json.loads(line) for line in
              (results / "memlab - rag" / "master_log.jsonl").read_text().splitlines()]
    sent = {e["data"]["message"] for e in master if e["type"] == 0}  # GoodAI's SEND_MESSAGE
    assert sent and sent <= {s["user"] for s in steps if s["kind"] == "turn"}


def test_isolated_runs_reset_the_agent_between_tests(tmp_path):
    done = goodai_run(tmp_path, "memlab-ci-isolated", "--isolated", "--types", "colours")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = Path(done.stdout.strip().splitlines()[-1].removeprefix("GoodAI result files: "))
    assert len(list(results.glob("memlab - rag/Colours/*_0.json"))) == 3
    # after each test GoodAI reset the agent: its session was deleted and a new, empty one made
    assert journals(tmp_path / "server") == [[]]


def test_memlabs_current_scorers_agree_with_goodais_own_code(tmp_path):
    """GoodAI's evaluate_correct, run in its venv on the published 1k answers, against memlab's
    current scorers: every answer GoodAI decides by rule gets the same score."""
    from memlab.config import get_settings
    from memlab.integrations.goodai import install

    if not SOURCE.is_dir() or not DEFINITIONS.is_dir():
        require_or_skip(f"GoodAI source or published results not found under {SHARED}")
    checkout = install(SOURCE, get_settings().cache_dir / "goodai")
    results = DEFINITIONS.parent / "results"
    out = tmp_path / "goodai_scores.json"
    probe = Path(__file__).with_name("goodai_score_probe.py")
    subprocess.run([str(checkout.python), str(probe), str(checkout.src), str(results), str(out)],
                   check=True, timeout=600, capture_output=True)
    theirs = json.loads(out.read_text())
    ours = {item.file: item.memlab for item in goodai_rescore(results).items}
    decided = {k: v[0] / v[1] for k, v in theirs.items() if isinstance(v, list)}
    assert len(decided) >= 230  # all rule-decided answers of the published run
    assert {k: ours[k] for k in decided} == pytest.approx(decided)
