"""Accuracy, LTM ceilings, evidence recall and answer costs on hand-built frames with known
answers (intervals against statsmodels and scipy)."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from memlab.report import accuracy, recall, summary
from memlab.report.tables import accuracy_shown, recall_shown


def scores(condition, fractions, *, suite="ltm", types=None, answered=None, probes=False,
           seed=0):
    n = len(fractions)
    return pd.DataFrame({
        "suite": suite, "span": 1000, "seed": seed, "condition": condition, "phase": "main",
        "run_id": f"{suite}-{condition}-s{seed}", "test_id": [f"t{i}" for i in range(n)],
        "test_type": types or ["colours"] * n, "fraction": [float(f) for f in fractions],
        "answered": answered or [True] * n, "probes": probes})


def test_accuracy_leaves_out_unanswered_tests_and_a_zero_cell_keeps_its_interval():
    frame = pd.concat([scores("vanilla", [0, 0, 0, 0, 0, 0, 0],
                              answered=[True] * 5 + [False] * 2),
                       scores("oracle", [1, 1, 1, 0, 0, 0], answered=[True] * 4 + [False] * 2),
                       scores("oracle", [0, 0], probes=True)])  # Table 2 run: not counted
    out = accuracy.accuracy(frame).set_index("condition")
    vanilla = out.loc["vanilla"]
    assert (vanilla["accuracy"], vanilla["accuracy_n"], vanilla["unanswered"]) == (0.0, 5, 2)
    low, high = proportion_confint(0, 5, method="wilson")
    assert vanilla["accuracy_low"] == 0.0 and vanilla["accuracy_high"] == pytest.approx(high)
    assert vanilla["accuracy_high"] > 0.4  # 0 of 5 is not "0 +- 0"
    oracle = out.loc["oracle"]
    assert (oracle["accuracy"], oracle["accuracy_n"]) == (0.75, 4)
    assert (oracle["accuracy_low"], oracle["accuracy_high"]) == pytest.approx(
        proportion_confint(3, 4, method="wilson"))
    assert oracle["interval"] == "wilson"
    shown = accuracy_shown(accuracy.accuracy(frame)).set_index("condition")
    assert shown.loc["vanilla", "95% CI"] == f"0.0-{100 * high:.1f}"
    assert shown.loc["vanilla", "n answered"] == 5


def test_fractional_ltm_scores_get_a_t_interval_clipped_to_the_unit_range():
    values = [0.2, 0.5, 1.0, 0.8, 0.4, 0.6]
    row = accuracy.accuracy(scores("rag", values)).iloc[0]
    mean, sem = sum(values) / 6, sps.sem(values)
    low, high = sps.t.interval(0.95, 5, loc=mean, scale=sem)
    assert row["interval"] == "t" and row["accuracy"] == pytest.approx(mean)
    assert (row["accuracy_low"], row["accuracy_high"]) == pytest.approx((low, min(high, 1.0)))


def test_a_type_the_oracle_fails_is_flagged_and_named_where_it_is_averaged_in():
    types = ["colours"] * 4 + ["jokes"] * 4
    frame = pd.concat([scores("oracle", [1, 1, 1, 0, 0, 0, 1, 0], types=types),
                       scores("rag", [1, 0, 1, 0, 0, 0, 0, 0], types=types),
                       scores("oracle", [0, 0], suite="persona")])
    ceilings = accuracy.ceilings(frame).set_index("test_type")
    assert list(ceilings.index) == ["colours", "jokes"]  # LTM only
    assert ceilings.loc["colours", "ceiling"] == 0.75 and not ceilings.loc["colours",
                                                                           "model_limited"]
    jokes = ceilings.loc["jokes"]
    assert (jokes["ceiling"], jokes["ceiling_n"], jokes["model_limited"]) == (0.25, 4, True)
    assert jokes["ceiling_high"] == pytest.approx(proportion_confint(1, 4, method="wilson")[1])
    assert not accuracy.ceilings(frame, threshold=0.2).set_index("test_type").loc[
        "jokes", "model_limited"]
    rows = accuracy.accuracy(frame).set_index(["suite", "condition"])
    assert rows.loc[("ltm", "rag"), "model_limited_types"] == "jokes"
    assert rows.loc[("persona", "oracle"), "model_limited_types"] == ""


def turns(condition, records, answered, *, seed=0):
    """Question turns whose ``evidence`` records are ``(direct, derived, answer_in_prompt)``
    triples (reached = direct or derived, the memory keeping provenance)."""
    rows = []
    for i, (pieces, asked) in enumerate(zip(records, answered, strict=True)):
        evidence = [{"index": 100 * i + k, "direct": d, "derived": v, "answer_in_prompt": a,
                     "reached": d or v} for k, (d, v, a) in enumerate(pieces)]
        share = sum(e["reached"] for e in evidence) / len(evidence) if evidence else None
        rows.append({"suite": "persona", "span": 2000, "seed": seed, "condition": condition,
                     "phase": "main", "kind": "question", "run_id": f"{condition}-{seed}",
                     "probes": False, "index": 1000 + i, "answered": asked,
                     "evidence": evidence, "evidence_recall": share})
    return pd.DataFrame(rows)


HIT, DERIVED, WORDS, LOST = (True, True, True), (False, True, True), (False, False, True), (
    False, False, False)


def test_evidence_recall_counts_every_question_and_how_its_evidence_arrived():
    frame = turns("sleep", [[HIT], [DERIVED, LOST], [WORDS], [HIT, HIT], []],
                  answered=[True, False, False, True, True])
    row = recall.evidence_recall(frame).iloc[0]
    # questions with evidence: 4 (the last names none); shares 1, 0.5, 0, 1 -> mean 0.625
    assert (row["recall"], row["recall_n"], row["answered"]) == (0.625, 4, 2)
    # pieces: 6; direct 3, derived 4 (a verbatim turn carries its answer too), words 5
    assert (row["direct"], row["direct_n"]) == (0.5, 6)
    assert row["derived"] == pytest.approx(4 / 6) and row["answer_in_prompt"] == pytest.approx(
        5 / 6)
    assert (row["direct_low"], row["direct_high"]) == pytest.approx(
        proportion_confint(3, 6, method="wilson"))
    routes = recall.routes(frame).iloc[0]
    assert (routes["verbatim"], routes["derived_only"], routes["answer_only"],
            routes["lost"]) == pytest.approx((3 / 6, 1 / 6, 1 / 6, 1 / 6))
    assert routes["pieces"] == 6
    shown = recall_shown(recall.evidence_recall(frame)).iloc[0]
    assert (shown["questions"], shown["evidence pieces"], shown["verbatim (%)"]) == (4, 6, "50.0")


def test_evidence_recall_of_all_or_nothing_questions_is_a_wilson_proportion():
    frame = pd.concat([turns("vanilla", [[LOST]] * 9, [False] * 9),
                       turns("full_context", [[HIT]] * 9, [False] * 9)])
    out = recall.evidence_recall(frame).set_index("condition")
    assert out.loc["vanilla", "recall"] == 0.0 and out.loc["vanilla", "recall_low"] == 0.0
    assert out.loc["vanilla", "recall_high"] == pytest.approx(
        proportion_confint(0, 9, method="wilson")[1])
    assert out.loc["full_context", "recall_low"] == pytest.approx(
        proportion_confint(9, 9, method="wilson")[0])


def test_answer_costs_take_answered_turns_and_percentiles():
    latencies = [0.1 * i for i in range(1, 21)]
    rows = pd.DataFrame({
        "suite": "ltm", "span": 1000, "condition": "rag", "phase": "main", "kind": "question",
        "run_id": ["a"] * 10 + ["b"] * 10, "probes": False, "model_calls": [30] * 10 + [12] * 10,
        "answered": [True] * 20, "llm_latency_s": latencies, "memory_latency_s": 0.0,
        "prompt_tokens": 500, "prompt_tokens_memory": 300, "prompt_tokens_history": 50})
    skipped = rows.iloc[:3].assign(answered=False, llm_latency_s=0.0, prompt_tokens=9999)
    evidence_only = rows.iloc[:2].assign(run_id="c", answered=False, model_calls=5)
    row = summary.answer_costs(pd.concat([rows, skipped, evidence_only])).iloc[0]
    assert (row["answers"], row["prompt_tokens"], row["memory_tokens"]) == (20, 500, 350)
    assert row["latency_p50_s"] == pytest.approx(1.05)
    assert row["latency_p95_s"] == pytest.approx(pd.Series(latencies).quantile(0.95))
    assert row["model_calls"] == 30 + 12 + 5  # once per run, the evidence-only run's too
