"""`memlab rebuild`: a recorded cell run again from its journal with no model call, its memory's
store back on disk, every turn checked against the recorded one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab import cli
from memlab.records import RECORD_FILES

RUN_ID = "persona-hybrid-600-s0"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A finished hybrid run (FakeLLM, hashing embedder; hybrid makes its own model calls),
    kept as a grid's records keep a cell: its three files only."""
    root = tmp_path_factory.mktemp("recorded")
    assert cli.main(["run", "-c", "hybrid", "-s", "persona", "--span", "600", "--llm", "fake",
                     "--embedder", "hashing", "--out", str(root / "results")]) == 0
    cell = root / "records" / "grid" / RUN_ID
    cell.mkdir(parents=True)
    for name in RECORD_FILES:
        shutil.copyfile(root / "results" / RUN_ID / name, cell / name)
    return cell


@pytest.fixture
def cell(recorded, tmp_path) -> Path:
    copy = tmp_path / "records" / RUN_ID
    shutil.copytree(recorded, copy)
    return copy


def rebuild(cell: Path, out: Path, capsys) -> tuple[int, str]:
    status = cli.main(["rebuild", str(cell), "--out", str(out)])
    return status, capsys.readouterr().err


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_a_rebuild_runs_every_turn_again_from_the_journal_and_keeps_the_store(cell, tmp_path,
                                                                                 capsys):
    status, err = rebuild(cell, tmp_path / "out", capsys)
    assert status == 0, err
    run = tmp_path / "out" / RUN_ID
    assert (run / "turns.jsonl").read_bytes() == (cell / "turns.jsonl").read_bytes()
    assert (run / "calls.jsonl").read_bytes() == (cell / "calls.jsonl").read_bytes()
    after, before = manifest(run), manifest(cell)
    assert after["status"] == "complete" and after["counts"]["diverged_turns"] == []
    assert after["counts"]["llm_calls_replayed"] == lines(cell / "calls.jsonl")  # every call
    assert after["counts"]["llm_calls_paid"] == before["counts"]["llm_calls_paid"]  # none new
    assert after["memory_size"] == before["memory_size"] and before["memory_size"]["items"] > 0
    assert list((run / "store").glob("attempt-*/*"))  # the memory's files, back on disk
    assert (run / "scores.jsonl").is_file()


def test_a_call_the_journal_lacks_stops_the_rebuild_and_reaches_no_model(cell, tmp_path, capsys):
    calls = (cell / "calls.jsonl").read_text().splitlines()
    memory = [i for i, line in enumerate(calls) if json.loads(line)["step"] != "main:0"]
    del calls[memory[len(memory) // 2]]  # one of the memory's calls, midway through the run
    (cell / "calls.jsonl").write_text("".join(line + "\n" for line in calls))
    status, err = rebuild(cell, tmp_path / "out", capsys)
    said = [line for line in err.replace("\r", "\n").splitlines()
            if line.strip() and not line.startswith("persona/hybrid:")]  # the progress bar's
    assert status == 1 and "Traceback" not in err and len(said) == 1
    assert "LiveCallError" in said[0] or "other than recorded" in said[0]
    assert (tmp_path / "out" / RUN_ID / "calls.jsonl").read_bytes() == (
        cell / "calls.jsonl").read_bytes()  # nothing appended: no model answered


def test_records_of_other_prompts_are_refused_naming_what_differs(cell, tmp_path, capsys):
    edited = manifest(cell)
    edited["prompts"]["agent"] = "0000000000000000"
    (cell / "manifest.json").write_text(json.dumps(edited))
    status, err = rebuild(cell, tmp_path / "out", capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "prompts.agent: recorded '0000000000000000'" in err and edited["git_commit"] in err
    assert not (tmp_path / "out" / RUN_ID).exists()  # its copies are removed


@pytest.mark.parametrize("damage, says", [
    (lambda cell: (cell / "calls.jsonl").unlink(), "calls.jsonl: missing"),
    (lambda cell: (cell / "manifest.json").write_text(json.dumps(
        {**manifest(cell), "status": "running"})), "status 'running', not 'complete'"),
])
def test_an_incomplete_cell_is_refused_in_one_line(cell, tmp_path, capsys, damage, says):
    damage(cell)
    status, err = rebuild(cell, tmp_path / "out", capsys)
    assert status == 2 and says in err and len(err.strip().splitlines()) == 1


def test_a_folder_already_holding_the_cell_is_refused(cell, tmp_path, capsys):
    (tmp_path / "out" / RUN_ID).mkdir(parents=True)
    (tmp_path / "out" / RUN_ID / "notes.txt").write_text("mine")
    status, err = rebuild(cell, tmp_path / "out", capsys)
    assert status == 2 and "is not empty" in err
    assert (tmp_path / "out" / RUN_ID / "notes.txt").read_text() == "mine"


def test_a_refusal_leaves_the_callers_empty_folder_in_place(cell, tmp_path, capsys):
    edited = manifest(cell)
    edited["prompts"]["agent"] = "0000000000000000"
    (cell / "manifest.json").write_text(json.dumps(edited))
    (tmp_path / "out" / RUN_ID).mkdir(parents=True)  # made by the caller, empty
    status, _ = rebuild(cell, tmp_path / "out", capsys)
    assert status == 2 and (tmp_path / "out" / RUN_ID).is_dir()
    assert not any((tmp_path / "out" / RUN_ID).iterdir())  # its copies gone, the folder kept
