"""TOPSIS (seed 003, round 4): rank alternatives by closeness to the ideal solution.

Steps: vector normalisation of each criterion column, weighting, ideal (A+) and anti-ideal (A-)
solutions, Euclidean distances to both, closeness coefficient ``D- / (D+ + D-)`` in [0, 1], and
a ranking with no duplicate ranks (ties broken by alternative name, so the order is stable).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from memlab.errors import ConfigError
from memlab.models.decision import TopsisResult

WEIGHT_SUM_TOLERANCE = 1e-6


class TopsisOutcome(BaseModel):
    """Everything round 4 derives: the seed's normalized/weighted matrices, A+/A-, results, ranking.

    ``topsis_results`` lists :class:`TopsisResult` in the decision matrix's order of alternatives;
    ``final_ranking`` the same results best first.
    """

    criteria: list[str]
    weights: dict[str, float]
    normalized_matrix: dict[str, dict[str, float]]
    weighted_matrix: dict[str, dict[str, float]]
    ideal_solution: dict[str, float]
    anti_ideal_solution: dict[str, float]
    topsis_results: list[TopsisResult]
    final_ranking: list[TopsisResult]

    @property
    def closeness_coefficients(self) -> dict[str, float]:
        return {r.alternative: r.closeness_coefficient for r in self.topsis_results}


def check_weights(weights: dict[str, float], criteria: list[str]) -> np.ndarray:
    """Weights in ``criteria`` order; each in [0, 1] and summing to 1 (the seed's round 4 rule)."""
    missing = [c for c in criteria if c not in weights]
    if missing:
        raise ConfigError(f"criteria_weights: no weight for criteria {missing}")
    w = np.array([float(weights[c]) for c in criteria])
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ConfigError("criteria_weights: every weight must be a finite number >= 0")
    if abs(w.sum() - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise ConfigError(f"criteria_weights: weights must sum to 1.0, got {w.sum():.6f}")
    return w


def vector_normalise(matrix: np.ndarray) -> np.ndarray:
    """Divide each column by its Euclidean norm (an all-zero column stays zero)."""
    norms = np.linalg.norm(matrix, axis=0)
    return matrix / np.where(norms == 0, 1.0, norms)


def rank_order(closeness: dict[str, float]) -> dict[str, int]:
    """Ranks 1..m, best first; equal scores are ordered by name so no rank repeats."""
    order = sorted(closeness, key=lambda name: (-closeness[name], name))
    return {name: i + 1 for i, name in enumerate(order)}


def _matrix(decision_matrix: dict[str, dict[str, float]], criteria: list[str]) -> np.ndarray:
    rows = []
    for alternative, scores in decision_matrix.items():
        missing = [c for c in criteria if c not in scores]
        if missing:
            raise ConfigError(f"decision_matrix: {alternative!r} has no score for {missing}")
        rows.append([float(scores[c]) for c in criteria])
    matrix = np.array(rows, dtype=float)
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0):
        raise ConfigError("decision_matrix: every score must be a finite number >= 0")
    return matrix


def _table(m: np.ndarray, rows: list[str], cols: list[str]) -> dict[str, dict[str, float]]:
    return {r: dict(zip(cols, map(float, values), strict=True))
            for r, values in zip(rows, m, strict=True)}


def topsis(decision_matrix: dict[str, dict[str, float]], weights: dict[str, float],
           *, cost_criteria: frozenset[str] | set[str] = frozenset()) -> TopsisOutcome:
    """Rank the alternatives of ``decision_matrix`` (alternative -> criterion -> score).

    Args:
        decision_matrix: scores per alternative and criterion (higher is better unless the
            criterion is in ``cost_criteria``).
        weights: AHP weights per criterion, summing to 1.
        cost_criteria: criteria where lower is better (none in the seed's debate).

    Returns:
        The full TOPSIS trace and ``final_ranking``.
    """
    if len(decision_matrix) < 1:
        raise ConfigError("decision_matrix: needs at least one alternative")
    criteria = list(weights)
    w = check_weights(weights, criteria)
    alternatives = list(decision_matrix)
    normalized = vector_normalise(_matrix(decision_matrix, criteria))
    weighted = normalized * w
    cost = np.array([c in cost_criteria for c in criteria])
    ideal = np.where(cost, weighted.min(axis=0), weighted.max(axis=0))
    anti = np.where(cost, weighted.max(axis=0), weighted.min(axis=0))
    d_plus = np.sqrt(((weighted - ideal) ** 2).sum(axis=1))
    d_minus = np.sqrt(((weighted - anti) ** 2).sum(axis=1))
    total = d_plus + d_minus
    # All alternatives identical: every one is both ideal and anti-ideal; call it a draw (0.5).
    closeness = np.divide(d_minus, total, out=np.full_like(total, 0.5), where=total > 0)
    closeness = np.clip(closeness, 0.0, 1.0)
    ranks = rank_order(dict(zip(alternatives, map(float, closeness), strict=True)))
    results = [TopsisResult(alternative=a, distance_to_ideal=float(dp), rank=ranks[a],
                            distance_to_anti_ideal=float(dm), closeness_coefficient=float(c))
               for a, dp, dm, c in zip(alternatives, d_plus, d_minus, closeness, strict=True)]
    return TopsisOutcome(
        criteria=criteria, weights=dict(zip(criteria, map(float, w), strict=True)),
        normalized_matrix=_table(normalized, alternatives, criteria),
        weighted_matrix=_table(weighted, alternatives, criteria),
        ideal_solution=dict(zip(criteria, map(float, ideal), strict=True)),
        anti_ideal_solution=dict(zip(criteria, map(float, anti), strict=True)),
        topsis_results=results, final_ranking=sorted(results, key=lambda r: r.rank),
    )
