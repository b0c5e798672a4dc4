"""Aggregate tidy run frames into what each figure shows (means with 95% confidence intervals).

Every function takes the frames of :mod:`memlab.report.data` and returns a small DataFrame with
one row per plotted point, so a figure is a pure function of files on disk.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from memlab.bench.runner import cycle_seconds
from memlab.report.data import answered, order_conditions

PHASES = ("pre_sleep", "post_sleep")


def mean_ci(values) -> tuple[float, float, int]:
    """Mean, half-width of its 95% t-interval (0 for fewer than two values) and count."""
    array = np.asarray(pd.Series(values).dropna(), dtype=float)
    n = len(array)
    if n == 0:
        return math.nan, math.nan, 0
    if n < 2 or np.allclose(array, array[0]):
        return float(array.mean()), 0.0, n
    half = stats.t.ppf(0.975, n - 1) * array.std(ddof=1) / math.sqrt(n)
    return float(array.mean()), float(half), n


def _by(frame: pd.DataFrame, keys: list[str], column: str, prefix: str) -> pd.DataFrame:
    rows = []
    for key, group in frame.groupby(keys, observed=True):
        mean, half, n = mean_ci(group[column])
        rows.append(dict(zip(keys, key, strict=True)) | {prefix: mean, f"{prefix}_ci": half,
                                                         f"{prefix}_n": n})
    return pd.DataFrame(rows, columns=keys + [prefix, f"{prefix}_ci", f"{prefix}_n"])


def accuracy_tokens(scores: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite and condition: accuracy (mean test fraction, %) and prompt tokens per answer."""
    main = scores[scores["phase"] == "main"].assign(pct=lambda f: 100 * f["fraction"])
    accuracy = _by(main, ["suite", "condition"], "pct", "accuracy")
    tokens = _by(answered(turns), ["suite", "condition"], "prompt_tokens", "tokens")
    return order_conditions(accuracy.merge(tokens, on=["suite", "condition"], how="inner"))


def ltm_by_span(scores: pd.DataFrame) -> pd.DataFrame:
    """LTM score (sum over test types of the mean score) per condition and span, over seeds."""
    ltm = scores[(scores["suite"] == "ltm") & (scores["phase"] == "main")]
    if ltm.empty:
        return pd.DataFrame(columns=["condition", "span", "score", "score_ci", "score_n",
                                     "n_types"])
    per_type = ltm.groupby(["condition", "span", "seed", "test_type"], observed=True)[
        "fraction"].mean().reset_index()
    per_run = per_type.groupby(["condition", "span", "seed"], observed=True).agg(
        score=("fraction", "sum"), n_types=("test_type", "nunique")).reset_index()
    out = _by(per_run, ["condition", "span"], "score", "score")
    n_types = per_run.groupby(["condition", "span"], observed=True)["n_types"].max()
    out = out.merge(n_types.reset_index(), on=["condition", "span"])
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
    probes["pct"] = 100 * probes["fraction"]
    by = _by(probes, ["probe", "phase"], "pct", "acc")
    rows = []
    for probe, group in by.groupby("probe"):
        pre = group[group["phase"] == "pre_sleep"].squeeze(axis=0)
        post = group[group["phase"] == "post_sleep"].squeeze(axis=0)
        rows.append({"probe": probe, "pre": pre.get("acc"), "pre_ci": pre.get("acc_ci"),
                     "post": post.get("acc"), "post_ci": post.get("acc_ci"),
                     "n": int(group["acc_n"].max())})
    out = pd.DataFrame(rows)
    out["delta"] = out["post"] - out["pre"]
    for phase in ("pre", "post"):
        out[f"{phase}_err"] = [(c, c) for c in out[f"{phase}_ci"].fillna(0)]
    return out[["probe", "pre", "post", "delta", "n", "pre_err", "post_err"]]


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
        low = (100 * (frame[phase] - frame[f"{phase}_ci_low"])).clip(lower=0).fillna(0)
        high = (100 * (frame[f"{phase}_ci_high"] - frame[phase])).clip(lower=0).fillna(0)
        out[f"{phase}_err"] = list(zip(low, high, strict=True))
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
    """Per suite and condition: accuracy with CI, tokens and latency per answer (paper summary)."""
    acc = accuracy_tokens(scores, turns)
    costs = answered(turns).groupby(["suite", "condition"], observed=True).agg(
        completion_tokens=("completion_tokens", "mean"),
        llm_latency_s=("llm_latency_s", "mean"),
        memory_latency_s=("memory_latency_s", "mean")).reset_index()
    spent = background(turns)[["suite", "condition", "cycles", "consolidation_s", "storing_s"]]
    out = acc.merge(costs, on=["suite", "condition"], how="left").merge(
        spent, on=["suite", "condition"], how="left")
    return order_conditions(out.fillna({"cycles": 0, "consolidation_s": 0.0, "storing_s": 0.0}))
