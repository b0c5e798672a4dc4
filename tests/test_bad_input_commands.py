"""User mistakes at the command line found in round 3 (issue 42, item 12): each ends with exit
status 2 and one line naming the file, field or option and the rule, before anything is
installed or written; a reader that leaves a pipe ends the command quietly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faults_helpers import digest, visible_lines
from test_report_fixtures import write_run

from memlab import cli
from memlab.report.data import run_dirs, runs_frame

RUN = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
       "--embedder", "hashing"]
RUN_ID = "ltm-vanilla-200-s0"
SPEC_OK = "name: mine\nspans: {ltm: [200]}\nconditions: [vanilla]\nsuites: [ltm]\n"


def fails(capsys, argv: list[str], code: int = 2) -> str:
    """Run ``memlab <argv>``, expect ``code`` and one line on stderr; return the line."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert status == code and len(lines) == 1 and "Traceback" not in err, (status, err)
    return lines[0]


# ---------------------------------------------------------------- (a) a spec's model fields
@pytest.mark.parametrize("field, value, option", [
    ("llm", "nosuchllm", ["--llm", "fake"]),
    ("memory_llm", "nosuchllm", ["--memory-llm", "fake"]),
    ("embedder", "nosuchembedder", ["--embedder", "hashing"]),
])
def test_a_specs_unknown_model_is_refused_even_when_the_command_line_names_one(
        field, value, option, work, capsys):
    """Failed before: ``--llm fake`` replaced the spec's ``llm: nosuchllm`` unchecked."""
    (work / "spec.yaml").write_text(SPEC_OK + f"{field}: {value}\n")
    line = fails(capsys, ["grid", "--spec", "spec.yaml", "--plan", *option])
    assert "spec.yaml" in line and f"field '{field}'" in line and value in line, line


# ---------------------------------------------------------------- (b) a run inside a run
@pytest.fixture
def finished(work) -> Path:
    """out/<RUN_ID>: a complete run made by ``memlab run``."""
    assert cli.main([*RUN, "--out", "out"]) == 0
    return work / "out" / RUN_ID


@pytest.mark.parametrize("argv", [
    [*RUN, "--out", f"out/{RUN_ID}"],
    [*RUN, "--out", f"out/{RUN_ID}/deeper"],
    ["grid", "--spec", "spec.yaml", "--llm", "fake", "--embedder", "hashing", "--results",
     f"out/{RUN_ID}"],
], ids=["run-out-is-a-run", "run-out-below-a-run", "grid-results-is-a-run"])
def test_a_run_inside_another_runs_folder_is_refused(argv, finished, work, capsys):
    """Failed before: the nested run was written, and reports then found it twice."""
    (work / "spec.yaml").write_text(SPEC_OK)
    capsys.readouterr()
    before = digest(work / "out")
    line = fails(capsys, argv)
    assert "inside the run folder" in line and str(finished) in line, line
    assert digest(work / "out") == before


def test_a_run_nested_in_another_is_reported_once(work):
    """Failed before: a run copied inside another run's folder was read as a second run."""
    outer = write_run(work / "results", "rag", "ltm", 0, 1000)
    shutil.copytree(outer, outer / "copy")
    assert run_dirs(work / "results") == [outer]
    assert len(runs_frame(work / "results")) == 1


# ---------------------------------------------------------------- (c) --workdir a file
@pytest.mark.parametrize("argv, option", [
    (["docqa", "ingest", "docs", "--workdir", "afile"], "--workdir"),
    (["docqa", "ask", "why?", "--workdir", "afile"], "--workdir"),
    (["taskforce", "run", "Compute 2 + 3", "--workdir", "afile"], "--workdir"),
    (["taskforce", "resume", "abc", "--workdir", "afile"], "--workdir"),
    (["decide", "input.json", "--out", "afile"], "--out"),
])
def test_a_file_given_as_a_folder_option_is_named(argv, option, work, capsys, monkeypatch):
    """Failed before: "Not a directory" / "File exists" without the option."""
    from test_decision_debate import USER

    def no_model(*_args, **_kwargs):
        raise AssertionError("a bad folder must be refused before a model loads")

    monkeypatch.setattr("memlab.lab.make_llm", no_model)
    (work / "afile").write_text("mine\n")
    (work / "docs").mkdir()
    (work / "docs" / "a.md").write_text("Balance comes from the inner ear and the feet.\n")
    (work / "input.json").write_text(json.dumps(USER))
    line = fails(capsys, [*argv, "--embedder", "hashing"])
    assert f"{option} 'afile'" in line and "is a file" in line, line
    assert (work / "afile").read_text() == "mine\n"


# ---------------------------------------------------------------- (d) goodai-run's order
def test_goodai_run_checks_the_definitions_before_installing(work, capsys, monkeypatch):
    """Failed before: the checkout was copied and its venv installed (45 s) first."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # before the fix: fail fast, after the copy
    src = work / "goodai-src"
    (src / "runner").mkdir(parents=True)
    (src / "runner" / "run_benchmark.py").write_text("print('GoodAI')\n")
    (work / "definitions").mkdir()
    line = fails(capsys, ["goodai-run", "--goodai-src", str(src), "--definitions",
                          "definitions", "--home", "home"])
    assert "definitions: no config.yml" in line, line
    assert not (work / "home").exists()


@pytest.mark.parametrize("extra, words", [
    (["--run-name", "../../escape"], ["--run-name '../../escape'", "plain name"]),
    (["--types", "colours,telepathy"], ["--types", "telepathy", "known: colours"]),
])
def test_goodai_run_refuses_a_bad_run_name_or_type_before_installing(extra, words, work,
                                                                     capsys):
    src = work / "goodai-src"
    (src / "runner").mkdir(parents=True)
    (src / "runner" / "run_benchmark.py").write_text("print('GoodAI')\n")
    line = fails(capsys, ["goodai-run", "--goodai-src", str(src), "--definitions",
                          "definitions", "--home", "home", *extra])
    assert all(word in line for word in words), line
    assert not (work / "home").exists()


# ---------------------------------------------------------------- (e) a reader that leaves
@pytest.mark.parametrize("argv", [["conditions"], ["grid", "--plan", "--llm", "fake"]])
def test_a_closed_pipe_ends_the_command_quietly(argv, tmp_path):
    """Failed before: ``memlab conditions | head -1`` printed "failed: Broken pipe" (exit 1).

    The pipe's reader is closed before the command writes, as ``head`` does once it has its
    line, so every write meets EPIPE whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "memlab.cli", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "MEMLAB_CACHE_DIR": str(tmp_path / "c")})
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode == 141, done.stderr
