"""Two judges side by side on every LoCoMo answer (Mem0's lenient J and the strict one) and the
matched verdict from them (a rule's where one decides, else the strict judge's), the answer
normalisation before judging, and the label file that measures judges (issue 44 item 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.bench.base import Response
from memlab.bench.suites.judges import (
    MEM0_PROMPT,
    MEM0_SCHEMA,
    STRICT_PROMPT,
    judge_answer,
    matched_verdict,
    strict_judge,
)
from memlab.bench.suites.locomo import LoCoMoSuite
from memlab.llm.fake import FakeLLM

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"


def scored(suite: LoCoMoSuite, replies: dict[str, str]) -> dict:
    asked = {e.test_id: e for e in suite.events() if e.kind == "question"}
    responses = {asked[t].index: Response(index=asked[t].index, reply=r)
                 for t, r in replies.items()}
    return {s.test_id: s for s in suite.score(responses)}


def label(verdict: str) -> str:
    return json.dumps({"label": verdict})


def by_prompt(lenient: str, strict: str):
    """A judge that answers Mem0's prompt with ``lenient`` and the strict one with ``strict``."""
    def reply(messages):
        return lenient if "be generous" in messages[0].content else strict
    return reply


def test_both_judges_see_the_answer_and_both_verdicts_are_recorded():
    judge = FakeLLM([by_prompt('{"label": "CORRECT"}', '{"label": "WRONG"}')])
    suite = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    race = scored(suite, {"conv-a:q1": "Sometime in June"})["conv-a:q1"]
    meta = race.metadata
    assert (meta["j"], meta["j_strict"]) == (True, False)
    assert meta["judge_raw"] == '{"label": "CORRECT"}'
    assert meta["judge_strict_raw"] == '{"label": "WRONG"}'
    # the score is J matched (no rule decides "Sometime in June": the strict judge's WRONG);
    # Mem0's J, as the papers report it, stays in the metadata
    assert race.score == 0.0
    assert "J: CORRECT, J strict: WRONG, J matched: WRONG" in race.reasoning[1]
    sent = [m[0].content for m in judge.history if "Sometime in June" in m[0].content]
    assert len(sent) == 2 and sent[1] == STRICT_PROMPT.format(
        question="When did Ben run a charity race?",
        gold_answer="The Saturday before 27 June 2023", generated_answer="Sometime in June")
    # both verdicts constrained to the same JSON label
    assert all(p.get("json_schema") == MEM0_SCHEMA for p in judge.params)


def test_the_judges_see_the_normalised_answer_and_f1_the_raw_one():
    judge = FakeLLM(['{"label": "CORRECT"}'])
    suite = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    race = scored(suite, {"conv-a:q1": "Answer: 10:37 am on 27 June, 2023"})["conv-a:q1"]
    assert race.metadata["judged_answer"] == "27 June, 2023"
    assert judge.history[0][0].content == MEM0_PROMPT.format(
        question="When did Ben run a charity race?",
        gold_answer="The Saturday before 27 June 2023", generated_answer="27 June, 2023")
    # F1 on the raw answer: "answer 1037 am on 27 june 2023" has 3 of its 7 tokens in the gold
    assert race.metadata["f1"] == pytest.approx(2 * (3 / 7) * (3 / 5) / (3 / 7 + 3 / 5))


@pytest.mark.parametrize("answer, strict, matched", [
    ("24 June 2023", "WRONG", True),     # the Saturday before 27 June 2023 (a Tuesday)
    ("27 June 2023", "CORRECT", False),  # the anchor itself
])
def test_a_date_the_rule_decides_takes_the_rules_verdict_over_the_strict_judge(answer, strict,
                                                                                matched):
    judge = FakeLLM([by_prompt('{"label": "CORRECT"}', label(strict))])
    suite = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    race = scored(suite, {"conv-a:q1": answer})["conv-a:q1"]
    meta = race.metadata
    assert (meta["j_strict"], meta["j_matched"], meta["j_matched_by"]) == (
        strict == "CORRECT", matched, "rule")
    assert f"J matched: {'CORRECT' if matched else 'WRONG'}" in race.reasoning[1]
    assert race.score == float(matched)  # J matched, not Mem0's CORRECT
    assert len(judge.history) == 2  # Mem0's and the strict judge: the rule asks no model


def test_matched_verdict_is_the_rules_where_one_decides_else_the_strict_judges():
    assert matched_verdict("7 May 2023", "8 May", strict=True) == (False, "rule")
    assert matched_verdict("Paris, Rome", "Rome and Paris", strict=False) == (True, "rule")
    assert matched_verdict("guinea pig", "Oscar", strict=True) == (True, "judge")
    assert matched_verdict("Since 2016", "Seven years", strict=False) == (False, "judge")


@pytest.mark.parametrize("strict", ["CORRECT", "WRONG"])
def test_an_answer_no_rule_decides_takes_the_strict_judges_verdict(strict):
    judge = FakeLLM([by_prompt('{"label": "WRONG"}', label(strict))])
    suite = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    # "strength" holds one of the gold's three content words: no rule decides
    meta = scored(suite, {"conv-a:q0": "strength"})["conv-a:q0"].metadata
    assert (meta["j"], meta["j_strict"], meta["j_matched"], meta["j_matched_by"]) == (
        False, strict == "CORRECT", strict == "CORRECT", "judge")


def test_an_empty_answer_is_wrong_for_every_verdict_without_a_call():
    judge = FakeLLM(['{"label": "CORRECT"}'])
    suite = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    scores = scored(suite, {"conv-a:q0": "   ", "conv-a:q5": "Answer:"})
    for test_id in ("conv-a:q0", "conv-a:q5", "conv-a:q2"):  # q2: never answered
        meta = scores[test_id].metadata
        assert (meta["j"], meta["j_strict"], meta["j_matched"], meta["j_matched_by"]) == \
            (False, False, False, "rule")
    assert judge.history == []


def test_without_a_judge_every_verdict_is_none():
    suite = LoCoMoSuite(str(MINI), judge=None, conversations=["conv-a"])
    meta = scored(suite, {"conv-a:q0": "love"})["conv-a:q0"].metadata
    assert meta["j"] is None and meta["j_strict"] is None and meta["judged_answer"] is None
    assert meta["j_matched"] is None and meta["j_matched_by"] is None


@pytest.mark.parametrize("reply, seen", [
    ("Answer: 1:56 pm on 8 May, 2023", "8 May, 2023"),
    ("Short answer: Paris, Rome", "Paris, Rome"),
    ("She went at 2:30pm on 3 July 2023.", "She went at 3 July 2023."),
    ("The week before 9 June 2023", "The week before 9 June 2023"),
    ("Mon 08 May 2023 13:56", "Mon 08 May 2023 13:56"),  # no am/pm: not LoCoMo's time of day
    ("The score was 3:1", "The score was 3:1"),
])
def test_judge_answer_drops_a_label_and_a_time_of_day_only(reply, seen):
    assert judge_answer(reply) == seen


def test_strict_judge_reads_the_label_as_mem0s_judge_does():
    assert strict_judge(FakeLLM(['{"label": "CORRECT"}']), "q", "g", "a").correct
    assert not strict_judge(FakeLLM(["I think it is WRONG"]), "q", "g", "a").correct
    assert not strict_judge(FakeLLM(["no label at all"]), "q", "g", "a").correct
