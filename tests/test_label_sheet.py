"""``memlab labels``: a blind, seeded sheet of LoCoMo answers to label by hand, the labels read
back, and each judge measured against them (issue 44 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab import lab
from memlab.cli import main
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.report.label_sheet import SHEET_FIELDS
from memlab.report.literature import questions_frame

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"
ANSWERS = {"vanilla": "strength", "oracle": "love, faith and strength"}


def scripted(answer: str):
    def reply(messages):
        text = messages[-1].content
        if "Gold answer:" not in text:
            return answer
        return '{"label": "%s"}' % ("CORRECT" if "faith" in text.split("Generated answer:")[1]
                                    else "WRONG")
    return reply


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for condition, answer in ANSWERS.items():
        spec = lab.RunSpec(suite="locomo", condition=condition, span=4000, llm="fake",
                           embedder="hashing", suite_options={"data": str(MINI)})
        lab.run(spec, root, llm=FakeLLM([scripted(answer)]), embedder=HashingEmbedder(),
                progress=False)
    return root


def sheet(root: Path, out: Path, *extra: str, per: int = 3, seed: int = 0) -> list[dict]:
    assert main(["labels", "sheet", str(root), "--conditions", "oracle,vanilla",
                 "--per-condition", str(per), "--seed", str(seed), "--out", str(out),
                 *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_sheet_holds_the_runs_answers_with_their_questions_and_no_verdict(root, tmp_path):
    rows = sheet(root, tmp_path / "s.jsonl")
    assert len(rows) == 6 and all(list(r) == list(SHEET_FIELDS) for r in rows)
    assert {r["condition"] for r in rows} == {"oracle", "vanilla"}
    assert all(r["label"] == "" and r["reason"] == "" for r in rows)
    questions = questions_frame(root, "locomo").set_index(["condition", "test_id"])
    data = {f"{c['sample_id']}:q{n}": q for c in json.loads(MINI.read_text())
            for n, q in enumerate(c["qa"])}
    for row in rows:
        assert row["answer"] == ANSWERS[row["condition"]]
        assert row["question"] == data[row["test_id"]]["question"]
        assert row["gold"] == str(data[row["test_id"]]["answer"])
        assert data[row["test_id"]]["category"] != 5
        assert bool(questions.loc[(row["condition"], row["test_id"]), "answered"])


def test_the_same_seed_gives_the_same_sheet_and_other_seeds_other_samples(root, tmp_path):
    first = sheet(root, tmp_path / "a.jsonl")
    assert sheet(root, tmp_path / "b.jsonl") == first
    drawn = {tuple((r["condition"], r["test_id"]) for r in sheet(root, tmp_path / f"{s}.jsonl",
                                                                 seed=s)) for s in range(1, 6)}
    assert len(drawn | {tuple((r["condition"], r["test_id"]) for r in first)}) > 1


def test_answers_already_labelled_are_left_out(root, tmp_path, capsys):
    labelled = tmp_path / "labels.jsonl"
    labelled.write_text(json.dumps({"test_id": "conv-a:q0", "condition": "oracle",
                                    "answer": ANSWERS["oracle"], "gold": "g",
                                    "label": "CORRECT", "reason": "states it"}) + "\n")
    capsys.readouterr()
    rows = sheet(root, tmp_path / "s.jsonl", "--labels", str(labelled), per=50)
    pairs = {(r["condition"], r["test_id"]) for r in rows}
    assert ("oracle", "conv-a:q0") not in pairs and ("vanilla", "conv-a:q0") in pairs
    answered = questions_frame(root, "locomo")
    answered = answered[answered["answered"] & (answered["test_type"] != "adversarial")]
    assert len(pairs) == len(rows) == len(answered) - 1
    out = capsys.readouterr().out
    assert f"oracle {len(answered) // 2 - 1} of {len(answered) // 2 - 1}" in out


def test_a_filled_sheet_measures_the_judges_and_an_empty_line_is_named(root, tmp_path, capsys):
    rows = sheet(root, tmp_path / "s.jsonl", per=2)
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps(
        r | {"label": "CORRECT" if r["condition"] == "oracle" else "WRONG",
             "reason": "read against the gold"}) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["labels", "judges", str(root), "--labels", str(filled)]) == 0
    out = capsys.readouterr().out
    assert "labels: 4 of 4 labels are of answers these runs gave" in out
    # the scripted judges accept exactly the answers naming "faith": the oracle's
    assert "| J strict" in out and "| 100.0" in out
    assert main(["labels", "judges", str(root), "--labels", str(tmp_path / "s.jsonl")]) == 2
    assert "line 1: field 'label'" in capsys.readouterr().err


def test_bad_input_is_one_line_and_nothing_is_written_over(root, tmp_path, capsys):
    out = tmp_path / "taken.jsonl"
    out.write_text("being filled in\n")
    for argv, says in (
            (["--conditions", "oracle", "--out", str(out)], "exists"),
            (["--conditions", "sleep", "--out", str(tmp_path / "n.jsonl")], "'sleep'"),
            (["--conditions", "oracle", "--out", str(tmp_path / "no" / "s.jsonl")],
             "does not exist")):
        code = main(["labels", "sheet", str(root), "--per-condition", "2", *argv])
        err = capsys.readouterr().err
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "being filled in\n"


def test_a_sheet_is_drawn_from_a_run_being_judged_not_from_one_still_answering(root, tmp_path):
    """A run whose turns are all recorded (status running: its judge has not finished) gives
    the sheet the complete run gives; one with turns still to come is left out."""
    whole = sheet(root, tmp_path / "whole.jsonl")
    copy = tmp_path / "copy"
    for run in root.iterdir():
        (copy / run.name).mkdir(parents=True)
        for name in ("manifest.json", "turns.jsonl"):
            (copy / run.name / name).write_text((run / name).read_text())
        manifest = json.loads((run / "manifest.json").read_text())
        planned = len((run / "turns.jsonl").read_text().splitlines())
        manifest |= {"status": "running",
                     "counts": {**(manifest.get("counts") or {}), "turns_planned": planned}}
        (copy / run.name / "manifest.json").write_text(json.dumps(manifest))
    assert sheet(copy, tmp_path / "judging.jsonl") == whole
    vanilla = next(p for p in copy.iterdir() if "vanilla" in p.name)
    turns = (vanilla / "turns.jsonl").read_text().splitlines()
    (vanilla / "turns.jsonl").write_text("\n".join(turns[:-1]) + "\n")  # a turn still to come
    out = tmp_path / "partial.jsonl"
    assert main(["labels", "sheet", str(copy), "--conditions", "oracle,vanilla",
                 "--per-condition", "3", "--out", str(out)]) == 2
    assert not out.exists()
