"""Where wrong answers come from: evidence the memory did not bring, or evidence the model was
given and did not use (issue 45: cut evidence, retrieval misses, the model ignoring evidence).

Over the answered tests of the main phase whose evidence recall was measured (a score's
``evidence_recall``: the share of the test's evidence that reached its answering prompts), per
suite, span and condition (each a numeric cell of four columns, ``memlab.report.cells``):

- ``with_evidence``: the share of the tests whose evidence all reached the prompt (Wilson;
  n = tests);
- ``accuracy_with`` and ``accuracy_without``: the mean accuracy (test fraction,
  ``stats.score_ci``) of the tests with all their evidence in the prompt, and of the others
  (part of it or none; n = those tests);
- ``model_share``: of the wrong tests (fraction below 1), the share whose evidence was all in
  the prompt: the model had what it needed and answered wrong (Wilson; n = wrong tests). The
  rest lacked some of it: cut from the window (full_context) or not recalled.

A memory that keeps no provenance is credited by the answer's words in the prompt
(``memlab.bench.evidence``), so its split is as good as that test. On persona's multiple choice,
accuracy without evidence sits near chance (one option in four).
"""

from __future__ import annotations

import pandas as pd

from memlab import stats
from memlab.report.cells import GROUP, cell, cell_columns, shown
from memlab.report.data import accuracy_scores, order_conditions

CELLS = ("with_evidence", "accuracy_with", "accuracy_without", "model_share")
COLUMNS = GROUP + ["tests"] + [c for name in CELLS for c in cell_columns(name)]


def failures(scores: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: ``tests`` and the cells of ``CELLS`` (module docstring)."""
    if scores.empty or "evidence_recall" not in scores:
        return pd.DataFrame(columns=COLUMNS)
    tests = accuracy_scores(scores)
    tests = tests[tests["evidence_recall"].notna()]
    rows = []
    for key, group in tests.groupby(GROUP, observed=True):
        given = group["evidence_recall"].astype(float) >= 1.0
        fraction = group["fraction"].astype(float)
        wrong = fraction < 1.0
        rows.append(dict(zip(GROUP, key, strict=True)) | {"tests": len(group)}
                    | cell(stats.proportion(given.astype(float)), "with_evidence")
                    | cell(stats.score_ci(fraction[given]), "accuracy_with")
                    | cell(stats.score_ci(fraction[~given]), "accuracy_without")
                    | cell(stats.proportion(given[wrong].astype(float)), "model_share"))
    out = pd.DataFrame(rows, columns=COLUMNS)
    return order_conditions(out).sort_values(GROUP).reset_index(drop=True)


def failures_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``failures`` as the paper shows it: percentages with their 95% intervals and n."""
    out = shown(frame, "with_evidence", "evidence all in prompt (%)", "95% CI", "n tests")
    out = out.drop(columns=["tests"])
    out = shown(out, "accuracy_with", "accuracy with it (%)", "with 95% CI", "n with")
    out = shown(out, "accuracy_without", "accuracy without (%)", "without 95% CI", "n without")
    return shown(out, "model_share", "wrong with evidence in prompt (%)", "wrong 95% CI",
                 "n wrong")
