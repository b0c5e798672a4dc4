"""Paired comparisons between conditions on hand-built score and turn frames with known answers,
checked against statsmodels (exact McNemar, Holm) and memlab.stats' own tested functions."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from memlab import stats
from memlab.errors import ConfigError
from memlab.report import paired, tables


def scores(condition, outcomes, *, suite="persona", seed=0, answered=None, probes=False,
           test_ids=None):
    """One score row per outcome; test ids ``q0``, ``q1``... unless given."""
    ids = test_ids or [f"q{i}" for i in range(len(outcomes))]
    flags = answered or [True] * len(outcomes)
    return pd.DataFrame({
        "suite": suite, "span": 1000, "seed": seed, "condition": condition, "phase": "main",
        "run_id": f"{suite}-{condition}-1000-s{seed}" + ("-probes" if probes else ""),
        "test_id": ids, "test_type": "t", "fraction": [float(v) for v in outcomes],
        "answered": flags, "probes": probes})


def table_2x2(both, reference_only, condition_only, neither):
    """(reference, condition) outcomes of a paired 2x2 table, in a shuffled order."""
    pairs = ([(1, 1)] * both + [(1, 0)] * reference_only + [(0, 1)] * condition_only
             + [(0, 0)] * neither)
    random.Random(7).shuffle(pairs)
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_pairs_by_question_and_matches_an_exact_mcnemar():
    reference, condition = table_2x2(5, 2, 7, 6)
    frame = pd.concat([
        scores("full_context", reference + [1, 1, 1]),  # 3 more questions rag was not asked
        # rag's rows in reverse order: the pairing must follow the test id, not the row
        scores("rag", (condition + [0, 0, 0])[::-1], answered=([True] * 20 + [False] * 3)[::-1],
               test_ids=[f"q{i}" for i in range(23)][::-1])])
    row = paired.accuracy_comparisons(frame, references=("full_context",)).iloc[0]
    assert (row["reference"], row["condition"]) == ("full_context", "rag")
    assert row["n_pairs"] == 20  # the questions both answered
    assert (row["condition_better"], row["reference_better"]) == (7, 2)
    assert row["difference"] == pytest.approx((7 - 2) / 20)  # condition minus reference
    exact = sm_mcnemar([[5, 2], [7, 6]], exact=True)
    assert row["p_value"] == pytest.approx(exact.pvalue) and row["p_holm"] == row["p_value"]
    newcombe = stats.mcnemar(reference, condition)
    assert (row["low"], row["high"]) == pytest.approx((newcombe.low, newcombe.high))
    assert row["low"] < row["difference"] < row["high"] and row["method"].startswith("mcnemar")


def test_holm_corrects_the_conditions_compared_with_one_reference_in_one_suite():
    reference = [1] * 10 + [0] * 30
    frames = [scores("vanilla", reference)]
    for condition, gained in (("rag", 12), ("episodic", 6), ("sleep", 2), ("hybrid", 9)):
        frames.append(scores(condition, [1] * 10 + [1] * gained + [0] * (30 - gained)))
    frames.append(scores("rag", [1] * 40, suite="ltm"))  # another suite: its own family
    frames.append(scores("vanilla", [0] * 40, suite="ltm"))
    out = paired.accuracy_comparisons(pd.concat(frames), references=("vanilla",))
    persona = out[out["suite"] == "persona"]
    assert list(persona["condition"]) == ["rag", "episodic", "sleep", "hybrid"]  # paper order
    raw = [sm_mcnemar([[10, 0], [g, 30 - g]], exact=True).pvalue for g in (12, 6, 2, 9)]
    assert list(persona["p_value"]) == pytest.approx(raw)
    assert list(persona["p_holm"]) == pytest.approx(multipletests(raw, method="holm")[1])
    # step-down: the smallest p is multiplied by the family size (4), not by 6 conditions
    assert persona["p_holm"].iloc[0] == pytest.approx(4 * raw[0])
    ltm = out[out["suite"] == "ltm"].iloc[0]
    assert ltm["p_holm"] == ltm["p_value"] == pytest.approx(2 / 2**40)


def test_fractional_scores_get_the_paired_bootstrap():
    reference, condition = [0.0, 0.5, 0.25, 1.0, 0.0], [0.5, 0.5, 1.0, 1.0, 0.75]
    frame = pd.concat([scores("full_context", reference, suite="ltm"),
                       scores("hybrid", condition, suite="ltm")])
    row = paired.accuracy_comparisons(frame, references=("full_context",)).iloc[0]
    expected = stats.paired_bootstrap(reference, condition)
    assert row["method"] == expected.method and row["n_pairs"] == 5
    assert (row["difference"], row["low"], row["high"], row["p_value"]) == pytest.approx(
        (expected.estimate, expected.low, expected.high, expected.p_value))
    assert (row["condition_better"], row["reference_better"]) == (3, 0)


def test_every_reference_present_is_compared_and_a_missing_one_skipped():
    frame = pd.concat([scores(c, [1, 0, 1, 0]) for c in ("vanilla", "full_context", "rag")])
    out = paired.accuracy_comparisons(frame)  # no oracle run
    assert list(out["reference"].astype(str).unique()) == ["full_context", "vanilla"]
    assert len(out) == 2 * 2  # each reference against the two other conditions


def test_table2_runs_and_unanswered_tests_never_pair():
    frame = pd.concat([
        scores("sleep", [1, 1, 1, 1], answered=[True, True, False, True]),
        scores("sleep", [0, 0, 0, 0], probes=True),  # same questions, Table 2's protocol
        scores("vanilla", [0, 0, 0, 0])])
    row = paired.accuracy_comparisons(frame, references=("vanilla",)).iloc[0]
    assert row["n_pairs"] == 3 and row["condition_better"] == 3


def test_a_question_twice_under_one_condition_is_a_config_error():
    frame = pd.concat([scores("rag", [1, 0]), scores("rag", [1, 0]), scores("vanilla", [0, 0])])
    with pytest.raises(ConfigError, match="same question appears twice.*keep one copy"):
        paired.accuracy_comparisons(frame)


def test_evidence_recall_pairs_every_question_answered_or_not():
    def turns(condition, recalls, answered):
        return pd.DataFrame({
            "suite": "persona", "span": 1000, "seed": 1, "condition": condition,
            "phase": "main", "kind": "question", "run_id": condition, "probes": False,
            "index": range(10, 10 + len(recalls)), "evidence_recall": recalls,
            "answered": answered})

    frame = pd.concat([turns("vanilla", [0.0] * 6, [False] * 6),
                       turns("full_context", [1.0] * 6, [True, False] * 3),
                       turns("rag", [1.0, 0.5, 0.0, 1.0, 1.0, None], [False] * 6)])
    out = paired.recall_comparisons(frame, references=("vanilla",)).set_index("condition")
    assert out.loc["full_context", "n_pairs"] == 6
    assert out.loc["full_context", "p_value"] == pytest.approx(2 / 2**6)
    rag = out.loc["rag"]  # a fractional share: the bootstrap, on the 5 questions with evidence
    assert rag["n_pairs"] == 5 and rag["method"].startswith("paired bootstrap")
    assert rag["difference"] == pytest.approx(3.5 / 5)


def test_the_shown_table_reads_in_percentage_points_with_readable_p_values():
    frame = pd.concat([scores("vanilla", [0] * 12), scores("oracle", [1] * 12),
                       scores("rag", [0] * 12)])
    out = tables.paired_shown(paired.accuracy_comparisons(frame, references=("vanilla",)))
    oracle, rag = out.iloc[0], out.iloc[1]
    expected = stats.mcnemar([0] * 12, [1] * 12)
    assert (oracle["condition"], oracle["difference (pp)"], oracle["n pairs"]) == (
        "oracle", "100.0", 12)
    assert oracle["95% CI"] == f"{100 * expected.low:.1f}-100.0"
    assert oracle["p"] == "<0.001" and oracle["Holm p"] == "<0.001"  # 2 / 2^12, then x 2
    assert (rag["p"], rag["Holm p"], rag["95% CI"].split(" to ")[0].startswith("-")) == (
        "1.000", "1.000", True)
