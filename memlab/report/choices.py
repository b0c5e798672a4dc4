"""Which option persona's answers chose: the right one, or which kind of wrong one.

Every persona question offers the right answer beside distractors of known kinds
(``memlab.bench.suites.persona_questions``): ``outdated`` (true once, superseded since: an old
preference), ``never_stated`` (something the user never said) and ``contradicting`` (the
opposite of what the user said); most questions offer one of each, the shared-facts questions two
``never_stated``. A score records the kind of the option chosen (``chosen_kind``).

A memory that recalls an old preference beside the new one, or only the old one, shows as
``outdated`` choices; an answer with no evidence spreads over all three. Per suite, span and
condition, over the answered persona questions of the main phase (each a numeric cell of four
columns, ``memlab.report.cells``; Wilson intervals):

- ``correct``, ``outdated``, ``never_stated``, ``contradicting``: the share of the answers that
  chose each (n = answered questions; an answer that chose no option counts in none);
- ``outdated_of_wrong``: of the wrong answers, the share that chose the outdated option
  (n = wrong answers).
"""

from __future__ import annotations

import pandas as pd

from memlab import stats
from memlab.report.cells import GROUP, cell, cell_columns, shown
from memlab.report.data import accuracy_scores, order_conditions

KINDS = ("correct", "outdated", "never_stated", "contradicting")
CELLS = (*KINDS, "outdated_of_wrong")
COLUMNS = GROUP + ["questions"] + [c for name in CELLS for c in cell_columns(name)]
SHOWN = {"correct": "right (%)", "outdated": "outdated (%)", "never_stated": "never stated (%)",
         "contradicting": "contradicting (%)", "outdated_of_wrong": "outdated of wrong (%)"}


def choices(scores: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition of persona: ``questions`` answered and the cells of
    ``CELLS`` (see the module docstring); empty when no persona question was answered."""
    answered = accuracy_scores(scores)
    if answered.empty or "metadata" not in answered:
        return pd.DataFrame(columns=COLUMNS)
    answered = answered[answered["suite"] == "persona"]
    rows = []
    for key, group in answered.groupby(GROUP, observed=True):
        kinds = pd.Series([m.get("chosen_kind") if isinstance(m, dict) else None
                           for m in group["metadata"]], index=group.index)
        wrong = group["fraction"].astype(float) < 1.0
        row = dict(zip(GROUP, key, strict=True)) | {"questions": len(group)}
        for kind in KINDS:
            row |= cell(stats.proportion((kinds == kind).astype(float)), kind)
        rows.append(row | cell(stats.proportion((kinds[wrong] == "outdated").astype(float)),
                               "outdated_of_wrong"))
    out = pd.DataFrame(rows, columns=COLUMNS)
    return order_conditions(out).sort_values(GROUP).reset_index(drop=True)


def choices_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``choices`` as the paper shows it: percentages with their 95% intervals; n once for the
    answers (``questions``) and once for the wrong answers."""
    out = frame
    for name in CELLS:
        out = shown(out, name, SHOWN[name], f"{SHOWN[name].removesuffix(' (%)')} 95% CI",
                    f"n {name}")
    return out.drop(columns=[f"n {kind}" for kind in KINDS]).rename(
        columns={"n outdated_of_wrong": "n wrong"})
