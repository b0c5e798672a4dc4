"""Bad input to memory over MCP: an unreachable server, a tool or argument the server lacks, a
tool answering garbage, a wrong setting. One line each, exit 1 (environment) or 2 (the user's
input), no traceback, and nothing already written changes."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_fakes import FOREIGN_OPTIONS, serve_foreign

from memlab import cli

pytest.importorskip("mcp")
RUN = ("run", "-c", "mcp", "-s", "ltm", "--span", "300", "--llm", "fake", "--embedder",
       "hashing")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def foreign():
    with serve_foreign() as (url, _notes):
        yield url


def options(**values: object) -> list[str]:
    return [arg for key, value in values.items() for arg in ("-o", f"{key}={value}")]


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def failed_run(capsys, out: Path, *args: str, started: bool = False) -> tuple[int, str]:
    """``memlab run -c mcp`` into ``out`` beside a file already there; its status and stderr
    line, after checking the file is unchanged and no result was written (``started``: the
    run began, so its manifest records the failure and its turns file is empty)."""
    out.mkdir(exist_ok=True)
    (out / "earlier.txt").write_text("results a user keeps\n")
    before = snapshot(out)
    status = cli.main([*RUN, "--out", str(out), *args])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k in before} == before
    run = out / "ltm-mcp-300-s0"
    assert not (run / "scores.jsonl").exists()
    if started:
        assert (run / "turns.jsonl").read_text() == ""
        assert json.loads((run / "manifest.json").read_text())["status"] == "failed"
    else:
        assert not (run / "turns.jsonl").exists() and not (run / "manifest.json").exists()
    return status, err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_is_an_environment_failure(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = subprocess.run([sys.executable, "-m", "memlab.cli", *RUN, "--out",
                           str(tmp_path / "runs"), *options(url=url, timeout=5)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("memlab run: failed: McpServerError") and url in done.stderr
    assert not list((tmp_path / "runs").rglob("turns.jsonl"))


def test_a_tool_the_server_lacks_is_named_with_the_ones_it_has(foreign, tmp_path, capsys):
    status, err = failed_run(capsys, tmp_path / "runs",
                             *options(url=foreign, **{**FOREIGN_OPTIONS, "search_tool": "find"}))
    assert status == 2
    assert "field 'options.search_tool'" in err and "no tool 'find'" in err
    assert "garbage, remember, search, wipe" in err


def test_an_argument_the_tool_lacks_is_named(foreign, tmp_path, capsys):
    status, err = failed_run(capsys, tmp_path / "runs",
                             *options(url=foreign, **{**FOREIGN_OPTIONS, "query_arg": "query"}))
    assert status == 2
    assert "field 'options.query_arg'" in err and "takes no argument 'query'" in err


def test_memlabs_default_tool_names_on_another_server_are_refused(foreign, tmp_path, capsys):
    status, err = failed_run(capsys, tmp_path / "runs", *options(url=foreign))
    assert status == 2 and "field 'options.ingest_tool'" in err and "no tool 'observe'" in err


def test_a_tool_answering_garbage_is_an_environment_failure(foreign, tmp_path, capsys):
    status, err = failed_run(capsys, tmp_path / "runs",
                             *options(url=foreign, **{**FOREIGN_OPTIONS, "search_tool": "garbage"}),
                             started=True)
    assert status == 1
    assert "tool 'garbage' returned what memlab cannot read as memories (a int: 42)" in err


@pytest.mark.parametrize(("given", "expected"), [
    ({"url": "ftp://x"}, "field 'memory_options': url: must be an http:// or https:// URL"),
    ({"url": "http://127.0.0.1:1/mcp", "timeout": -1},
     "field 'memory_options': timeout: Input should be greater than 0"),
    ({"url": "http://127.0.0.1:1/mcp", "command": "memlab mcp --transport stdio"},
     "give exactly one of url (streamable HTTP) and command (stdio)"),
    ({}, "give exactly one of url (streamable HTTP) and command (stdio)"),
])
def test_a_wrong_setting_is_named_before_anything_is_written(given, expected, tmp_path, capsys):
    status = cli.main([*RUN, "--out", str(tmp_path / "runs"), *options(**given)])
    err = capsys.readouterr().err
    assert status == 2 and expected in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_a_stdio_command_that_is_not_a_server_is_an_environment_failure(tmp_path, capsys):
    status, err = failed_run(capsys, tmp_path / "runs",
                             *options(command=f"{sys.executable} -c 'print(1)'", timeout=20))
    assert status == 1 and "memlab run: failed: McpServerError: MCP memory at stdio command" in err


def test_an_http_client_of_the_agent_server_may_not_point_a_session_at_a_server(tmp_path):
    from memlab.errors import ConfigError
    from memlab.server.sessions import check_options

    with pytest.raises(ConfigError, match="field 'options.url': not a setting of condition 'mcp'"):
        check_options("mcp", {"url": "http://10.0.0.1/mcp"})
    with pytest.raises(ConfigError, match="field 'options.command'"):
        check_options("mcp", {"command": "rm -rf /"})
