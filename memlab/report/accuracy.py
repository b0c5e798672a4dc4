"""Accuracy per suite, span and condition on the answered tests, and the LTM ceilings.

Accuracy is the mean score fraction of the tests the model answered (``data.accuracy_scores``),
the seeds pooled: ``stats.score_ci``, so a Wilson interval when every score is 0 or 1 (persona
questions, pass/fail LTM tests) and a t interval clipped to [0, 1] for fractional LTM scores.

The ceiling of an LTM test type is the oracle arm's accuracy on it: the answering model given only
the question's evidence, verbatim. A type whose ceiling is below ``LOW_CEILING`` measures the
model, not memory; the ceiling table flags it (``model_limited``) and the accuracy table names
the flagged types it averages in, so none is averaged in silently.
"""

from __future__ import annotations

import pandas as pd

from memlab import stats
from memlab.report.cells import GROUP, cell_columns, intervals_by
from memlab.report.data import accuracy_scores, order_conditions, phase_rows

CEILING_ARM = "oracle"
LOW_CEILING = 0.5  # below this oracle accuracy a test type is flagged as model-limited
CEILING_GROUP = ["suite", "span", "test_type"]


def accuracy(scores: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: ``accuracy`` (proportion) with ``accuracy_low`` /
    ``_high`` / ``_n`` (answered tests), ``interval`` (wilson / t), ``unanswered`` (tests
    left out: evidence only) and ``model_limited_types`` (LTM types under ``LOW_CEILING``
    averaged into this row, comma-separated; empty when none or without an oracle run).
    """
    columns = GROUP + cell_columns("accuracy") + ["interval", "unanswered",
                                                  "model_limited_types"]
    counted = accuracy_scores(scores)
    if counted.empty:
        return pd.DataFrame(columns=columns)
    out = intervals_by(counted, GROUP, "fraction", "accuracy", stats.score_ci)
    methods = counted.groupby(GROUP, observed=True)["fraction"].agg(
        lambda v: stats.score_ci(v).method).rename("interval")
    main = scores[phase_rows(scores, "main")]
    skipped = (main.groupby(GROUP, observed=True).size()
               - counted.groupby(GROUP, observed=True).size()).rename("unanswered")
    out = out.join(methods, on=GROUP).join(skipped, on=GROUP)
    limited = ceilings(scores)
    limited = limited[limited["model_limited"]]
    names = limited.groupby(["suite", "span"])["test_type"].agg(", ".join)
    out["model_limited_types"] = [names.get((s, p), "") for s, p in
                                  zip(out["suite"], out["span"], strict=True)]
    return order_conditions(out[columns]).sort_values(GROUP).reset_index(drop=True)


def ceilings(scores: pd.DataFrame, *, arm: str = CEILING_ARM,
             threshold: float = LOW_CEILING) -> pd.DataFrame:
    """Per LTM suite span and test type: the ``arm``'s accuracy (``ceiling``, ``_low``,
    ``_high``, ``_n`` answered tests) and ``model_limited`` (``ceiling`` below
    ``threshold``)."""
    columns = CEILING_GROUP + cell_columns("ceiling") + ["model_limited"]
    counted = accuracy_scores(scores)
    if counted.empty:
        return pd.DataFrame(columns=columns)
    own = counted[(counted["suite"] == "ltm") & (counted["condition"].astype(str) == arm)]
    out = intervals_by(own, CEILING_GROUP, "fraction", "ceiling", stats.score_ci)
    out["model_limited"] = out["ceiling"].astype(float) < threshold
    return out[columns].sort_values(CEILING_GROUP).reset_index(drop=True)

