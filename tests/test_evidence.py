"""Evidence recall: direct, through provenance, lost in a summary; per question in a run; and
the bounds it must respect (full_context 1.0 and vanilla 0 on the persona suite)."""

from __future__ import annotations

import pytest

from memlab.bench.base import Evidence, SuiteEvent
from memlab.bench.evidence import PromptPart, carries, check_evidence, evidence_recall
from memlab.bench.questions import answered_tests, option_orders
from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import run
from memlab.bench.spec import RunSpec
from memlab.bench.suites.ltm import needle_evidence
from memlab.bench.suites.persona import PersonaSuite
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM

NEEDLE = "I really like jazz because the melodies stay with me for days."
TURNS = {3: NEEDLE, 7: "By the way, I went to a lighthouse festival."}


def check(parts, evidence, provenance=True):
    return check_evidence(evidence, TURNS, parts, provenance=provenance)


def test_the_turn_itself_in_the_prompt_is_direct_evidence():
    parts = [PromptPart(f"[turn] User: {NEEDLE.upper()}\nAI: ok", frozenset())]  # case aside
    (record,) = check(parts, [Evidence(index=3, answer="the melodies stay with me for days")])
    assert record["direct"] and record["reached"]


def test_a_summary_derived_from_the_turn_counts_only_if_the_answer_survived():
    kept = PromptPart("The user likes jazz: the melodies stay with them for days.",
                      frozenset({3}))
    lost = PromptPart("The user talked about music they enjoy.", frozenset({3}))
    evidence = [Evidence(index=3, answer="the melodies stay with me for days")]
    (survived,) = check([kept], evidence)
    assert survived["derived"] and survived["reached"] and not survived["direct"]
    (gone,) = check([lost], evidence)  # provenance alone would overstate recall
    assert not gone["derived"] and not gone["reached"]


def test_the_answer_from_another_turn_is_not_this_evidence():
    unrelated = PromptPart("The melodies stay with me for days, said the pianist.",
                           frozenset({9}))
    (record,) = check([unrelated], [Evidence(index=3, answer="the melodies stay with me for days")])
    assert record["answer_in_prompt"] and not record["reached"]
    (peer,) = check([unrelated], [Evidence(index=3, answer="the melodies stay with me for days")],
                    provenance=False)  # a memory without provenance is judged by the answer
    assert peer["reached"]


def test_recall_is_the_share_reached_and_none_without_evidence():
    parts = [PromptPart(NEEDLE, frozenset({3}))]
    records = check(parts, [Evidence(index=3), Evidence(index=7, answer="lighthouse festival")])
    assert evidence_recall(records) == 0.5
    assert evidence_recall([]) is None


def test_answer_coverage_ignores_stopwords_and_needs_most_content_words():
    assert carries("Crimson is the colour.", "Crimson")
    assert not carries("a red colour", "Crimson")
    assert carries("melodies stay for days", "the melodies stay with me for days")
    assert not carries("the melodies", "the melodies stay with me for days")


def test_ltm_needles_carry_the_expected_answer_or_all_count_verbatim():
    needles = [SuiteEvent(index=i, kind="needle", text=text) for i, text in
               enumerate(["My favourite colour is Teal.", "I now prefer Navy to any other colour."])]
    assert needle_evidence(needles, ["Navy"]) == [Evidence(index=1, answer="Navy")]
    coded = needle_evidence(needles, [["night", "midnight"]])  # the answer is in no needle
    assert coded == [Evidence(index=0), Evidence(index=1)]


def test_answered_sample_is_the_same_for_every_condition_and_seeded():
    events = PersonaSuite(span=1000, seed=0, n_topics=2).events()
    first, again = answered_tests(events, 5, seed=0), answered_tests(events, 5, seed=0)
    assert first == again and len(first) == 5
    assert answered_tests(events, 5, seed=1) != first
    assert answered_tests(events, None, seed=0) is None


def test_rotation_puts_every_letter_under_the_answer_equally_often():
    events = PersonaSuite(span=1000, seed=0, n_topics=5).events()
    orders = option_orders(events, seed=0)
    slots = [order.index(e.answer_index) for e in events if e.index in orders
             for order in [orders[e.index]]]
    assert [slots.count(s) for s in range(4)] in ([12, 11, 11, 11], [11, 12, 11, 11])
    assert sorted(orders[next(iter(orders))]) == [0, 1, 2, 3]


@pytest.mark.parametrize("condition, expected", [("full_context", 1.0), ("vanilla", 0.0),
                                                 ("oracle", 1.0)])
def test_persona_evidence_recall_bounds_with_the_fake_llm(tmp_path, condition, expected):
    llm = FakeLLM(["A"], context_window=8192)
    spec = RunSpec(suite="persona", condition=condition, span=1000, llm="fake",
                   embedder="hashing", answered=0)
    suite = PersonaSuite(span=1000, seed=0, n_topics=1, count_tokens=llm.count_tokens)
    run_dir = run(spec, suite=suite, llm=llm, embedder=HashingEmbedder(), results_dir=tmp_path,
                  progress=False)
    questions = [t for t in read_jsonl(run_dir / "turns.jsonl") if t["kind"] == "question"]
    assert questions and all(t["evidence_recall"] == expected for t in questions)
    assert all(not t["answered"] for t in questions) and llm.calls == 0  # evidence only
    scores = read_jsonl(run_dir / "scores.jsonl")
    assert {s["evidence_recall"] for s in scores} == {expected}
    prompt = (run_dir / "prompts" / f"{questions[0]['prompt_sha']}.json")
    assert prompt.exists()  # the prompt each answer was given is kept for audit
