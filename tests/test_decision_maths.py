"""AHP and TOPSIS checked against textbook cases and an independent library (pymcdm)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from memlab.decision.ahp import (
    RANDOM_INDEX,
    ahp_from_matrix,
    ahp_weights,
    implied_value,
    judgement,
    pair_key,
    principal_eigenvector,
    reciprocal_matrix,
    repair_consistency,
    replace_judgements,
)
from memlab.decision.topsis import topsis
from memlab.errors import ConfigError
from memlab.models.decision import SCALE_VALUES

pymcdm = pytest.importorskip("pymcdm", reason="pymcdm is a dev dependency (pip install pymcdm)")
from pymcdm.methods import TOPSIS as PymcdmTOPSIS  # noqa: E402
from pymcdm.normalizations import vector_normalization  # noqa: E402
from pymcdm.weights.subjective import AHP as PymcdmAHP  # noqa: E402

# Saaty (1980), relative wealth of nations: published lambda_max 7.61 and eigenvector below.
NATIONS = ["US", "USSR", "China", "France", "UK", "Japan", "WGermany"]
WEALTH = [[1, 4, 9, 6, 6, 5, 5], [1 / 4, 1, 7, 5, 5, 3, 4],
          [1 / 9, 1 / 7, 1, 1 / 5, 1 / 5, 1 / 7, 1 / 5], [1 / 6, 1 / 5, 5, 1, 1, 1 / 3, 1 / 3],
          [1 / 6, 1 / 5, 5, 1, 1, 1 / 3, 1 / 3], [1 / 5, 1 / 3, 7, 3, 3, 1, 2],
          [1 / 5, 1 / 4, 5, 3, 3, 1 / 2, 1]]
WEALTH_PUBLISHED = [0.427, 0.230, 0.021, 0.052, 0.052, 0.123, 0.094]


def as_comparisons(names, matrix):
    return {pair_key(a, b): matrix[i][j] for (i, a), (j, b)
            in itertools.combinations(enumerate(names), 2)}


def test_saaty_wealth_of_nations_matches_published_values():
    result = ahp_weights(NATIONS, as_comparisons(NATIONS, WEALTH))
    weights = [result.criteria_weights[n] for n in NATIONS]
    assert weights == pytest.approx(WEALTH_PUBLISHED, abs=1.5e-3)
    assert result.eigenvalue_max == pytest.approx(7.61, abs=5e-3)
    assert result.consistency_index == pytest.approx((result.eigenvalue_max - 7) / 6)
    assert result.consistency_ratio == pytest.approx(result.consistency_index / 1.32)
    assert result.is_consistent(0.10)


def test_saaty_light_intensity_experiment_is_inconsistent_at_ten_percent():
    # Saaty's chairs-and-light experiment: eigenvector about (0.61, 0.24, 0.10, 0.05).
    names = ["C1", "C2", "C3", "C4"]
    m = [[1, 5, 6, 7], [1 / 5, 1, 4, 6], [1 / 6, 1 / 4, 1, 4], [1 / 7, 1 / 6, 1 / 4, 1]]
    result = ahp_weights(names, as_comparisons(names, m))
    assert [result.criteria_weights[n] for n in names] == pytest.approx(
        [0.61, 0.24, 0.10, 0.05], abs=0.01)
    assert result.eigenvalue_max == pytest.approx(4.39, abs=0.01)
    assert result.consistency_ratio > 0.10 and not result.is_consistent(0.10)


def test_consistent_matrix_recovers_weights_exactly_and_agrees_with_geometric_mean():
    rng = np.random.default_rng(3)
    for n in range(3, 11):
        true = rng.uniform(0.1, 1.0, n)
        true /= true.sum()
        matrix = np.outer(true, 1 / true)
        names = [f"c{i}" for i in range(n)]
        result = ahp_weights(names, as_comparisons(names, matrix.tolist()))
        geo = np.prod(matrix, axis=1) ** (1 / n)
        got = np.array([result.criteria_weights[c] for c in names])
        assert got == pytest.approx(true, rel=1e-9)
        assert got == pytest.approx(geo / geo.sum(), rel=1e-9)
        assert result.eigenvalue_max == pytest.approx(n, abs=1e-9)
        assert result.consistency_ratio == pytest.approx(0.0, abs=1e-9)


def test_agrees_with_pymcdm_on_random_reciprocal_matrices():
    rng = np.random.default_rng(11)
    scale = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6, 1 / 7, 1 / 8, 1 / 9]
    for n in (3, 4, 5, 7, 10):
        names = [f"k{i}" for i in range(n)]
        m = np.eye(n)
        for i, j in itertools.combinations(range(n), 2):
            m[i, j] = rng.choice(scale)
            m[j, i] = 1 / m[i, j]
        ours = ahp_from_matrix(names, m)
        theirs = PymcdmAHP(matrix=m)
        assert [ours.criteria_weights[c] for c in names] == pytest.approx(theirs(), abs=1e-9)
        # pymcdm divides CI by a different RI table (Tummala & Ling); compare CI itself.
        their_ci = theirs.get_cr() * PymcdmAHP.RI_M[n - 1]
        assert ours.consistency_index == pytest.approx(their_ci, abs=1e-9)
        assert ours.consistency_ratio == pytest.approx(ours.consistency_index / RANDOM_INDEX[n])


def test_pair_given_in_reverse_order_means_reciprocal():
    forward = ahp_weights(["a", "b"], {"a vs b": 3.0})
    reverse = ahp_weights(["a", "b"], {"b vs a": 3.0})
    assert forward.criteria_weights["a"] == pytest.approx(0.75)
    assert reverse.criteria_weights["a"] == pytest.approx(0.25)
    assert forward.consistency_ratio == 0.0


@pytest.mark.parametrize("comparisons, message", [
    ({"a vs b": 2, "a vs c": 2}, "missing"),
    ({"a vs b": 2, "b vs a": 2, "a vs c": 1, "b vs c": 1}, "more than once"),
    ({"a vs b": 2, "a vs z": 2, "b vs c": 1}, "unknown criterion"),
    ({"a vs b": 0, "a vs c": 2, "b vs c": 1}, "positive"),
    ({"a-b": 2, "a vs c": 2, "b vs c": 1}, "must have the form"),
])
def test_bad_comparison_dict_is_rejected_naming_the_field(comparisons, message):
    with pytest.raises(ConfigError, match=message) as err:
        reciprocal_matrix(["a", "b", "c"], comparisons)
    assert "comparison_matrix" in str(err.value)


def test_principal_eigenvector_is_positive_and_normalised():
    lam, w = principal_eigenvector(np.array(WEALTH))
    assert np.all(w > 0) and w.sum() == pytest.approx(1.0)
    assert lam >= 7


def random_decision_matrix(rng, m, n):
    values = rng.integers(2, 19, size=(m, n)) / 2.0  # 1.0-9.0 in 0.5 steps
    alts = [f"major{i}" for i in range(m)]
    crits = [f"crit{j}" for j in range(n)]
    weights = rng.dirichlet(np.ones(n))
    matrix = {a: dict(zip(crits, row, strict=True)) for a, row in zip(alts, values, strict=True)}
    return matrix, dict(zip(crits, weights, strict=True)), values, weights


@pytest.mark.parametrize("seed", range(20))
def test_topsis_matches_pymcdm_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 8)), int(rng.integers(3, 11))
    matrix, weights, values, w = random_decision_matrix(rng, m, n)
    cost = {c for c in weights if rng.random() < 0.3}
    types = np.array([-1 if c in cost else 1 for c in weights])
    result = topsis(matrix, weights, cost_criteria=cost)
    theirs = PymcdmTOPSIS(vector_normalization)(values, w, types)
    ours = [result.closeness_coefficients[a] for a in matrix]
    assert ours == pytest.approx(list(theirs), abs=1e-9)


def test_topsis_ranking_has_no_duplicate_ranks_and_follows_closeness():
    rng = np.random.default_rng(5)
    matrix, weights, *_ = random_decision_matrix(rng, 6, 5)
    matrix["twin"] = dict(matrix["major0"])  # a tie must still get its own rank
    result = topsis(matrix, weights)
    ranks = [r.rank for r in result.final_ranking]
    assert ranks == list(range(1, len(matrix) + 1))
    cc = [r.closeness_coefficient for r in result.final_ranking]
    assert cc == sorted(cc, reverse=True)
    assert all(0.0 <= c <= 1.0 for c in cc)
    assert sum(result.weights.values()) == pytest.approx(1.0)


def test_topsis_textbook_dominance():
    # An alternative best on every criterion is the ideal itself (C = 1); the worst is 0.
    matrix = {"best": {"x": 9, "y": 8}, "mid": {"x": 5, "y": 5}, "worst": {"x": 1, "y": 2}}
    result = topsis(matrix, {"x": 0.6, "y": 0.4})
    assert result.closeness_coefficients["best"] == pytest.approx(1.0)
    assert result.closeness_coefficients["worst"] == pytest.approx(0.0)
    assert [r.alternative for r in result.final_ranking] == ["best", "mid", "worst"]
    assert result.ideal_solution == result.weighted_matrix["best"]


def test_topsis_all_equal_alternatives_is_a_draw():
    result = topsis({"a": {"x": 3}, "b": {"x": 3}}, {"x": 1.0})
    assert result.closeness_coefficients == {"a": 0.5, "b": 0.5}
    assert [r.rank for r in result.final_ranking] == [1, 2]


@pytest.mark.parametrize("weights, message", [
    ({"x": 0.5, "y": 0.4}, "sum to 1.0"),
    ({"x": 1.2, "y": -0.2}, ">= 0"),
])
def test_topsis_rejects_bad_weights(weights, message):
    with pytest.raises(ConfigError, match=message):
        topsis({"a": {"x": 1, "y": 2}, "b": {"x": 2, "y": 1}}, weights)


def test_topsis_rejects_missing_score():
    with pytest.raises(ConfigError, match="decision_matrix: 'b' has no score"):
        topsis({"a": {"x": 1, "y": 2}, "b": {"x": 2}}, {"x": 0.5, "y": 0.5})


# --- repairing an inconsistent matrix (round 2, after the CR retries) ---------------------------
LIGHT = ["C1", "C2", "C3", "C4"]
LIGHT_MATRIX = [[1, 5, 6, 7], [1 / 5, 1, 4, 6], [1 / 6, 1 / 4, 1, 4], [1 / 7, 1 / 6, 1 / 4, 1]]


def test_implied_value_is_what_the_other_judgements_say():
    # n = 3: without a-c, a/c is the product along a-b-c (Harker's method is exact here)
    result = ahp_weights(list("abc"), {"a vs b": 3, "b vs c": 2.5, "c vs a": 7})
    assert implied_value(result, "c vs a") == ("a vs c", 7.5)
    assert implied_value(result, "a vs b") == ("b vs a", 9.0)  # b/a = 2.5 * 7, capped at 9
    # n = 4: the turned pair is ignored; the others hold c = 2 d exactly
    turned = {"a vs b": 2, "a vs c": 2, "a vs d": 4, "b vs c": 1, "b vs d": 2, "d vs c": 9}
    assert implied_value(ahp_weights(list("abcd"), turned), "d vs c") == ("c vs d", 2.0)


def test_repair_of_saaty_light_experiment_changes_the_fewest_pairs_it_needs():
    given = as_comparisons(LIGHT, LIGHT_MATRIX)
    assert ahp_weights(LIGHT, given).consistency_ratio > 0.10
    matrix, result, changes = repair_consistency(LIGHT, given, 0.10)
    assert result.consistency_ratio <= 0.10
    assert result == ahp_weights(LIGHT, matrix)
    changed = {frozenset(c.before.popitem()[0].split(" vs ")) for c in changes}
    assert 1 <= len(changes) < len(given)
    for key, value in given.items():  # pairs not reported as changed are untouched
        if frozenset(key.split(" vs ")) not in changed:
            assert matrix[key] == value
    assert list(matrix) == list(given)  # each pair where it stood


@pytest.mark.parametrize("n", [3, 4, 5, 7, 10])
def test_repair_reaches_the_threshold_on_random_matrices_with_scale_values(n):
    rng = np.random.default_rng(n)
    names = [f"c{i}" for i in range(n)]
    repaired = 0
    for _ in range(40):
        given = {pair_key(*((a, b) if rng.random() < 0.5 else (b, a))):
                 float(rng.choice(SCALE_VALUES)) for a, b in itertools.combinations(names, 2)}
        matrix, result, changes = repair_consistency(names, given, 0.05)
        assert result.consistency_ratio <= 0.05
        assert all(v in SCALE_VALUES for v in matrix.values())
        assert all(judgement(matrix, k) != (k, v) for c in changes for k, v in c.before.items())
        unchanged = len(given) - len(changes)
        assert sum(judgement(given, k) == (k, v) for k, v in matrix.items()) == unchanged
        repaired += bool(changes)
    assert repaired > 0


def test_repair_leaves_a_consistent_matrix_alone():
    given = {"a vs b": 2.0, "a vs c": 4.0, "b vs c": 2.0}
    assert repair_consistency(list("abc"), given, 0.10) == (given, ahp_weights(list("abc"),
                                                                               given), [])


def test_replace_judgements_takes_either_key_order_and_keeps_positions():
    given = {"a vs b": 2.0, "c vs a": 5.0, "b vs c": 2.0}
    assert list(replace_judgements(given, {"a vs c": 4.0}).items()) == [
        ("a vs b", 2.0), ("a vs c", 4.0), ("b vs c", 2.0)]
    assert judgement(given, "a vs c") == ("c vs a", 5.0)
    with pytest.raises(ConfigError, match="comparison_matrix"):
        judgement(given, "a vs d")


@pytest.mark.parametrize("module", ["memlab.decision.ahp", "memlab.decision.personas"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
