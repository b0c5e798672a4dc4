"""Prompts of the decision debate: one user message per turn, built from the round so far.

Each message states the round, turn, phase and role in a fixed form ("Round 2 of 4", "Your
role: critique") so transcripts are easy to read and scripted test models can route on them.
"""

from __future__ import annotations

import json
from itertools import combinations

from memlab.models.decision import DebateTurn, DebateTurnType, UserInput, pair_key

TURN_EXCERPT_CHARS = 300

ROUND_TASKS = {
    1: "select the criteria for evaluating the candidate majors",
    2: "compare the selected criteria pairwise (AHP, Saaty scale)",
    3: "score every candidate major on every criterion (decision matrix)",
}

SAATY_GUIDE = (
    "Saaty scale 1.0-9.0 in 0.5 steps: 1 equal, 2 slightly, 3 clearly, 4 very, 5 essentially, "
    "5.5-7 extremely, 7.5-9 absolutely (rare) more important. A key \"A vs B\" with value v means "
    "A is v times as important as B; if B matters more, write the key as \"B vs A\". Keep the "
    "judgements consistent (if A > B and B > C then A > C by more).")
SCORE_GUIDE = (
    "Scores 1.0-9.0 in 0.5 steps: 1-3 poor fit, 3.5-5.5 moderate, 6-9 good fit (9 rare). Most "
    "scores lie in 3-7; use the same score at most 3 times; 8-9 and 1-2 only in clear cases.")


def role_instruction(round_no: int, kind: DebateTurnType, targets: list[str],
                     max_criteria: int) -> str:
    """What the speaker must do at this turn."""
    who = " and ".join(targets)
    if kind is DebateTurnType.CRITIQUE:
        return f"Critique {who}'s proposal from your values: what is missing or overweighted?"
    if kind is DebateTurnType.FINAL_DECISION:
        final = {1: f"select exactly {max_criteria} final criteria, naming the advisor each "
                    "came from and why",
                 2: "give the final comparison matrix with every pair",
                 3: "give the final decision matrix with every score"}[round_no]
        return f"As Director, weigh all arguments and {final}."
    verb = "Propose" if kind is DebateTurnType.PROPOSAL else f"Answer the critiques of {who} and restate (or revise)"
    payload = {1: "your criteria (name, short description, type benefit or cost)",
               2: "your full comparison matrix", 3: "your full decision matrix"}[round_no]
    return f"{verb} {payload}, with a short argument."


def round_context(round_no: int, user: UserInput, criteria: list[str],
                  weights: dict[str, float] | None = None) -> str:
    """The facts of the round: majors, criteria, the keys and scale to use."""
    majors = ", ".join(user.candidate_majors)
    lines = [f"Candidate majors: {majors}."]
    if round_no == 1:
        lines.append(f"The Director will keep exactly {user.settings.max_criteria} criteria.")
    if round_no == 2:
        keys = [pair_key(a, b) for a, b in combinations(criteria, 2)]
        lines += [f"Criteria: {', '.join(criteria)}.", SAATY_GUIDE,
                  f"Give exactly these {len(keys)} pairs (either order): {json.dumps(keys)}."]
    if round_no == 3:
        shown = {c: round(w, 3) for c, w in (weights or {}).items()}
        lines += [f"Criteria and AHP weights: {json.dumps(shown)}.", SCORE_GUIDE,
                  "decision_matrix maps each major to a score for every criterion."]
    return "\n".join(lines)


def transcript(turns: list[DebateTurn]) -> str:
    """The round so far, one excerpt per turn."""
    if not turns:
        return "(no turns yet)"
    lines = []
    for t in turns:
        text = t.content[:TURN_EXCERPT_CHARS]
        payload = _payload(t)
        lines.append(f"T{t.turn} {t.speaker} ({t.type.value}): {text}{payload}")
    return "\n".join(lines)


def _payload(turn: DebateTurn) -> str:
    if turn.selected_criteria:
        return " | criteria: " + ", ".join(c.name for c in turn.selected_criteria)
    if turn.comparison_matrix:
        return " | matrix: " + json.dumps(turn.comparison_matrix, separators=(",", ":"))
    if turn.decision_matrix:
        return " | scores: " + json.dumps(turn.decision_matrix, separators=(",", ":"))
    return ""


def turn_message(round_no: int, turn: int, phase: str, kind: DebateTurnType, targets: list[str],
                 context: str, turns: list[DebateTurn], max_criteria: int) -> str:
    """The user message for one debate turn."""
    return (f"Round {round_no} of 4: {ROUND_TASKS[round_no]}. Turn {turn} of 13 ({phase}). "
            f"Your role: {kind.value}.\n{context}\nDebate so far:\n{transcript(turns)}\n"
            f"{role_instruction(round_no, kind, targets, max_criteria)}")


def cr_feedback(consistency_ratio: float, threshold: float, worst: list[str]) -> str:
    """Re-ask the Director after an inconsistent matrix."""
    return (f"CR retry: the consistency ratio of that matrix is {consistency_ratio:.3f}, above "
            f"the threshold {threshold:.2f}. Revise the least consistent judgements "
            f"({', '.join(worst)}) so that the comparisons agree with each other, and give the "
            "full corrected comparison matrix.")
