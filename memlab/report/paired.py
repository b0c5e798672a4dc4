"""Paired comparisons: every condition against the reference arms, on the same questions.

Every condition of a grid answers the same sample of tests, so two conditions are compared on
the questions both answered, matched on suite, span, seed, test id (accuracy; the event index
for evidence recall) and phase. Per pair of conditions ``stats.paired`` gives the difference
``condition - reference``: exact McNemar with Newcombe's interval when every outcome is 0 or 1,
else the paired bootstrap with a sign-flip test (fractional LTM scores, evidence shares). The
p-values of the conditions compared with one reference in one suite and span form one family,
Holm-corrected (``stats.holm``).

Columns of a comparison table: suite, span, reference, condition, difference, low, high,
p_value, p_holm, n_pairs, condition_better / reference_better (pairs where that side's outcome
is higher: McNemar's discordant pairs for 0/1 outcomes), method.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from memlab import stats
from memlab.errors import ConfigError
from memlab.report.data import accuracy_scores, evidence_questions, order_conditions

REFERENCES = ("full_context", "vanilla", "oracle")
ALPHA = 0.05
ACCURACY_KEY = ["suite", "span", "seed", "test_id", "phase"]
RECALL_KEY = ["suite", "span", "seed", "index", "phase"]
COLUMNS = ["suite", "span", "reference", "condition", "difference", "low", "high", "p_value",
           "p_holm", "n_pairs", "condition_better", "reference_better", "method"]


def outcome_table(frame: pd.DataFrame, key: list[str], value: str) -> pd.DataFrame:
    """One row per question (``key``), one column per condition, the outcome ``value``
    (NaN where that condition has no outcome for it).

    Raises:
        ConfigError: two runs hold the same question under one condition (say a results folder
            holding two copies of a run).
    """
    rows = frame[key + ["condition", value]].assign(condition=frame["condition"].astype(str))
    repeated = rows.duplicated(key + ["condition"], keep=False)
    if repeated.any():
        runs = sorted(set(frame.loc[repeated, "run_id"])) if "run_id" in frame else []
        raise ConfigError(f"results: the same question appears twice under one condition (runs "
                          f"{', '.join(runs[:4])}): keep one copy of each run")
    return rows.set_index(key + ["condition"])[value].astype(float).unstack("condition")


def compare(table: pd.DataFrame, references: tuple[str, ...] = REFERENCES) -> pd.DataFrame:
    """Every condition of ``table`` (``outcome_table``) against each reference present, per
    suite and span, Holm-corrected per suite, span and reference."""
    rows = []
    for (suite, span), group in table.groupby(level=["suite", "span"]):
        present = [c for c in group.columns if group[c].notna().any()]
        for reference in (r for r in references if r in present):
            family = [_pair(group[reference], group[c]) | {
                "suite": suite, "span": span, "reference": reference, "condition": c}
                for c in present if c != reference]
            adjusted = stats.holm([row["p_value"] for row in family])
            rows += [row | {"p_holm": p} for row, p in zip(family, adjusted, strict=True)]
    out = order_conditions(pd.DataFrame(rows, columns=COLUMNS))
    out["reference"] = pd.Categorical(out["reference"], categories=list(references),
                                      ordered=True)
    return out.sort_values(["suite", "span", "reference", "condition"]).reset_index(drop=True)


def _pair(reference: pd.Series, condition: pd.Series) -> dict:
    both = reference.notna() & condition.notna()
    first, second = reference[both].to_numpy(), condition[both].to_numpy()
    test = stats.paired(first, second)
    return {"difference": test.estimate, "low": test.low, "high": test.high,
            "p_value": test.p_value, "n_pairs": test.n,
            "condition_better": int(np.sum(second > first)),
            "reference_better": int(np.sum(first > second)), "method": test.method}


def accuracy_comparisons(scores: pd.DataFrame,
                         references: tuple[str, ...] = REFERENCES) -> pd.DataFrame:
    """Paired accuracy differences on the tests both conditions answered."""
    return _comparisons(accuracy_scores(scores), ACCURACY_KEY, "fraction", references)


def recall_comparisons(turns: pd.DataFrame,
                       references: tuple[str, ...] = REFERENCES) -> pd.DataFrame:
    """Paired evidence-recall differences on the questions both conditions were asked."""
    return _comparisons(evidence_questions(turns), RECALL_KEY, "evidence_recall", references)


def _comparisons(frame: pd.DataFrame, key: list[str], value: str,
                 references: tuple[str, ...]) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    return compare(outcome_table(frame, key, value), references)


CHANGE_COLUMNS = ["suite", "span", "condition", "measure", "before", "after", "difference", "low",
                  "high", "p_value", "p_holm", "n_pairs", "after_better", "before_better",
                  "method"]


def change_comparisons(before: tuple[pd.DataFrame, pd.DataFrame],
                       after: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    """A change (a prompt, a memory's code) measured paired: each condition of the ``after``
    runs against the same condition of the ``before`` runs, on the questions both answered
    (accuracy) or were asked (evidence recall). ``before`` and ``after`` are ``(scores,
    turns)`` frames (``data.scores_frame``, ``data.turns_frame``) of two runs of one grid.
    ``difference`` is after - before; Holm per suite, span and measure over the conditions.

    Raises:
        ConfigError: a condition of ``after`` that ``before`` does not have, on any question.
    """
    rows = []
    measures = (("accuracy", 0, accuracy_scores, ACCURACY_KEY, "fraction"),  # 0: scores
                ("evidence recall", 1, evidence_questions, RECALL_KEY, "evidence_recall"))
    for measure, frame, pick, key, value in measures:
        old = _outcomes(pick(before[frame]), key, value)
        new = _outcomes(pick(after[frame]), key, value)
        if new is None:
            continue
        missing = sorted(set(new.columns) - set(old.columns if old is not None else []))
        if missing:
            raise ConfigError(f"change comparison: the runs before hold no {measure} of "
                              f"{', '.join(missing)}")
        old, new = old.align(new, join="inner", axis=0)
        for (suite, span), group in new.groupby(level=["suite", "span"]):
            family = []
            for condition in (c for c in group.columns if group[c].notna().any()):
                first, second = old.loc[group.index, condition], group[condition]
                both = first.notna() & second.notna()
                pair = _pair(first, second)
                pair |= {"after_better": pair.pop("condition_better"),
                         "before_better": pair.pop("reference_better")}
                family.append(pair | {"suite": suite, "span": span, "condition": condition,
                                      "measure": measure, "before": first[both].mean(),
                                      "after": second[both].mean()})
            adjusted = stats.holm([row["p_value"] for row in family])
            rows += [row | {"p_holm": p} for row, p in zip(family, adjusted, strict=True)]
    return order_conditions(pd.DataFrame(rows, columns=CHANGE_COLUMNS)).sort_values(
        ["measure", "suite", "span", "condition"]).reset_index(drop=True)


def _outcomes(frame: pd.DataFrame, key: list[str], value: str) -> pd.DataFrame | None:
    return None if frame.empty else outcome_table(frame, key, value)
