"""memlab.stats against scipy and statsmodels on known cases, and its edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from memlab import stats

CASES = [(0, 4), (1, 4), (4, 4), (13, 20), (1, 9), (0, 9)]


@pytest.mark.parametrize(("k", "n"), CASES)
def test_wilson_and_exact_match_statsmodels_and_scipy(k, n):
    wilson, exact = stats.proportion_ci(k, n), stats.proportion_ci(k, n, method="exact")
    assert (wilson.estimate, wilson.n) == (k / n, n)
    sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (wilson.low, wilson.high) == pytest.approx((sm_low, sm_high), abs=1e-9)
    sp = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert (wilson.low, wilson.high) == pytest.approx((sp.low, sp.high), abs=1e-9)
    sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="beta")
    assert (exact.low, exact.high) == pytest.approx((sm_low, sm_high), abs=1e-9)
    sp = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (exact.low, exact.high) == pytest.approx((sp.low, sp.high), abs=1e-9)


def test_zero_of_four_has_a_real_interval_and_zero_of_zero_none():
    cell = stats.proportion([0, 0, 0, 0])
    assert cell.low == 0.0 and cell.high == pytest.approx(0.49, abs=0.005)
    assert cell.text() == "0.0-0.5" and cell.scaled(100).text() == "0.0-49.0"
    assert stats.proportion_ci(4, 4, level=0.99).low < stats.proportion_ci(4, 4).low
    empty = stats.proportion([])
    assert math.isnan(empty.estimate) and math.isnan(empty.low) and empty.n == 0
    assert empty.text() == "--"
    with pytest.raises(ValueError, match="0 or 1"):
        stats.proportion([0, 0.5])
    with pytest.raises(ValueError, match="successes"):
        stats.proportion_ci(5, 4)


def test_t_interval_matches_scipy_and_bootstrap_is_seeded():
    values = [3.0, 7.0, 8.0, 12.0, 30.0]
    cell = stats.mean_ci(values)
    low, high = sps.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sps.sem(values))
    assert (cell.estimate, cell.low, cell.high) == pytest.approx((np.mean(values), low, high))
    boot = stats.mean_ci(values, method="bootstrap", seed=3)
    assert boot == stats.mean_ci(values, method="bootstrap", seed=3)
    assert boot != stats.mean_ci(values, method="bootstrap", seed=4)
    assert min(values) <= boot.low < cell.estimate < boot.high <= max(values)
    one = stats.mean_ci([5.0])
    assert one.estimate == 5.0 and math.isnan(one.low) and math.isnan(one.high)
    assert stats.mean_ci([2.0, 2.0]).low == 2.0
    assert math.isnan(stats.mean_ci([]).estimate)


def test_scores_are_proportions_when_binary_else_clipped_means():
    # 1 of 4 LTM tests passed: Wilson 4.6-69.9%, not a t interval of +-79.6 points
    passed = stats.score_ci([0.0, 0.0, 0.0, 1.0])
    assert (passed.low, passed.high) == pytest.approx((0.0456, 0.6994), abs=1e-4)
    assert passed.method == "wilson"
    free = stats.mean_ci([0.0, 0.0, 0.0, 0.5])
    clipped = stats.score_ci([0.0, 0.0, 0.0, 0.5])
    assert free.low < 0 and clipped.low == 0.0 and clipped.high == free.high
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.score_ci([1.5])


def test_sum_of_means_adds_standard_errors_and_never_collapses():
    # one test per type (the quick paper): a real interval, within [0, number of types]
    cell = stats.sum_of_means_ci([[1.0], [0.0], [0.0], [0.0]])
    assert cell.estimate == 1.0 and cell.n == 4 and 0 < cell.low < 1 < cell.high < 4
    two = stats.sum_of_means_ci([[0.2, 0.4, 0.6], [0.5, 0.7]])
    se = math.sqrt(np.var([0.2, 0.4, 0.6], ddof=1) / 3 + np.var([0.5, 0.7], ddof=1) / 2)
    assert two.estimate == pytest.approx(1.0)
    assert (two.low, two.high) == pytest.approx((1 - 1.959964 * se, 1 + 1.959964 * se))
    assert math.isnan(stats.sum_of_means_ci([[0.5], [1.0, 0.0]]).low)  # spread of one score


def _pairs(both, first_only, second_only, neither):
    first = [1] * both + [1] * first_only + [0] * second_only + [0] * neither
    second = [1] * both + [0] * first_only + [1] * second_only + [0] * neither
    return first, second


@pytest.mark.parametrize("table", [(59, 16, 6, 80), (5, 0, 9, 4), (3, 2, 2, 1), (0, 1, 7, 2)])
def test_mcnemar_p_matches_statsmodels_exact(table):
    both, first_only, second_only, neither = table
    result = stats.mcnemar(*_pairs(*table))
    reference = sm_mcnemar([[both, first_only], [second_only, neither]], exact=True)
    assert result.p_value == pytest.approx(reference.pvalue)
    assert (result.first_only, result.second_only) == (first_only, second_only)
    assert result.estimate == pytest.approx((second_only - first_only) / sum(table))
    assert -1 <= result.low <= result.estimate <= result.high <= 1


def test_mcnemar_newcombe_interval_matches_the_published_example():
    # Cavo et al. 2012 in Fagerland, Lydersen & Laake (2017), ch. 8: -0.0621 (-0.1186 to -0.0046)
    result = stats.mcnemar(*_pairs(59, 16, 6, 80))
    assert result.estimate == pytest.approx(-0.0621, abs=5e-5)
    assert (result.low, result.high) == pytest.approx((-0.1186, -0.0046), abs=5e-5)
    # the measurement issue: all 9 discordant questions favour evidence, exact p = 0.004
    assert stats.mcnemar(*_pairs(6, 0, 9, 3)).p_value == pytest.approx(2 / 2**9)
    assert stats.mcnemar([1, 0], [1, 0]).p_value == 1.0
    assert math.isnan(stats.mcnemar([], []).estimate)
    with pytest.raises(ValueError, match="first values"):
        stats.mcnemar([1, 0], [1])


def test_paired_bootstrap_of_mean_differences():
    rng = np.random.default_rng(0)
    first = rng.normal(100, 20, 40)
    shifted = stats.paired_bootstrap(first, first + 10 + rng.normal(0, 5, 40), seed=1)
    assert shifted.low < 10 < shifted.high and shifted.p_value < 0.001
    same = stats.paired_bootstrap(first, first + rng.normal(0, 5, 40), seed=1)
    assert same.low < 0 < same.high and same.p_value > 0.05
    assert stats.paired_bootstrap(first, first, seed=1).p_value == 1.0
    second = first + 10
    assert stats.paired_bootstrap(first, second, seed=2) == stats.paired_bootstrap(
        first, second, seed=2)
    assert stats.paired_bootstrap([1.0, math.nan, 3.0], [2.0, 5.0, math.nan]).n == 1


def test_paired_picks_mcnemar_for_zero_one_outcomes_else_the_bootstrap():
    first, second = _pairs(5, 1, 6, 8)
    assert stats.paired(first, second) == stats.mcnemar(first, second)
    # NaN pairs are dropped before the choice: the rest is still 0/1
    assert stats.paired([*first, math.nan], [*second, 0.5]) == stats.mcnemar(first, second)
    fractions = ([0.5, 1.0, 0.0, 0.25], [1.0, 1.0, 0.5, 0.75])
    chosen = stats.paired(*fractions, seed=3)
    assert chosen == stats.paired_bootstrap(*fractions, seed=3)
    assert chosen.method.startswith("paired bootstrap") and chosen.estimate == pytest.approx(0.375)
    assert stats.paired([], []).n == 0


def test_holm_matches_statsmodels():
    p = [0.01, 0.04, 0.03, 0.2, 0.004, 0.5]
    reject, corrected, _, _ = multipletests(p, alpha=0.05, method="holm")
    adjusted = stats.holm(p)
    assert adjusted == pytest.approx(corrected)
    assert list(adjusted <= 0.05) == list(reject)
    with_nan = stats.holm([0.01, math.nan, 0.04])
    assert with_nan[0] == pytest.approx(0.02) and math.isnan(with_nan[1])
    assert stats.holm([]).size == 0


def test_mcnemar_power_agrees_with_simulation_and_the_normal_formula():
    n, difference, discordance = 60, 0.2, 0.3
    power = stats.mcnemar_power(n, difference, discordance=discordance)
    rng = np.random.default_rng(7)
    probs = [discordance / 2 - difference / 2, discordance / 2 + difference / 2]
    counts = rng.multinomial(n, probs + [1 - discordance], size=2000)
    p = [stats.mcnemar(*_pairs(0, b, c, n - b - c)).p_value for b, c, _ in counts]
    assert power == pytest.approx(np.mean(np.array(p) <= 0.05), abs=0.03)
    # Connor's normal approximation: n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2
    z_a, z_b = sps.norm.ppf(0.975), sps.norm.ppf(0.8)
    d = stats.min_detectable_difference(1000, discordance=0.3)
    connor = (z_a * math.sqrt(0.3) + z_b * math.sqrt(0.3 - d * d)) ** 2 / d**2
    assert 950 < connor <= 1000  # the exact test is a little conservative
    assert stats.mcnemar_power(1000, d, discordance=0.3) == pytest.approx(0.8, abs=1e-4)


def test_min_detectable_difference_shrinks_with_n_and_states_when_none():
    grid = [stats.min_detectable_difference(n) for n in (50, 100, 400)]
    assert grid[0] > grid[1] > grid[2] > 0
    assert math.isnan(stats.min_detectable_difference(10))  # 10 questions detect nothing
    assert stats.min_detectable_difference(100, discordance=0.2) < grid[1]
    with pytest.raises(ValueError, match="discordance"):
        stats.mcnemar_power(10, 0.5, discordance=0.3)
