"""The findings sentences (memlab.report.findings) on hand-built outcomes whose verdicts are
known: one condition clearly above full_context, one clearly below vanilla, one a small
difference that must not be called a win."""

from __future__ import annotations

import pandas as pd
from test_report_paired import scores

from memlab import stats
from memlab.report import findings, paired

N = 40
CORRECT = {"vanilla": 8, "oracle": 32, "full_context": 20, "rag": 36, "sleep": 10, "hybrid": 0}


def outcomes(correct: int) -> list[int]:
    """The first ``correct`` of N questions right: every condition's right answers nest, so
    each pair's discordant questions all favour the condition with more."""
    return [1] * correct + [0] * (N - correct)


def overview(correct: dict[str, int]) -> pd.DataFrame:
    rows = []
    for condition, right in correct.items():
        accuracy = stats.proportion_ci(right, N)
        recall = stats.proportion_ci({"vanilla": 0, "oracle": 60, "full_context": 60}.get(
            condition, 30), 60)
        rows.append({"suite": "persona", "span": 1000, "condition": condition,
                     "accuracy": accuracy.estimate, "accuracy_low": accuracy.low,
                     "accuracy_high": accuracy.high, "accuracy_n": N,
                     "recall": recall.estimate, "recall_low": recall.low,
                     "recall_high": recall.high, "recall_n": 60})
    return pd.DataFrame(rows)


def text(correct: dict[str, int]) -> str:
    frame = pd.concat([scores(c, outcomes(k)) for c, k in correct.items()])
    return findings.findings_text(overview(correct), paired.accuracy_comparisons(frame))


def test_wins_and_losses_need_holm_significance_and_carry_their_numbers():
    out = text(CORRECT)
    assert out.startswith("### persona at 1000 tokens")
    assert "n = 40 answered questions per condition" in out and "60 evidence questions" in out
    assert "Beats full_context: rag; significantly below it: sleep, hybrid." in out
    # rag minus full_context: 16 questions better, none worse, exact McNemar, Holm-corrected
    assert "rag +40.0 points (95% CI" in out and "16 questions better, 0 worse" in out
    assert "Above vanilla: rag; not above vanilla at all: hybrid; loses to vanilla " \
           "(significantly below): hybrid." in out
    # sleep is 2 questions above vanilla: stated as a difference, never as a win
    assert "sleep +5.0 points" in out and "Above vanilla: rag, sleep" not in out
    assert "the answering model uses the evidence it is given" in out
    assert "full_context 50.0% (35.2-64.8) is outside the oracle's interval" in out
    assert out.index("Evidence recall (60 questions each): oracle 100.0%") > 0


def test_an_oracle_no_better_than_vanilla_says_accuracy_measures_the_model():
    out = text({"vanilla": 20, "oracle": 22, "full_context": 21, "rag": 20})
    assert "no significant use of evidence by the answering model" in out
    assert "full_context 52.5% (37.5-67.1) is within the oracle's interval" in out
    assert "No memory condition beats full_context; none is significantly below it." in out
    assert "No memory condition is significantly above vanilla; not above vanilla at all: " \
           "rag; none loses to vanilla significantly." in out


def test_the_detectable_difference_follows_the_measured_disagreement():
    # rag, sleep and hybrid disagree with full_context / vanilla on 40%, 25%, 50%,
    # 70%, 5% and 20% of the questions: 35% on average
    out = text(CORRECT)
    expected = stats.min_detectable_difference(N, discordance=(16 + 10 + 20 + 28 + 2 + 8)
                                               / 6 / N)
    assert f"disagreed on 35% of the questions on average; at that share, n = 40 detects a " \
           f"paired difference of {100 * expected:.0f} points" in out


def test_a_grid_with_runs_missing_states_each_comparisons_own_n():
    # sleep answered only its first 20 questions (a run still missing): its pairs are 20
    frame = pd.concat([scores(c, outcomes(k)) for c, k in CORRECT.items() if c != "sleep"]
                      + [scores("sleep", outcomes(CORRECT["sleep"])[:20])])
    rows = overview(CORRECT)
    rows.loc[rows["condition"] == "sleep", ["accuracy_n", "recall_n"]] = [20, 30]
    out = findings.findings_text(rows, paired.accuracy_comparisons(frame))
    assert "n = 20-40 answered questions per comparison, paired (each on the questions both " \
           "its conditions answered; some conditions have runs missing); 30-60 evidence " \
           "questions per condition." in out
    assert "the same questions for every condition" not in out
    assert "Evidence recall: " in out and "; n = 30)" in out and "; n = 60)" in out


def test_a_span_where_full_context_answered_nothing_says_so_with_its_recall():
    """The scaling grid's LTM 16k and 32k: full_context measures evidence recall only."""
    correct = {c: k for c, k in CORRECT.items() if c != "full_context"}
    frame = pd.concat([scores(c, outcomes(k)) for c, k in correct.items()])
    rows = overview(CORRECT)
    rows.loc[rows["condition"] == "full_context", ["accuracy", "accuracy_low", "accuracy_high",
                                                   "accuracy_n"]] = [float("nan")] * 3 + [0]
    out = findings.findings_text(rows, paired.accuracy_comparisons(frame))
    assert ("full_context answered nothing at this span (evidence recall only: the grid's cut), "
            "so no condition is compared with it here; its window held 100.0% (94.0-100.0) of "
            "the evidence when each question came.") in out
    assert "beats full_context" not in out.lower() and "Above vanilla: rag" in out
    assert "answered nothing" not in text(CORRECT)  # where it answered, no such line
