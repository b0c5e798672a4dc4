"""A blind sheet of LoCoMo answers to label by hand (issue 44 item 2).

``answers_frame`` gives the answers a sheet is drawn from: every answered question of the runs
under a results folder, complete or still being judged (a run is read once every turn it plans
is recorded, so a sheet can be drawn, and labelled blind, before any judge has seen the
answers). ``label_sheet`` draws, per condition, a seeded sample of the answered questions of categories
1-4 (``questions_frame``'s rows), leaving out the answers the given label files already label,
and lays them out in a seeded order across conditions. ``write_sheet`` writes them as lines of
the label file's shape (``judge_labels.JudgeLabel``) with ``label`` and ``reason`` empty and the
question beside the answer and its gold. The sheet holds no judge's verdict, so whoever fills
it in decides blind; filled in, it is a label file (``judge_labels.read_labels`` refuses a line
left empty, naming it). The same questions, conditions, size and seed give the same sheet.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from memlab.bench.runlog import read_jsonl
from memlab.errors import ConfigError
from memlab.report import data

SHEET_FIELDS = ("test_id", "condition", "question", "gold", "answer", "label", "reason")


def answers_frame(results_dir: str | Path, suite: str = "locomo") -> pd.DataFrame:
    """One row per question turn of every ``suite`` run under ``results_dir`` whose turns are
    all recorded (complete, or answered and being judged; a run still answering is left out:
    a sheet drawn from part of its answers would not be the sheet of all of them).

    Columns: condition, test_id, test_type, answered, question, gold, reply.

    Raises:
        ConfigError: no such run under ``results_dir``.
    """
    rows = []
    for manifest in data.load_manifests(results_dir, complete_only=False):
        if manifest.get("suite") != suite:
            continue
        turns = read_jsonl(Path(manifest["path"]) / "turns.jsonl")
        planned = (manifest.get("counts") or {}).get("turns_planned")
        if manifest.get("status") != "complete" and len(turns) != planned:
            continue
        rows += [{"condition": manifest.get("condition"), "test_id": t.get("test_id"),
                  "test_type": t.get("test_type"), "answered": bool(t.get("answered", True)),
                  "question": t.get("text"), "gold": (t.get("metadata") or {}).get("answer"),
                  "reply": t.get("reply")}
                 for t in turns if t.get("kind") == "question" and t.get("phase", "main") == "main"]
    if not rows:
        raise ConfigError(f"results_dir {str(results_dir)!r}: no {suite} run with all its "
                          "answers recorded")
    return pd.DataFrame(rows)


def label_sheet(questions: pd.DataFrame, conditions: list[str], per_condition: int, seed: int,
                labelled: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Up to ``per_condition`` unlabelled answers of each of ``conditions`` (categories 1-4,
    answered), in a seeded order across conditions, and how many each condition could give.

    Raises:
        ConfigError: a condition with no answered question under these runs.
    """
    done = set() if labelled is None else set(zip(labelled["test_id"], labelled["condition"],
                                                  strict=True))
    rng = np.random.default_rng(seed)
    picked, available = [], {}
    for condition in conditions:
        own = questions[(questions["condition"].astype(str) == condition) & questions["answered"]
                        & (questions["test_type"] != "adversarial")]
        if own.empty:
            held = sorted(set(questions["condition"].astype(str)))
            raise ConfigError(f"conditions: {condition!r} has no answered question of "
                              f"categories 1-4 in these runs (they hold {held})")
        own = own[[(t, condition) not in done for t in own["test_id"]]]
        ids = list(own["test_id"])
        own = own.iloc[sorted(range(len(ids)), key=lambda i: _order(ids[i]))]
        available[condition] = len(own)
        chosen = rng.choice(len(own), size=min(per_condition, len(own)), replace=False)
        picked.append(own.iloc[np.sort(chosen)])
    rows = pd.concat(picked, ignore_index=True)
    rows = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
    sheet = pd.DataFrame({"test_id": rows["test_id"], "condition": rows["condition"].astype(str),
                          "question": rows["question"], "gold": rows["gold"].astype(str),
                          "answer": rows["reply"].fillna("").str.strip(), "label": "",
                          "reason": ""})
    return sheet, available


def _order(test_id: str) -> tuple[str, int]:
    """``conv-26:q9`` -> ("conv-26", 9): the data set's order, not the string's."""
    sample, _, number = test_id.rpartition(":q")
    return (sample, int(number)) if number.isdigit() else (test_id, -1)


def write_sheet(sheet: pd.DataFrame, path: str | Path) -> Path:
    """``sheet`` as JSON lines at ``path``, which must not exist (a sheet being filled in is
    never overwritten).

    Raises:
        ConfigError: ``path`` exists, or its folder does not.
    """
    path = Path(path)
    if path.exists():
        raise ConfigError(f"out {str(path)!r}: exists; a label sheet is never written over "
                          "(name a new file)")
    if not path.parent.is_dir():
        raise ConfigError(f"out {str(path)!r}: folder {str(path.parent)!r} does not exist")
    with path.open("x", encoding="utf-8") as out:
        for row in sheet[list(SHEET_FIELDS)].to_dict("records"):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
