"""The papermill grid: specs as data, skipping complete cells, retries, process pool vs Dask,
stopping a grid (Ctrl-C, SIGTERM, SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from jupyter_core.utils import ensure_event_loop
from test_report_fixtures import write_run

from memlab import grid, lab
from memlab.bench.runner import is_complete
from memlab.bench.spec import RunSpec
from memlab.errors import ConfigError
from memlab.gridspec import SPECS
from memlab.memory.base import CONDITIONS

TINY = grid.GridSpec(name="tiny", conditions=["vanilla", "full_context", "rag"], suites=["ltm"],
                     spans={"ltm": [300]}, llm="fake", embedder="hashing",
                     suite_options={"ltm": {"examples": 1, "types": ["colours", "shopping"]}})


def test_quick_spec_covers_all_conditions_on_both_suites():
    cells = grid.QUICK.cells()
    main = [c for c in cells if c.seed in grid.QUICK.seeds and not c.probes_sleep]
    assert {(c.condition, c.suite) for c in main} == {
        (c, s) for c in CONDITIONS for s in ("ltm", "persona")}
    # seeds 1 and 2 measure evidence recall only; Table 2 is a cell of its own per suite
    assert {c.seed for c in cells if c.answered == 0} == {1, 2}
    assert len(cells) == len(main) * 3 + 2
    probes = [c for c in cells if c.probes_sleep]
    assert [c.condition for c in probes] == ["sleep", "sleep"]
    assert all(c.llm_model == "1.5b" and c.memory_llm_model == "0.5b" for c in cells)
    assert all(c.needle_replies == ("scripted" if c.suite == "ltm" else "model") for c in cells)
    assert len(grid.FULL.cells()) > len(cells)


def test_the_peers_grid_starts_its_slowest_cells_first():
    """graphiti, mem0 and LangMem call the 1.5B on every stored turn (9-379 s each): ranked last, a pool
    ran every baseline first and ended on two day-long cells."""
    order = [c.condition for c in grid.by_expected_cost(SPECS["peers"].cells())]
    assert order[:6] == ["graphiti", "graphiti", "langmem", "langmem", "mem0", "mem0"]
    assert order[-2:] == ["vanilla", "vanilla"]


def test_the_plan_says_full_context_cuts_only_when_full_context_runs():
    cells = grid.QUICK.cells()
    ltm = [c for c in cells if c.suite == "ltm"]
    assert "full_context cuts" in grid.format_plan(grid.QUICK, grid.plan(grid.QUICK, ltm))
    rag = [c for c in ltm if c.condition == "rag"]
    assert "full_context cuts" not in grid.format_plan(grid.QUICK, grid.plan(grid.QUICK, rag))


def test_plan_counts_paired_questions_and_states_the_detectable_difference():
    table = grid.plan(grid.STANDARD).set_index("suite")
    assert (table["answered_per_condition"] >= 100).all()  # the standard grid's promise
    assert (table["detectable_difference"] <= 0.2).all()
    quick = grid.plan(grid.QUICK).set_index("suite")
    assert quick.loc["persona", "answered_per_condition"] == 24  # 24 of seed 0's 45
    assert quick.loc["persona", "evidence_per_condition"] == 3 * 45
    text = grid.format_plan(grid.QUICK, grid.plan(grid.QUICK))
    assert "persona at 4000 tokens: 8 conditions, 24 answered and 135 evidence" in text
    standard = grid.format_plan(grid.STANDARD, grid.plan(grid.STANDARD))
    assert ("ltm at 1000 tokens: 8 conditions, 131 answered (in 105 tests, the unit its accuracy "
            "is scored and paired on)") in standard


def test_grid_plan_prints_and_runs_nothing(tmp_path, capsys):
    from memlab import cli

    assert cli.main(["grid", "--spec", "quick", "--plan", "--results", str(tmp_path)]) == 0
    assert "paired difference" in capsys.readouterr().out  # what it detects, or that n is too few
    assert list(tmp_path.iterdir()) == []


def test_paths_follow_from_parameters(tmp_path):
    cell = RunSpec(condition="rag", suite="persona", span=2000, seed=3)
    assert cell.run_id == "persona-rag-2000-s3"
    params = grid.cell_parameters(cell, tmp_path)
    assert params["out_dir"] == str(tmp_path)
    assert RunSpec.parse({k: v for k, v in params.items() if k != "out_dir"}) == cell


def test_yaml_spec_loads_and_bad_field_is_named(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("name: mine\nconditions: [rag]\nsuites: [ltm]\nspans: {ltm: [500, 900]}\n"
                    "seeds: [0, 1]\n")
    assert len(grid.load_spec(path).cells()) == 4
    path.write_text("name: mine\nconditions: [ragg]\nspans: {ltm: [500]}\n")
    with pytest.raises(ConfigError, match="field 'conditions'.*ragg"):
        grid.load_spec(path)
    with pytest.raises(ConfigError, match="not a built-in spec"):
        grid.load_spec("nope")
    spec = grid.GridSpec(name="x", suites=["ltm", "persona"], spans={"ltm": [1]})
    with pytest.raises(ConfigError, match="persona"):
        spec.cells()


@pytest.mark.parametrize("yaml_text, message", [
    ("seed: [5]", "field 'seed': Extra inputs are not permitted"),
    ("llm: nosuchllm", "field 'llm'.*unknown LLM provider 'nosuchllm'"),
    ("embedder: nope", "field 'embedder'.*unknown embedder"),
    ("seeds: [0, 0]", "cells repeat \\(ltm-rag-500-s0\\)"),
    ("spans: {ltm: [0]}", "field 'span': Input should be greater than 0"),
    ("suite_options: {ltm: {colours: 3}}", "suite_options.*colours.*accepts: examples"),
])
def test_every_bad_spec_field_is_named_before_anything_runs(tmp_path, yaml_text, message):
    path = tmp_path / "g.yaml"
    base = {"name": "mine", "conditions": "[rag]", "suites": "[ltm]", "spans": "{ltm: [500]}"}
    key = yaml_text.split(":")[0]
    lines = [f"{k}: {v}" for k, v in base.items() if k != key] + [yaml_text]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=message):
        cells = grid.load_spec(path).cells()
        for cell in cells:  # the suite's own options are checked when it is built
            lab.build_suite(cell)


def test_complete_cells_are_skipped_without_executing(tmp_path, monkeypatch):
    cells = TINY.cells()
    for cell in cells:
        write_run(tmp_path, cell.condition, "ltm", 0, 300, spec=cell)  # complete, same spec
    monkeypatch.setattr("papermill.execute_notebook",
                        lambda *a, **k: pytest.fail("a complete cell was executed"))
    outcome = grid.run_grid(cells, tmp_path, progress=False)
    assert [r.status for r in outcome] == ["skipped"] * 3
    assert grid.execute_cell(cells[0], str(tmp_path), "unused.ipynb").status == "skipped"


def test_complete_ltm_cells_scored_by_another_scorer_set_are_named(tmp_path, capsys,
                                                                   monkeypatch):
    """A grid keeps a complete cell's scores; those another LTM scorer set wrote are named after
    the run, with how to score them anew, so a table that mixes two sets does not pass unseen."""
    from memlab import cli
    from memlab.bench.suites.ltm_scorers import run_scorers_id

    cells = TINY.cells()
    for cell in cells:
        write_run(tmp_path, cell.condition, "ltm", 0, 300, spec=cell)  # no scorers recorded
    current = cells[0].run_dir(tmp_path) / "manifest.json"
    manifest = json.loads(current.read_text())
    manifest["suite_params"]["scorers"] = run_scorers_id()
    current.write_text(json.dumps(manifest))
    assert grid.scored_by_others(cells, tmp_path) == [c.run_id for c in cells[1:]]
    monkeypatch.setattr("memlab.cli.runs._grid_cells", lambda args, name: (TINY, cells))
    assert cli.main(["grid", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "note: 2 complete LTM cell(s) were scored by another scorer set" in out
    assert cells[1].run_id in out and "delete a cell's scores.jsonl" in out


def test_a_complete_run_of_another_cell_is_not_skipped(tmp_path, monkeypatch):
    cell = TINY.cells()[0]
    other = cell.model_copy(update={"suite_options": {"examples": 3}})
    write_run(tmp_path, cell.condition, "ltm", 0, 300, spec=other)
    assert not is_complete(cell.run_dir(tmp_path), cell)
    executed = []
    monkeypatch.setattr("papermill.execute_notebook", lambda *a, **k: executed.append(k))
    assert grid.execute_cell(cell, str(tmp_path), "x.ipynb").status == "complete"
    assert len(executed) == 1 and executed[0]["parameters"]["suite_options"] == cell.suite_options


def test_kernel_start_failure_is_retried_but_a_notebook_error_is_not(tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError

    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr("papermill.execute_notebook", flaky)
    monkeypatch.setattr(grid.time, "sleep", lambda s: None)
    cell = TINY.cells()[0]
    result = grid.execute_cell(cell, str(tmp_path), "x.ipynb", retries=2)
    assert (result.status, result.attempts) == ("complete", 2)

    def broken(*args, **kwargs):
        calls.append(1)
        raise PapermillExecutionError(0, 1, "", "ConfigError", "parameter condition='x'", [])

    calls.clear()
    monkeypatch.setattr("papermill.execute_notebook", broken)
    result = grid.execute_cell(cell, str(tmp_path), "x.ipynb", retries=2)
    assert (result.status, len(calls)) == ("failed", 1)
    assert result.error == "ConfigError: parameter condition='x'"


def _outputs(folder, cells):
    out = {}
    for cell in cells:
        run = folder / cell.run_id
        manifest = json.loads((run / "manifest.json").read_text())
        turns = [json.loads(line) for line in (run / "turns.jsonl").read_text().splitlines()]
        out[cell.run_id] = (manifest["status"], (run / "scores.jsonl").read_text(),
                            [(t["index"], t["reply"], t["prompt_tokens"], t["memory_ids"])
                             for t in turns])
    return out


def test_process_pool_and_dask_local_cluster_give_the_same_results(tmp_path):
    distributed = pytest.importorskip("dask.distributed", reason="needs dask[distributed]")
    cells = TINY.cells()
    pool = grid.run_grid(cells, tmp_path / "pool", workers=2, progress=False)
    assert [r.status for r in pool] == ["complete"] * 3, [r.error for r in pool]
    # A synchronous Jupyter call in this thread leaves its event loop in a context variable
    # that Dask copies into both worker threads; each cell must still get a loop of its own.
    ensure_event_loop()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = grid.run_grid(cells, tmp_path / "dask", scheduler=client, progress=False)
    assert [r.status for r in dask] == ["complete"] * 3, [r.error for r in dask]
    assert (tmp_path / "dask" / "notebooks" / f"{cells[0].run_id}.ipynb").exists()
    assert _outputs(tmp_path / "pool", cells) == _outputs(tmp_path / "dask", cells)
    assert all(status == "complete" for status, _, _ in _outputs(tmp_path / "pool",
                                                                 cells).values())


# --- stopping a grid --------------------------------------------------------------------------

SLOW_CELL = """\
import json, os, pathlib, time
run = pathlib.Path(out_dir) / f"{suite}-{condition}-{span}-s{seed}"
run.mkdir(parents=True, exist_ok=True)
(run / "kernel.pid").write_text(str(os.getpid()))
os.write(2, b"the kernel's own output\\n")  # as llama.cpp writes: to the process's stderr
try:
    for tick in range(0 if seed == 0 else 600):  # seed 0 completes at once, the others run on
        (run / f"tick-{tick}").write_text("")
        time.sleep(0.2)
except BaseException:  # as bench.runner.run does: complete only at the end
    (run / "manifest.json").write_text(json.dumps({"status": "failed"}))
    raise
(run / "scores.jsonl").write_text("")
(run / "manifest.json").write_text(json.dumps({"status": "complete"}))
"""
SLOW_SPEC = ("name: stop\nconditions: [vanilla]\nsuites: [ltm]\nspans: {ltm: [300]}\n"
             "seeds: [0, 1, 2]\nllm: fake\nembedder: hashing\n")
# `memlab grid` running the slow notebook (argv[1]) instead of the shipped condition.ipynb.
LAUNCH = ("import sys; from functools import partial; from memlab import cli, grid; "
          "grid.run_grid = partial(grid.run_grid, notebook=sys.argv[1]); "
          "sys.exit(cli.main(sys.argv[2:]))")
RUNNING = ("ltm-vanilla-300-s1", "ltm-vanilla-300-s2")
PARAMETERS = [*RunSpec.model_fields, "out_dir"]


def _start_slow_grid(tmp_path):
    """`memlab grid` on 2 workers in tmp_path: s0 completes, s1 and s2 tick until stopped."""
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("\n".join(f"{name} = None" for name in PARAMETERS),
                                  metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(SLOW_CELL)], metadata={"kernelspec": {
            "name": "python3", "display_name": "Python 3", "language": "python"}})
    (tmp_path / "notebooks").mkdir()
    nbformat.write(notebook, tmp_path / "notebooks" / "condition.ipynb")
    (tmp_path / "stop.yaml").write_text(SLOW_SPEC)
    env = {k: v for k, v in os.environ.items() if k != "MEMLAB_DASK_SCHEDULER"}
    with open(tmp_path / "stdout", "wb") as out, open(tmp_path / "stderr", "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(tmp_path / "notebooks" / "condition.ipynb"),
             "grid", "--spec", "stop.yaml", "--results", "results", "--workers", "2"],
            cwd=tmp_path, env=env, stdout=out, stderr=err, start_new_session=True,
            # as from a terminal: a test run started in the background (``make test &``) ignores
            # SIGINT, the grid would inherit that, and Ctrl-C would never reach it
            preexec_fn=_default_stop_signals)


def _default_stop_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def _wait_for_running_cells(tmp_path, proc, timeout=60):
    """The kernels running s1 and s2, once both are ticking and s0 is complete."""
    import psutil

    results = tmp_path / "results"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ticking = all((results / run / "tick-0").exists() for run in RUNNING)
        if ticking and is_complete(results / "ltm-vanilla-300-s0"):
            return [psutil.Process(int((results / run / "kernel.pid").read_text()))
                    for run in RUNNING]
        assert proc.poll() is None, (tmp_path / "stderr").read_text()
        time.sleep(0.2)
    pytest.fail(f"the grid's cells did not start: {(tmp_path / 'stderr').read_text()}")


def _alive(processes):
    import psutil

    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_until_gone(processes, timeout):
    deadline = time.monotonic() + timeout
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive(processes)


def _in_folder(folder):
    """Every process whose working directory is ``folder`` (the grid, workers, kernels)."""
    import psutil

    return [p for p in psutil.process_iter(["cwd"]) if p.info["cwd"] == str(folder)]


def _files(folder):
    return {path: path.stat().st_mtime_ns for path in folder.rglob("*") if path.is_file()}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("signum", "whole_group"), [
    (signal.SIGINT, True), (signal.SIGINT, False), (signal.SIGTERM, False),
    (signal.SIGKILL, False)], ids=["ctrl-c", "sigint", "sigterm", "sigkill"])
def test_a_stopped_grid_leaves_no_process_and_keeps_only_complete_cells(tmp_path, signum,
                                                                         whole_group):
    """A terminal's Ctrl-C signals the grid and its workers (a kernel has its own session);
    the other cases signal the grid process only."""
    psutil = pytest.importorskip("psutil")  # installed with ipykernel
    proc = _start_slow_grid(tmp_path)
    tracked = []
    try:
        kernels = _wait_for_running_cells(tmp_path, proc)
        tracked = psutil.Process(proc.pid).children(recursive=True) + kernels
        assert len(tracked) >= 4  # 2 workers, 2 kernels (and the resource tracker)
        if whole_group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        returncode = proc.wait(timeout=20)
        # The grid waits for its workers; only the resource tracker may outlive it a moment.
        # After SIGKILL the workers notice on their own.
        assert not _wait_until_gone(tracked, 20 if signum == signal.SIGKILL else 3)
        assert not _alive(_in_folder(tmp_path))
    finally:
        for process in _alive(tracked + _in_folder(tmp_path)):
            process.kill()
    results = tmp_path / "results"
    written = _files(results)
    time.sleep(1)  # a surviving kernel would tick 5 times
    assert _files(results) == written
    assert is_complete(results / "ltm-vanilla-300-s0")
    # The kernels were shut down, not killed: the interrupted cells recorded their failure.
    assert [json.loads((results / run / "manifest.json").read_text()) for run in RUNNING] == [
        {"status": "failed"}] * 2
    if signum != signal.SIGKILL:
        stderr = (tmp_path / "stderr").read_text()
        assert returncode == 130, stderr
        assert "memlab grid: interrupted; the 1 complete cell(s)" in stderr
        # the kernels' own output (and ipykernel's tracebacks as a busy kernel is shut down)
        # goes to each cell's kernel log, not to the terminal
        assert "kernel's own output" not in stderr and "Traceback" not in stderr, stderr
        for run in RUNNING:
            log = results / "notebooks" / f"{run}.kernel.log"
            assert "the kernel's own output" in log.read_text()
        assert stderr.splitlines()[-1].endswith("are kept (running again skips them)")
