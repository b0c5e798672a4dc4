"""The memlab command (exit codes, one-line user errors) and the HTTP agent wrapper."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_report_fixtures import write_results, write_run

from memlab import cli, grid
from memlab.agent import Agent
from memlab.llm.fake import FakeLLM
from memlab.memory.base import MEMORIES, Scope
from memlab.server import AgentServer


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
    for command in ("run", "grid", "paper", "lab", "goodai-rescore", "serve"):
        assert command in done.stdout
    assert "example" in run_cli("grid", "--help").stdout


@pytest.mark.parametrize("args, expected", [
    (("run", "-c", "nope", "-s", "ltm"), "argument -c/--condition: invalid choice: 'nope'"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "-5", "--llm", "fake"),
     "argument --span: must not be negative, got -5"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "1e8", "--llm", "fake"),
     "argument --span: must be a whole number, got '1e8'"),
    (("run", "-c", "rag", "-s", "ltm", "--span", "200000", "--llm", "fake"),
     "field 'span': Input should be less than or equal to 131072"),
    (("grid", "--workers", "-3"), "argument --workers: must not be negative"),
    (("grid", "--seeds", "0,0", "--llm", "fake"), "cells repeat"),
    (("grid", "--spec", "missing.yaml"), "not a built-in spec"),
    (("grid", "--conditions", "rag,nope"), "field 'conditions'"),
    (("goodai-rescore", "no/such/dir"), "does not exist"),
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


# ---------------------------------------------------------------- server
@pytest.fixture
def server(tmp_path):
    memory = MEMORIES.create("vanilla", scope=Scope(user_id="u"), workdir=tmp_path)
    srv = AgentServer(Agent(memory, FakeLLM(["hello Ana"])), port=0, condition="vanilla")
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_server_answers_a_turn_payload(server):
    status, body = post(f"{server.url}/turn", b'{"history": "", "message": "Hi, I am Ana."}')
    assert status == 200 and body["reply"] == "hello Ana"
    assert body["prompt_tokens"] > 0 and "memory_latency_s" in body
    with urllib.request.urlopen(f"{server.url}/health", timeout=10) as response:
        assert json.loads(response.read())["turns"] == 1


@pytest.mark.parametrize("body, field", [
    (b'{"history": ""}', "field 'message'"),
    (b'{"history": "", "message": 5}', "field 'message'"),
    (b'{"message": "hi"}', "field 'history'"),
    (b'{"history": "", "message": "hi", "extra": 1}', "field 'extra'"),
    (b"not json", "field 'body'"),
])
def test_server_rejects_bad_payloads_naming_the_field(server, body, field):
    status, answer = post(f"{server.url}/turn", body)
    assert status == 400 and field in answer["error"]
