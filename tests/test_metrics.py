"""Seed 002's seven metrics on hand-made turn records with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab import stats
from memlab.bench import metrics
from memlab.embed.hashing import HashingEmbedder


def turn(index, session, kind="filler", phase="main", text="chat", **kw):
    return {"index": index, "phase": phase, "kind": kind, "session_id": session, "text": text,
            "reply": kw.pop("reply", "ok"), "choice": kw.pop("choice", None),
            "memory_events": kw.pop("memory_events", []),
            "memory_schemas": kw.pop("memory_schemas", []), **kw}


OPTIONS = ["spicy curries", "night trains", "opera evenings", "quantum knitting circles"]
KINDS = ["correct", "outdated", "contradicting", "never_stated"]


def question(index, session, reply, *, evidence, phase="main", **kw):
    meta = {"evidence_indices": evidence, "distractor_kinds": KINDS, **kw.pop("meta", {})}
    return turn(index, session, "question", phase, kw.pop("text", "What food do I enjoy?"),
                reply=reply, options=OPTIONS, answer_index=0, metadata=meta, **kw)


CONVERSATION = [
    turn(0, "s0", "needle", text="I really enjoy spicy curries on cold evenings."),
    turn(1, "s0"),
    turn(2, "s1", "needle", text="My sister loves night trains across Europe."),
    turn(3, "s1"),
    turn(4, "s2"),
    turn(5, "s2"),
]
RIGHT, WRONG_B, NEVER = ("<final_answer>(a)</final_answer>", "<final_answer>(b)</final_answer>",
                         "<final_answer>(d)</final_answer>")


def test_parse_choice_reads_tag_and_lone_letter():
    assert metrics.parse_final_answer("Sure. <final_answer>(c)</final_answer>", 4) == 2
    assert metrics.parse_final_answer("<final_answer> B </final_answer>", 4) == 1
    assert metrics.parse_final_answer("d", 4) == 3
    assert metrics.parse_final_answer("<final_answer>(z)</final_answer>", 4) is None
    assert metrics.parse_final_answer("I like curries", 4) is None


def test_long_horizon_qa_counts_choices_logprob_and_semantic_free_answers():
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[0]),
        question(7, "s2", WRONG_B, evidence=[0]),
        question(8, "s2", WRONG_B, evidence=[0], choice=0),  # log-probability pick wins
        question(9, "s2", "You enjoy spicy curries, I believe.", evidence=[0]),  # free, right
        question(10, "s2", "Probably night trains.", evidence=[0]),  # free, wrong
    ]
    emb = HashingEmbedder()
    assert metrics.long_horizon_qa(turns, embedder=emb) == {6: 1, 7: 0, 8: 1, 9: 1, 10: 0}
    assert metrics.long_horizon_qa(turns)[9] == 0  # no embedder: a free answer cannot count
    assert metrics.semantic_match(turns, embedder=emb) == {9: 1, 10: 0}


def test_multi_session_continuity_needs_earlier_session_evidence_in_prompt():
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[0], memory_events=[0, 5]),  # reached
        question(7, "s2", RIGHT, evidence=[0, 2], memory_events=[4]),  # not reached
        question(8, "s0", RIGHT, evidence=[0], memory_events=[]),  # same session: excluded
    ]
    assert metrics.multi_session_continuity(turns) == {6: 1.0, 7: 0.0}


def test_hallucination_rate_choice_and_free_keywords():
    turns = CONVERSATION + [
        question(6, "s2", NEVER, evidence=[0]),
        question(7, "s2", WRONG_B, evidence=[0]),  # outdated, not a hallucination
        question(8, "s2", "You go to quantum knitting circles!", evidence=[0]),
        question(9, "s2", "You enjoy curries.", evidence=[0]),
    ]
    assert metrics.hallucination_rate(turns) == {6: 1.0, 7: 0.0, 8: 1.0, 9: 0.0}
    no_never = [dict(t, metadata={"distractor_kinds": ["correct", "outdated"]})
                if t["kind"] == "question" else t for t in turns]
    assert metrics.hallucination_rate(no_never) == {}


def test_table2_probe_selectors():
    pre = "pre_sleep"
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[0], phase=pre),  # oldest session only
        question(7, "s2", WRONG_B, evidence=[0, 2], phase=pre),  # two sessions
        question(8, "s2", RIGHT, evidence=[2], phase=pre,
                 text="You said 'sister loves night trains across' - who?"),  # quoted cue
        question(9, "s2", RIGHT, evidence=[4], phase=pre, meta={"cue": "cold evenings"}),
        question(10, "s2", WRONG_B, evidence=[2, 3], phase=pre),  # two turns, one session
    ]
    assert metrics.delayed_recall(turns, pre) == {6: 1.0}
    assert metrics.cross_episode_integration(turns, pre) == {7: 0.0}
    assert metrics.cue_based_recall(turns, pre) == {8: 1.0, 9: 1.0}


def test_schema_utilisation_and_generalisation():
    post = "post_sleep"
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[0], phase=post, meta={"topic": "cooking"},
                 memory_schemas=["Cooking preferences: the user likes bold food"],
                 test_type="generalize_to_new_scenarios"),
        question(7, "s2", WRONG_B, evidence=[0], phase=post, meta={"topic": "travel"},
                 memory_schemas=["Cooking preferences"], test_type="generalize_to_new_scenarios"),
        question(8, "s2", RIGHT, evidence=[0], phase=post, meta={"topic": "music"},
                 test_type="recall_user_shared_facts"),
    ]
    assert metrics.schema_utilisation(turns, post) == {6: 1.0, 7: 0.0, 8: 0.0}
    assert metrics.schema_generalisation(turns, post) == {6: 1.0, 7: 0.0}


def test_summarise_picks_the_interval_of_each_kind():
    cell = metrics.summarise("x", [1, 1, 0, 0])
    assert (cell.value, cell.n) == (0.5, 4) and cell.ci_low < 0.5 < cell.ci_high
    wilson = stats.proportion_ci(2, 4)
    assert (cell.ci_low, cell.ci_high) == (wilson.low, wilson.high)
    # 0 of 4: Wilson 0-49%, never a zero-width interval
    none = metrics.summarise("x", [0, 0, 0, 0])
    assert none.ci_low == 0.0 and none.ci_high == pytest.approx(0.49, abs=0.005)
    # four LTM tests scoring 0, 0, 0, 1 are pass/fail: a proportion, not a t interval of +-0.8
    ltm = metrics.summarise("s", [0.0, 0.0, 0.0, 1.0], kind="score")
    assert (ltm.ci_low, ltm.ci_high) == pytest.approx((0.0456, 0.6994), abs=1e-4)
    assert metrics.summarise("s", [0.2, 0.3, 0.0], kind="score").ci_low == 0.0  # clipped
    tokens = metrics.summarise("t", [1.0, 2.0, 3.0], kind="mean")
    assert tokens.ci_low == pytest.approx(2 - 4.303 * 1 / math.sqrt(3), abs=1e-3)
    empty = metrics.summarise("x", [])
    assert empty.value is None and empty.ci_low is None and empty.n == 0
    with pytest.raises(ValueError, match="0 or 1"):
        metrics.summarise("x", [0.5])
    with pytest.raises(ValueError, match="kind"):
        metrics.summarise("x", [1], kind="median")


def test_delta_pairs_same_probes():
    d = metrics.delta("x", {1: 0.0, 2: 1.0, 3: 0.0}, {1: 1.0, 2: 1.0, 4: 1.0})
    assert d.n == 2 and d.value == 0.5 and d.phase == "delta"
    assert d.ci_low < 0.5 < d.ci_high and d.p_value == 1.0  # one discordant probe
    pre = {i: 0.0 for i in range(12)}
    post = {i: 1.0 for i in range(12)}
    paired = metrics.delta("x", pre, post)
    assert paired.value == 1.0 and paired.p_value == pytest.approx(2 / 2**12)
    assert paired.ci_low > 0.5
    scores = metrics.delta("x", {1: 0.5, 2: 0.25}, {1: 0.75, 2: 0.5})
    assert scores.value == pytest.approx(0.25) and scores.n == 2


def test_probes_are_left_out_of_table1_and_suite_ranks_win():
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[4], meta={"probe": True, "cue": "x"}),
        question(7, "s2", RIGHT, evidence=[{"event_index": 0, "session_id": "s0"}]),
        # the suite says: evidence in session rank 5 of 6 -> not delayed, whatever the turns say
        question(8, "s2", RIGHT, evidence=[0], meta={"evidence_session_ranks": [5],
                                                     "n_sessions": 6}),
    ]
    assert set(metrics.long_horizon_qa(turns)) == {7, 8}
    assert metrics.cue_based_recall(turns, "main") == {6: 1.0}
    assert metrics.delayed_recall(turns, "main") == {7: 1.0}


def test_answer_metrics_leave_out_questions_the_model_was_not_asked():
    """An evidence-only question (``answered`` False: reply "", no choice) is absent from the
    metrics of the answer, not counted wrong; the prompt metrics still count it."""
    not_asked = {"answered": False}
    turns = CONVERSATION + [
        question(6, "s2", RIGHT, evidence=[0], memory_events=[0]),
        question(7, "s2", "", evidence=[0], memory_events=[0], **not_asked),
        question(8, "s2", "", evidence=[0], memory_events=[], **not_asked),
        question(9, "s2", WRONG_B, evidence=[0], answered=True),
    ]
    assert metrics.long_horizon_qa(turns) == {6: 1.0, 9: 0.0}
    assert set(metrics.hallucination_rate(turns)) == {6, 9}
    assert metrics.delayed_recall(turns, "main") == {6: 1.0, 9: 0.0}
    assert metrics.multi_session_continuity(turns) == {6: 1.0, 7: 1.0, 8: 0.0, 9: 0.0}
    # a record without the field (a run before evidence-only questions) counts as answered
    assert metrics.answered_value(None) and metrics.answered_value(float("nan"))
    assert not metrics.answered_value(False) and not metrics.answered_value(np.bool_(False))
