"""The LongMemEval suite on a hand-written file in the published format.

``suites_data/longmemeval_mini.json``: sessions listed out of time order, a ``has_answer`` user
turn, an ``_abs`` question whose answer session marks no turn, turns without ``has_answer``, a
session opening with an assistant turn whose ``has_answer`` reply holds the answer, a number
as an answer.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import pytest

from memlab.bench.base import SUITES, Response
from memlab.bench.suites.judges import LONGMEMEVAL_ABSTENTION, LONGMEMEVAL_PROMPTS
from memlab.bench.suites.longmemeval import LongMemEvalSuite, Turn, exchanges
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM

MINI = Path(__file__).parent / "suites_data" / "longmemeval_mini.json"


def suite(**options) -> LongMemEvalSuite:
    return SUITES.resolve("longmemeval").build(span=4000, seed=0,
                                               options={"data": str(MINI), **options})


def by_user(s: LongMemEvalSuite, user: str):
    return [e for e in s.events() if e.user_id == user]


def test_sessions_replayed_in_time_order_as_exchanges_then_the_question():
    own = by_user(suite(), "q1")
    kinds = [e.kind for e in own]
    assert kinds == ["filler", "filler", "filler", "question"]
    move, thanks, pasta = own[:3]  # s_move (2 April) comes before s_later (20 May)
    assert move.text == "I just moved to Portland and need a good bakery."
    assert move.reply == "Welcome to Portland! Here are some bakeries."
    assert (thanks.text, thanks.reply) == ("Thanks!", "")
    assert pasta.session_id == "q1/s_later"
    assert move.timestamp == datetime(2023, 4, 2, 18, 30)
    assert thanks.timestamp == datetime(2023, 4, 2, 18, 30, 1)
    question = own[-1]
    assert question.timestamp == datetime(2023, 6, 1, 10, 0) and not question.store
    assert question.test_type == "single-session-user"


def test_evidence_is_has_answer_turns_else_the_answer_sessions():
    s = suite()
    q1 = by_user(s, "q1")
    assert [(e.index, e.answer) for e in q1[-1].evidence] == [(q1[0].index, "Portland")]
    assert q1[-1].metadata["evidence_turns"] == "has_answer"
    abstention = by_user(s, "q2_abs")
    assert abstention[-1].metadata["abstention"] is True
    assert [e.index for e in abstention[-1].evidence] == [abstention[0].index]
    assert abstention[-1].metadata["evidence_turns"] == "answer_sessions"
    # q3: the marked turn is an assistant reply; the session opens with the assistant
    q3 = by_user(s, "q3")
    assert (q3[0].text, q3[0].reply) == ("", "Hello! How can I help you today?")
    assert [(e.index, e.answer) for e in q3[-1].evidence] == [(q3[1].index, "3")]
    assert q3[-1].metadata["answer"] == "3"


def test_exchanges_pair_a_user_message_with_the_reply_after_it():
    turns = [Turn(role="user", content="a"), Turn(role="user", content="b"),
             Turn(role="assistant", content="c", has_answer=True),
             Turn(role="assistant", content="d")]
    assert [(x["user"], x["assistant"], x["marked"]) for x in exchanges(turns)] == [
        ("a", "", False), ("b", "c", True), ("", "d", False)]


def test_types_and_seeded_instance_sample():
    assert {e.user_id for e in suite(types=["temporal-reasoning"]).events()} == {"q3"}
    picked = [{e.user_id for e in suite(instances=2).events()} for _ in range(2)]
    assert picked[0] == picked[1] and len(picked[0]) == 2
    with pytest.raises(ConfigError, match="not LongMemEval question types"):
        suite(types=["trivia"])
    with pytest.raises(ConfigError, match="'suite_options.instances'"):
        suite(instances=0)


def test_judge_uses_the_prompt_of_the_question_type_and_abstention():
    judge = FakeLLM(["yes", "no", "Yes."])
    s = LongMemEvalSuite(str(MINI), judge=judge)
    asked = {e.test_id: e for e in s.events() if e.kind == "question"}
    replies = {"q1": "You moved to Portland.", "q2_abs": "Your sister moved to Paris.",
               "q3": "4 days"}
    scores = {x.test_id: x for x in s.score({asked[q].index: Response(index=asked[q].index,
                                                                       reply=r)
                                             for q, r in replies.items()})}
    assert [scores[q].score for q in ("q1", "q2_abs", "q3")] == [1.0, 0.0, 1.0]
    prompts = [m[0].content for m in judge.history]
    assert prompts[0] == LONGMEMEVAL_PROMPTS["single-session-user"].format(
        "Which city did I move to last spring?", "Portland", "You moved to Portland.")
    assert prompts[1] == LONGMEMEVAL_ABSTENTION.format(
        "Which city did my sister move to?", asked["q2_abs"].metadata["answer"],
        "Your sister moved to Paris.")
    assert "off-by-one" in prompts[2] and "4 days" in prompts[2]
    assert judge.params[0]["choices"] == ["yes", "no"]
    assert scores["q3"].metadata["judge_model"] == "fake"
    assert scores["q2_abs"].metadata["abstention"] is True


def test_an_empty_reply_is_wrong_without_a_judge_call():
    judge = FakeLLM(["yes"])
    s = LongMemEvalSuite(str(MINI), judge=judge, types=["temporal-reasoning"])
    scores = s.score({})
    assert scores[0].score == 0.0 and scores[0].metadata["correct"] is False
    assert judge.history == []


def _mutate(data: list, change: str) -> list:
    first = data[0]
    if change == "bad date":
        first["haystack_dates"][1] = "April 2nd"
    elif change == "bad question date":
        first["question_date"] = "2023-06-01"
    elif change == "unknown type":
        first["question_type"] = "trivia"
    elif change == "lengths differ":
        first["haystack_dates"].pop()
    elif change == "system role":
        first["haystack_sessions"][0][0]["role"] = "system"
    elif change == "no answer":
        del first["answer"]
    elif change == "repeated id":
        data[1]["question_id"] = "q1"
    return data


@pytest.mark.parametrize("change, where, field", [
    ("bad date", "instance 'q1'", "haystack_dates.1"),
    ("bad question date", "instance 'q1'", "question_date"),
    ("unknown type", "instance 'q1'", "question_type"),
    ("lengths differ", "instance 'q1'", ""),
    ("system role", "instance 'q1'", "haystack_sessions.0.0.role"),
    ("no answer", "instance 'q1'", "answer"),
    ("repeated id", "instance 'q1'", "question_id"),
])
def test_malformed_file_names_file_instance_and_field(tmp_path, change, where, field):
    bad = tmp_path / "bad_lme.json"
    bad.write_text(json.dumps(_mutate(copy.deepcopy(json.loads(MINI.read_text())), change)))
    with pytest.raises(ConfigError) as caught:
        LongMemEvalSuite(str(bad))
    message = str(caught.value)
    assert str(bad) in message and where in message and "\n" not in message, message
    if field:
        assert f"field '{field}'" in message, message
    else:
        assert "one entry per session" in message
