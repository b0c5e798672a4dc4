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

from memlab.errors import ConfigError  # noqa: E402
from memlab.memory.base import CONDITIONS  # noqa: E402
from memlab.report import data, summary  # noqa: E402

MARKERS = ("o", "*", "s", "D", "^", "v", "P", "X")
LABELS = {"vanilla": "Vanilla", "oracle": "Oracle (evidence only)", "full_context": "Full context", "rag": "RAG",
          "episodic": "Episodic", "episodic_summary": "Episodic + summary",
          "sleep": "Sleep", "hybrid": "Hybrid"}
SUITE_LABELS = {"ltm": "LTM suite", "persona": "Persona suite"}
DPI = 200


def apply_style() -> None:
    """Paper style: white grid, readable fonts."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.25)
    plt.rcParams.update({"figure.dpi": 100, "savefig.bbox": "tight", "pdf.fonttype": 42})


def colours() -> dict[str, tuple]:
    """Condition -> colour (colour-blind palette, stable order)."""
    return dict(zip(CONDITIONS, sns.color_palette("colorblind", len(CONDITIONS)), strict=True))


def label(condition: str) -> str:
    return LABELS.get(str(condition), str(condition))


def save(fig: plt.Figure, name: str, out_dir: str | Path) -> list[Path]:
    """Write ``name``.png and ``name``.pdf into ``out_dir``; close the figure."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=DPI)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def _empty(fig: plt.Figure, ax: plt.Axes, message: str) -> plt.Figure:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def _suite_axes(suites: list[str], height: float = 4.2,
                sharey: bool = False) -> tuple[plt.Figure, list[plt.Axes]]:
    fig, axes = plt.subplots(1, max(len(suites), 1), figsize=(5.4 * max(len(suites), 1), height),
                             squeeze=False, sharey=sharey)
    return fig, list(axes[0])


def _legend(fig: plt.Figure, conditions) -> None:
    handles = [plt.Line2D([], [], color=colours().get(c, "grey"), marker=MARKERS[i % len(MARKERS)],
                          linestyle="", markersize=8, label=label(c))
               for i, c in enumerate(CONDITIONS) if c in set(map(str, conditions))]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4),
               bbox_to_anchor=(0.5, -0.02), frameon=False, title="Memory condition")
    fig.subplots_adjust(bottom=0.28)


def plot_accuracy_vs_tokens(frame: pd.DataFrame) -> plt.Figure:
    """Accuracy vs prompt tokens per answer: one point per condition, 95% CI bars, per suite."""
    suites = sorted(frame["suite"].unique()) if len(frame) else []
    fig, axes = _suite_axes(suites)
    if not suites:
        return _empty(fig, axes[0], "no complete runs")
    palette = colours()
    for ax, suite in zip(axes, suites, strict=True):
        rows = frame[frame["suite"] == suite]
        for i in range(len(rows)):
            row = rows.iloc[[i]]
            condition = row["condition"].iloc[0]
            index = list(CONDITIONS).index(condition) if condition in CONDITIONS else 0
            ax.errorbar(row["tokens"], row["accuracy"], xerr=_bars(row, "tokens"),
                        yerr=_bars(row, "accuracy"), fmt=MARKERS[index], markersize=9, capsize=3,
                        color=palette.get(condition, "grey"))
        ax.set(title=SUITE_LABELS.get(suite, suite), xlabel="Prompt tokens per answer (tokens)",
               ylabel="Accuracy (%)", ylim=(-5, 105))
        ax.set_xlim(left=0)
    _legend(fig, frame["condition"].unique())
    fig.suptitle("Accuracy against prompt cost (estimate, 95% CI)")
    return fig


def plot_ltm_vs_span(frame: pd.DataFrame) -> plt.Figure:
    """LTM score vs memory span, one line per condition (95% CI: the test types' standard errors
    in quadrature, ``stats.sum_of_means_ci``)."""
    fig, ax = plt.subplots(figsize=(7, 4.6))
    if frame.empty:
        return _empty(fig, ax, "no LTM runs")
    palette = colours()
    groups = list(frame.groupby("condition", observed=True))
    for i, (condition, rows) in enumerate(groups):
        rows = rows.sort_values("span")
        # dodge: conditions side by side around each span, so equal scores stay visible
        dodge = 1 + 0.03 * (i - (len(groups) - 1) / 2)
        ax.errorbar(rows["span"] * dodge, rows["score"], yerr=_bars(rows, "score"),
                    label=label(condition),
                    color=palette.get(condition, "grey"), marker=MARKERS[
                        list(CONDITIONS).index(condition) if condition in CONDITIONS else i % len(MARKERS)],
                    capsize=3, linewidth=1.8, markersize=7)
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


def plot_persona_heatmap(matrix: pd.DataFrame) -> plt.Figure:
    """Persona accuracy (%) by question type and condition."""
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * max(len(matrix.columns), 1) + 3), 4.8))
    if matrix.empty:
        return _empty(fig, ax, "no persona runs")
    shown = matrix.rename(index=label, columns=lambda c: str(c).replace("_", " "))
    sns.heatmap(shown, annot=True, fmt=".0f", vmin=0, vmax=100, cmap="cividis", ax=ax,
                cbar_kws={"label": "Accuracy (%)"}, linewidths=0.5)
    ax.set(xlabel="PersonaMem question type", ylabel="Memory condition",
           title="Persona accuracy by question type (%)")
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


def table2_frame(results_dir: str | Path, scores: pd.DataFrame) -> pd.DataFrame:
    """Table 2 for plotting: the bench's probe metrics, else pre/post scores per test type."""
    from memlab.report.tables import bench_table

    table2 = bench_table("table2")
    bench = table2(Path(results_dir)) if table2 is not None else pd.DataFrame()
    if len(bench):
        return summary.table2_from_bench(bench)
    return summary.table2_from_scores(scores)


def plot_table2(frame: pd.DataFrame) -> plt.Figure:
    """Sleep condition, before vs after one sleep cycle, per probe, with the delta annotated."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 * len(frame) + 2), 4.6))
    if frame.empty:
        return _empty(fig, ax, "no pre/post sleep probes")
    x = np.arange(len(frame))
    blue, orange = sns.color_palette("colorblind", 2)
    ax.bar(x - 0.2, frame["pre"], 0.4, yerr=_errors(frame["pre_err"]), capsize=3, color=blue,
           label="Before sleep")
    ax.bar(x + 0.2, frame["post"], 0.4, yerr=_errors(frame["post_err"]), capsize=3, color=orange,
           label="After sleep", hatch="//", edgecolor="white")
    tops = [max(_top(pre, pre_err), _top(post, post_err)) for pre, pre_err, post, post_err in
            zip(frame["pre"], frame["pre_err"], frame["post"], frame["post_err"], strict=True)]
    for xi, (top, delta) in enumerate(zip(tops, frame["delta"], strict=True)):
        text = "n/a" if pd.isna(delta) else f"Δ {delta:+.0f} pp"
        ax.annotate(text, (xi, top + 3), ha="center", fontsize=10, weight="bold")
    ax.set_xticks(x, [str(p).replace("_", " ") for p in frame["probe"]], rotation=15, ha="right")
    ax.set(ylabel="Accuracy (%)", ylim=(0, max(115, max(tops) + 12)), xlabel="Cognitive probe",
           title="Table 2: sleep condition before and after a sleep cycle")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _top(value: float, error: Any) -> float:
    """Top of a bar with its upper error bar (0 for a missing bar)."""
    upper = error[1] if isinstance(error, tuple | list) and len(error) == 2 else 0.0
    return 0.0 if pd.isna(value) else float(value) + float(upper or 0.0)


def plot_latency(frame: pd.DataFrame) -> plt.Figure:
    """Mean time per answer per condition: memory (recall + store), LLM, and background work
    (consolidation cycles, storing unanswered turns) spread over the answers."""
    suites = sorted(frame["suite"].unique()) if len(frame) else []
    fig, axes = _suite_axes(suites, height=4.4, sharey=True)
    if not suites:
        return _empty(fig, axes[0], "no answered turns")
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


def write_figures(results_dir: str | Path, out_dir: str | Path = "figures") -> dict[str, list]:
    """Read every complete run under ``results_dir`` and write all five figures to ``out_dir``.

    Returns:
        figure name -> [png path, pdf path].
    """
    apply_style()
    scores, turns = data.scores_frame(results_dir), data.turns_frame(results_dir)
    if scores.empty or turns.empty:
        raise ConfigError(f"results_dir {str(results_dir)!r}: no complete run with scores")
    figures = {
        "accuracy_vs_tokens": plot_accuracy_vs_tokens(summary.accuracy_tokens(scores, turns)),
        "ltm_vs_span": plot_ltm_vs_span(summary.ltm_by_span(scores)),
        "persona_by_type": plot_persona_heatmap(summary.persona_by_type(scores)),
        "table2_sleep": plot_table2(table2_frame(results_dir, scores)),
        "latency": plot_latency(summary.latency(turns)),
    }
    return {name: save(fig, name, out_dir) for name, fig in figures.items()}
