"""The committed hand labels (issue 44 item 2): at least 200, across conditions and
categories, each the label of an answer the committed records hold word for word."""

from __future__ import annotations

import json
from pathlib import Path

from memlab.report.judge_labels import read_labels

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "data" / "locomo_labels.jsonl"
RECORDS = ROOT / "records"
LABEL_CELLS = RECORDS / "locomo-labels"  # the cells run to be labelled: every answer is


def recorded_replies(*folders: Path) -> dict[tuple[str, str], tuple[str, int]]:
    """(condition, test_id) -> (reply, category) of every answered question in the records of
    ``folders`` (default: every committed LoCoMo grid, records/locomo*)."""
    out = {}
    for folder in folders or sorted(RECORDS.glob("locomo*")):
        for cell in sorted(folder.glob("locomo-*")):
            condition = json.loads((cell / "manifest.json").read_text())["condition"]
            for line in (cell / "turns.jsonl").read_text().splitlines():
                turn = json.loads(line)
                if turn.get("kind") == "question" and turn.get("answered"):
                    out[(condition, turn["test_id"])] = (turn["reply"],
                                                         turn["metadata"]["category"])
    return out


def test_every_label_is_of_an_answer_the_records_hold_word_for_word():
    labels = read_labels(LABELS)
    replies = recorded_replies()
    assert len(labels) >= 200
    for row in labels.itertuples():
        assert replies[(row.condition, row.test_id)][0] == row.answer, row.test_id
    labelled = set(zip(labels["condition"], labels["test_id"], strict=True))
    assert set(recorded_replies(LABEL_CELLS)) <= labelled  # those cells' answers, every one


def test_the_labels_span_conditions_categories_and_both_verdicts():
    labels = read_labels(LABELS)
    replies = recorded_replies()
    categories = {replies[(r.condition, r.test_id)][1] for r in labels.itertuples()}
    assert categories == {1, 2, 3, 4}
    assert set(labels["condition"]) >= {"oracle", "vanilla", "rag"}
    counts = labels.groupby("condition")["label"].value_counts().unstack()
    assert (counts > 0).all().all()  # every condition has CORRECT and WRONG answers


def test_the_held_out_labels_are_labels_of_other_answers_than_the_210():
    """data/locomo_heldout_labels.jsonl: blind labels of the locomo grid's answers (memlab
    labels sheet), kept apart from the 210 the matched rule was revised on until the grid's
    records are committed."""
    held_out = read_labels(ROOT / "data" / "locomo_heldout_labels.jsonl")
    labels = read_labels(LABELS)
    assert len(held_out) >= 40 and held_out["question"].notna().all()
    assert not set(zip(held_out["test_id"], held_out["condition"], strict=True)) & set(
        zip(labels["test_id"], labels["condition"], strict=True))
    assert set(held_out["label"]) == {"CORRECT", "WRONG"}
