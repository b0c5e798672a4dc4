"""Echoes and abstentions among the answers (memlab.report.answer_forms), on replies read in the
LoCoMo and LTM grids' turns.jsonl."""

from __future__ import annotations

import pandas as pd
import pytest
from test_report_findings import CORRECT, outcomes, overview
from test_report_paired import scores

from memlab import stats
from memlab.report import findings, paired
from memlab.report.answer_forms import answer_form, answer_forms, answer_forms_shown


@pytest.mark.parametrize("question, reply", [
    ("What was the poetry reading that Caroline attended about?", "poetry reading"),
    ("What is Jon working on opening?", "Jon is working on opening."),
    ("Whose birthday did Melanie celebrate recently?", "Melanie's birthday"),
    ("How does Jon use the clipboard with a notepad attached to it?",
     "Jon uses the clipboard with a notepad attached to it."),
    ("I lost my keys again.", "I lost my keys again."),
])
def test_a_reply_that_only_restates_the_question_is_an_echo(question, reply):
    assert answer_form(question, reply) == "echo"


@pytest.mark.parametrize("question, reply", [
    # yes/no answers a yes/no question, however much of it it repeats
    ("Would Melanie go on another roadtrip soon?", "No, Melanie did not go on another roadtrip."),
    # one part of the question picked: an answer
    ("Did Caroline move to Paris or to Rome?", "Paris"),
    # one word of its own is an answer, right or wrong
    ("What are the new shoes that Melanie got used for?", "Melanie got new shoes used for running."),
    ("When did Melanie run a charity race?", "20 October 2023"),
])
def test_a_reply_that_adds_or_picks_is_an_answer(question, reply):
    assert answer_form(question, reply) == "answer"


@pytest.mark.parametrize("reply, form", [
    ("I'm sorry, but I don't have any information about your favourite colour.", "abstain"),
    ("I don't have a favorite color.", "abstain"),
    ("It is not mentioned in the conversation.", "abstain"),
    ("", "abstain"),
    (None, "abstain"),
    # sympathy and a reason that says "unable" are answers
    ("I'm sorry to hear that you lost your keys again. They are on the hook.", "answer"),
    ("Because he was unable to find a suitable account.", "answer"),
])
def test_abstentions_are_refusals_and_empty_replies_only(reply, form):
    assert answer_form("What is my favourite colour?", reply) == form


def _turn(condition, text, reply, **extra):
    return {"suite": "locomo", "span": 26000, "condition": condition, "kind": "question",
            "phase": "main", "answered": True, "text": text, "reply": reply,
            "options": None} | extra


def test_answer_forms_counts_each_condition_s_free_text_answers_with_wilson_intervals():
    question = "What is Jon working on opening?"
    turns = pd.DataFrame(
        [_turn("rag", question, "Jon is working on opening.")] * 3
        + [_turn("rag", question, "A dance studio")] * 6
        + [_turn("rag", question, "I don't know.")]
        # neither counted: a pick among options, a question the model was not asked, a probe
        + [_turn("rag", question, "Jon is working on opening.", options=["a", "b"]),
           _turn("rag", question, "Jon is working on opening.", answered=False),
           _turn("rag", question, "Jon is working on opening.", phase="post")]
        + [_turn("vanilla", question, "A bakery")] * 4)
    frame = answer_forms(turns).set_index("condition")
    rag = frame.loc["rag"]
    assert (rag["echo"], rag["echo_n"], rag["abstain"]) == (0.3, 10, 0.1)
    wilson = stats.proportion_ci(3, 10)
    assert (rag["echo_low"], rag["echo_high"]) == (wilson.low, wilson.high)
    assert rag["median_words"] == 3.0
    vanilla = frame.loc["vanilla"]
    assert (vanilla["echo"], vanilla["echo_low"], vanilla["echo_n"]) == (0.0, 0.0, 4)
    assert vanilla["echo_high"] == stats.proportion_ci(0, 4).high > 0  # never +-0 at 0/n
    shown = answer_forms_shown(answer_forms(turns)).set_index("condition")
    assert shown.loc["rag", ["echoes (%)", "echo 95% CI", "answers", "abstentions (%)"]].tolist() \
        == ["30.0", stats.interval_text(100 * wilson.low, 100 * wilson.high, 1), 10, "10.0"]


def test_findings_name_the_conditions_that_echo_and_abstain():
    frame = pd.concat([scores(c, outcomes(k)) for c, k in CORRECT.items()])
    forms = pd.DataFrame([
        {"suite": "persona", "span": 1000, "condition": "rag", "echo": 0.25, "echo_low": 0.1,
         "echo_high": 0.5, "echo_n": 40, "abstain": 0.0, "abstain_low": 0.0,
         "abstain_high": 0.09, "abstain_n": 40, "median_words": 5.0}])
    out = findings.findings_text(overview(CORRECT), paired.accuracy_comparisons(frame), forms)
    assert ("Free-text answers that restate the question (a lower bound): rag 25.0% "
            "(10.0-50.0; 40 answers); that abstain: none") in out
    assert "Free-text answers" not in findings.findings_text(
        overview(CORRECT), paired.accuracy_comparisons(frame))
