"""Aggregate tidy run frames into what each figure shows (estimates with 95% confidence
intervals from :mod:`memlab.stats`).

Every function takes the frames of :mod:`memlab.report.data` and returns a small DataFrame with
one row per plotted point, so a figure is a pure function of files on disk. An interval comes as
``<name>_low`` / ``<name>_high`` (asymmetric: a Wilson interval of 0/4 is 0-49%) with
``<name>_n``; NaN where there is nothing to estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from memlab import stats
from memlab.bench.runner import cycle_seconds
from memlab.report.data import answered, order_conditions

PHASES = ("pre_sleep", "post_sleep")


def _by(frame: pd.DataFrame, keys: list[str], column: str, prefix: str,
        interval: Callable[..., stats.Interval] = stats.mean_ci,
        scale: float = 1.0) -> pd.DataFrame:
    """Per group of ``keys``: ``interval`` of ``column`` (times ``scale``) as ``prefix``,
    ``prefix_low``, ``prefix_high`` and ``prefix_n``."""
    names = [prefix, f"{prefix}_low", f"{prefix}_high", f"{prefix}_n"]
    rows = []
    for key, group in frame.groupby(keys, observed=True):
        cell = interval(group[column]).scaled(scale)
        rows.append(dict(zip(keys, key, strict=True))
                    | dict(zip(names, (cell.estimate, cell.low, cell.high, cell.n), strict=True)))
    return pd.DataFrame(rows, columns=keys + names)


def scores_by_type(scores: pd.DataFrame, phase: str = "main") -> pd.DataFrame:
    """Per test type: number of tests, mean score (%) and its 95% CI as ``low-high``
    (``stats.score_ci``)."""
    columns = ["test_type", "n", "score (%)", "95% CI"]
    rows = scores[scores["phase"] == phase] if len(scores) else scores
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = _by(rows, ["test_type"], "fraction", "score", stats.score_ci, scale=100)
    return pd.DataFrame({"test_type": out["test_type"], "n": out["score_n"],
                         "score (%)": out["score"].round(1),
                         "95% CI": [stats.interval_text(low, high) for low, high in
                                    zip(out["score_low"], out["score_high"], strict=True)]})


def accuracy_tokens(scores: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite and condition: accuracy (mean test fraction, %; ``stats.score_ci``, so Wilson
    when every test scores 0 or 1) and prompt tokens per answer (t interval)."""
    main = scores[scores["phase"] == "main"]
    accuracy = _by(main, ["suite", "condition"], "fraction", "accuracy", stats.score_ci, 100)
    tokens = _by(answered(turns), ["suite", "condition"], "prompt_tokens", "tokens")
    return order_conditions(accuracy.merge(tokens, on=["suite", "condition"], how="inner"))


def ltm_by_span(scores: pd.DataFrame) -> pd.DataFrame:
    """LTM score per condition and span: the sum over test types of the type's mean score, the
    tests of every seed pooled (``stats.sum_of_means_ci``; ``score_n`` counts tests), out of
    ``n_types``."""
    columns = ["condition", "span", "score", "score_low", "score_high", "score_n", "n_types"]
    ltm = scores[(scores["suite"] == "ltm") & (scores["phase"] == "main")]
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


def persona_by_type(scores: pd.DataFrame) -> pd.DataFrame:
    """Persona accuracy (%) as a condition x question-type matrix."""
    persona = scores[(scores["suite"] == "persona") & (scores["phase"] == "main")]
    if persona.empty:
        return pd.DataFrame()
    matrix = persona.pivot_table(index="condition", columns="test_type", values="fraction",
                                 aggfunc="mean", observed=True)
    return 100 * matrix


def table2_from_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Pre/post accuracy (%) per probe from scores tagged pre_sleep / post_sleep.

    The probe is ``metadata["probe"]`` when the scorer set it, else the test type.
    """
    probes = scores[scores["phase"].isin(PHASES)].copy()
    if probes.empty:
        return pd.DataFrame(columns=["probe", "pre", "post", "delta", "n", "pre_err", "post_err"])
    meta = probes["metadata"] if "metadata" in probes else pd.Series([{}] * len(probes))
    probes["probe"] = [
        (m or {}).get("probe", t) if isinstance(m, dict) else t
        for m, t in zip(meta, probes["test_type"], strict=True)]
    by = _by(probes, ["probe", "phase"], "fraction", "acc", stats.score_ci, 100)
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
    main = turns[turns["phase"] == "main"] if len(turns) else turns
    if main.empty or "cycle_stats" not in main:
        return pd.DataFrame(columns=columns)
    answer = main["kind"].isin(("needle", "question"))
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
    """Per suite and condition: accuracy with its interval (``accuracy_low``/``_high``, n),
    prompt tokens with theirs, completion tokens and latency per answer (paper summary)."""
    acc = accuracy_tokens(scores, turns)
    costs = answered(turns).groupby(["suite", "condition"], observed=True).agg(
        completion_tokens=("completion_tokens", "mean"),
        llm_latency_s=("llm_latency_s", "mean"),
        memory_latency_s=("memory_latency_s", "mean")).reset_index()
    spent = background(turns)[["suite", "condition", "cycles", "consolidation_s", "storing_s"]]
    out = acc.merge(costs, on=["suite", "condition"], how="left").merge(
        spent, on=["suite", "condition"], how="left")
    return order_conditions(out.fillna({"cycles": 0, "consolidation_s": 0.0, "storing_s": 0.0}))
