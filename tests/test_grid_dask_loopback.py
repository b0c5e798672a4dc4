"""The way past one machine, for real: a grid on a Dask scheduler and two worker processes
started with the ``dask`` CLI on loopback, every cell's answering model one llama-cpp-python
server that all workers share (``--llm openai``), gives the local pool's records byte for byte.

Both grids run as ``memlab grid`` does from a terminal, each with the response cache off and a
cache folder of its own, so each pays its model calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from services import DaskScheduler, DaskWorkers, LlamaCppServer

from memlab.bench.runner import strip_timing
from memlab.config import get_settings
from memlab.gridspec import load_spec
from memlab.llm.weights import ensure_model_file, packaged_model

pytestmark = pytest.mark.integration

ALIAS = "smollm2-135m"
# 2 conditions x 2 seeds; scripted needles: the model answers only the questions
SPEC = f"""\
name: loopback
conditions: [vanilla, rag]
suites: [ltm]
spans: {{ltm: [300]}}
seeds: [0, 1]
llm: openai
llm_model: {ALIAS}
embedder: hashing
needle_replies: scripted
sleep_probes: false
suite_options: {{ltm: {{examples: 1, types: [colours, shopping]}}}}
"""
GRID_TIMEOUT_S = 240


def _env(tmp_path, server: LlamaCppServer, name: str) -> dict[str, str]:
    """The environment of one grid's processes: the shared server, no response cache."""
    env = {k: v for k, v in os.environ.items() if k != "MEMLAB_DASK_SCHEDULER"}
    return env | {"MEMLAB_OPENAI_BASE_URL": server.url, "MEMLAB_LLM_CACHE": "0",
                  "MEMLAB_CACHE_DIR": str(tmp_path / f"cache-{name}")}


@pytest.fixture(scope="module")
def server():
    model = ensure_model_file(packaged_model("135m"), get_settings().cache_dir)
    with LlamaCppServer(model, ALIAS) as served:
        yield served


def _grid(tmp_path, env: dict[str, str], results: str, *where: str) -> None:
    """``memlab grid`` on the spec into ``tmp_path/results``."""
    done = subprocess.run(
        [sys.executable, "-m", "memlab.cli", "grid", "--spec", "loopback.yaml",
         "--results", results, *where],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=GRID_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 run, 0 skipped" in done.stdout + done.stderr, done.stdout + done.stderr


def _records(run) -> tuple:
    turns = [json.dumps(strip_timing(json.loads(line)), sort_keys=True)
             for line in (run / "turns.jsonl").read_text().splitlines()]
    return turns, (run / "scores.jsonl").read_bytes()


def test_a_grid_on_two_loopback_dask_workers_matches_the_local_pool(tmp_path, server):
    scheduler = DaskScheduler()  # skips (fails under MEMLAB_REQUIRE_SERVICES=1) without dask
    (tmp_path / "loopback.yaml").write_text(SPEC)
    cells = load_spec(tmp_path / "loopback.yaml").cells()
    assert len(cells) == 4
    _grid(tmp_path, _env(tmp_path, server, "pool"), "pool", "--workers", "2")
    with scheduler, DaskWorkers(scheduler, 2, _env(tmp_path, server, "dask")):
        _grid(tmp_path, _env(tmp_path, server, "dask"), "dask",
              "--scheduler", scheduler.address)
        from dask.distributed import Client

        with Client(scheduler.address, timeout=30) as client:
            ran = client.run(lambda dask_worker: (os.getpid(),
                                                  dask_worker.state.executed_count))
    # each worker process, none of them this one, ran cells (one cell is one Dask task)
    assert len(ran) == 2 and os.getpid() not in {pid for pid, _ in ran.values()}, ran
    counts = [count for _, count in ran.values()]
    assert min(counts) > 0 and sum(counts) == len(cells), ran
    for cell in cells:
        pool, dask = tmp_path / "pool" / cell.run_id, tmp_path / "dask" / cell.run_id
        for run in (pool, dask):
            manifest = json.loads((run / "manifest.json").read_text())
            assert manifest["status"] == "complete", run
            assert manifest["counts"]["llm_calls_paid"] > 0, run  # not served from a cache
            assert manifest["counts"]["llm_calls_replayed"] == 0, run
        assert _records(pool) == _records(dask), cell.run_id
