"""`memlab replay` on real committed records: four cells of records/peers (LTM and persona, rag and
mem0, an LTM cell whose jokes are judged by recorded model calls) replayed into their tables,
compared byte for byte with the tables committed for them in tests/replay_tables/ (written by
`memlab replay <those four cells> --update`). The local model's tokenizer rebuilds the suites;
no model call is made (a call the journals do not hold stops the replay)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab import cli
from memlab.errors import MissingDependencyError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "records" / "peers"
TABLES = Path(__file__).parent / "replay_tables"
CELLS = ("ltm-mem0-1000-s0", "ltm-rag-1000-s0", "persona-mem0-4000-s0", "persona-rag-4000-s0")


@pytest.fixture(scope="module", autouse=True)
def model():
    """The 1.5B model whose tokenizer the suites are counted in (loaded once, never called)."""
    from services import require_or_skip

    from memlab.lab import make_llm

    try:
        return make_llm("local", "1.5b", llm_cache=False)
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


@pytest.fixture
def records(tmp_path) -> Path:
    """A copy of the four cells' records and their committed tables."""
    root = tmp_path / "records" / "peers-4"
    for cell in CELLS:
        shutil.copytree(PEERS / cell, root / cell)
    shutil.copytree(TABLES, root / "tables")
    return root


def replay(records: Path, out: Path, capsys, *extra: str) -> tuple[int, str, str]:
    status = cli.main(["replay", str(records), "--out", str(out), *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def edit_jsonl(path: Path, change) -> None:
    """Rewrite ``path`` with ``change(record)`` applied to each record (None drops it)."""
    rows = [change(json.loads(line)) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r is not None))


def test_replay_writes_the_committed_tables_byte_for_byte(records, tmp_path, capsys):
    calls = {c: (records / c / "calls.jsonl").read_bytes() for c in CELLS}
    status, out, err = replay(records, tmp_path / "out", capsys, "--check")
    assert status == 0, err
    assert "4 cells scored" in out and "0 model calls" in out and "check passed" in out
    written = tmp_path / "out" / "figures" / "tables"
    assert sorted(p.name for p in written.iterdir()) == sorted(p.name for p in TABLES.iterdir())
    assert all((written / p.name).read_bytes() == p.read_bytes() for p in TABLES.iterdir())
    assert (tmp_path / "out" / "figures" / "peers.png").stat().st_size > 0
    copied = tmp_path / "out" / "runs"
    assert all((copied / c / "calls.jsonl").read_bytes() == calls[c] for c in CELLS)
    judged = [json.loads(line) for line in (copied / "ltm-rag-1000-s0" / "scores.jsonl")
              .read_text().splitlines() if '"jokes/' in line]
    assert judged and all(s["judge"] == "llm" for s in judged)  # answered from calls.jsonl


def test_a_changed_answer_fails_the_check_naming_the_table(records, tmp_path, capsys):
    turns = records / "persona-rag-4000-s0" / "turns.jsonl"
    first = next(json.loads(line) for line in turns.read_text().splitlines()
                 if '"kind": "question"' in line and '"answered": true' in line)
    right = first["choice"] == first["answer_index"]  # flip it: right to wrong, wrong to right
    flipped = (first["answer_index"] + 1) % len(first["options"]) if right else \
        first["answer_index"]
    edit_jsonl(turns, lambda t: t | {"choice": flipped} if t["index"] == first["index"] else t)
    status, _, err = replay(records, tmp_path / "out", capsys, "--check")
    assert status == 1
    line = err.strip()
    assert "\n" not in line and "check failed" in line and "line" in line
    assert str(records / "tables") in line  # names the committed table that differs


def test_a_table_edited_by_hand_fails_the_check(records, tmp_path, capsys):
    peers = records / "tables" / "peers.md"
    peers.write_text(peers.read_text().replace("| rag ", "| RAG ", 1))
    status, _, err = replay(records, tmp_path / "out", capsys, "--check")
    assert status == 1 and f"{peers}: line" in err


def test_a_call_missing_from_the_journal_stops_the_replay_without_the_model(records, tmp_path,
                                                                          capsys, model):
    calls = records / "ltm-rag-1000-s0" / "calls.jsonl"
    last = json.loads(calls.read_text().splitlines()[-1])["step"]  # the judge's calls
    edit_jsonl(calls, lambda c: None if c["step"] == last and c["ordinal"] > 0 else c)
    before = model.calls
    status, _, err = replay(records, tmp_path / "out", capsys)
    assert status == 1 and "LiveCallError" in err and "does not hold" in err
    assert str(tmp_path / "out" / "runs" / "ltm-rag-1000-s0" / "calls.jsonl") in err
    assert model.calls == before  # the model was not asked


@pytest.mark.parametrize("damage, rule", [
    (lambda cell: (cell / "calls.jsonl").unlink(), "calls.jsonl: missing"),
    (lambda cell: edit_jsonl(cell / "turns.jsonl", lambda t: t | {"text": "x"}),
     "turns.jsonl: line 1"),
])
def test_bad_records_exit_2_in_one_line(records, tmp_path, capsys, damage, rule):
    damage(records / "ltm-rag-1000-s0")
    status, _, err = replay(records, tmp_path / "out", capsys)
    assert status == 2 and err.count("\n") == 1 and rule in err and "Traceback" not in err


def test_unfinished_records_and_a_used_out_folder_are_refused(records, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    status, _, err = replay(records, out, capsys)
    assert status == 2 and "not empty" in err and (out / "keep.txt").exists()
    manifest = records / "ltm-rag-1000-s0" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"status": "complete"',
                                                     '"status": "running"'))
    status, _, err = replay(records, tmp_path / "out2", capsys)
    assert status == 2 and f"{manifest}: status 'running'" in err


def test_the_locomo_label_cells_replay_into_their_judges_tables(tmp_path, capsys, monkeypatch):
    """records/locomo-labels (oracle, vanilla and rag on LoCoMo conv-26 and conv-30, 210
    answers labelled by hand in data/locomo_labels.jsonl): the replay writes LoCoMo's tables
    (both judges, F1, the judges measured against the labels) byte for byte as committed, with
    the verdicts answered from the cells' journals; a label edited by hand fails the check."""
    records = REPO / "records" / "locomo-labels"
    monkeypatch.chdir(REPO)  # the label file is found where the lab keeps it
    status, out, err = replay(records, tmp_path / "out", capsys, "--check")
    assert status == 0, err
    assert "3 cells scored" in out and "0 model calls" in out and "check passed" in out
    judges = (records / "tables" / "locomo_judges.md").read_text()
    assert "J matched (rule, else strict)" in judges and "hand labels" in judges
    labels = (REPO / "data" / "locomo_labels.jsonl").read_text().splitlines()
    flipped = [line.replace('"label": "WRONG"', '"label": "CORRECT"', 1) if i == 0 else line
               for i, line in enumerate(labels)]
    assert flipped != labels
    edited = tmp_path / "labels.jsonl"
    edited.write_text("\n".join(flipped) + "\n")
    monkeypatch.setenv("MEMLAB_LOCOMO_LABELS", str(edited))  # read afresh by each replay
    status, _, err = replay(records, tmp_path / "again", capsys, "--check")
    assert status == 1 and "locomo_judges" in err


def test_locomo_records_replay_elsewhere_from_a_named_copy_of_their_data(tmp_path, capsys,
                                                                         monkeypatch):
    """A LoCoMo cell records its data as ../shared/...: replayed from a folder where that path
    does not resolve, it reads MEMLAB_LOCOMO_DATA when that file has the recorded sha256, and
    refuses (exit 2, one line) with no copy named or with another file."""
    cell = "locomo-vanilla-26000-s0"
    records = tmp_path / "copy" / "records" / "one"
    shutil.copytree(REPO / "records" / "locomo" / cell, records / cell)
    monkeypatch.chdir(tmp_path / "copy")  # ../shared/data/locomo/locomo10.json is not here
    monkeypatch.delenv("MEMLAB_LOCOMO_DATA", raising=False)
    status, _, err = replay(records, tmp_path / "none", capsys)
    assert status == 2 and "is not a file here" in err and "MEMLAB_LOCOMO_DATA" in err
    assert len(err.strip().splitlines()) == 1
    data = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
    other = tmp_path / "other.json"
    other.write_text(data.read_text(encoding="utf-8") + " ", encoding="utf-8")
    monkeypatch.setenv("MEMLAB_LOCOMO_DATA", str(other))
    status, _, err = replay(records, tmp_path / "other", capsys)
    assert status == 2 and "sha256 must be" in err
    monkeypatch.setenv("MEMLAB_LOCOMO_DATA", str(data))
    status, out, err = replay(records, tmp_path / "out", capsys)
    assert status == 0, err
    assert "1 cells scored" in out and "0 model calls" in out
    scores = (tmp_path / "out" / "runs" / cell / "scores.jsonl").read_text().splitlines()
    assert len(scores) == 1540  # evidence recall on every question, 320 of them answered


@pytest.fixture
def change(tmp_path) -> Path:
    """Records of a change: persona-rag-4000-s0 "run again", one right answer now wrong, with a
    before.json naming the two persona cells of records/peers as the grid it changes."""
    before, after = tmp_path / "records" / "before", tmp_path / "records" / "after"
    for cell in ("persona-mem0-4000-s0", "persona-rag-4000-s0"):
        shutil.copytree(PEERS / cell, before / cell)
    shutil.copytree(PEERS / "persona-rag-4000-s0", after / "persona-rag-4000-s0")
    turns = after / "persona-rag-4000-s0" / "turns.jsonl"
    right = next(t for t in map(json.loads, turns.read_text().splitlines())
                 if t["kind"] == "question" and t["answered"] and t["choice"] == t["answer_index"])
    wrong = (right["answer_index"] + 1) % len(right["options"])
    edit_jsonl(turns, lambda t: t | {"choice": wrong} if t["index"] == right["index"] else t)
    (after / "before.json").write_text('{"records": "../before"}')
    return after


def test_records_of_a_change_replay_into_the_paired_change_table(change, tmp_path, capsys):
    status, out, err = replay(change, tmp_path / "out", capsys, "--update")
    assert status == 0, err
    table = __import__("pandas").read_csv(change / "tables" / "change.csv")
    accuracy = table[table["measure"] == "accuracy"].iloc[0]
    assert accuracy["condition"] == "rag" and accuracy["suite"] == "persona"
    assert (accuracy["before_better"], accuracy["after_better"]) == (1, 0)  # the flipped answer
    assert accuracy["difference"] == pytest.approx(-1 / accuracy["n_pairs"])
    assert accuracy["before"] - accuracy["after"] == pytest.approx(1 / accuracy["n_pairs"])
    recall = table[table["measure"] == "evidence recall"].iloc[0]
    assert recall["difference"] == 0 and recall["n_pairs"] > 0  # the same memory, the same prompts
    assert set(table["condition"]) == {"rag"}  # only the conditions run again
    status, out, err = replay(change, tmp_path / "again", capsys, "--check")
    assert status == 0 and "check passed" in out, err


@pytest.mark.parametrize("text", ['{"records": "/abs"}', '["../before"]', '{"records": "../nowhere"}',
                                  "{not json"])
def test_a_bad_before_json_exits_2_in_one_line(change, tmp_path, capsys, text):
    (change / "before.json").write_text(text)
    status, _, err = replay(change, tmp_path / "out", capsys)
    assert status == 2 and err.count("\n") == 1 and "before.json" in err
    assert not (tmp_path / "out").exists()  # refused before anything is written
