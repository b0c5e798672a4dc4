"""The generated LTM suite: spans, interleaving, scorers and GoodAI-format results."""

import json
import os
from pathlib import Path

import pytest

from memlab.bench.base import Response
from memlab.bench.goodai import goodai_rescore
from memlab.bench.suites.ltm import LTMSuite, suite_score
from memlab.bench.suites.ltm_scorers import SCORERS
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "goodai-ltm-v3-1k" / "definitions"


@pytest.mark.parametrize("span", [1000, 8000, 32000])
def test_first_needle_to_question_is_ninety_percent_of_span(span):
    suite = LTMSuite(span=span, seed=3)
    spans = suite.spans()
    assert len(spans) == 27  # 9 generated types x 3 examples
    for test_id, s in spans.items():
        assert abs(s["distance"] - 0.9 * span) <= 0.09 * span, (test_id, s)
    scores = suite.score({})
    assert all(sc.metadata["span_tokens"] == spans[sc.test_id]["distance"] for sc in scores)


def test_span_is_measured_with_the_given_token_counter():
    suite = LTMSuite(span=2000, seed=1, count_tokens=lambda t: len(t))  # 1 token/char
    events = suite.events()
    for a, b in zip(events, events[1:], strict=False):
        assert b.metadata["tokens"] > a.metadata["tokens"] >= 0
    assert all(abs(s["distance"] - 1800) <= 180 for s in suite.spans().values())


def test_interleaving_rules_and_determinism():
    suite = LTMSuite(span=1000, seed=5)
    events = suite.events()
    assert [e.text for e in events] == [e.text for e in LTMSuite(span=1000, seed=5).events()]
    assert [e.index for e in events] == list(range(len(events)))
    running: dict[str, str] = {}
    for e in events:  # never two tests of one type at once
        if e.test_id and e.test_type:
            assert running.get(e.test_type, e.test_id) == e.test_id
            running[e.test_type] = e.test_id
            last = max(x.index for x in events if x.test_id == e.test_id)
            if e.index == last:
                running.pop(e.test_type)
    fillers = [e for e in events if e.kind == "filler"]
    assert fillers and all(f.reply and f.test_id is None for f in fillers)
    assert len({e.test_type for e in events if e.test_type}) == 9
    assert all(e.timestamp <= f.timestamp for e, f in zip(events, events[1:], strict=False))


def test_jokes_question_uses_the_simulated_clock():
    suite = LTMSuite(span=1000, seed=2, types=["jokes"], examples=1)
    events = suite.events()
    question = next(e for e in events if e.kind == "question")
    joke = suite.tests[0].definition.expected_responses[0]
    told = next(e for e in events if e.text == joke)
    minutes = int((question.timestamp - told.timestamp).total_seconds()) // 60
    assert f"{minutes // 60} hours" in question.text and minutes >= 30


def test_perfect_agent_scores_full_marks_and_blank_agent_zero():
    suite = LTMSuite(span=1000, seed=4)
    events = suite.events()
    replies = {}
    for test in suite.tests:
        tid, d = suite.test_id(test), test.definition
        qs = [e for e in events if e.test_id == tid and e.kind == "question"]
        answers = _perfect(test.test_type, d.expected_responses, len(qs))
        for q, a in zip(qs, answers, strict=False):
            replies[q.index] = Response(index=q.index, reply=a)
        if test.test_type == "prospective_memory":
            quote, _, n = d.expected_responses[0]
            answered = [e for e in events[qs[0].index:] if e.kind != "filler"]
            replies[answered[n - 1].index] = Response(index=answered[n - 1].index, reply=f"ok. {quote}")
    scores = suite.score(replies)
    assert all(s.judge == "rule" for s in scores)
    assert {s.test_id: s.score for s in scores if s.score != 1} == {}
    assert suite_score(scores) == (9.0, 9)
    assert suite_score(suite.score({}))[0] == 0


def _perfect(test_type, expected, n):
    if test_type == "shopping":
        return [json.dumps([{"item": i, "quantity": q} for i, q in expected])]
    if test_type == "name_list":
        return [json.dumps(expected)]
    if test_type == "sallyanne":
        return [json.dumps({"answer": expected[0]})]
    if test_type == "spy_meeting":
        return [" and ".join(k[0] for k in expected)]
    if test_type == "prospective_memory":
        return ["Understood."]
    return [str(e) for e in expected][:n] if test_type == "trigger_response" else [str(expected[0])]


def test_writer_emits_goodai_results_that_rescore(tmp_path):
    suite = LTMSuite(span=1000, seed=1, types=["colours", "name_list"], examples=2)
    q = [e for e in suite.events() if e.kind == "question"]
    responses = {e.index: Response(index=e.index, reply="Crimson, Teal") for e in q}
    scores = suite.score(responses)
    paths = suite.write_goodai_results(tmp_path, "memlab-vanilla", responses, scores)
    assert {p.parent.name for p in paths} == {"Colours", "NameList"}
    data = json.loads(paths[0].read_text())
    assert set(data) == {"task_log", "actual_responses", "score", "max_score", "reasoning",
                         "tokens", "characters", "full_log", "expected_responses", "needles"}
    assert data["task_log"][0].startswith("Test (")
    report = goodai_rescore(tmp_path)
    assert all(item.agrees for item in report.items) and len(report.items) == 4


@pytest.mark.skipif(not DATA.is_dir() and os.environ.get("MEMLAB_REQUIRE_SERVICES") != "1", reason=f"published definitions not at {DATA}")
def test_loaded_definitions_schedule_and_skip_dynamic_restaurant():
    suite = LTMSuite.from_definitions(DATA)
    assert suite.span == 1000
    assert set(suite.describe()["skipped"]) == {"restaurant/0", "restaurant/1", "restaurant/2"}
    assert all(abs(s["distance"] - 900) <= 90 for s in suite.spans().values())
    texts = {e.text for e in suite.events()}
    assert "What is my favourite colour?" in texts


def test_llm_judged_types_use_the_llm_layer():
    judge = FakeLLM(["yes", "no"])
    result = SCORERS["restaurant"](["q1", "q2"], ["a1", "a2"], ["e1", "e2"], client=judge)
    assert result.judge == "llm" and result.score == 0.5 and judge.calls == 2
    with pytest.raises(ConfigError, match="client"):
        SCORERS["restaurant"](["q"], ["a"], ["e"])  # ChapterBreak is scored by rule (issue 42)


def test_a_blank_answer_is_no_without_asking_the_judge():
    """The 1.5B judge says yes to an empty answer "making reference to" a trigger's sentence;
    nothing said refers to nothing, so a blank answer is scored no and the judge not asked."""
    judge = FakeLLM(["yes"])
    result = SCORERS["restaurant"](["q1", "q2"], [" \n", "a2"], ["e1", "e2"], client=judge)
    assert result.score == 0.5 and judge.calls == 1
    assert result.reasoning[0] == "No answer for expected 'e1'."
    trigger = SCORERS["trigger_response"](["Cook?"], [""], ["bon appetit"], client=FakeLLM(["yes"]))
    assert trigger.score == 0


def test_a_judged_trigger_reply_counts_only_with_half_the_sentences_words():
    """The judge's yes to a reply the rule rejects counts when the reply holds half the agreed
    sentence's content words beyond the question's; the 1.5B judge said yes to "Noted.", to
    sympathy about the rain and to a "warm up" for "Put on a warm jumper and make some cocoa"."""
    scorer = SCORERS["trigger_response"]
    questions = ["What should I cook tonight?", "Ugh, it is raining again.", "I am freezing.",
                 "I am freezing."]
    replies = ["A vegetable omelette.", "I'm sorry to hear that it's raining again.",
               "Is there anything you can do to warm up?", "Noted."]
    sentences = ["How about a vegetable omelette", "Rainy days are perfect for reading",
                 "Put on a warm jumper and make some cocoa",
                 "Put on a warm jumper and make some cocoa"]
    judge = FakeLLM(["yes"] * 4)
    result = scorer(questions, replies, sentences, client=judge)
    assert judge.calls == 4 and result.judge == "llm"
    assert result.score == 0.25
    assert [("Overruled" in note) for note in result.reasoning] == [False, True, True, True]
    assert "holds 1 of the 6 content words" in result.reasoning[2]
    no = scorer(questions[:1], replies[:1], sentences[:1], client=FakeLLM(["no"]))
    assert no.score == 0  # the words alone are not a yes
    ruled = scorer(questions[:1], ["How about a vegetable omelette?"], sentences[:1],
                   client=FakeLLM([]))
    assert ruled.score == 1 and ruled.judge == "rule"  # the rule decided; no judge asked


def test_unknown_type_is_rejected():
    with pytest.raises(ConfigError, match="field 'types'"):
        LTMSuite(types=["restaurant"])
