"""The paper's figures (matplotlib Agg + seaborn), each written as PNG (200 dpi) and PDF.

One colour and one marker per condition, in the order of ``CONDITIONS``, on every figure (the
seaborn colour-blind palette). Each ``plot_*`` function takes the summary frame of
:mod:`memlab.report.summary` and returns the figure; :func:`write_figures` does it all from a
results folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from memlab.bench.tables import table2  # noqa: E402
from memlab.errors import ConfigError  # noqa: E402
from memlab.report import (  # noqa: E402
    accuracy,
    data,
    forest,
    paired,
    peers,
    recall,
    scaling,
    summary,
)
from memlab.report.style import (  # noqa: E402
    SUITE_LABELS,
    apply_style,
    colours,
    label,
    legend,
    log_axis,
    marker,
    no_data,
    panel_grid,
    save,
    suite_axes,
)

# a panel whose prompt sizes differ by this factor or more gets a log axis
WIDE_RANGE = 20


def plot_accuracy_vs_tokens(frame: pd.DataFrame) -> plt.Figure:
    """Accuracy vs prompt tokens per answer: one point per condition, 95% CI bars, one panel
    per suite and span (a log token axis where they differ ``WIDE_RANGE``-fold)."""
    panels = sorted({(s, int(p)) for s, p in zip(frame["suite"], frame["span"], strict=True)})
    fig, axes = suite_axes(panels)
    if not panels:
        return no_data(fig, axes[0], "no complete runs")
    palette = colours()
    for ax, (suite, span) in zip(axes, panels, strict=True):
        rows = frame[(frame["suite"] == suite) & (frame["span"] == span)]
        for i in range(len(rows)):
            row = rows.iloc[[i]]
            condition = row["condition"].iloc[0]
            ax.errorbar(row["tokens"], row["accuracy"], xerr=_bars(row, "tokens"),
                        yerr=_bars(row, "accuracy"), fmt=marker(condition), markersize=9,
                        capsize=3, color=palette.get(condition, "grey"))
        ax.set(title=f"{SUITE_LABELS.get(suite, suite)}, {span:,} tokens",
               xlabel="Prompt tokens per answer (tokens)", ylabel="Accuracy (%)", ylim=(-5, 105))
        tokens = rows["tokens"].dropna()
        if len(tokens) and tokens.min() > 0 and tokens.max() / tokens.min() >= WIDE_RANGE:
            ax.set_xscale("log")  # full context's tens of thousands beside recall's hundreds
            log_axis(ax.xaxis)
        else:
            ax.set_xlim(left=0)
    legend(fig, frame["condition"].unique())
    fig.suptitle("Accuracy on the answered tests against prompt cost (estimate, 95% CI)")
    return fig


def plot_ltm_vs_span(frame: pd.DataFrame) -> plt.Figure:
    """LTM score vs memory span, one line per condition (95% CI: the test types' standard errors
    in quadrature, ``stats.sum_of_means_ci``)."""
    fig, ax = plt.subplots(figsize=(7, 4.6))
    if frame.empty:
        return no_data(fig, ax, "no LTM runs")
    palette = colours()
    groups = list(frame.groupby("condition", observed=True))
    for i, (condition, rows) in enumerate(groups):
        rows = rows.sort_values("span")
        # dodge: conditions side by side around each span, so equal scores stay visible
        dodge = 1 + 0.03 * (i - (len(groups) - 1) / 2)
        ax.errorbar(rows["span"] * dodge, rows["score"], yerr=_bars(rows, "score"),
                    label=label(condition), color=palette.get(condition, "grey"),
                    marker=marker(condition), capsize=3, linewidth=1.8, markersize=7)
    spans = sorted(frame["span"].dropna().unique())
    if len(spans) > 1 and spans[-1] / max(spans[0], 1) >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(spans, [f"{int(s):,}" for s in spans])
    ax.set(xlabel="Memory span (tokens)",
           ylabel=f"LTM score (of {int(frame['n_types'].max())} test types)",
           title="GoodAI-style LTM score against memory span")
    ax.set_ylim(-0.04 * int(frame["n_types"].max()), 1.05 * int(frame["n_types"].max()))
    ax.legend(title="Memory condition", bbox_to_anchor=(1.02, 1), loc="upper left")
    return fig


def plot_persona_heatmap(matrix: pd.DataFrame, counts: pd.DataFrame | None = None) -> plt.Figure:
    """Persona accuracy (%) by question type and condition, each cell with its n (``counts``;
    the intervals are in the persona_by_type table)."""
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * max(len(matrix.columns), 1) + 3), 4.8))
    if matrix.empty:
        return no_data(fig, ax, "no persona runs")
    shown = matrix.rename(index=label, columns=lambda c: str(c).replace("_", " "))
    n = counts.reindex_like(matrix).to_numpy() if counts is not None else None
    text = [[("" if pd.isna(v) else f"{v:.0f}") + ("" if n is None or pd.isna(n[i][j])
                                                   else f"\nn={int(n[i][j])}")
             for j, v in enumerate(row)] for i, row in enumerate(matrix.to_numpy())]
    sns.heatmap(shown, annot=np.array(text, dtype=object), fmt="", vmin=0, vmax=100,
                cmap="cividis", ax=ax, cbar_kws={"label": "Accuracy (%)"}, linewidths=0.5)
    ax.set(xlabel="PersonaMem question type", ylabel="Memory condition",
           title="Persona accuracy by question type (%, n answered)")
    ax.set_xticklabels(ax.get_xticklabels(), rotation=35, ha="right")
    return fig


def _bars(rows: pd.DataFrame, prefix: str) -> np.ndarray:
    """Asymmetric error-bar lengths (2 x n: below, above) from the interval ``prefix_low`` -
    ``prefix_high`` around ``prefix`` (NaN: no bar is drawn)."""
    value = rows[prefix].to_numpy(float)
    below = value - rows[f"{prefix}_low"].to_numpy(float)
    above = rows[f"{prefix}_high"].to_numpy(float) - value
    return np.vstack([below, above]).clip(min=0)


def _errors(pairs: pd.Series) -> np.ndarray:
    """(below, above) error pairs as matplotlib's 2 x n array."""
    return np.array([list(p) for p in pairs], dtype=float).reshape(-1, 2).T


def table2_frame(results_dir: str | Path, scores: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Table 2 for plotting (the bench's probe metrics, else pre/post scores per test type)
    and the caption saying what the forced cycle did."""
    bench = table2(Path(results_dir))
    if len(bench):
        return summary.table2_from_bench(bench), summary.cycle_caption(bench)
    return summary.table2_from_scores(scores), ""


def plot_table2(frame: pd.DataFrame, caption: str = "") -> plt.Figure:
    """Sleep condition, before vs after one sleep cycle, per probe, with the delta annotated
    and ``caption`` (what the cycle did) under the axes."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 * len(frame) + 2), 4.6))
    if frame.empty:
        return no_data(fig, ax, "no pre/post sleep probes")
    x = np.arange(len(frame))
    blue, orange = sns.color_palette("colorblind", 2)
    ax.bar(x - 0.2, frame["pre"], 0.4, yerr=_errors(frame["pre_err"]), capsize=3, color=blue,
           label="Before sleep")
    ax.bar(x + 0.2, frame["post"], 0.4, yerr=_errors(frame["post_err"]), capsize=3, color=orange,
           label="After sleep", hatch="//", edgecolor="white")
    tops = [max(_top(pre, pre_err), _top(post, post_err)) for pre, pre_err, post, post_err in
            zip(frame["pre"], frame["pre_err"], frame["post"], frame["post_err"], strict=True)]
    for xi, (top, delta, n) in enumerate(zip(tops, frame["delta"], frame["n"], strict=True)):
        text = "n/a" if pd.isna(delta) else f"Δ {delta:+.0f} pp\nn={n:g}"
        ax.annotate(text, (xi, top + 3), ha="center", fontsize=10, weight="bold")
    ax.set_xticks(x, [str(p).replace("_", " ") for p in frame["probe"]], rotation=15, ha="right")
    ax.set(ylabel="Accuracy (%)", ylim=(0, max(115, max(tops) + 12)), xlabel="Cognitive probe",
           title="Table 2: sleep condition before and after a sleep cycle")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    if caption:
        fig.text(0.02, -0.16, caption, fontsize=9, ha="left", va="top", wrap=True)
    return fig


def _top(value: float, error: Any) -> float:
    """Top of a bar with its upper error bar (0 for a missing bar)."""
    upper = error[1] if isinstance(error, tuple | list) and len(error) == 2 else 0.0
    return 0.0 if pd.isna(value) else float(value) + float(upper or 0.0)


def plot_latency(frame: pd.DataFrame) -> plt.Figure:
    """Mean time per answer per condition: memory (recall + store), LLM, and background work
    (consolidation cycles, storing unanswered turns) spread over the answers."""
    suites = sorted(frame["suite"].unique()) if len(frame) else []
    fig, axes = suite_axes(suites, height=4.4, sharey=True)
    if not suites:
        return no_data(fig, axes[0], "no answered turns")
    blue, orange, green = sns.color_palette("colorblind", 3)
    for ax, suite in zip(axes, suites, strict=True):
        rows = frame[frame["suite"] == suite].sort_values("condition", ascending=False)
        names = [label(c) for c in rows["condition"]]
        # Seconds: with a local model an answer takes seconds, and millisecond ticks collide.
        memory_s, llm_s = rows["memory_ms"] / 1000, rows["llm_ms"] / 1000
        behind_s = (rows["background_ms"] if "background_ms" in rows else 0 * rows["llm_ms"]) / 1000
        ax.barh(names, memory_s, color=blue, label="Memory (recall + store)")
        ax.barh(names, llm_s, left=memory_s, color=orange, hatch="//",
                edgecolor="white", label="LLM (answer)")
        ax.barh(names, behind_s, left=memory_s + llm_s, color=green,
                hatch="..", edgecolor="white",
                label="Background: consolidation + storing unanswered turns (spread per answer)")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.set(title=SUITE_LABELS.get(suite, suite), xlabel="Mean time per answer (s)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               frameon=False)
    fig.suptitle("Where the time goes: memory, LLM and background work")
    return fig


def plot_evidence_recall(found: pd.DataFrame, ways: pd.DataFrame) -> plt.Figure:
    """Per suite and span: evidence recall per condition (95% CI, n questions; top) and how
    the evidence reached the prompt (shares of the pieces of evidence, ``recall.ROUTES``;
    bottom)."""
    panels = sorted({(s, int(p)) for s, p in zip(found["suite"], found["span"], strict=True)})
    fig, cells = panel_grid(panels, 6.0, 4.5, stacked=2)
    if not panels:
        return no_data(fig, cells[0][0], "no question names its evidence")
    for (top, bottom), (suite, span) in zip(cells, panels, strict=True):
        _recall_panel(top, found[(found["suite"] == suite) & (found["span"] == span)])
        _routes_panel(bottom, ways[(ways["suite"] == suite) & (ways["span"] == span)])
        top.set_title(f"{SUITE_LABELS.get(suite, suite)}, {span:,} tokens")
    handles, names = cells[0][1].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, -0.01), title="How a piece of evidence reached the prompt")
    fig.suptitle("Evidence recall: did what the question needs reach the prompt?")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def _recall_panel(ax: plt.Axes, rows: pd.DataFrame) -> None:
    rows = rows.sort_values("condition", ascending=False).reset_index(drop=True)
    palette = colours()
    for y, row in rows.iterrows():
        value, low, high = 100 * np.array([row["recall"], row["recall_low"],
                                           row["recall_high"]], float)
        ax.errorbar([value], [y], xerr=[[max(value - low, 0)], [max(high - value, 0)]],
                    fmt=marker(row["condition"]), color=palette.get(str(row["condition"])),
                    capsize=3, markersize=8)
        ax.annotate(f"n={int(row['recall_n'])}", xy=(1.02, y),
                    xycoords=("axes fraction", "data"), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [label(c) for c in rows["condition"]])
    ax.set(xlim=(-5, 105), xlabel="Evidence recall (%), mean over questions (95% CI)")


def _routes_panel(ax: plt.Axes, rows: pd.DataFrame) -> None:
    rows = rows.sort_values("condition", ascending=False)
    names, left = [label(c) for c in rows["condition"]], np.zeros(len(rows))
    # shades of one hue, not the conditions' colours: bars are routes, not conditions
    dark, middle, light = sns.color_palette("Blues_r", 4)[:3]
    look = {"verbatim": (dark, ""), "derived_only": (middle, "//"),
            "answer_only": (light, ".."), "lost": ("0.88", "")}
    for route, text in recall.ROUTES.items():
        share = 100 * rows[route].to_numpy(float)
        colour, hatch = look[route]
        ax.barh(names, share, left=left, color=colour, hatch=hatch, edgecolor="white",
                label=f"{route.replace('_', ' ')}: {text}")
        left += share
    ax.set(xlim=(0, 100), xlabel="Share of the pieces of evidence (%)")


def plot_peers(pairs: pd.DataFrame) -> plt.Figure:
    """mem0 and LangMem minus rag, hybrid and sleep on the same tests (``peers.paired``): the
    accuracy forest plot, one panel per suite and cell (rows) and baseline (columns)."""
    return forest.plot_forest(peers.forest_frame(pairs), "Accuracy",
                              compared="each peer minus the baseline")


def write_figures(results_dir: str | Path, out_dir: str | Path = "figures") -> dict[str, list]:
    """Read every complete run under ``results_dir`` and write every figure to ``out_dir``
    (``peers`` only when the results hold a complete mem0, LangMem or graphiti run).

    Returns:
        figure name -> [png path, pdf path].
    """
    apply_style()
    scores, turns = data.scores_frame(results_dir), data.turns_frame(results_dir)
    if scores.empty or turns.empty:
        raise ConfigError(f"results_dir {str(results_dir)!r}: no complete run with scores")
    figures = {
        "accuracy_vs_tokens": plot_accuracy_vs_tokens(summary.accuracy_tokens(scores, turns)),
        "paired_accuracy": forest.plot_forest(paired.accuracy_comparisons(scores), "Accuracy"),
        "evidence_recall": plot_evidence_recall(recall.evidence_recall(turns),
                                                recall.routes(turns)),
        "paired_recall": forest.plot_forest(paired.recall_comparisons(turns),
                                            "Evidence recall"),
        "ltm_ceilings": forest.plot_ceilings(accuracy.ceilings(scores), accuracy.LOW_CEILING),
        "ltm_vs_span": plot_ltm_vs_span(summary.ltm_by_span(scores)),
        "persona_by_type": plot_persona_heatmap(summary.persona_by_type(scores),
                                                summary.persona_by_type(scores, counts=True)),
        "table2_sleep": plot_table2(*table2_frame(results_dir, scores)),
        "latency": plot_latency(summary.latency(turns)),
    }
    peer_rows = peers.peer_rows(results_dir)
    if peers.has_peers(peer_rows):
        figures["peers"] = plot_peers(peers.paired(peer_rows))
    written = {name: save(fig, name, out_dir) for name, fig in figures.items()}
    if scaling.has_several_spans(scores):  # the span-scaling figures and crossover table
        written |= scaling.write_scaling(scores, turns, out_dir,
                                         sizes=data.memory_sizes(results_dir))
    return written
