"""Aggregate tidy run frames into what each figure shows (estimates with 95% confidence
intervals from :mod:`memlab.stats`).

Every function takes the frames of :mod:`memlab.report.data` and returns a small DataFrame with
one row per plotted point, so a figure is a pure function of files on disk. An interval comes as
``<name>_low`` / ``<name>_high`` (asymmetric: a Wilson interval of 0/4 is 0-49%) with
``<name>_n``; NaN where there is nothing to estimate. Accuracy counts the answered tests only
(``data.accuracy_scores``), costs the answered turns (``data.answered``).
"""

from __future__ import annotations

import math

import pandas as pd

from memlab import stats
from memlab.bench.runner import cycle_seconds
from memlab.report import accuracy, recall
from memlab.report.cells import GROUP, cell_columns, intervals_by
from memlab.report.data import (
    accuracy_scores,
    answered,
    answered_mask,
    order_conditions,
    phase_rows,
)

PHASES = ("pre_sleep", "post_sleep")


def scores_by_type(scores: pd.DataFrame, phase: str = "main") -> pd.DataFrame:
    """Per test type of one run's scores: number of answered tests, mean score (%) and its 95%
    CI as ``low-high`` (``stats.score_ci``)."""
    columns = ["test_type", "n", "score (%)", "95% CI"]
    rows = scores[(scores["phase"] == phase) & answered_mask(scores)] if len(scores) else scores
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = intervals_by(rows, ["test_type"], "fraction", "score", stats.score_ci, scale=100)
    return pd.DataFrame({"test_type": out["test_type"], "n": out["score_n"],
                         "score (%)": out["score"].round(1),
                         "95% CI": [stats.interval_text(low, high) for low, high in
                                    zip(out["score_low"], out["score_high"], strict=True)]})


def accuracy_tokens(scores: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: accuracy (%, ``accuracy.accuracy``) and prompt tokens per
    answer (t interval)."""
    cells = accuracy.accuracy(scores)
    for column in ("accuracy", "accuracy_low", "accuracy_high"):
        cells[column] = 100 * cells[column].astype(float)
    tokens = intervals_by(answered(turns), GROUP, "prompt_tokens", "tokens")
    return order_conditions(cells.drop(columns=["interval", "unanswered", "model_limited_types"])
                            .merge(tokens, on=GROUP, how="inner"))


def ltm_by_span(scores: pd.DataFrame) -> pd.DataFrame:
    """LTM score per condition and span: the sum over test types of the type's mean score, the
    tests of every seed pooled (``stats.sum_of_means_ci``; ``score_n`` counts tests), out of
    ``n_types``."""
    columns = ["condition", "span", "score", "score_low", "score_high", "score_n", "n_types"]
    ltm = accuracy_scores(scores)
    ltm = ltm[ltm["suite"] == "ltm"] if len(ltm) else ltm
    if ltm.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (condition, span), group in ltm.groupby(["condition", "span"], observed=True):
        types = [g["fraction"] for _, g in group.groupby("test_type")]
        cell = stats.sum_of_means_ci(types)
        rows.append(dict(zip(columns, (condition, span, cell.estimate, cell.low, cell.high,
                                       cell.n, len(types)), strict=True)))
    out = pd.DataFrame(rows, columns=columns)
    return order_conditions(out.sort_values(["condition", "span"]))


def persona_by_type(scores: pd.DataFrame, *, counts: bool = False) -> pd.DataFrame:
    """Persona accuracy (%) as a condition x question-type matrix (answered questions; with
    ``counts``, how many there are per cell instead)."""
    persona = accuracy_scores(scores)
    persona = persona[persona["suite"] == "persona"] if len(persona) else persona
    if persona.empty:
        return pd.DataFrame()
    matrix = persona.pivot_table(index="condition", columns="test_type", values="fraction",
                                 aggfunc="size" if counts else "mean", observed=True)
    return matrix if counts else 100 * matrix


def table2_from_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Pre/post accuracy (%) per probe from scores tagged pre_sleep / post_sleep.

    The probe is ``metadata["probe"]`` when the scorer set it, else the test type.
    """
    probes = scores[scores["phase"].isin(PHASES) & answered_mask(scores)].copy()
    if probes.empty:
        return pd.DataFrame(columns=["probe", "pre", "post", "delta", "n", "pre_err", "post_err"])
    meta = probes["metadata"] if "metadata" in probes else pd.Series([{}] * len(probes))
    probes["probe"] = [
        (m or {}).get("probe", t) if isinstance(m, dict) else t
        for m, t in zip(meta, probes["test_type"], strict=True)]
    by = intervals_by(probes, ["probe", "phase"], "fraction", "acc", stats.score_ci, 100)
    rows = []
    for probe, group in by.groupby("probe"):
        row = {"probe": probe, "n": int(group["acc_n"].max())}
        for phase, name in (("pre_sleep", "pre"), ("post_sleep", "post")):
            cells = group[group["phase"] == phase]
            acc, low, high = cells[["acc", "acc_low", "acc_high"]].iloc[0] if len(cells) else (
                math.nan, math.nan, math.nan)
            row |= {name: acc, f"{name}_err": _error_bar(acc, low, high)}
        rows.append(row)
    out = pd.DataFrame(rows)
    out["delta"] = out["post"] - out["pre"]
    return out[["probe", "pre", "post", "delta", "n", "pre_err", "post_err"]]


def _error_bar(value, low, high, scale: float = 1.0) -> tuple[float, float]:
    """(below, above) lengths of an error bar from an interval, times ``scale`` (0 where there
    is no interval)."""
    if pd.isna(value) or pd.isna(low) or pd.isna(high):
        return 0.0, 0.0
    return max(0.0, float(scale * (value - low))), max(0.0, float(scale * (high - value)))


def table2_from_bench(frame: pd.DataFrame) -> pd.DataFrame:
    """Normalise ``memlab.bench.tables.table2`` (proportions, Wilson CIs) for plotting in %.

    Returns columns probe, pre, post, delta (percentage points), n and the error-bar lengths
    pre_err / post_err as (below, above) pairs; rows with neither pre nor post are dropped.
    """
    frame = frame.dropna(subset=["pre", "post"], how="all")
    if frame.empty:
        return pd.DataFrame(columns=["probe", "pre", "post", "delta", "n", "pre_err", "post_err"])
    several = frame["suite"].nunique() > 1
    out = pd.DataFrame({
        "probe": [f"{m} ({s})" if several else m
                  for m, s in zip(frame["metric"], frame["suite"], strict=True)],
        "pre": 100 * frame["pre"], "post": 100 * frame["post"],
        "delta": 100 * frame["delta"], "n": frame["pre_n"]})
    for phase in ("pre", "post"):
        out[f"{phase}_err"] = [_error_bar(*values, scale=100) for values in zip(
            frame[phase], frame[f"{phase}_ci_low"], frame[f"{phase}_ci_high"], strict=True)]
    return out.reset_index(drop=True)


def cycle_caption(bench: pd.DataFrame) -> str:
    """What the forced sleep cycles of Table 2 did, per suite, from the bench's Table 2
    (``memlab.bench.tables.CYCLE_COLUMNS``)."""
    parts = []
    for suite, rows in bench.groupby("suite"):
        row = rows.iloc[0]
        if not row.get("cycles"):
            continue
        failed = f"; {int(row['cycle_failures'])} failed steps" if row["cycle_failures"] else ""
        parts.append(f"{suite}: {int(row['cycles'])} forced cycle(s) over "
                     f"{int(row['episodes_considered'])} unconsolidated episodes: "
                     f"{int(row['episodes_replayed'])} replayed, {int(row['memories_formed'])} "
                     f"memories and {int(row['schemas_formed'])} schemas formed, "
                     f"{int(row['episodes_forgotten'])} episodes forgotten{failed}")
    return "\n".join(parts)


def latency(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean memory, LLM and background time per answer (ms) per suite and condition
    (background: see ``background``)."""
    rows = answered(turns)
    if rows.empty:
        return pd.DataFrame(columns=["suite", "condition", "memory_ms", "llm_ms",
                                     "background_ms", "n"])
    rows = rows.assign(memory_ms=1000 * rows["memory_latency_s"].astype(float),
                       llm_ms=1000 * rows["llm_latency_s"].astype(float))
    out = rows.groupby(["suite", "condition"], observed=True).agg(
        memory_ms=("memory_ms", "mean"), llm_ms=("llm_ms", "mean"),
        n=("memory_ms", "size")).reset_index()
    out = out.merge(background(turns), on=["suite", "condition"], how="left")
    return order_conditions(out.fillna({"background_ms": 0.0}))


def background(turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite and condition, averaged over runs: the time spent outside answering, i.e.
    consolidation cycles during the conversation (``cycles``, ``consolidation_s``; not the forced
    Table 2 sleep) plus storing the turns nobody answered (history / filler: ``storing_s``), and
    both spread over the run's answers (``background_ms``)."""
    columns = ["suite", "condition", "cycles", "consolidation_s", "storing_s", "background_ms"]
    main = turns[phase_rows(turns, "main")] if len(turns) else turns
    if main.empty or "cycle_stats" not in main:
        return pd.DataFrame(columns=columns)
    answer = main["kind"].isin(("needle", "question")) & answered_mask(main)
    main = main.assign(cycle_s=main["cycle_stats"].map(cycle_seconds),
                       cycle=main["cycle_stats"].map(lambda c: isinstance(c, dict)),
                       store_s=main["memory_latency_s"].astype(float).where(~answer, 0.0),
                       answer=answer)
    per_run = main.groupby(["suite", "condition", "run_id"], observed=True).agg(
        cycles=("cycle", "sum"), consolidation_s=("cycle_s", "sum"), storing_s=("store_s", "sum"),
        answers=("answer", "sum")).reset_index()
    per_run["background_ms"] = 1000 * (per_run["consolidation_s"] + per_run["storing_s"]) / \
        per_run["answers"].clip(lower=1)
    return per_run.groupby(["suite", "condition"], observed=True)[columns[2:]].mean().reset_index()


def overview(scores: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: accuracy (``accuracy.accuracy``) and evidence recall
    (``recall.evidence_recall``) cells, then ``answer_costs``."""
    acc = accuracy.accuracy(scores)[GROUP + cell_columns("accuracy")]
    found = recall.evidence_recall(turns)[GROUP + cell_columns("recall")]
    for frame in (acc, found):
        frame["condition"] = frame["condition"].astype(str)
    out = acc.merge(found, on=GROUP, how="outer").merge(answer_costs(turns), on=GROUP,
                                                          how="left")
    return order_conditions(out).sort_values(GROUP).reset_index(drop=True)


def evaluated_tokens(turns: pd.DataFrame) -> pd.Series:
    """Per turn, the prompt tokens the model evaluated (``prompt_tokens`` less the prefix it
    reused); NaN where the run did not record the reuse."""
    if "prompt_tokens_reused" not in turns:
        return pd.Series(float("nan"), index=turns.index)
    reused = pd.to_numeric(turns["prompt_tokens_reused"], errors="coerce")
    return turns["prompt_tokens"].astype(float) - reused


def answer_costs(turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition, over the answered turns of the main phase: mean
    ``prompt_tokens`` and ``memory_tokens`` (what the memory put in: its block and the past
    exchanges sent as chat turns) per answer, ``evaluated_tokens`` (the prompt tokens the model
    read, not reused from an earlier call's prefix; NaN for runs that did not record it),
    ``answers``, the median and 95th percentile of the time per answer (``latency_p50_s``,
    ``latency_p95_s``: recall + store + the model's answer); and ``model_calls``: every model
    call of the cell's runs, evidence-only ones included (answers and the memory's own calls,
    from the manifests; a cached call counts)."""
    columns = GROUP + ["prompt_tokens", "evaluated_tokens", "memory_tokens", "answers",
                       "latency_p50_s", "latency_p95_s", "model_calls"]
    runs = turns[phase_rows(turns, "main")].drop_duplicates("run_id") if len(turns) else turns
    if runs.empty:
        return pd.DataFrame(columns=columns)
    calls = runs.assign(condition=runs["condition"].astype(str)).groupby(GROUP)[
        "model_calls"].sum()
    rows = answered(turns)
    rows = rows.assign(latency_s=rows["llm_latency_s"].astype(float)
                       + rows["memory_latency_s"].astype(float),
                       memory_tokens=rows["prompt_tokens_memory"].astype(float)
                       + rows["prompt_tokens_history"].astype(float),
                       evaluated_tokens=evaluated_tokens(rows),
                       condition=rows["condition"].astype(str))
    out = rows.groupby(GROUP).agg(
        prompt_tokens=("prompt_tokens", "mean"), evaluated_tokens=("evaluated_tokens", "mean"),
        memory_tokens=("memory_tokens", "mean"),
        answers=("latency_s", "size"), latency_p50_s=("latency_s", "median"),
        latency_p95_s=("latency_s", lambda v: v.quantile(0.95)))
    out = out.join(calls, how="outer").reset_index()
    out["answers"] = out["answers"].fillna(0).astype(int)
    return out[columns]
