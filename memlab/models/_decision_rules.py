"""Seed 003's validation rules as plain functions (used by the models in ``decision.py``).

Each function raises ``ValueError`` with the seed's rule in the message; inside a model
validator pydantic turns that into a ValidationError on the field being checked.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

SCALE_MIN = 1.0
SCALE_MAX = 9.0
SCALE_STEP = 0.5
SCALE_VALUES: tuple[float, ...] = tuple(SCALE_MIN + SCALE_STEP * i for i in range(17))
PAIR_SEPARATOR = " vs "
WEIGHT_SUM_TOLERANCE = 1e-6
DEBATE_TURNS = 13

MBTI_TYPES: frozenset[str] = frozenset(
    a + b + c + d for a in "EI" for b in "SN" for c in "TF" for d in "JP"
)

SCALE_RULE = "1.0-9.0 in 0.5 increments"


def check_scale(value: float, where: str) -> float:
    """Check one Saaty / decision-matrix score is 1.0-9.0 in 0.5 steps."""
    if not (SCALE_MIN <= value <= SCALE_MAX) or not float(value * 2).is_integer():
        raise ValueError(f"{where}: {value} is not on the scale ({SCALE_RULE})")
    return float(value)


def pair_key(a: str, b: str) -> str:
    """The comparison-matrix key of criteria ``a`` and ``b``: ``"a vs b"``."""
    return f"{a}{PAIR_SEPARATOR}{b}"


def split_pair_key(key: str) -> tuple[str, str]:
    """Split ``"A vs B"`` into ``("A", "B")``; raises ValueError if it is not of that form."""
    left, sep, right = key.partition(PAIR_SEPARATOR)
    if not sep or not left.strip() or not right.strip() or left == right:
        raise ValueError(
            f"key {key!r} must have the form 'CriterionA vs CriterionB' with two different criteria"
        )
    return left, right


def check_comparison_values(matrix: Mapping[str, float]) -> dict[str, float]:
    """Check every key is ``"A vs B"`` and every value is on the scale (no criteria known)."""
    for key, value in matrix.items():
        split_pair_key(key)
        check_scale(value, f"comparison {key!r}")
    return dict(matrix)


def check_comparison_matrix(matrix: Mapping[str, float], criteria: Sequence[str]) -> None:
    """Check ``matrix`` holds exactly the nC2 pairs of ``criteria``, each once, in either order."""
    n = len(criteria)
    expected = {frozenset(p) for p in itertools.combinations(criteria, 2)}
    seen: dict[frozenset[str], str] = {}
    for key, value in matrix.items():
        left, right = split_pair_key(key)
        pair = frozenset((left, right))
        if pair not in expected:
            raise ValueError(f"key {key!r} names a criterion not among {list(criteria)}")
        if pair in seen:
            raise ValueError(f"pair {key!r} appears twice (also as {seen[pair]!r})")
        seen[pair] = key
        check_scale(value, f"comparison {key!r}")
    missing = [
        pair_key(a, b)
        for a, b in itertools.combinations(criteria, 2)
        if frozenset((a, b)) not in seen
    ]
    if missing:
        raise ValueError(
            f"must hold nC2 = {math.comb(n, 2)} pairwise comparisons for n = {n} criteria, "
            f"got {len(matrix)}; missing {missing}"
        )


def check_decision_scores(matrix: Mapping[str, Mapping[str, float]]) -> None:
    """Check every decision-matrix score is on the scale."""
    for major, row in matrix.items():
        for criterion, value in row.items():
            check_scale(value, f"score [{major!r}][{criterion!r}]")


def check_decision_matrix(
    matrix: Mapping[str, Mapping[str, float]], majors: Sequence[str], criteria: Sequence[str]
) -> None:
    """Check every (major x criterion) combination is present, and nothing else."""
    check_decision_scores(matrix)
    rule = "must hold every (major x criterion) combination"
    missing_majors = [m for m in majors if m not in matrix]
    extra_majors = [m for m in matrix if m not in majors]
    if missing_majors or extra_majors:
        raise ValueError(f"{rule}: missing majors {missing_majors}, unknown majors {extra_majors}")
    for major in majors:
        row = matrix[major]
        missing = [c for c in criteria if c not in row]
        extra = [c for c in row if c not in criteria]
        if missing or extra:
            raise ValueError(
                f"{rule}: major {major!r} misses criteria {missing}, has unknown criteria {extra}"
            )


def repeated_scores(matrix: Mapping[str, Mapping[str, float]], limit: int = 3) -> dict[float, int]:
    """Scores used more than ``limit`` times (the seed recommends each score at most 3 times)."""
    counts = Counter(v for row in matrix.values() for v in row.values())
    return {score: n for score, n in sorted(counts.items()) if n > limit}


def check_weights(weights: Mapping[str, float], criteria: Sequence[str] | None = None) -> None:
    """Check weights lie in 0-1, sum to 1.0 and (if given) cover exactly ``criteria``."""
    for name, w in weights.items():
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"weight of {name!r} must be between 0.0 and 1.0, got {w}")
    total = math.fsum(weights.values())
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise ValueError(f"weights must sum to 1.0 (tolerance {WEIGHT_SUM_TOLERANCE}), got {total}")
    if criteria is not None and set(weights) != set(criteria):
        raise ValueError(
            f"must hold one weight per selected criterion {sorted(criteria)}, got {sorted(weights)}"
        )


def check_unique(values: Iterable[Any], what: str) -> None:
    """Raise if ``values`` has duplicates."""
    counts = Counter(values)
    dupes = [v for v, n in counts.items() if n > 1]
    if dupes:
        raise ValueError(f"{what} must be unique, duplicated: {dupes}")


def check_ranks(ranks: Sequence[int]) -> None:
    """Check ranks are 1, 2, 3, ... with no duplicates."""
    check_unique(ranks, "ranks")
    if sorted(ranks) != list(range(1, len(ranks) + 1)):
        raise ValueError(f"ranks must be 1, 2, 3, ... without gaps, got {sorted(ranks)}")


class DebateTurnType(StrEnum):
    """Role of a turn in the 13-turn debate."""

    PROPOSAL = "proposal"
    CRITIQUE = "critique"
    DEFENSE = "defense"
    FINAL_DECISION = "final_decision"


_PHASE_ROLES = (
    DebateTurnType.PROPOSAL,
    DebateTurnType.CRITIQUE,
    DebateTurnType.CRITIQUE,
    DebateTurnType.DEFENSE,
)


def expected_turn_type(turn: int) -> DebateTurnType:
    """The type turn ``turn`` (1-13) has: phases 1-3 are proposal, critique x2, defense; 13 decides."""
    if turn == DEBATE_TURNS:
        return DebateTurnType.FINAL_DECISION
    return _PHASE_ROLES[(turn - 1) % 4]


def phase_of(turn: int) -> int:
    return 4 if turn == DEBATE_TURNS else (turn - 1) // 4 + 1


def check_debate_turns(turns: Sequence[Any], *, complete: bool = False) -> None:
    """Check a debate follows the 13-turn structure.

    Turns are numbered 1, 2, 3, ... in order; in each phase the proposer defends, the two
    critics are other agents and target the proposer; each phase has its own leader.
    ``complete=True`` also requires all 13 turns.
    """
    numbers = [t.turn for t in turns]
    if numbers != list(range(1, len(turns) + 1)):
        raise ValueError(f"turns must be numbered 1, 2, 3, ... in order, got {numbers}")
    if complete and len(turns) != DEBATE_TURNS:
        raise ValueError(f"a debate must have exactly {DEBATE_TURNS} turns, got {len(turns)}")
    leaders = []
    for start in range(0, min(len(turns), 12), 4):
        phase = turns[start : start + 4]
        leader = phase[0].speaker
        leaders.append(leader)
        for critique in phase[1:3]:
            if critique.speaker == leader or critique.targets != [leader]:
                raise ValueError(
                    f"turn {critique.turn}: a critique comes from another agent and targets "
                    f"the phase leader {leader!r}"
                )
        if len(phase) == 4 and phase[3].speaker != leader:
            raise ValueError(f"turn {phase[3].turn}: the defense is by the phase leader {leader!r}")
    check_unique(leaders, "phase leaders")
