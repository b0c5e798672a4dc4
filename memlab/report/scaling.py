"""The span-scaling figures and crossover table (issue 45): where memory starts to matter.

Drawn from a grid with several spans per suite (the ``scaling`` spec): accuracy against
full_context at each span (the paired difference and its 95% interval as a ribbon), evidence
recall, prompt tokens and seconds per answer (log axes) vs span, the memory each condition
ends a run with (items and tokens stored, from the run manifests) vs span, and the crossover
table: for each memory condition, the smallest span at which it is significantly above
full_context (exact McNemar per span, Holm across the conditions compared at that span;
``paired.compare``), or "none up to <largest span>", with the paired difference and interval
at every span.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from memlab.report import data, paired
from memlab.report.style import colours, label, log_axis, marker, save
from memlab.stats import interval_text

REFERENCE = "full_context"
NOT_MEMORIES = ("vanilla", "oracle", REFERENCE)


def has_several_spans(frame: pd.DataFrame) -> bool:
    """Whether some suite of ``frame`` (scores or turns) was run at more than one span."""
    return not frame.empty and bool((frame.groupby("suite")["span"].nunique() > 1).any())


def crossover(comparisons: pd.DataFrame, alpha: float = paired.ALPHA) -> pd.DataFrame:
    """Per suite and memory condition: the smallest span at which it is significantly above
    full_context (Holm-adjusted p below ``alpha``, difference above 0), else "none up to
    <largest span>", and per span the paired difference with its interval and n.

    Args:
        comparisons: ``paired.accuracy_comparisons`` (or recall's) of a multi-span grid.
    """
    rows = []
    against = comparisons[(comparisons["reference"] == REFERENCE)
                          & ~comparisons["condition"].isin(NOT_MEMORIES)]
    for (suite, condition), group in against.groupby(["suite", "condition"], observed=True):
        group = group.sort_values("span")
        above = group[(group["p_holm"] < alpha) & (group["difference"] > 0)]
        found = int(above["span"].iloc[0]) if len(above) else int(group["span"].max())
        # a span the grid ran for other conditions but not this one (a spec's ``not_run``)
        gaps = sorted(set(against.loc[against["suite"] == suite, "span"].astype(int))
                      - set(group["span"].astype(int)))
        gaps = [f"{g:,}" for g in gaps if g < found]
        row = {"suite": suite, "condition": str(condition),
               "crossover": (f"{found:,}" if len(above) else f"none up to {found:,}")
               + (f" (not run at {', '.join(gaps)})" if gaps else "")}
        for r in group.itertuples():
            # the difference and its interval in percentage points alike
            row[f"{int(r.span):,}"] = (f"{100 * r.difference:+.1f} pp "
                                       f"[{interval_text(100 * r.low, 100 * r.high)}] "
                                       f"(n={r.n_pairs}, p_holm={r.p_holm:.3f})")
        rows.append(row)
    table = pd.DataFrame(rows)
    spans = [c for c in table.columns if c not in ("suite", "condition", "crossover")]
    return table.fillna({c: "not run" for c in spans})


def plot_accuracy_vs_span(comparisons: pd.DataFrame) -> plt.Figure:
    """Each condition's paired accuracy difference from full_context vs span, 95% ribbons."""
    rows = comparisons[comparisons["reference"] == REFERENCE]
    points = rows.assign(**{k: 100 * rows[k] for k in ("difference", "low", "high")})
    return _per_suite(points, "difference", "Accuracy − full context (points)",
                      ribbon=("low", "high"))


def plot_recall_vs_span(turns: pd.DataFrame) -> plt.Figure:
    """Mean evidence recall per condition vs span."""
    means = _means(data.evidence_questions(turns), "evidence_recall")
    return _per_suite(means.assign(evidence_recall=100 * means["evidence_recall"]),
                      "evidence_recall", "Evidence recall (%)")


def plot_cost_vs_span(turns: pd.DataFrame) -> plt.Figure:
    """Prompt tokens and seconds per answer vs span, log axes (top: tokens; bottom: seconds)."""
    rows = data.answered(turns)
    rows = rows.assign(seconds=rows["memory_latency_s"].astype(float)
                       + rows["llm_latency_s"].astype(float),
                       prompt_tokens=rows["prompt_tokens"].astype(float))
    tokens = _per_suite(_means(rows, "prompt_tokens"), "prompt_tokens",
                        "Prompt tokens per answer", log=True, panels=2)
    _lower_row(tokens, _means(rows, "seconds"), "seconds", "Seconds per answer")
    return tokens


def plot_memory_size_vs_span(runs: pd.DataFrame) -> plt.Figure:
    """Items (top) and tokens (bottom) stored per conversation at the end of a run vs span,
    mean over seeds, log axes.

    Args:
        runs: ``data.memory_sizes`` (runs whose manifest records no size are not in it). A
            memory that keeps nothing (vanilla: 0) has no place on a log axis and is left out.
    """
    kept = runs[(runs["items"] > 0) & (runs["tokens"] > 0)]
    items = _per_suite(_means(kept, "items"), "items", "Items stored", log=True, panels=2)
    _lower_row(items, _means(kept, "tokens"), "tokens", "Tokens stored")
    return items


def _means(rows: pd.DataFrame, value: str) -> pd.DataFrame:
    return rows.groupby(["suite", "span", "condition"], observed=True)[value].mean().reset_index()


def _lower_row(fig: plt.Figure, rows: pd.DataFrame, value: str, ylabel: str) -> None:
    """Draw ``value`` (log axis) in the second row of a two-row ``_per_suite`` figure, one
    panel per suite in the first row's order."""
    lower = fig.axes[len(fig.axes) // 2:]
    for ax, (_suite, group) in zip(lower, rows.groupby("suite"), strict=False):
        _lines(ax, group, value, None, log=True)
    lower[0].set_ylabel(ylabel)


def _per_suite(rows: pd.DataFrame, value: str, ylabel: str, *, ribbon: tuple | None = None,
               log: bool = False, panels: int = 1) -> plt.Figure:
    """One panel per suite (columns) in the first of ``panels`` rows, ``value`` vs span."""
    suites = sorted(rows["suite"].unique())
    fig, axes = plt.subplots(panels, max(1, len(suites)), squeeze=False, layout="constrained",
                             figsize=(5 * max(1, len(suites)), 3.6 * panels))
    for ax, suite in zip(axes[0], suites, strict=False):
        _lines(ax, rows[rows["suite"] == suite], value, ribbon, log=log)
        ax.set_title(suite)
    axes[0][0].set_ylabel(ylabel)
    if rows.empty:  # e.g. no full_context cell answered yet: say so, not an empty frame
        axes[0][0].text(0.5, 0.5, f"nothing to draw yet: {ylabel.lower()}", ha="center",
                        va="center", transform=axes[0][0].transAxes, color="grey")
    else:
        axes[0][-1].legend(fontsize="small", loc="best")
    return fig


def _span_text(value: float, _position: object = None) -> str:
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def _lines(ax: plt.Axes, rows: pd.DataFrame, value: str, ribbon: tuple | None, *,
           log: bool) -> None:
    palette = colours()
    for condition, group in rows.groupby("condition", observed=True):
        group = group.sort_values("span")
        colour = palette.get(str(condition))
        ax.plot(group["span"], group[value], marker=marker(str(condition)), color=colour,
                label=label(str(condition)))
        if ribbon:
            ax.fill_between(group["span"], group[ribbon[0]], group[ribbon[1]], color=colour,
                            alpha=0.15)
    ax.set_xscale("log")
    ax.set_xlabel("Memory span (tokens)")
    spans = sorted(rows["span"].unique())
    if spans:  # the spans run, labelled as written (1k, 4k, 16k, 32k), not powers of ten
        ax.xaxis.set_major_locator(FixedLocator(spans))
        ax.xaxis.set_major_formatter(FuncFormatter(_span_text))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if log:
        ax.set_yscale("log")
        log_axis(ax.yaxis)
    if ribbon:
        ax.axhline(0, color="grey", lw=0.8)


def write_scaling(scores: pd.DataFrame, turns: pd.DataFrame, out_dir: str | Path,
                  sizes: pd.DataFrame | None = None) -> dict[str, list]:
    """Write the scaling figures to ``out_dir`` (name -> [png, pdf]); the crossover table is
    one of the paper's tables (``tables.paper_tables``).

    Args:
        sizes: ``data.memory_sizes`` of the same results: ``memory_size_vs_span`` is drawn when
            some run recorded its memory size (runs from before it was recorded have none).
    """
    comparisons = paired.accuracy_comparisons(scores)
    figures = {"accuracy_vs_span": plot_accuracy_vs_span(comparisons),
               "recall_vs_span": plot_recall_vs_span(turns),
               "cost_vs_span": plot_cost_vs_span(turns)}
    if sizes is not None and not sizes.empty:
        figures["memory_size_vs_span"] = plot_memory_size_vs_span(sizes)
    return {name: save(fig, name, out_dir) for name, fig in figures.items()}
