"""Views of one finished run: its summary, scores by type, transcripts, costs, sleep records.

Read-only: every function takes a run folder (``memlab.lab.run`` returns one) and returns a
pandas object a notebook displays. Nothing here runs a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from memlab.bench.runlog import read_jsonl
from memlab.errors import ConfigError
from memlab.report import data, summary


def _run_frames(run_dir: str | Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    run_dir = Path(run_dir)
    manifest = data.load_manifests(run_dir, complete_only=False)
    if not manifest:
        raise ConfigError(f"run_dir {str(run_dir)!r}: no manifest.json")
    turns = pd.DataFrame(read_jsonl(run_dir / "turns.jsonl"))
    scores = pd.DataFrame(read_jsonl(run_dir / "scores.jsonl"))
    if len(scores):
        scores["fraction"] = scores["score"] / scores["max_score"]
    return manifest[0], turns, scores


def run_summary(run_dir: str | Path) -> pd.Series:
    """Condition, suite, span, status, and the headline score of one run (over the tests the
    model answered; ``evidence-only tests`` were not answered)."""
    manifest, turns, scores = _run_frames(run_dir)
    main = scores[scores["phase"] == "main"] if len(scores) else scores
    skipped = int((~data.answered_mask(main)).sum()) if len(main) else 0
    main = main[data.answered_mask(main)] if len(main) else main
    per_type = main.groupby("test_type")["fraction"].mean() if len(main) else pd.Series()
    return pd.Series({
        "run_id": manifest.get("run_id"), "condition": manifest.get("condition"),
        "suite": manifest.get("suite"), "span (tokens)": data.span_of(manifest),
        "status": manifest.get("status"), "llm": (manifest.get("llm") or {}).get("model"),
        "tests": len(main), "evidence-only tests": skipped,
        "accuracy (%)": round(100 * main["fraction"].mean(), 1)
        if len(main) else None,
        "suite score (sum of type means)": round(per_type.sum(), 3),
        "test types": len(per_type), "model calls paid": (manifest.get("counts") or {}).get(
            "llm_calls_paid")})


def scores_by_type(run_dir: str | Path, phase: str = "main") -> pd.DataFrame:
    """Per test type: number of tests, mean score (%) and its 95% CI (``low-high``)."""
    _, _, scores = _run_frames(run_dir)
    return summary.scores_by_type(scores, phase)


def transcripts(run_dir: str | Path, n: int = 3, phase: str = "main") -> pd.DataFrame:
    """The first ``n`` answered questions with their reply, score and the memories behind them.

    ``memories`` are the earlier turns whose content reached the prompt (``memory_events``),
    rendered as ``#index User: ... / AI: ...``; ``schemas`` the schema texts in the prompt.
    """
    _, turns, scores = _run_frames(run_dir)
    if turns.empty:
        return pd.DataFrame()
    by_index = {t["index"]: t for t in turns[turns["phase"] == "main"].to_dict("records")}
    score_of = ({} if scores.empty else
                scores[scores["phase"] == phase].groupby("test_id")["fraction"].mean().to_dict())
    asked = turns[(turns["kind"] == "question") & (turns["phase"] == phase)].head(n)
    rows = []
    for turn in asked.to_dict("records"):
        memories = [f"#{i} User: {by_index[i]['text'][:80]} / AI: {by_index[i]['reply'][:60]}"
                    for i in turn.get("memory_events") or [] if i in by_index]
        rows.append({"index": turn["index"], "test_type": turn.get("test_type"),
                     "question": turn["text"][:200], "reply": (turn.get("reply") or "")[:200],
                     "test score": score_of.get(turn.get("test_id")),
                     "memory kinds": ", ".join(turn.get("memory_kinds") or []),
                     "memories": "\n".join(memories) or "(none)",
                     "schemas": "\n".join(turn.get("memory_schemas") or []) or "(none)"})
    return pd.DataFrame(rows)


COST_COLUMNS = ("prompt_tokens", "prompt_tokens_system", "prompt_tokens_memory",
                "prompt_tokens_history", "prompt_tokens_user", "completion_tokens",
                "memory_latency_s", "llm_latency_s")


def costs(run_dir: str | Path) -> pd.DataFrame:
    """Mean tokens and latency per answered turn, by phase and kind (needle / question)."""
    _, turns, _ = _run_frames(run_dir)
    if turns.empty:
        return pd.DataFrame()
    answered = turns[turns["kind"].isin(data.ANSWERED) & data.answered_mask(turns)]
    table = answered.groupby(["phase", "kind"])[list(COST_COLUMNS)].mean().round(3)
    table["answers"] = answered.groupby(["phase", "kind"]).size()
    table["cached"] = answered.groupby(["phase", "kind"])["cached"].sum()
    return table


def table2(run_dir: str | Path) -> pd.DataFrame:
    """Pre/post sleep accuracy (%) and delta per probe of one run (Table 2 protocol)."""
    _, _, scores = _run_frames(run_dir)
    if scores.empty:
        return pd.DataFrame()
    return summary.table2_from_scores(scores).round(1)


def sleep_stats(run_dir: str | Path) -> pd.Series:
    """What the forced sleep cycle did (CycleStats counts, from the manifest)."""
    manifest, _, _ = _run_frames(run_dir)
    stats = manifest.get("sleep_stats") or {}
    keep = ("episodes_considered", "episodes_replayed", "memories_created", "schemas_created",
            "schemas_updated", "episodes_forgotten", "llm_calls", "prompt_tokens",
            "completion_tokens", "failures")
    return pd.Series({k: stats.get(k) for k in keep}, dtype=object)


def schemas_used(run_dir: str | Path) -> pd.DataFrame:
    """Each schema text that reached a post-sleep prompt, with how many answers it served."""
    _, turns, _ = _run_frames(run_dir)
    if turns.empty or "memory_schemas" not in turns:
        return pd.DataFrame(columns=["schema", "answers"])
    post = turns[turns["phase"] == "post_sleep"].explode("memory_schemas").dropna(
        subset=["memory_schemas"])
    counts = post.groupby("memory_schemas").size().sort_values(ascending=False)
    return counts.rename("answers").rename_axis("schema").reset_index()


# ---------------------------------------------------------------- the sleep stores of a run
def _stored(run_dir: str | Path, kind: str) -> list[dict[str, Any]]:
    """Records of one kind from the run's record stores: the configured database
    (``MEMLAB_SQL_URL``) under the run's namespace, else the SQLite files in its store folder."""
    from memlab.config import get_settings
    from memlab.stores.base import run_namespace
    from memlab.stores.records import SQLITE_FILE, read_records
    from memlab.stores.sql import make_engine

    url = get_settings().sql_url
    store = Path(run_dir) / "store"
    sources = ([(make_engine(url), run_namespace(run_dir))] if url else
               [(make_engine(None, p), None) for p in sorted(store.rglob(SQLITE_FILE))])
    rows: list[dict[str, Any]] = []
    for engine, namespace in sources:
        try:
            rows += read_records(engine, kind, namespace)
        finally:
            engine.dispose()
    return rows + _legacy_stored(store, kind)


def _legacy_stored(store: Path, kind: str) -> list[dict[str, Any]]:
    """Records of runs written before the record stores moved to the SQL layer (a table per
    kind in ``sleep_memory.sqlite``), so their views keep working."""
    import json
    import sqlite3

    rows: list[dict[str, Any]] = []
    for path in sorted(store.rglob("sleep_memory.sqlite")):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            exists = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                (kind,)).fetchone()
            if exists:
                rows += [json.loads(r[0]) for r in
                         db.execute(f"SELECT data FROM {kind} ORDER BY seq")]  # noqa: S608
    return rows


def consolidated_memories(run_dir: str | Path) -> pd.DataFrame:
    """The ConsolidatedMemory records the run's sleep cycles wrote (summary, concepts, sources:
    what recall reads; the compressor no longer has the model write themes or a confidence,
    ``memlab.sleep.compress.COMPRESS_WRITTEN``)."""
    from memlab.stores.consolidated import ConsolidatedMemoryStore

    rows = [{"summary": r.get("summary"), "key_concepts": ", ".join(r.get("key_concepts") or []),
             "source episodes": len(r.get("source_episode_ids") or []),
             "access_count": r.get("access_count")}
            for r in _stored(run_dir, ConsolidatedMemoryStore.table)]
    return pd.DataFrame(rows, columns=["summary", "key_concepts", "source episodes",
                                       "access_count"])


def schemas_formed(run_dir: str | Path) -> pd.DataFrame:
    """The Schema records induced by the run's sleep cycles (name, concepts, support)."""
    from memlab.stores.schemas import SchemaStore

    rows = [{"name": r.get("name"), "description": r.get("description"),
             "core_concepts": ", ".join(r.get("core_concepts") or []),
             "related memories": len(r.get("related_memory_ids") or []),
             "confidence": r.get("confidence")}
            for r in _stored(run_dir, SchemaStore.table)]
    return pd.DataFrame(rows, columns=["name", "description", "core_concepts",
                                       "related memories", "confidence"])
