"""The findings a results folder supports, as sentences a README can quote (``findings.md``).

Per suite and span: the n behind every comparison and the paired difference it could detect at
the discordance the runs actually showed; what the bounds show (oracle against vanilla: does
the answering model use evidence; full_context against the oracle); which memory conditions beat
full_context, and which are above, not above or below vanilla, each with its paired difference,
95% interval, the questions each side won and the Holm-corrected p (``memlab.report.paired``);
the evidence-recall ranking with intervals; and the answers that restate the question or
abstain (``memlab.report.answer_forms``), which no score tells from wrong ones. "Beats" and "loses" mean Holm p < 0.05; a
difference that does not reach it is stated as a difference, never as a win.
"""

from __future__ import annotations

import math

import pandas as pd

from memlab import stats
from memlab.report import answer_forms, paired, summary
from memlab.report.cells import p_text

BOUNDS = ("vanilla", "oracle", "full_context")


def findings(scores: pd.DataFrame, turns: pd.DataFrame) -> str:
    """The findings of ``scores`` and ``turns`` (``memlab.report.data`` frames) as markdown."""
    return findings_text(summary.overview(scores, turns), paired.accuracy_comparisons(scores),
                         answer_forms.answer_forms(turns))


def findings_text(overview: pd.DataFrame, accuracy: pd.DataFrame,
                  forms: pd.DataFrame | None = None) -> str:
    """Markdown findings from ``summary.overview`` and ``paired.accuracy_comparisons`` frames
    (and ``answer_forms.answer_forms``'s, when given): one section per suite and span."""
    sections = []
    for (suite, span), rows in overview.groupby(["suite", "span"], sort=True):
        pairs = accuracy[(accuracy["suite"] == suite) & (accuracy["span"] == span)]
        lines = _section(rows, pairs)
        if forms is not None:
            lines += _forms(forms[(forms["suite"] == suite) & (forms["span"] == span)])
        sections.append("\n".join([f"### {suite} at {span} tokens", "",
                                   *(f"- {line}" for line in lines)]))
    return "\n\n".join(sections) + "\n"


def _section(rows: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    by_condition = rows.set_index(rows["condition"].astype(str))
    memory = [c for c in by_condition.index if c not in BOUNDS]
    lines = [_power(by_condition, pairs, memory)]
    lines += _bounds(by_condition, pairs)
    lines += _against(pairs, "full_context", memory)
    lines += _against(pairs, "vanilla", memory)
    lines.append(_recall(by_condition))
    return [line for line in lines if line]


def _power(rows: pd.DataFrame, pairs: pd.DataFrame, memory: list[str]) -> str:
    """n, and the difference it detects at the share of questions on which a memory condition
    and full_context or vanilla disagreed (fractional scores: any different score)."""
    counts = pairs["n_pairs"] if len(pairs) else rows["accuracy_n"]
    fewest, n = int(counts.min()), int(counts.max())
    if fewest == n:
        text = (f"n = {n} answered questions per condition, paired (the same questions for "
                "every condition); ")
    else:  # a grid with runs missing: never claim the same questions for every condition
        text = (f"n = {fewest}-{n} answered questions per comparison, paired (each on the "
                "questions both its conditions answered; some conditions have runs missing); ")
    recall = f"{int(rows['recall_n'].min())}-" if rows["recall_n"].nunique() > 1 else ""
    text += f"{recall}{int(rows['recall_n'].max())} evidence questions per condition."
    ours = pairs[pairs["condition"].isin(memory)
                 & pairs["reference"].isin(["full_context", "vanilla"])]
    if ours.empty:
        return text
    discordance = float(((ours["condition_better"] + ours["reference_better"])
                         / ours["n_pairs"]).mean())
    detectable = stats.min_detectable_difference(n, discordance=discordance)
    reach = (f"detects a paired difference of {100 * detectable:.0f} points" if
             not math.isnan(detectable) else
             "detects no difference up to that share")
    return (f"{text} A memory condition and full_context or vanilla disagreed on "
            f"{100 * discordance:.0f}% of the questions on average; at that share, n = {n} "
            f"{reach} (80% power, exact McNemar).")


def _difference(row: pd.Series) -> str:
    return (f"{100 * row['difference']:+.1f} points (95% CI {100 * row['low']:.1f} to "
            f"{100 * row['high']:.1f}; {_questions(row['condition_better'])} better, "
            f"{int(row['reference_better'])} worse; Holm p {p_text(row['p_holm'])})")


def _questions(count: float) -> str:
    return f"{int(count)} question{'' if int(count) == 1 else 's'}"


def _pair(pairs: pd.DataFrame, reference: str, condition: str) -> pd.Series | None:
    hit = pairs[(pairs["reference"] == reference) & (pairs["condition"] == condition)]
    return None if hit.empty else hit.iloc[0]


def _significant(row: pd.Series) -> bool:
    return bool(row["p_holm"] < paired.ALPHA)


def _accuracy(rows: pd.DataFrame, condition: str) -> str:
    row = rows.loc[condition]
    return (f"{100 * row['accuracy']:.1f}% "
            f"({stats.interval_text(100 * row['accuracy_low'], 100 * row['accuracy_high'], 1)})")


def _bounds(rows: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    lines = []
    uses = _pair(pairs, "vanilla", "oracle")
    if uses is not None:
        verdict = ("the answering model uses the evidence it is given" if _significant(uses)
                   and uses["difference"] > 0 else
                   "no significant use of evidence by the answering model: accuracy here "
                   "measures the model more than memory")
        lines.append(f"oracle {_accuracy(rows, 'oracle')} against vanilla "
                     f"{_accuracy(rows, 'vanilla')}: {_difference(uses)}; {verdict}.")
    if "full_context" in rows.index and not rows.loc["full_context", "accuracy_n"] > 0:
        recall = rows.loc["full_context"]
        held = ("" if pd.isna(recall["recall"]) else
                f"; its window held {100 * recall['recall']:.1f}% "
                f"({stats.interval_text(100 * recall['recall_low'], 100 * recall['recall_high'], 1)})"
                " of the evidence when each question came")
        lines.append(f"full_context answered nothing at this span (evidence recall only: the "
                     f"grid's cut), so no condition is compared with it here{held}.")
    full = _pair(pairs, "oracle", "full_context")
    if full is not None:
        oracle = rows.loc["oracle"]
        inside = oracle["accuracy_low"] <= rows.loc["full_context", "accuracy"] \
            <= oracle["accuracy_high"]
        lines.append(f"full_context {_accuracy(rows, 'full_context')} is "
                     f"{'within' if inside else 'outside'} the oracle's interval; full_context "
                     f"minus oracle: {_difference(full)}.")
    return lines


def _against(pairs: pd.DataFrame, reference: str, memory: list[str]) -> list[str]:
    rows = [(c, row) for c in memory if (row := _pair(pairs, reference, c)) is not None]
    if not rows:
        return []
    above = [(c, r) for c, r in rows if _significant(r) and r["difference"] > 0]
    below = [(c, r) for c, r in rows if _significant(r) and r["difference"] < 0]
    listed = "; ".join(f"{c} {_difference(r)}" for c, r in rows)
    if reference == "full_context":
        head = ("Beats full_context: " + ", ".join(c for c, _ in above) if above else
                "No memory condition beats full_context")
        tail = (f"; significantly below it: {', '.join(c for c, _ in below)}" if below else
                "; none is significantly below it")
    else:
        not_above = [c for c, r in rows if r["difference"] <= 0]
        head = ("Above vanilla: " + ", ".join(c for c, _ in above) if above else
                "No memory condition is significantly above vanilla")
        tail = (f"; not above vanilla at all: {', '.join(not_above)}" if not_above else "")
        tail += (f"; loses to vanilla (significantly below): "
                 f"{', '.join(c for c, _ in below)}" if below else
                 "; none loses to vanilla significantly")
    return [f"{head}{tail}. Each minus {reference}: {listed}."]


def _recall(rows: pd.DataFrame) -> str:
    ranked = rows.dropna(subset=["recall"]).sort_values("recall", ascending=False)
    if ranked.empty:
        return ""
    same_n = ranked["recall_n"].nunique() == 1  # else each condition's own n is said
    shown = ", ".join(
        f"{c} {100 * r['recall']:.1f}% "
        f"({stats.interval_text(100 * r['recall_low'], 100 * r['recall_high'], 1)}"
        + ("" if same_n else f"; n = {int(r['recall_n'])}") + ")"
        for c, r in ranked.iterrows())
    each = f" ({int(ranked['recall_n'].max())} questions each)" if same_n else ""
    return f"Evidence recall{each}: {shown}."


def _forms(rows: pd.DataFrame) -> list[str]:
    """How many free-text answers restate the question or abstain, per condition that has any."""
    if rows.empty:
        return []
    parts = []
    for form, name in (("echo", "restate the question (a lower bound)"),
                       ("abstain", "abstain")):
        some = rows[rows[form] > 0]
        listed = ", ".join(
            f"{c} {100 * r[form]:.1f}% "
            f"({stats.interval_text(100 * r[f'{form}_low'], 100 * r[f'{form}_high'], 1)}; "
            f"{int(r[f'{form}_n'])} answers)" for c, r in zip(some["condition"], some.to_dict(
                "records"), strict=True))
        parts.append(f"{name}: {listed}" if listed else f"{name}: none")
    return [f"Free-text answers that {'; that '.join(parts)} "
            "(`answer_forms`: a score cannot tell these from wrong answers)."]
