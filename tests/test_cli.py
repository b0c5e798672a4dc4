"""The memlab command (exit codes, one-line user errors); the agent server is in test_server*.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_fixtures import write_results, write_run

from memlab import cli, grid


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_help_teaches_and_exits_zero():
    done = run_cli("--help")
    assert done.returncode == 0
    for command in ("run", "grid", "paper", "lab", "goodai-rescore", "goodai-run", "serve"):
        assert command in done.stdout
    assert "example" in run_cli("grid", "--help").stdout


@pytest.mark.parametrize("args, expected", [
    (("run", "-c", "nope", "-s", "ltm"),
     "argument -c/--condition: unknown memory condition 'nope'; known: vanilla"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "-5", "--llm", "fake"),
     "argument --span: must not be negative, got -5"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "1e8", "--llm", "fake"),
     "argument --span: must be a whole number, got '1e8'"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "200000", "--llm", "fake"),
     "field 'span': Input should be less than or equal to 131072"),
    (("run", "-c", "rag", "-s", "ltm", "-o", "colour=3", "--llm", "fake", "--embedder",
      "hashing"), "option 'colour': neither suite 'ltm' (examples, types, type_args) nor "
     "condition 'rag' ("),
    (("run", "-c", "rag", "-s", "ltm", "-o", "sim_min_score=0.4", "--llm", "fake"),
     "nor condition 'rag' ("),
    (("run", "-c", "rag", "-s", "ltm", "-o", "examples", "--llm", "fake"),
     "option 'examples': expected KEY=VALUE"),
    (("grid", "--workers", "-3"), "argument --workers: must not be negative"),
    (("grid", "--seeds", "0,0", "--llm", "fake"), "cells repeat"),
    (("grid", "--spec", "missing.yaml"), "not a built-in spec"),
    (("grid", "--conditions", "rag,nope"), "field 'conditions'"),
    (("goodai-rescore", "no/such/dir"), "results folder 'no/such/dir': no such folder"),
    (("goodai-rescore", __file__), f"results folder '{__file__}': is a file, not a folder"),
])
def test_user_errors_exit_2_with_one_line(args, expected):
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_argparse_errors_exit_2():
    assert run_cli("frobnicate").returncode == 2
    assert run_cli("run").returncode == 2  # --condition missing


def test_lab_without_jupyterlab_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: None)
    assert cli.main(["lab"]) == 2
    assert "pip install 'memlab[lab]'" in capsys.readouterr().err


def test_run_executes_one_condition(tmp_path, capsys):
    status = cli.main(["run", "-c", "vanilla", "-s", "ltm", "--span", "300", "--llm", "fake",
                       "--embedder", "hashing", "--out", str(tmp_path / "r")])
    assert status == 0
    manifest = json.loads((tmp_path / "r" / "ltm-vanilla-300-s0" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert "ltm-vanilla-300-s0" in capsys.readouterr().out


def test_paper_skips_complete_cells_and_writes_figures(tmp_path, capsys):
    results = write_results(tmp_path / "results", seeds=(0,), spans=tuple(grid.QUICK.spans["ltm"]),
                            persona_span=grid.QUICK.spans["persona"][0])
    for cell in grid.QUICK.cells(llm="fake", embedder="hashing"):  # as the grid records them
        write_run(results, cell.condition, cell.suite, cell.seed, cell.span,
                  probes=cell.probes_sleep, spec=cell)
    status = cli.main(["paper", "--results", str(results), "--figures", str(tmp_path / "fig"),
                       "--llm", "fake", "--embedder", "hashing"])
    assert status == 0
    assert f"0 run, {len(grid.QUICK.cells())} skipped" in capsys.readouterr().out
    assert (tmp_path / "fig" / "accuracy_vs_tokens.png").stat().st_size > 10_000
    assert (tmp_path / "fig" / "tables" / "table1.csv").exists()


def test_goodai_rescore_prints_a_report(capsys):
    folder = Path(__file__).resolve().parents[2] / "shared" / "data" / "goodai-ltm-v3-1k"
    if not folder.is_dir():
        pytest.skip(f"published GoodAI results not found at {folder}")
    assert cli.main(["goodai-rescore", str(folder)]) == 0
    assert "Conformance" in capsys.readouterr().out


def test_paper_no_run_writes_the_complete_cells_paper_and_runs_none(tmp_path, capsys):
    """A long grid's interim look: one cell of the quick grid complete, the rest not started;
    --no-run writes the figures from that cell and starts no other."""
    results = tmp_path / "results"
    cells = grid.QUICK.cells(llm="fake", embedder="hashing")
    first = next(c for c in cells if c.condition == "rag" and c.suite == "ltm")
    write_run(results, first.condition, first.suite, first.seed, first.span, spec=first)
    status = cli.main(["paper", "--no-run", "--results", str(results), "--figures",
                       str(tmp_path / "fig"), "--llm", "fake", "--embedder", "hashing"])
    assert status == 0
    assert f"1 of {len(cells)} cells of grid quick complete" in capsys.readouterr().out
    assert sorted(p.name for p in results.iterdir() if p.name != "notebooks") == [first.run_id]
    assert (tmp_path / "fig" / "tables" / "overview.csv").exists()


def test_paper_no_run_without_a_complete_cell_is_one_line_exit_2(tmp_path, capsys):
    status = cli.main(["paper", "--no-run", "--results", str(tmp_path / "empty"),
                       "--figures", str(tmp_path / "fig")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "no cell of grid 'quick'" in err, err
    assert not (tmp_path / "empty").exists()  # nothing written where nothing was
