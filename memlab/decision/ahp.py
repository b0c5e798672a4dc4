"""AHP (seed 003, round 2): weights from the principal eigenvector of a reciprocal matrix.

Comparisons come as the seed writes them: ``{"A vs B": v}`` means criterion A is ``v`` times as
important as B (Saaty scale), so ``a[A][B] = v`` and ``a[B][A] = 1 / v``. Each unordered pair is
given exactly once, in either order.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from pydantic import BaseModel, Field

from memlab.errors import ConfigError
from memlab.models.decision import JudgementChange, pair_key
from memlab.models.decision import split_pair_key as _split_pair_key

# Saaty's random consistency index RI by matrix order n (Saaty 1980, The Analytic Hierarchy Process).
RANDOM_INDEX: dict[int, float] = {
    1: 0.0, 2: 0.0, 3: 0.58, 4: 0.90, 5: 1.12, 6: 1.24, 7: 1.32, 8: 1.41, 9: 1.45, 10: 1.49,
    11: 1.51, 12: 1.48, 13: 1.56, 14: 1.57, 15: 1.59,
}


class AHPResult(BaseModel):
    """What round 2 derives from a comparison matrix.

    Attributes:
        criteria_weights: weight per criterion, summing to 1.
        eigenvalue_max: the principal eigenvalue lambda_max.
        consistency_index: CI = (lambda_max - n) / (n - 1).
        consistency_ratio: CR = CI / RI (0 when n <= 2).
        random_index: Saaty's RI for this n.
        matrix: the full reciprocal matrix, rows and columns in ``criteria`` order.
    """

    criteria: list[str]
    criteria_weights: dict[str, float]
    eigenvalue_max: float
    consistency_index: float
    consistency_ratio: float
    random_index: float = Field(ge=0)
    matrix: list[list[float]]

    def is_consistent(self, threshold: float = 0.10) -> bool:
        return self.consistency_ratio <= threshold


def split_pair_key(key: str) -> tuple[str, str]:
    """``"A vs B"`` -> ``("A", "B")``; raises ConfigError naming the field on any other shape."""
    try:
        a, b = _split_pair_key(key)
    except ValueError as exc:
        raise ConfigError(f"comparison_matrix: {exc}") from None
    return a.strip(), b.strip()


def reciprocal_matrix(criteria: list[str], comparisons: dict[str, float]) -> np.ndarray:
    """Build the n x n positive reciprocal matrix from the ``"A vs B"`` dict.

    Raises:
        ConfigError: unknown criterion, a pair given twice or missing, a self comparison,
            or a value that is not positive.
    """
    index = {name: i for i, name in enumerate(criteria)}
    if len(index) != len(criteria):
        raise ConfigError("selected_criteria: criterion names must be unique")
    n = len(criteria)
    matrix = np.eye(n)
    seen: set[frozenset[str]] = set()
    for key, value in comparisons.items():
        a, b = split_pair_key(key)
        for name in (a, b):
            if name not in index:
                raise ConfigError(f"comparison_matrix: {key!r} names unknown criterion {name!r}")
        pair = frozenset((a, b))
        if pair in seen:
            raise ConfigError(f"comparison_matrix: pair {key!r} is given more than once")
        if not value > 0:
            raise ConfigError(f"comparison_matrix: {key!r} = {value} must be positive")
        seen.add(pair)
        matrix[index[a], index[b]] = float(value)
        matrix[index[b], index[a]] = 1.0 / float(value)
    expected = n * (n - 1) // 2
    if len(seen) != expected:
        missing = [pair_key(a, b) for i, a in enumerate(criteria) for b in criteria[i + 1:]
                   if frozenset((a, b)) not in seen]
        raise ConfigError(f"comparison_matrix: needs all {expected} pairs (nC2); "
                          f"missing {missing}")
    return matrix


def principal_eigenvector(matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """Return ``(lambda_max, w)``: the Perron root and its eigenvector scaled to sum 1."""
    values, vectors = np.linalg.eig(np.asarray(matrix, dtype=float))
    k = int(np.argmax(values.real))
    vector = np.abs(vectors[:, k].real)  # the Perron vector has one sign; eig may flip it
    return float(values[k].real), vector / vector.sum()


def consistency(lambda_max: float, n: int) -> tuple[float, float, float]:
    """Return ``(CI, RI, CR)`` for a matrix of order ``n``; CR is 0 when n <= 2."""
    if n not in RANDOM_INDEX:
        raise ConfigError(f"selected_criteria: AHP supports 1-{max(RANDOM_INDEX)} criteria, got {n}")
    if n <= 2:
        return 0.0, 0.0, 0.0
    ci = max((lambda_max - n) / (n - 1), 0.0)  # lambda_max >= n; float noise can dip below
    ri = RANDOM_INDEX[n]
    return ci, ri, ci / ri


def ahp_from_matrix(criteria: list[str], matrix: np.ndarray) -> AHPResult:
    """AHP weights and consistency of an already built reciprocal matrix."""
    lambda_max, weights = principal_eigenvector(matrix)
    ci, ri, cr = consistency(lambda_max, len(criteria))
    return AHPResult(
        criteria=list(criteria),
        criteria_weights={c: float(w) for c, w in zip(criteria, weights, strict=True)},
        eigenvalue_max=lambda_max, consistency_index=ci, consistency_ratio=cr,
        random_index=ri, matrix=np.asarray(matrix, dtype=float).tolist(),
    )


def ahp_weights(criteria: list[str], comparisons: dict[str, float]) -> AHPResult:
    """AHP weights, lambda_max, CI and CR from the seed's ``"A vs B"`` comparison dict.

    Example:
        >>> r = ahp_weights(["a", "b", "c"], {"a vs b": 2, "a vs c": 4, "b vs c": 2})
        >>> [round(r.criteria_weights[c], 4) for c in "abc"], round(r.consistency_ratio, 6)
        ([0.5714, 0.2857, 0.1429], 0.0)
    """
    return ahp_from_matrix(criteria, reciprocal_matrix(criteria, comparisons))


def most_inconsistent_pairs(result: AHPResult, k: int | None = 2) -> list[str]:
    """The ``k`` comparisons (None: all) that deviate most from the ratios their weights imply.

    The deviation of a_ij is ``max(r, 1/r)`` with ``r = a_ij * w_j / w_i``; it is 1 for a
    perfectly consistent judgement. Keys come back as ``"A vs B"`` with A the preferred side.
    """
    names, w, a = result.criteria, result.criteria_weights, result.matrix
    scored = []
    for i, j in combinations(range(len(names)), 2):
        ratio = a[i][j] * w[names[j]] / w[names[i]]
        key = pair_key(names[i], names[j]) if a[i][j] >= 1 else pair_key(names[j], names[i])
        scored.append((max(ratio, 1 / ratio), key))
    return [key for _, key in sorted(scored, reverse=True)[:k]]


def implied_value(result: AHPResult, key: str) -> tuple[str, float]:
    """The judgement of ``key``'s pair that the other judgements imply: ``("A vs B", v)``, A
    favoured, v on the Saaty scale (1.0-9.0 in 0.5 steps).

    Harker's method for a missing comparison (Harker 1987): the pair's two entries are set to 0
    and 1 is added to both their diagonal entries; the ratio of the two criteria's weights in
    the principal eigenvector of that matrix is rounded to the scale.

    Example:
        >>> r = ahp_weights(["a", "b", "c"], {"a vs b": 2, "a vs c": 4, "b vs c": 2})
        >>> implied_value(r, "c vs a")
        ('a vs c', 4.0)
        >>> implied_value(ahp_weights(["a", "b", "c"], {"a vs b": 2, "c vs a": 5, "b vs c": 2}),
        ...               "c vs a")  # a > b > c says a is 4 times c, not c 5 times a
        ('a vs c', 4.0)
    """
    a, b = split_pair_key(key)
    i, j = result.criteria.index(a), result.criteria.index(b)
    matrix = np.array(result.matrix, dtype=float)
    matrix[i, j] = matrix[j, i] = 0.0
    matrix[i, i] += 1.0
    matrix[j, j] += 1.0
    weights = principal_eigenvector(matrix)[1]
    ratio = weights[i] / weights[j]
    first, second, ratio = (a, b, ratio) if ratio >= 1 else (b, a, 1 / ratio)
    return pair_key(first, second), float(min(max(round(ratio * 2) / 2, 1.0), 9.0))


def judgement(comparisons: dict[str, float], key: str) -> tuple[str, float]:
    """The entry of ``comparisons`` for ``key``'s pair, in whichever order it was given."""
    a, b = split_pair_key(key)
    for name in (pair_key(a, b), pair_key(b, a)):
        if name in comparisons:
            return name, comparisons[name]
    raise ConfigError(f"comparison_matrix: no judgement of {key!r}")


def replace_judgements(comparisons: dict[str, float], updates: dict[str, float]
                       ) -> dict[str, float]:
    """``comparisons`` with each pair of ``updates`` replaced where it stood (key order kept)."""
    new = {frozenset(split_pair_key(k)): (k, v) for k, v in updates.items()}
    out = dict(new.pop(frozenset(split_pair_key(k)), (k, v)) for k, v in comparisons.items())
    return out | dict(new.values())


def repair_consistency(criteria: list[str], comparisons: dict[str, float], threshold: float
                       ) -> tuple[dict[str, float], AHPResult, list[JudgementChange]]:
    """Revise the most inconsistent judgement, one at a time, until CR <= ``threshold``.

    Saaty's revision: of the comparisons furthest from the ratios of the current weights (see
    :func:`most_inconsistent_pairs`), the first that differs from what the other judgements
    imply (:func:`implied_value`) is set to that; the weights are recomputed and the next one
    revised. Stops at CR <= ``threshold``, or (CR still above it: the caller checks) when no
    judgement differs from what the others imply, a matrix comes back, or after 3 x nC2
    revisions. Returns the matrix, its AHP result and each changed pair (the judgement before
    and after).

    Example:
        >>> turned = {"a vs b": 2, "a vs c": 2, "a vs d": 4, "b vs c": 1, "b vs d": 2,
        ...           "d vs c": 5}  # every other judgement has c twice d: CR 0.27
        >>> m, r, changes = repair_consistency(["a", "b", "c", "d"], turned, 0.1)
        >>> round(r.consistency_ratio, 3), [(c.before, c.after) for c in changes]
        (0.0, [({'d vs c': 5.0}, {'c vs d': 2.0})])
    """
    matrix = dict(comparisons)
    result = ahp_weights(criteria, matrix)
    seen = {frozenset(matrix.items())}
    for _revision in range(3 * len(matrix)):
        if result.is_consistent(threshold):
            break
        revisions = ((judgement(matrix, key), implied_value(result, key))
                     for key in most_inconsistent_pairs(result, k=None))
        revision = next((new for old, new in revisions if old != new), None)
        if revision is None:
            break
        matrix = replace_judgements(matrix, dict([revision]))
        if frozenset(matrix.items()) in seen:
            break
        seen.add(frozenset(matrix.items()))
        result = ahp_weights(criteria, matrix)
    return matrix, result, changed_judgements(comparisons, matrix)


def changed_judgements(before: dict[str, float], after: dict[str, float]
                       ) -> list[JudgementChange]:
    """The pairs whose judgement differs between two matrices of the same criteria."""
    changes = []
    for key, value in before.items():
        new_key, new_value = judgement(after, key)
        if (new_key, new_value) != (key, value):
            changes.append(JudgementChange(before={key: value}, after={new_key: new_value}))
    return changes
