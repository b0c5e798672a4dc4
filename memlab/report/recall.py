"""Evidence recall per suite, span and condition, and how the evidence reached the prompt.

Over every question of the main phase whose suite names its evidence, answered or not
(``data.evidence_questions``; evidence-only runs add questions without model calls):

- ``recall``: the mean over questions of the share of their evidence that reached the prompt
  (``memlab.bench.evidence``), with ``stats.score_ci``: a Wilson interval when every question's
  share is 0 or 1 (one piece of evidence each, or all-or-nothing), else a t interval clipped to
  [0, 1]; n counts questions;
- per piece of evidence (n counts pieces, Wilson intervals; pieces of one question are not
  independent, so these intervals are narrower than the question-level one): ``direct`` (the
  evidence turn verbatim in the prompt), ``derived`` (a memory derived from it that still
  carries the answer), ``answer_in_prompt`` (the answer's words anywhere in the prompt).

``routes`` splits the pieces into disjoint shares for the figure: verbatim, derived only
(through a derived memory, not verbatim), answer only (neither, but the answer's words are in
the prompt: reached only for a memory that keeps no provenance) and lost.
"""

from __future__ import annotations

import pandas as pd

from memlab import stats
from memlab.report.cells import GROUP, cell, cell_columns, intervals_by
from memlab.report.data import answered_mask, evidence_questions, order_conditions

ITEM_FIELDS = ("direct", "derived", "answer_in_prompt")
ROUTES = {"verbatim": "evidence turn verbatim in the prompt",
          "derived_only": "only through a derived memory still carrying the answer",
          "answer_only": "only the answer's words, elsewhere in the prompt",
          "lost": "not in the prompt"}


def evidence_items(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per piece of evidence of every evidence question: the question's run and
    ``index`` columns, ``answered``, then ``direct``, ``derived``, ``answer_in_prompt`` and
    ``reached`` (bool)."""
    questions = evidence_questions(turns)
    keep = [c for c in (*GROUP, "seed", "run_id", "index", "answered") if c in questions]
    if questions.empty:
        return pd.DataFrame(columns=[*keep, *ITEM_FIELDS, "reached"])
    rows = questions[keep + ["evidence"]].explode("evidence").dropna(subset=["evidence"])
    rows = rows.reset_index(drop=True)  # one row per piece: a unique index to align on
    records = pd.DataFrame(list(rows["evidence"]), index=rows.index)
    flags = records.reindex(columns=[*ITEM_FIELDS, "reached"]).fillna(False).astype(bool)
    return pd.concat([rows[keep], flags], axis=1)


def evidence_recall(turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: ``recall`` (``_low``/``_high``/``_n`` questions),
    ``answered`` (of those questions, how many the model answered), then ``direct``,
    ``derived``, ``answer_in_prompt`` each with ``_low``/``_high``/``_n`` (pieces)."""
    columns = GROUP + cell_columns("recall") + ["answered"] + [
        c for field in ITEM_FIELDS for c in cell_columns(field)]
    questions = evidence_questions(turns)
    if questions.empty:
        return pd.DataFrame(columns=columns)
    out = intervals_by(questions.assign(recall=questions["evidence_recall"].astype(float)),
                       GROUP, "recall", "recall", stats.score_ci)
    asked = questions.assign(asked=answered_mask(questions)).groupby(
        GROUP, observed=True)["asked"].sum().rename("answered")
    items = evidence_items(turns)
    shares = [dict(zip(GROUP, key, strict=True))
              | {k: v for f in ITEM_FIELDS for k, v in cell(stats.proportion(g[f]), f).items()}
              for key, g in items.groupby(GROUP, observed=True)]
    out = out.join(asked, on=GROUP).merge(pd.DataFrame(shares), on=GROUP, how="left")
    return order_conditions(out[columns]).sort_values(GROUP).reset_index(drop=True)


def routes(turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: the disjoint shares of ``ROUTES`` (summing to 1) over
    the pieces of evidence, and ``pieces``."""
    items = evidence_items(turns)
    if items.empty:
        return pd.DataFrame(columns=GROUP + list(ROUTES) + ["pieces"])
    neither = ~items["direct"] & ~items["derived"]
    items = items.assign(
        verbatim=items["direct"], derived_only=items["derived"] & ~items["direct"],
        answer_only=neither & items["answer_in_prompt"],
        lost=neither & ~items["answer_in_prompt"])
    out = items.groupby(GROUP, observed=True)[list(ROUTES)].mean()
    out["pieces"] = items.groupby(GROUP, observed=True).size()
    return order_conditions(out.reset_index())

