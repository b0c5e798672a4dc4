"""Read every run under a results folder into tidy pandas frames (what figures plot).

A run is a folder holding ``manifest.json``, ``turns.jsonl`` and ``scores.jsonl`` (the format the
runner writes). Runs may sit at any depth under the results folder; runs whose manifest status is
not ``complete`` are left out unless asked for.

What counts where (one definition each, used by every table and figure):

- accuracy: the main phase of ordinary runs (a Table 2 run, ``probes`` True, answers the same
  questions without auto-sleep and feeds Table 2 only), tests the model answered
  (:func:`accuracy_scores`; an evidence-only test is never counted wrong);
- cost per answer: the turns the model answered (:func:`answered`);
- evidence recall: every question of the main phase of ordinary runs whose suite names its
  evidence, answered or not (:func:`evidence_questions`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from memlab.bench.metrics import answered_value
from memlab.bench.runfolders import outermost
from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import read_manifest
from memlab.bench.scoring import check_scores
from memlab.bench.tables import probes_run
from memlab.errors import ConfigError
from memlab.memory.base import CONDITIONS

RUN_COLUMNS = ["run_id", "condition", "suite", "seed", "span", "probes", "status", "provider",
               "model", "model_calls"]
SIZE_COLUMNS = ["suite", "span", "seed", "condition", "items", "tokens"]
ANSWERED = ("needle", "question")


def span_of(manifest: dict[str, Any]) -> int | None:
    """The run's span in tokens (its RunSpec's ``span``)."""
    span = manifest.get("span", (manifest.get("spec") or {}).get("span"))
    return None if span is None else int(span)


def run_dirs(results_dir: str | Path) -> list[Path]:
    """Every folder under ``results_dir`` that holds a ``manifest.json``, sorted; a run inside
    another run's folder is left out (the outer run is reported, once)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ConfigError(f"results_dir {str(root)!r}: no such folder")
    return outermost(p.parent for p in root.rglob("manifest.json"))


def run_row(manifest: dict[str, Any], path: Path) -> dict[str, Any]:
    """A run's columns; ``model_calls``: every model call it made (its call journal's entries,
    cached ones included; paid calls on older manifests)."""
    llm, counts = manifest.get("llm") or {}, manifest.get("counts") or {}
    return {"run_id": manifest.get("run_id", path.name), "condition": manifest.get("condition"),
            "suite": manifest.get("suite"), "seed": manifest.get("seed"),
            "span": span_of(manifest), "probes": probes_run(manifest),
            "status": manifest.get("status"),
            "provider": llm.get("provider"), "model": llm.get("model"),
            "model_calls": counts.get("llm_calls_recorded", counts.get("llm_calls_paid")),
            "path": str(path)}


def load_manifests(results_dir: str | Path, *, complete_only: bool = True) -> list[dict]:
    """The manifests of the runs under ``results_dir`` (each with its ``path`` added)."""
    manifests = []
    for path in run_dirs(results_dir):
        manifest = read_manifest(path)
        if complete_only and manifest.get("status") != "complete":
            continue
        manifests.append(manifest | {"path": str(path)})
    return manifests


def runs_frame(results_dir: str | Path, *, complete_only: bool = True) -> pd.DataFrame:
    """One row per run: ``RUN_COLUMNS`` and path."""
    rows = [run_row(m, Path(m["path"])) for m in load_manifests(results_dir,
                                                                 complete_only=complete_only)]
    return order_conditions(pd.DataFrame(rows, columns=RUN_COLUMNS + ["path"]))


def memory_size(manifest: dict[str, Any]) -> dict[str, float] | None:
    """The memory a run ended with, per conversation: ``items`` and ``tokens`` stored (its
    manifest's ``memory_size``, from ``MemorySystem.size``), the mean over its users when it had
    several; None when it records none (a run from before it was recorded, or a memory that
    keeps nothing countable)."""
    record = manifest.get("memory_size")
    if not isinstance(record, dict):
        return None
    sizes = [record] if _is_size(record) else [size for size in record.values() if _is_size(size)]
    if not sizes:
        return None
    return {key: sum(size[key] for size in sizes) / len(sizes) for key in ("items", "tokens")}


def _is_size(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), int) for k in ("items", "tokens"))


def memory_sizes(results_dir: str | Path) -> pd.DataFrame:
    """One row per complete ordinary run (Table 2's force a sleep first: not counted) whose
    manifest records its memory size: ``SIZE_COLUMNS``, items and tokens per conversation."""
    rows = []
    for manifest in load_manifests(results_dir):
        size = memory_size(manifest)
        if size is not None and not probes_run(manifest):
            rows.append({"suite": manifest.get("suite"), "span": span_of(manifest),
                         "seed": manifest.get("seed"), "condition": manifest.get("condition"),
                         **size})
    return order_conditions(pd.DataFrame(rows, columns=SIZE_COLUMNS))


def _joined(results_dir: str | Path, filename: str) -> pd.DataFrame:
    frames = []
    for run in runs_frame(results_dir).to_dict("records"):
        rows = read_jsonl(Path(run["path"]) / filename)
        if filename == "scores.jsonl":
            check_scores(Path(run["path"]) / filename, rows)
        if rows:
            frame = pd.DataFrame(rows)
            for column in RUN_COLUMNS:
                frame[column] = run[column]
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=RUN_COLUMNS)


def turns_frame(results_dir: str | Path) -> pd.DataFrame:
    """Every turn of every complete run, with the run's columns added."""
    frame = _joined(results_dir, "turns.jsonl")
    if "phase" not in frame:
        frame["phase"] = "main"
    return order_conditions(frame.fillna({"phase": "main"}))


def scores_frame(results_dir: str | Path) -> pd.DataFrame:
    """Every TestScore of every complete run, with ``fraction`` = score / max_score."""
    frame = _joined(results_dir, "scores.jsonl")
    if "phase" not in frame:
        frame["phase"] = "main"
    frame = frame.fillna({"phase": "main"})
    if len(frame):
        frame["fraction"] = frame["score"].astype(float) / frame["max_score"].astype(float)
    return order_conditions(frame)


def order_conditions(frame: pd.DataFrame) -> pd.DataFrame:
    """Make ``condition`` a categorical in the paper's order (CONDITIONS), so plots agree."""
    if "condition" in frame and len(frame):
        known = list(CONDITIONS) + sorted(set(frame["condition"].dropna()) - set(CONDITIONS))
        frame["condition"] = pd.Categorical(frame["condition"], categories=known, ordered=True)
    return frame


def answered_mask(frame: pd.DataFrame) -> pd.Series:
    """Per row, whether the model answered it (``metrics.answered_value`` of ``answered``)."""
    if "answered" not in frame:
        return pd.Series(True, index=frame.index)
    return frame["answered"].map(answered_value).astype(bool)


def phase_rows(frame: pd.DataFrame, phase: str) -> pd.Series:
    """Rows of ``phase``; for the main phase, of ordinary (not Table 2) runs only."""
    keep = frame["phase"] == phase
    if phase == "main" and "probes" in frame:
        keep &= ~frame["probes"].fillna(False).astype(bool)
    return keep


def answered(turns: pd.DataFrame, phase: str = "main") -> pd.DataFrame:
    """The turns the model answered (needles and questions) in ``phase`` (see the module
    docstring)."""
    if turns.empty:
        return turns
    return turns[turns["kind"].isin(ANSWERED) & phase_rows(turns, phase)
                 & answered_mask(turns)]


def accuracy_scores(scores: pd.DataFrame, phase: str = "main") -> pd.DataFrame:
    """The scores accuracy counts: answered tests of ``phase`` (see the module docstring)."""
    if scores.empty:
        return scores
    return scores[phase_rows(scores, phase) & answered_mask(scores)]


def evidence_questions(turns: pd.DataFrame) -> pd.DataFrame:
    """The main-phase questions of ordinary runs with an ``evidence_recall``, answered or not."""
    if turns.empty or "evidence_recall" not in turns:
        return turns.iloc[0:0]
    return turns[(turns["kind"] == "question") & phase_rows(turns, "main")
                 & turns["evidence_recall"].notna()]
