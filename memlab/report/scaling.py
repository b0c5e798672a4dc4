"""The span-scaling figures and crossover table (issue 45): where memory starts to matter.

Drawn from a grid with several spans per suite (the ``scaling`` spec): accuracy at each span
and against full_context there (95% error bars above, the paired difference's ribbon below), evidence
recall, prompt tokens and seconds per answer (log axes) vs span, the memory each condition
ends a run with (items and tokens stored, from the run manifests) vs span, and the crossover
table: for each memory condition, the smallest span at which it is significantly above
full_context (exact McNemar per span, Holm across the conditions compared at that span;
``paired.compare``), or "none up to <largest span>", with the paired difference and interval
at every span.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from memlab.report import accuracy, data, paired
from memlab.report.style import colours, label, log_axis, marker, save
from memlab.stats import interval_text

REFERENCE = "full_context"
NOT_MEMORIES = ("vanilla", "oracle", REFERENCE)
NO_REFERENCE = "no full_context answers (evidence recall only)"
NOT_AT_SPAN = "--"  # the suite was compared at this span in no condition


def has_several_spans(frame: pd.DataFrame) -> bool:
    """Whether some suite of ``frame`` (scores or turns) was run at more than one span."""
    return not frame.empty and bool((frame.groupby("suite")["span"].nunique() > 1).any())


def crossover(comparisons: pd.DataFrame, alpha: float = paired.ALPHA,
              scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per suite and memory condition: the smallest span at which it is significantly above
    full_context (Holm-adjusted p below ``alpha``, difference above 0), else "none up to
    <largest span compared>", and per span the paired difference with its interval and n.

    Args:
        comparisons: ``paired.accuracy_comparisons`` (or recall's) of a multi-span grid.
        scores: the grid's scores: a span where the memory answered and full_context did not
            (the scaling grid's LTM 16k and 32k: evidence recall only) then reads
            ``NO_REFERENCE``, and the crossover names those spans, instead of "not run".

    A span column reads "not run" where the suite was compared at that span but not this
    condition (a spec's ``not_run``), and ``NOT_AT_SPAN`` where the suite was compared at it in
    no condition (persona has no 1k span).
    """
    rows, answered = [], _answered_spans(scores)
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
        unpaired = [f"{s:,}" for s in _without_reference(answered, suite, str(condition))]
        notes = ([f"not run at {', '.join(gaps)}"] if gaps else []) + (
            [f"full_context answered nothing at {', '.join(unpaired)}"] if unpaired else [])
        row = {"suite": suite, "condition": str(condition),
               "crossover": (f"{found:,}" if len(above) else f"none up to {found:,}")
               + (f" ({'; '.join(notes)})" if notes else "")}
        row |= {span: NO_REFERENCE for span in unpaired}
        for r in group.itertuples():
            # the difference and its interval in percentage points alike
            row[f"{int(r.span):,}"] = (f"{100 * r.difference:+.1f} pp "
                                       f"[{interval_text(100 * r.low, 100 * r.high)}] "
                                       f"(n={r.n_pairs}, p_holm={r.p_holm:.3f})")
        rows.append(row)
    table = pd.DataFrame(rows)
    spans = sorted((c for c in table.columns if c not in ("suite", "condition", "crossover")),
                   key=lambda c: int(c.replace(",", "")))
    table = table[["suite", "condition", "crossover", *spans]]
    for suite in table["suite"].unique():
        ran = set(against.loc[against["suite"] == suite, "span"].astype(int)).union(
            *(own for (s, _), own in answered.items() if s == suite))
        absent = [c for c in spans if int(c.replace(",", "")) not in ran]
        table.loc[table["suite"] == suite, absent] = NOT_AT_SPAN
    return table.fillna({c: "not run" for c in spans})


def _answered_spans(scores: pd.DataFrame | None) -> dict[tuple[str, str], set[int]]:
    """(suite, condition) -> the spans at which it answered some test."""
    if scores is None or scores.empty:
        return {}
    counted = data.accuracy_scores(scores)
    return {(str(suite), str(condition)): set(group["span"].astype(int))
            for (suite, condition), group in counted.groupby(["suite", "condition"],
                                                             observed=True)}


def _without_reference(answered: dict[tuple[str, str], set[int]], suite: str,
                       condition: str | None = None) -> list[int]:
    """The spans of ``suite`` at which ``condition`` (None: any condition) answered and
    full_context did not (``answered``: ``_answered_spans``)."""
    spans = set().union(*(own for (s, c), own in answered.items()
                          if s == suite and condition in (None, c)))
    return sorted(spans - answered.get((suite, REFERENCE), set()))


def plot_accuracy_vs_span(scores: pd.DataFrame) -> plt.Figure:
    """Top: each condition's accuracy vs span (``accuracy.accuracy``: Wilson or clipped t 95%
    intervals as error bars; eight conditions' bands would hide each other), so a span where
    full_context answered nothing still shows the memories. Bottom:
    its paired difference from full_context on the same tests (``paired``), 95% ribbons."""
    levels = accuracy.accuracy(scores)
    levels = levels.assign(**{k: 100 * levels[k].astype(float)
                              for k in ("accuracy", "accuracy_low", "accuracy_high")})
    fig = _per_suite(levels, "accuracy", "Accuracy (%)", ribbon=("accuracy_low", "accuracy_high"),
                     panels=2, bars=True)
    comparisons = paired.accuracy_comparisons(scores)
    rows = comparisons[comparisons["reference"] == REFERENCE]
    points = rows.assign(**{k: 100 * rows[k] for k in ("difference", "low", "high")})
    _lower_row(fig, points, "difference", "Accuracy − full context (points)",
               ribbon=("low", "high"), log=False)
    answered = _answered_spans(scores)
    for ax, suite in zip(fig.axes[len(fig.axes) // 2:], sorted(levels["suite"].unique()),
                         strict=False):
        if missing := _without_reference(answered, str(suite)):  # in the middle of those spans (on the log axis), above the zero line
            ax.text(math.prod(missing) ** (1 / len(missing)), 0.5,
                    "full_context answered\nnothing at " + ", ".join(map(_span_text, missing)),
                    transform=ax.get_xaxis_transform(), ha="center", va="center",
                    fontsize="small", color="grey", bbox={"facecolor": "white", "lw": 0})
    return fig


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


def _lower_row(fig: plt.Figure, rows: pd.DataFrame, value: str, ylabel: str, *,
               ribbon: tuple | None = None, log: bool = True) -> None:
    """Draw ``value`` in the second row of a two-row ``_per_suite`` figure, one panel per suite
    of the first row (by its title: a suite with no rows here keeps an empty panel that says
    so)."""
    lower = fig.axes[len(fig.axes) // 2:]
    for ax, upper in zip(lower, fig.axes, strict=False):
        group = rows[rows["suite"] == upper.get_title()]
        if group.empty:
            ax.text(0.5, 0.5, f"nothing to draw: {ylabel.lower()}", ha="center", va="center",
                    transform=ax.transAxes, color="grey")
            continue
        _lines(ax, group, value, ribbon, log=log)
        ax.set_xticks(upper.get_xticks())  # the first row's spans, at the same places
        ax.set_xlim(upper.get_xlim())
        if ribbon:
            ax.axhline(0, color="grey", lw=0.8)
    lower[0].set_ylabel(ylabel)


def _per_suite(rows: pd.DataFrame, value: str, ylabel: str, *, ribbon: tuple | None = None,
               log: bool = False, panels: int = 1, bars: bool = False) -> plt.Figure:
    """One panel per suite (columns) in the first of ``panels`` rows, ``value`` vs span."""
    suites = sorted(rows["suite"].unique())
    fig, axes = plt.subplots(panels, max(1, len(suites)), squeeze=False, layout="constrained",
                             figsize=(5 * max(1, len(suites)), 3.6 * panels))
    for ax, suite in zip(axes[0], suites, strict=False):
        _lines(ax, rows[rows["suite"] == suite], value, ribbon, log=log, bars=bars)
        ax.set_title(suite)
    axes[0][0].set_ylabel(ylabel)
    if rows.empty:  # e.g. no full_context cell answered yet: say so, not an empty frame
        axes[0][0].text(0.5, 0.5, f"nothing to draw yet: {ylabel.lower()}", ha="center",
                        va="center", transform=axes[0][0].transAxes, color="grey")
    else:  # below the panels, a column per condition up to four: eight lines hide no data
        handles, labels = axes[0][0].get_legend_handles_labels()
        for ax in axes[0][1:]:  # conditions a suite's first panel lacks
            more = [(h, t) for h, t in zip(*ax.get_legend_handles_labels(), strict=True)
                    if t not in labels]
            handles, labels = handles + [h for h, _ in more], labels + [t for _, t in more]
        fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)),
                   fontsize="small", frameon=False)
    return fig


def _span_text(value: float, _position: object = None) -> str:
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def _lines(ax: plt.Axes, rows: pd.DataFrame, value: str, ribbon: tuple | None, *,
           log: bool, bars: bool = False) -> None:
    """``value`` vs span, a line per condition; ``ribbon`` (low, high columns) drawn as a band,
    or with ``bars`` as error bars, each condition's a little apart (the spans stay where
    they are labelled: a shift of at most 6% on the log axis)."""
    palette = colours()
    groups = list(rows.groupby("condition", observed=True))
    for i, (condition, group) in enumerate(groups):
        group = group.sort_values("span")
        colour = palette.get(str(condition))
        shift = 1.12 ** ((i - (len(groups) - 1) / 2) / max(1, len(groups) - 1)) if bars else 1
        x = group["span"] * shift
        if bars and ribbon:
            ax.errorbar(x, group[value], yerr=[group[value] - group[ribbon[0]],
                                               group[ribbon[1]] - group[value]],
                        marker=marker(str(condition)), color=colour, capsize=2, lw=1.2,
                        elinewidth=0.8, label=label(str(condition)))
            continue
        ax.plot(x, group[value], marker=marker(str(condition)), color=colour,
                label=label(str(condition)))
        if ribbon:
            ax.fill_between(x, group[ribbon[0]], group[ribbon[1]], color=colour, alpha=0.15)
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


def write_scaling(scores: pd.DataFrame, turns: pd.DataFrame, out_dir: str | Path,
                  sizes: pd.DataFrame | None = None) -> dict[str, list]:
    """Write the scaling figures to ``out_dir`` (name -> [png, pdf]); the crossover table is
    one of the paper's tables (``tables.paper_tables``).

    Args:
        sizes: ``data.memory_sizes`` of the same results: ``memory_size_vs_span`` is drawn when
            some run recorded its memory size (runs from before it was recorded have none).
    """
    figures = {"accuracy_vs_span": plot_accuracy_vs_span(scores),
               "recall_vs_span": plot_recall_vs_span(turns),
               "cost_vs_span": plot_cost_vs_span(turns)}
    if sizes is not None and not sizes.empty:
        figures["memory_size_vs_span"] = plot_memory_size_vs_span(sizes)
    return {name: save(fig, name, out_dir) for name, fig in figures.items()}
