"""The papermill grid: specs as data, skipping complete cells, retries, process pool vs Dask."""

from __future__ import annotations

import json

import pytest
from test_report_fixtures import write_run

from memlab import grid
from memlab.errors import ConfigError
from memlab.memory.base import CONDITIONS

TINY = grid.GridSpec(name="tiny", conditions=["vanilla", "full_context", "rag"], suites=["ltm"],
                     spans={"ltm": [300]}, llm="fake", embedder="hashing",
                     suite_options={"ltm": {"examples": 1, "types": ["colours", "shopping"]}})


def test_quick_spec_covers_all_conditions_on_both_suites():
    cells = grid.QUICK.cells()
    assert len(cells) == 14
    assert {(c.condition, c.suite) for c in cells} == {
        (c, s) for c in CONDITIONS for s in ("ltm", "persona")}
    assert [c.probes_sleep for c in cells].count(True) == 2  # the sleep cells run Table 2
    assert grid.FULL.expected_minutes and len(grid.FULL.cells()) > len(cells)
    assert all(c.llm == "local" and c.embedder == "minilm" for c in cells)


def test_paths_follow_from_parameters(tmp_path):
    cell = grid.Cell(condition="rag", suite="persona", span=2000, seed=3)
    assert cell.run_id == "persona-rag-2000-s3"
    params = cell.parameters(tmp_path)
    assert params["out_dir"] == str(tmp_path) and params["run_id"] == cell.run_id


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


def test_complete_cells_are_skipped_without_executing(tmp_path, monkeypatch):
    cells = TINY.cells()
    for cell in cells:
        write_run(tmp_path, cell.condition, "ltm", 0, 300)  # same run_id, status complete
    monkeypatch.setattr("papermill.execute_notebook",
                        lambda *a, **k: pytest.fail("a complete cell was executed"))
    outcome = grid.run_grid(cells, tmp_path, progress=False)
    assert [r.status for r in outcome] == ["skipped"] * 3
    assert grid.execute_cell(cells[0], str(tmp_path), "unused.ipynb").status == "skipped"


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
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = grid.run_grid(cells, tmp_path / "dask", scheduler=client, progress=False)
    assert [r.status for r in dask] == ["complete"] * 3, [r.error for r in dask]
    assert (tmp_path / "dask" / "notebooks" / f"{cells[0].run_id}.ipynb").exists()
    assert _outputs(tmp_path / "pool", cells) == _outputs(tmp_path / "dask", cells)
    assert all(status == "complete" for status, _, _ in _outputs(tmp_path / "pool",
                                                                 cells).values())
