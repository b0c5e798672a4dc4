"""Confidence intervals and paired tests: one function per kind of quantity.

Which interval a number gets depends on what it is:

- a proportion of 0/1 outcomes (a test passed, the right option picked, evidence recalled):
  :func:`proportion_ci` / :func:`proportion` (Wilson score interval; exact Clopper-Pearson on
  request). 0 of 4 gives about 0-49%, never +-0;
- a mean of an unbounded quantity (tokens, seconds): :func:`mean_ci` (Student t, or a seeded
  percentile bootstrap);
- a mean of scores bounded in [0, 1] (fractional LTM test scores): :func:`score_ci`, a proportion
  when every score is 0 or 1, else a t interval clipped to [0, 1];
- a sum over test types of mean scores (the LTM suite score): :func:`sum_of_means_ci`.

Paired comparisons (the same questions under two conditions): :func:`mcnemar` for 0/1 outcomes
(exact test, Newcombe's interval for the difference), :func:`paired_bootstrap` for means,
:func:`paired` picking between the two from the values;
:func:`holm` corrects a family of p-values; :func:`min_detectable_difference` says which paired
difference n questions can detect.

Where nothing can be estimated (n = 0; a spread from one value) the numbers are NaN, never an
error and never a zero-width interval. A difference is always ``second - first``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as sps

NAN = math.nan
_CHUNK = 2_000_000  # resampled values held in memory at once by the bootstraps


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval and the number of values it rests on."""

    estimate: float
    low: float
    high: float
    n: int
    method: str

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (e.g. ``factor=100`` for percent)."""
        return Interval(self.estimate * factor, self.low * factor, self.high * factor, self.n,
                        self.method)

    def text(self, digits: int = 1) -> str:
        """``low-high`` as a table shows it (``--`` when there is no interval)."""
        return interval_text(self.low, self.high, digits)


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison: ``second - first`` over the pairs, its interval and p-value.

    ``first_only`` / ``second_only`` are the discordant counts (McNemar only): pairs where only
    the first, or only the second, outcome is 1.
    """

    estimate: float
    low: float
    high: float
    n: int
    p_value: float
    method: str
    first_only: int | None = None
    second_only: int | None = None


def interval_text(low: float, high: float, digits: int = 1) -> str:
    """``"0.0-49.0"``; ``"-5.0 to 3.0"`` when the low end is negative; ``"--"`` for NaN."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "--"
    joiner = " to " if low < 0 else "-"
    return f"{low:.{digits}f}{joiner}{high:.{digits}f}"


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level={level}: must lie strictly between 0 and 1")
    return float(sps.norm.ppf(0.5 + level / 2))


def _values(values: Iterable[float]) -> np.ndarray:
    """The values as floats, NaN dropped."""
    array = np.array(list(values), dtype=float)
    return array[~np.isnan(array)]


def _binary(array: np.ndarray) -> bool:
    return bool(np.isin(array, (0.0, 1.0)).all())


def _empty(method: str, n: int = 0, estimate: float = NAN) -> Interval:
    return Interval(estimate, NAN, NAN, n, method)


# ----------------------------------------------------------------------------- proportions
def proportion_ci(successes: float, n: int, *, level: float = 0.95,
                  method: str = "wilson") -> Interval:
    """A proportion ``successes / n`` with its interval.

    Args:
        successes: how many outcomes are 1 (a whole number).
        n: how many outcomes; 0 gives NaN (no estimate).
        level: confidence level.
        method: ``"wilson"`` (score interval, the default) or ``"exact"`` (Clopper-Pearson).
    """
    if n < 0 or successes < 0 or successes > n or successes != int(successes):
        raise ValueError(f"successes={successes}, n={n}: need whole numbers 0 <= successes <= n")
    if method not in ("wilson", "exact"):
        raise ValueError(f"method={method!r}: one of 'wilson', 'exact'")
    if n == 0:
        return _empty(method)
    k, p = int(successes), successes / n
    if method == "exact":
        tail = (1 - level) / 2
        low = 0.0 if k == 0 else float(sps.beta.ppf(tail, k, n - k + 1))
        high = 1.0 if k == n else float(sps.beta.ppf(1 - tail, k + 1, n - k))
        return Interval(p, low, high, n, method)
    z = _z(level)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(p, low, high, n, method)


def proportion(outcomes: Iterable[float], *, level: float = 0.95,
               method: str = "wilson") -> Interval:
    """The share of 1s among 0/1 outcomes (NaN dropped), with :func:`proportion_ci`.

    Raises:
        ValueError: an outcome is neither 0 nor 1.
    """
    array = _values(outcomes)
    if not _binary(array):
        raise ValueError("proportion: every outcome must be 0 or 1")
    return proportion_ci(int(array.sum()), array.size, level=level, method=method)


# ----------------------------------------------------------------------------- means
def mean_ci(values: Iterable[float], *, level: float = 0.95,
            bounds: tuple[float, float] | None = None, method: str = "t",
            n_boot: int = 10_000, seed: int = 0) -> Interval:
    """The mean of ``values`` (NaN dropped) with a t or percentile-bootstrap interval.

    Args:
        values: the values (tokens, seconds, scores...).
        level: confidence level.
        bounds: (low, high) the values cannot leave; the interval is clipped to them.
        method: ``"t"`` (Student t, the default) or ``"bootstrap"`` (percentile bootstrap of
            ``n_boot`` resamples drawn with ``seed``).

    Returns:
        NaN for no values; a NaN interval for one value (no spread to estimate); the point
        itself when all values are equal.
    """
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method={method!r}: one of 't', 'bootstrap'")
    array = _values(values)
    if array.size == 0:
        return _empty(method)
    mean = float(array.mean())
    if array.size == 1:
        return _empty(method, 1, mean)
    if method == "bootstrap":
        low, high = _percentiles(_bootstrap_means(array, n_boot, seed), level)
    else:
        half = float(sps.t.ppf(0.5 + level / 2, array.size - 1) * array.std(ddof=1)
                     / math.sqrt(array.size))
        low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Interval(mean, low, high, int(array.size), method)


def score_ci(scores: Iterable[float], *, level: float = 0.95) -> Interval:
    """The mean of scores in [0, 1]: a Wilson proportion when every score is 0 or 1, else a t
    interval clipped to [0, 1].

    Raises:
        ValueError: a score lies outside [0, 1].
    """
    array = _values(scores)
    if ((array < 0) | (array > 1)).any():
        raise ValueError("score_ci: every score must lie in [0, 1]")
    if _binary(array):
        return proportion_ci(int(array.sum()), array.size, level=level)
    return mean_ci(array, level=level, bounds=(0.0, 1.0))


def sum_of_means_ci(groups: Iterable[Iterable[float]], *, level: float = 0.95) -> Interval:
    """The sum over groups of each group's mean score in [0, 1] (the LTM suite score: the sum
    over test types of the type's mean), out of the number of groups.

    Normal interval adding the groups' standard errors in quadrature, clipped to
    [0, number of groups]: a group of 0/1 scores has the Agresti-Coull standard error (never 0,
    also for 0 of 1), any other group its sample standard error (NaN for one value, which
    makes the whole interval NaN). ``n`` counts the scores of all groups.
    """
    z = _z(level)
    total, variance, n, k = 0.0, 0.0, 0, 0
    for group in groups:
        array = _values(group)
        if array.size == 0:
            continue
        k, n, total = k + 1, n + array.size, total + float(array.mean())
        if _binary(array):
            adjusted_n = array.size + z * z
            centre = (array.sum() + z * z / 2) / adjusted_n
            variance += centre * (1 - centre) / adjusted_n
        else:
            variance += float(array.var(ddof=1)) / array.size if array.size > 1 else NAN
    if k == 0 or math.isnan(variance):
        return _empty("sum of means", n, total if k else NAN)
    half = z * math.sqrt(variance)
    return Interval(total, max(0.0, total - half), min(float(k), total + half), n,
                    "sum of means")


def _bootstrap_means(array: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Means of ``n_boot`` resamples with replacement, drawn in chunks (bounded memory)."""
    rng, out = np.random.default_rng(seed), []
    per_chunk = max(1, _CHUNK // array.size)
    for start in range(0, n_boot, per_chunk):
        size = min(per_chunk, n_boot - start)
        out.append(array[rng.integers(0, array.size, (size, array.size))].mean(axis=1))
    return np.concatenate(out)


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return float(low), float(high)


# ----------------------------------------------------------------------------- paired
def _pairs(first: Iterable[float], second: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Paired arrays with every pair holding a NaN dropped."""
    a, b = np.array(list(first), dtype=float), np.array(list(second), dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes: {a.size} first values but {b.size} second values")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def mcnemar(first: Iterable[float], second: Iterable[float], *,
            level: float = 0.95) -> PairedTest:
    """Exact McNemar test of paired 0/1 outcomes (the same questions under two conditions).

    The estimate is the paired difference of proportions ``mean(second) - mean(first)``, its
    interval Newcombe's (1998, method 10: Wilson intervals of both proportions combined with the
    correlation of the pairs); p is the exact two-sided binomial test of the discordant pairs
    (1 when there are none).

    Raises:
        ValueError: the two sequences differ in length or hold a value other than 0/1.
    """
    a, b = _pairs(first, second)
    if not (_binary(a) and _binary(b)):
        raise ValueError("mcnemar: every outcome must be 0 or 1")
    n = int(a.size)
    both, first_only = int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())
    second_only = int(((a == 0) & (b == 1)).sum())
    neither = n - both - first_only - second_only
    if n == 0:
        return PairedTest(NAN, NAN, NAN, 0, NAN, "mcnemar exact, Newcombe", 0, 0)
    discordant = first_only + second_only
    p_value = 1.0 if discordant == 0 else min(
        1.0, 2 * float(sps.binom.cdf(min(first_only, second_only), discordant, 0.5)))
    low, high = _newcombe(both, second_only, first_only, neither, level)
    return PairedTest((second_only - first_only) / n, low, high, n, p_value,
                      "mcnemar exact, Newcombe", first_only, second_only)


def _newcombe(both: int, only_1: int, only_2: int, neither: int,
              level: float) -> tuple[float, float]:
    """Newcombe's interval for p1 - p2 of a paired 2x2 table (p1 = both + only_1 over n)."""
    n = both + only_1 + only_2 + neither
    p1, p2 = (both + only_1) / n, (both + only_2) / n
    w1 = proportion_ci(both + only_1, n, level=level)
    w2 = proportion_ci(both + only_2, n, level=level)
    margins = (both + only_1) * (only_2 + neither) * (both + only_2) * (only_1 + neither)
    cross = both * neither - only_1 * only_2
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > 0 else cross) / math.sqrt(margins)
    d1, u2 = p1 - w1.low, w2.high - p2
    u1, d2 = w1.high - p1, p2 - w2.low
    low = p1 - p2 - math.sqrt(max(0.0, d1 * d1 - 2 * phi * d1 * u2 + u2 * u2))
    high = p1 - p2 + math.sqrt(max(0.0, d2 * d2 - 2 * phi * d2 * u1 + u1 * u1))
    return max(-1.0, low), min(1.0, high)


def paired_bootstrap(first: Iterable[float], second: Iterable[float], *, level: float = 0.95,
                     n_boot: int = 10_000, seed: int = 0) -> PairedTest:
    """The mean paired difference ``second - first`` (tokens, scores...).

    Interval: percentile bootstrap of the mean difference, resampling pairs (``n_boot``
    resamples, ``seed``). p: two-sided sign-flip randomisation test of the differences
    (``n_boot`` random sign patterns from the same seed; 1 when every difference is 0).
    """
    a, b = _pairs(first, second)
    diffs = b - a
    method = "paired bootstrap, sign-flip test"
    if diffs.size == 0:
        return PairedTest(NAN, NAN, NAN, 0, NAN, method)
    cell = mean_ci(diffs, level=level, method="bootstrap", n_boot=n_boot, seed=seed)
    return PairedTest(cell.estimate, cell.low, cell.high, cell.n,
                      _sign_flip_p(diffs, n_boot, seed), method)


def paired(first: Iterable[float], second: Iterable[float], *, level: float = 0.95,
           n_boot: int = 10_000, seed: int = 0) -> PairedTest:
    """The paired comparison a pair of outcome sequences calls for: :func:`mcnemar` when every
    value (of the pairs without NaN) is 0 or 1, else :func:`paired_bootstrap` (fractional
    scores). ``second - first``, as both."""
    a, b = _pairs(first, second)
    if _binary(a) and _binary(b):
        return mcnemar(a, b, level=level)
    return paired_bootstrap(a, b, level=level, n_boot=n_boot, seed=seed)


def _sign_flip_p(diffs: np.ndarray, n_flips: int, seed: int) -> float:
    observed = abs(float(diffs.mean()))
    if not np.any(diffs):
        return 1.0
    rng, extreme = np.random.default_rng(seed + 1), 0
    per_chunk = max(1, _CHUNK // diffs.size)
    for start in range(0, n_flips, per_chunk):
        signs = rng.choice((-1.0, 1.0), (min(per_chunk, n_flips - start), diffs.size))
        extreme += int((np.abs((signs * diffs).mean(axis=1)) >= observed - 1e-12).sum())
    return (extreme + 1) / (n_flips + 1)


def holm(p_values: Iterable[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values of a family, in the input order (reject where the
    adjusted p is at most alpha). NaN p-values stay NaN and are not counted in the family."""
    p = np.array(list(p_values), dtype=float)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = order.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order]) if m else np.array([])
    out = np.full(p.shape, NAN)
    out[order] = np.minimum(1.0, adjusted)
    return out


# ----------------------------------------------------------------------------- power
def mcnemar_power(n: int, difference: float, *, discordance: float = 0.3,
                  alpha: float = 0.05) -> float:
    """Power of the exact two-sided McNemar test on ``n`` paired questions.

    Args:
        n: paired questions (every condition answers the same ones).
        difference: the true paired difference of proportions (absolute, <= discordance).
        discordance: share of questions on which the two conditions disagree (p01 + p10).
        alpha: significance level.

    Exact: the number of discordant pairs is Binomial(n, discordance) and, given m of them,
    the pairs favouring one side Binomial(m, (discordance + difference) / (2 discordance)).
    """
    if not 0 < discordance <= 1 or not 0 <= abs(difference) <= discordance:
        raise ValueError(f"need 0 < discordance <= 1 and |difference| <= discordance, got "
                         f"discordance={discordance}, difference={difference}")
    m = np.arange(n + 1)
    lower = np.maximum(sps.binom.ppf(alpha / 2, m, 0.5), 0)
    # largest k with 2 * P(X <= k) <= alpha under the null (-1: this m can never reject)
    lower = np.where(sps.binom.cdf(lower, m, 0.5) <= alpha / 2 * (1 + 1e-9), lower, lower - 1)
    share = (discordance + abs(difference)) / (2 * discordance)
    reject = sps.binom.cdf(lower, m, share) + sps.binom.sf(m - lower - 1, m, share)
    reject = np.where(lower >= 0, reject, 0.0)
    return float((sps.binom.pmf(m, n, discordance) * reject).sum())


def min_detectable_difference(n: int, *, alpha: float = 0.05, power: float = 0.8,
                              discordance: float = 0.3) -> float:
    """The smallest paired difference of proportions that ``n`` paired questions detect with
    the exact McNemar test at ``alpha`` and ``power`` (:func:`mcnemar_power`).

    The power of a paired test depends on how often the two conditions disagree: the result
    holds under the stated ``discordance`` (share of discordant questions; 0.3 by default, the
    middle of the 0.2-0.4 range assumed in the measurement issue), an assumption until a pilot
    run measures it. NaN when no difference up to ``discordance`` reaches ``power``.
    """
    if n <= 0 or mcnemar_power(n, discordance, discordance=discordance, alpha=alpha) < power:
        return NAN
    return float(optimize.brentq(
        lambda d: mcnemar_power(n, d, discordance=discordance, alpha=alpha) - power,
        0.0, discordance, xtol=1e-6))
