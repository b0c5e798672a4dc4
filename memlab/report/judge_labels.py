"""How far an LLM judge can be trusted: its verdicts on LoCoMo answers against hand labels.

The label file is JSON lines, one labelled answer a line (the lab keeps it as
``data/locomo_labels.jsonl``)::

    {"test_id": "conv-26:q9", "condition": "oracle", "answer": "9 June, 2023",
     "gold": "The week before 9 June 2023", "label": "WRONG",
     "reason": "names the Friday itself, not the week before it"}

``answer`` is the reply as the run recorded it (``turns.jsonl``): a label of another answer
measures nothing, so a label whose answer differs from the run's is refused. ``label`` is
CORRECT when the answer states the gold fact, else WRONG; ``reason`` is one line.

``judge_agreement`` puts each judge's verdicts (``questions_frame``'s ``score``: Mem0's lenient
J; ``j_strict``: the strict judge; ``j_matched``: a rule's verdict where one decides, else the
strict judge's, NaN in runs recorded before it) beside the labels: agreement, false accepts
(CORRECT for a WRONG answer, over the WRONG ones) and false rejects (WRONG for a CORRECT
answer, over the CORRECT ones), and on vanilla, which has no memory, the share of answers each
judge accepts (its false-accept rate there, up to the rare lucky guess the labels show).
``judge_disagreement`` is the share of answers on which the lenient and the strict judge
differ. Every rate has its n and a Wilson interval (``memlab.stats.proportion``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memlab import stats
from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, fields_message
from memlab.report import data
from memlab.userfiles import read_text

# where the lab keeps its label files (relative to where memlab runs: the checkout): the labels
# the judge's rule was written from (in-sample), and those drawn and labelled after the rule was
# last revised (held out: ``HELDOUT``)
LABELS = Path("data") / "locomo_labels.jsonl"
HELDOUT = Path("data") / "locomo_heldout_labels.jsonl"
JUDGES = {"score": "J (Mem0, lenient)", "j_strict": "J strict",
          "j_matched": "J matched (rule, else strict)"}


class JudgeLabel(BaseModel):
    """One answer labelled by hand (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    test_id: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    answer: str
    gold: str
    label: Literal["CORRECT", "WRONG"]
    reason: str = Field(min_length=1)
    question: str | None = None  # as asked: a label sheet (``label_sheet``) carries it

    @field_validator("reason")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value:
            raise ValueError("must be one line")
        return value


def default_labels(settings: Settings | None = None) -> Path | None:
    """The label file the paper's judges table uses: ``MEMLAB_LOCOMO_LABELS`` (as given: a
    wrong path is then named by ``read_labels``), else ``LABELS`` when present, else None."""
    configured = (settings or get_settings()).locomo_labels
    if configured is not None:
        return Path(configured)
    return LABELS if LABELS.is_file() else None


def default_heldout_labels(settings: Settings | None = None) -> Path | None:
    """The held-out label file (answers labelled after J matched's rule was last revised, so
    none of them shaped it): ``MEMLAB_LOCOMO_HELDOUT_LABELS``, else ``HELDOUT`` when present,
    else None. The paper measures the judges against it in a table of its own
    (``locomo_judges_heldout``)."""
    configured = (settings or get_settings()).locomo_heldout_labels
    if configured is not None:
        return Path(configured)
    return HELDOUT if HELDOUT.is_file() else None


def read_labels(path: str | Path) -> pd.DataFrame:
    """The label file as a frame (columns: JudgeLabel's fields).

    Raises:
        ConfigError: a line that is not JSON or not a label (named with its line and field),
            or an answer labelled twice.
    """
    rows, seen = [], set()
    for number, line in enumerate(read_text(Path(path), "label file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            label = JudgeLabel.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"label file {path}: line {number}: not valid JSON "
                              f"({exc.msg})") from None
        except ValidationError as exc:
            raise ConfigError(f"label file {path}: line {number}: "
                              f"{fields_message(exc.errors(), whole='label')}") from None
        key = (label.test_id, label.condition)
        if key in seen:
            raise ConfigError(f"label file {path}: line {number}: field 'test_id': "
                              f"{label.test_id!r} under {label.condition!r} is labelled twice")
        seen.add(key)
        rows.append(label.model_dump())
    return pd.DataFrame(rows, columns=list(JudgeLabel.model_fields))


def labelled(labels: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """The labels joined to the runs' answers and verdicts (``questions_frame``'s rows).

    Raises:
        ConfigError: a label names no answered question of the runs, or another answer than
            the run gave (the first few named).
    """
    joined = labels.merge(_answered(questions), on=["test_id", "condition"], how="left",
                          indicator=True)
    missing = joined[joined["_merge"] == "left_only"]
    if len(missing):
        raise ConfigError(f"labels: {len(missing)} name no answered question of the runs, e.g. "
                          f"{missing[['condition', 'test_id']].values.tolist()[:3]}")
    stale = joined[joined["answer"].str.strip() != joined["reply"].fillna("").str.strip()]
    if len(stale):
        raise ConfigError(f"labels: {len(stale)} label another answer than the run's, e.g. "
                          f"{stale[['condition', 'test_id']].values.tolist()[:3]}: relabel them")
    return joined.drop(columns="_merge")


def _answered(questions: pd.DataFrame) -> pd.DataFrame:
    """The answered questions, to join to labels (which carry their own question and gold)."""
    return questions[questions["answered"]].drop(columns=["question", "gold"], errors="ignore"
                                                 ).assign(condition=lambda f: f["condition"].astype(str))


def _rate(outcomes: pd.Series, name: str) -> dict:
    interval = stats.proportion(outcomes.astype(float))
    return {name: interval.estimate, f"{name}_low": interval.low,
            f"{name}_high": interval.high, f"{name}_n": interval.n}


def judge_agreement(labels: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """Per judge: agreement with the labels, false-accept and false-reject rates, and the
    share of vanilla's answers it accepts, each with its n and Wilson interval."""
    joined = labelled(labels, questions)
    right = joined["label"] == "CORRECT"
    vanilla = questions[questions["answered"] & (questions["condition"] == "vanilla")
                        & (questions["test_type"] != "adversarial")]
    rows = []
    for column, name in JUDGES.items():
        said = joined[column].dropna() == 1.0
        truth = right.loc[said.index]
        rows.append({"judge": name, **_rate(said == truth, "agreement"),
                     **_rate(said[~truth], "false_accept"), **_rate(~said[truth], "false_reject"),
                     **_rate(vanilla[column].dropna(), "vanilla_accepted")})
    return pd.DataFrame(rows)


def matching(labels: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """The labels whose answer is one the runs gave, joined to its verdicts (``labelled``'s
    rows); a label of another run's answer (another grid, another prompt) is left out, not an
    error: a grid's table counts the labels it could use."""
    joined = labels.merge(_answered(questions), on=["test_id", "condition"], how="inner")
    same = joined["answer"].str.strip() == joined["reply"].fillna("").str.strip()
    return joined[same].reset_index(drop=True)


def judges_table(questions: pd.DataFrame, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per judge the runs recorded: the share of vanilla's answers it accepts (its
    false-accept rate where no memory can help), the share of answers on which it differs
    from Mem0's lenient J (categories 1-4, every condition), and, against the ``labels`` whose
    answers the runs gave (``matching``), agreement, false accepts and false rejects, and a
    ``hand labels`` row: the share of vanilla's labelled answers that are right and how often
    J differs from the labels; each rate with its n and Wilson interval (NaN where it has no
    data)."""
    scored = questions[questions["answered"] & (questions["test_type"] != "adversarial")]
    vanilla = scored[scored["condition"] == "vanilla"]
    joined = matching(labels, questions) if labels is not None else pd.DataFrame()
    rows = []
    for column, name in JUDGES.items():
        if scored[column].isna().all():  # a run recorded before the judge existed
            continue
        row = {"judge": name, **_rate(vanilla[column].dropna(), "vanilla_accepted")}
        if column != "score":  # J against itself differs nowhere
            both = scored[["score", column]].dropna()
            row |= _rate(both["score"] != both[column], "differs_from_J")
        if len(joined):
            said = joined[column].dropna() == 1.0
            truth = (joined["label"] == "CORRECT").loc[said.index]
            row |= (_rate(said == truth, "agreement") | _rate(said[~truth], "false_accept")
                    | _rate(~said[truth], "false_reject"))
        rows.append(row)
    if len(joined):  # what the labels themselves say of vanilla's answers: the true accepts
        right = (joined["label"] == "CORRECT").astype(float)
        judged = joined["score"].notna()
        rows.append({"judge": "hand labels",
                     **_rate(right[joined["condition"] == "vanilla"], "vanilla_accepted"),
                     **_rate(joined.loc[judged, "score"] != right[judged], "differs_from_J")})
    return pd.DataFrame(rows)


def labelled_scores(questions: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per condition, on its answers the ``labels`` label (``matching``): the share the hand
    labels call right beside the share each judge accepts, each with n and a Wilson interval:
    what the judge choice does to a condition's number."""
    joined = matching(labels, questions)
    rows = []
    for condition, own in joined.groupby("condition", sort=False):
        row = {"condition": condition, **_rate(own["label"] == "CORRECT", "hand")}
        for column in JUDGES:
            if own[column].notna().any():
                row |= _rate(own[column].dropna(), column)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame if frame.empty else data.order_conditions(frame).sort_values(
        "condition").reset_index(drop=True)


def _rate_columns(out: pd.DataFrame, table: pd.DataFrame, name: str, title: str, *,
                  with_n: bool) -> None:
    """``table``'s rate ``name`` (from ``_rate``) as the shown columns ``<title> (%)``,
    ``<title> 95% CI`` and, ``with_n``, ``<title> n`` ("--" where it has no data)."""
    out[f"{title} (%)"] = ["--" if pd.isna(e) else f"{100 * e:.1f}" for e in table[name]]
    out[f"{title} 95% CI"] = [stats.interval_text(100 * lo, 100 * hi) for lo, hi in
                              zip(table[f"{name}_low"], table[f"{name}_high"], strict=True)]
    if with_n:
        out[f"{title} n"] = ["--" if pd.isna(n) else str(int(n)) for n in table[f"{name}_n"]]


def labelled_shown(table: pd.DataFrame) -> pd.DataFrame:
    """``labelled_scores`` in %, with intervals and the n of labelled answers."""
    out = table[["condition"]].copy()
    out["labelled answers"] = table["hand_n"].astype(int)
    for name, title in (("hand", "hand labels"), *JUDGES.items()):
        if name in table:
            _rate_columns(out, table, name, title, with_n=False)
    return out


def judges_shown(table: pd.DataFrame) -> pd.DataFrame:
    """``judges_table`` as the paper prints it: each rate in %, its interval and n."""
    out = table[["judge"]].copy()
    for name, title in (("agreement", "agreement with the labels"),
                        ("false_accept", "false accepts"), ("false_reject", "false rejects"),
                        ("vanilla_accepted", "vanilla answers accepted"),
                        ("differs_from_J", "differs from J")):
        if name in table:
            _rate_columns(out, table, name, title, with_n=True)
    return out


def judge_disagreement(questions: pd.DataFrame, condition: str | None = None) -> dict:
    """The share of answered questions (categories 1-4; of ``condition`` when given) on which
    the lenient and the strict judge differ, with its n and Wilson interval."""
    own = questions[questions["answered"] & (questions["test_type"] != "adversarial")]
    if condition is not None:
        own = own[own["condition"] == condition]
    both = own[["score", "j_strict"]].dropna()
    return _rate(both["score"] != both["j_strict"], "disagreement")
