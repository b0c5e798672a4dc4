"""Interval plots: paired differences as forest plots, and the LTM ceilings per test type.

A forest plot shows, per suite and reference arm, each condition's paired difference from the
reference (percentage points, 95% interval) on the questions both answered: a filled marker is
significant after Holm's correction, a hollow one is not; the right margin gives the pairs and
the Holm-adjusted p. A frame may carry a ``note`` column (say the memory model and seed of the
peers' cells): rows with different notes get panels of their own, the note in the title.
Overlapping bars of two accuracies say little about their difference;
these intervals are of the difference itself.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from memlab.memory.base import CONDITIONS
from memlab.report.cells import p_text
from memlab.report.paired import ALPHA
from memlab.report.style import (
    SUITE_LABELS,
    colours,
    label,
    legend,
    marker,
    no_data,
    panel_grid,
)


def _notes(frame: pd.DataFrame) -> pd.Series:
    return frame["note"].astype(str) if "note" in frame else pd.Series("", index=frame.index)


def _title(suite: str, span: int) -> str:
    return f"{SUITE_LABELS.get(suite, suite)}, {span:,} tokens"


def plot_forest(frame: pd.DataFrame, measure: str = "Accuracy",
                compared: str = "each condition minus the reference") -> plt.Figure:
    """One panel per suite/span (and note; rows) and reference (columns); see the module
    docstring. ``compared`` names the differences in the title."""
    notes = _notes(frame)
    panels = sorted({(s, int(p), n) for s, p, n in zip(frame["suite"], frame["span"], notes,
                                                       strict=True)}) if len(frame) else []
    references = [str(r) for r in frame["reference"].unique()] if len(frame) else []
    fig, axes = plt.subplots(max(len(panels), 1), max(len(references), 1), squeeze=False,
                             figsize=(6.0 * max(len(references), 1),
                                      1.4 + 0.42 * len(CONDITIONS) * max(len(panels), 1)))
    if not panels:
        return no_data(fig, axes[0][0], "no paired questions")
    for row, (suite, span, note) in enumerate(panels):
        for col, reference in enumerate(references):
            rows = frame[(frame["suite"] == suite) & (frame["span"] == span) & (notes == note)
                         & (frame["reference"].astype(str) == reference)]
            _forest_panel(axes[row][col], rows, f"{_title(suite, span)}\nvs {label(reference)}"
                          + (f" ({note})" if note else ""))
            axes[row][col].set_xlabel(f"{measure} difference (percentage points)")
    legend(fig, frame["condition"].unique())
    fig.suptitle(f"{measure}: {compared} on the same questions\n"
                 f"(95% CI; filled: Holm-adjusted p < {ALPHA:g}; right: pairs, Holm p)")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.7 / fig.get_figheight()))  # the title's two lines
    return fig


def _forest_panel(ax: plt.Axes, rows: pd.DataFrame, title: str) -> None:
    rows = rows.sort_values("condition", ascending=False).reset_index(drop=True)
    palette = colours()
    ax.axvline(0, color="0.3", linewidth=1, linestyle="--")
    if rows.empty:  # e.g. full_context answered nothing at this span (the scaling grid's LTM 32k)
        ax.text(0.5, 0.5, "no questions answered by both", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    for y, row in rows.iterrows():
        condition = str(row["condition"])
        colour = palette.get(condition, "grey")
        filled = row["p_holm"] < ALPHA
        diff, low, high = 100 * np.array([row["difference"], row["low"], row["high"]], float)
        ax.errorbar([diff], [y], xerr=[[max(diff - low, 0)], [max(high - diff, 0)]],
                    fmt=marker(condition), color=colour, capsize=3, markersize=8,
                    markerfacecolor=colour if filled else "white", markeredgewidth=1.5)
        p = p_text(row["p_holm"])
        ax.annotate(f"n={int(row['n_pairs'])}, p{p if p.startswith('<') else '=' + p}",
                    xy=(1.02, y), xycoords=("axes fraction", "data"), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [label(c) for c in rows["condition"]])
    ax.set(xlim=(-105, 105), ylim=(-0.7, max(len(rows), 1) - 0.3), title=title)


def plot_ceilings(frame: pd.DataFrame, threshold: float) -> plt.Figure:
    """The oracle arm's accuracy per LTM test type (95% CI, n), one panel per span; a type
    under ``threshold`` is drawn in the warning colour and labelled model-limited."""
    spans = sorted(int(s) for s in frame["span"].unique()) if len(frame) else []
    types = frame.groupby("span").size().max() if len(frame) else 1
    fig, cells = panel_grid(spans, 7.0, 3.2 + 0.45 * max(types, 1), max_columns=2)
    if not spans:
        return no_data(fig, cells[0][0], "no oracle run on the LTM suite")
    ok, warn = sns.color_palette("colorblind")[0], sns.color_palette("colorblind")[3]
    for (ax,), span in zip(cells, spans, strict=True):
        rows = frame[frame["span"] == span].sort_values("test_type", ascending=False)
        rows = rows.reset_index(drop=True)
        for y, row in rows.iterrows():
            value, low, high = 100 * np.array([row["ceiling"], row["ceiling_low"],
                                               row["ceiling_high"]], float)
            ax.errorbar([value], [y], xerr=[[max(value - low, 0)], [max(high - value, 0)]],
                        fmt="o" if not row["model_limited"] else "X", markersize=8, capsize=3,
                        color=warn if row["model_limited"] else ok)
            ax.annotate(f"n={int(row['ceiling_n'])}", xy=(1.02, y),
                        xycoords=("axes fraction", "data"), va="center", fontsize=8)
        names = [f"{t} (model-limited)" if limited else str(t)
                 for t, limited in zip(rows["test_type"], rows["model_limited"], strict=True)]
        ax.set_yticks(range(len(rows)), names)
        ax.axvline(100 * threshold, color=warn, linestyle=":", linewidth=1.2)
        ax.set(xlim=(-5, 105), xlabel="Oracle accuracy (%), evidence only",
               title=f"LTM test types at {span:,} tokens")
    handles = [plt.Line2D([], [], color=ok, marker="o", linestyle="",
                          label=f"oracle at {100 * threshold:.0f}% or above: tests memory"),
               plt.Line2D([], [], color=warn, marker="X", linestyle="",
                          label=f"model-limited: oracle below {100 * threshold:.0f}%"),
               plt.Line2D([], [], color=warn, linestyle=":", label="flag threshold")]
    fig.legend(handles=handles, loc="lower center", ncol=1, frameon=False, fontsize=9)
    fig.suptitle("Ceiling of each LTM test type:\nthe answering model given only the evidence "
                 "(95% CI, n tests)")
    fig.tight_layout(rect=(0, min(0.2, 0.9 / fig.get_figheight()), 1, 1))  # the legend below
    return fig
