"""What the answers look like, before any scorer reads them: echoes and abstentions.

A score measures memory only when the model answers. Two forms of reply say nothing about what
the memory held, and a score cannot tell them apart from a wrong answer:

- an **echo** restates the question: every content word of the reply is in the question and
  the reply repeats at least half of the question's content words ("poetry reading" for "What
  was the poetry reading that Caroline attended about?"; "I lost my keys again." for "I lost my
  keys again."). A reply that starts with yes or no answers a yes/no question, however much of
  it it repeats, and a reply that picks one part of the question ("Paris" for "Paris or
  Rome?") repeats less than half of it: neither is an echo. Words are compared lower-cased,
  without function words and a plural "s"; a restatement that changes a word's form ("went"
  for "go") is missed, so the rate is a lower bound;
- an **abstention** says the model does not know (``ABSTAIN``: "I don't have any information",
  "not mentioned", "unknown") or is empty.

``answer_forms`` counts both per suite, span and condition over the free-text answers of the
main phase (multiple-choice answers pick an option and are left out), each a proportion with
its Wilson interval and n; ``median_words`` is the median reply length in words. A condition
whose answers echo often is measuring the answering model, not its memory.
"""

from __future__ import annotations

import re

import pandas as pd

from memlab import stats
from memlab.report.cells import GROUP, cell, cell_columns, shown
from memlab.report.data import answered, order_conditions

FORMS = ("echo", "abstain")
ECHO_SHARE = 0.5  # an echo repeats at least this share of the question's content words
ABSTAIN = re.compile(
    r"\b(?:do|does|did)(?:n'?t| not) (?:have|know|recall|remember)\b|\bno (?:information|mention|"
    r"record)\b|\bnot (?:mentioned|specified|stated|provided|available|sure)\b|\bunknown\b|"
    r"\b(?:cannot|can'?t) (?:determine|answer|find|recall|say|assist)\b|\bi'?m sorry, but\b",
    re.IGNORECASE)
FUNCTION_WORDS = frozenset(
    "a an the of to in on at for and or but is are was were be been being do does did what when "
    "where who whom whose which why how his her hers him he she they them their theirs it its my "
    "me i you your yours we our us that this these those with about from by as has have had "
    "would could should will can may might there than then so".split())
_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str | None) -> list[str]:
    """The words of ``text`` that carry content: lower-cased, function words dropped, a plural
    or possessive "s" cut."""
    words = _WORD.findall((text or "").lower().replace("'s", ""))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words if w not in FUNCTION_WORDS]


def answer_form(question: str, reply: str | None) -> str:
    """``"echo"``, ``"abstain"`` or ``"answer"`` (see the module docstring)."""
    if not (reply or "").strip() or ABSTAIN.search(reply):
        return "abstain"
    if re.match(r"\s*(?:yes|no)\b", reply, re.IGNORECASE):
        return "answer"
    asked, said = set(content_words(question)), content_words(reply)
    if said and asked and set(said) <= asked and len(set(said)) >= ECHO_SHARE * len(asked):
        return "echo"
    return "answer"


def free_text_answers(turns: pd.DataFrame) -> pd.DataFrame:
    """The main-phase answers given in free text (not a pick among options), each with its
    ``form`` and ``words`` (the reply's length in words)."""
    rows = answered(turns)
    if rows.empty:
        return rows.assign(form=pd.Series(dtype=str), words=pd.Series(dtype=int))
    if "options" in rows:
        rows = rows[rows["options"].isna()]
    forms = [answer_form(q, r) for q, r in zip(rows["text"], rows["reply"], strict=True)]
    words = [len(_WORD.findall((r or "").lower())) for r in rows["reply"]]
    return rows.assign(form=forms, words=words)


def answer_forms(turns: pd.DataFrame) -> pd.DataFrame:
    """Per suite, span and condition: ``echo`` and ``abstain`` (each with ``_low``/``_high``/
    ``_n`` answers, Wilson) and ``median_words``."""
    columns = GROUP + [c for form in FORMS for c in cell_columns(form)] + ["median_words"]
    rows = free_text_answers(turns)
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = []
    for key, group in rows.groupby(GROUP, observed=True):
        cells = {k: v for form in FORMS
                 for k, v in cell(stats.proportion(group["form"] == form), form).items()}
        out.append(dict(zip(GROUP, key, strict=True)) | cells
                   | {"median_words": float(group["words"].median())})
    return order_conditions(pd.DataFrame(out, columns=columns)).sort_values(GROUP).reset_index(
        drop=True)


def answer_forms_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``answer_forms`` as the paper shows it: each share in %, its 95% interval and n."""
    out = shown(frame, "echo", "echoes (%)", "echo 95% CI", "answers")
    out = shown(out, "abstain", "abstentions (%)", "abstention 95% CI", "n")
    out = out.drop(columns=["n"])  # the same answers as the echoes' n
    out["median_words"] = [f"{v:.0f}" for v in out["median_words"]]
    return out.rename(columns={"median_words": "median words"})
