"""Prompts of the decision debate: one user message per turn, built from the round so far.

Each message states the round, turn, phase and role in a fixed form ("Round 2 of 4", "Your
role: critique") so transcripts are easy to read and scripted test models can route on them.
"""

from __future__ import annotations

import json

from memlab.decision.ahp import AHPResult, implied_value, judgement
from memlab.models.decision import DebateTurn, DebateTurnType, UserInput, split_pair_key

TURN_EXCERPT_CHARS = 160

ROUND_TASKS = {
    1: "select the criteria for evaluating the candidate majors",
    2: "compare the selected criteria pairwise (AHP, Saaty scale)",
    3: "score every candidate major on every criterion (decision matrix)",
}

SAATY_GUIDE = (
    "For each pair name the criterion that matters more and its intensity on the Saaty scale "
    "1.0-9.0 in 0.5 steps: 1 equal, 2 slightly, 3 clearly, 4 very, 5 essentially, 5.5-7 "
    "extremely, 7.5-9 absolutely (rare) more important. Keep the judgements consistent (if A > B "
    "and B > C then A > C by more).")
CRITERIA_GUIDE = (
    "A criterion is a quality of a major on which the candidates differ, judged for this "
    "student: for example career prospects, fit with favourite subjects, workload, or "
    "closeness to the student's values. Name it in 1-4 words.")
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
        final = {1: f"select exactly {max_criteria} different final criteria from the proposals, "
                    "naming the advisor each came from and why",
                 2: "judge every pair: which criterion matters more, and how much",
                 3: "give the final score of every major on every criterion"}[round_no]
        return f"As Director, weigh all arguments and {final}."
    verb = ("Propose" if kind is DebateTurnType.PROPOSAL
            else f"Answer the critiques of {who} and restate (or revise)")
    payload = {1: f"up to {max_criteria} criteria (name, short description, benefit or cost)",
               2: "your judgement of every pair (which matters more, and how much)",
               3: "your score of every major on every criterion"}[round_no]
    return f"{verb} {payload}, then argue for it briefly in content."


def round_context(round_no: int, user: UserInput, criteria: list[str],
                  weights: dict[str, float] | None = None) -> str:
    """The facts of the round: majors, criteria, the keys and scale to use."""
    majors = ", ".join(user.candidate_majors)
    lines = [f"Candidate majors: {majors}."]
    if round_no == 1:
        lines += [CRITERIA_GUIDE,
                  f"The Director will keep exactly {user.settings.max_criteria} criteria."]
    if round_no == 2:
        lines += [f"Criteria: {', '.join(criteria)}.", SAATY_GUIDE]
    if round_no == 3:
        shown = {c: round(w, 3) for c, w in (weights or {}).items()}
        lines += [f"Criteria and AHP weights: {json.dumps(shown)}.", SCORE_GUIDE,
                  "scores maps each criterion to a score for every major: compare the majors on that "
                  "criterion and give the better one the higher score."]
    return "\n".join(lines)


def transcript(turns: list[DebateTurn]) -> str:
    """The round so far: each finished phase as its leader's defended proposal, the current
    phase turn by turn (a small model's prompt stays short; the Director sees every final
    proposal)."""
    if not turns:
        return "(no turns yet)"
    lines = []
    current = (len(turns) // 4) * 4  # index of the current phase's first turn
    for start in range(0, min(current, 12), 4):
        phase = turns[start: start + 4]
        final = phase[-1]
        lines.append(f"Phase {start // 4 + 1}, {final.speaker} after critique by "
                     f"{' and '.join(t.speaker for t in phase[1:3])}: "
                     f"{final.content[:TURN_EXCERPT_CHARS]}{_payload(final)}")
    for t in turns[current:]:
        lines.append(f"T{t.turn} {t.speaker} ({t.type.value}): {t.content[:TURN_EXCERPT_CHARS]}"
                     f"{_payload(t)}")
    return "\n".join(lines)


def _payload(turn: DebateTurn) -> str:
    if turn.selected_criteria:
        return " | criteria: " + ", ".join(c.name for c in turn.selected_criteria)
    if turn.comparison_matrix:
        return " | matrix: " + json.dumps(turn.comparison_matrix, separators=(",", ":"))
    if turn.decision_matrix:  # shown as the reply is asked: criterion -> major -> score
        criteria = next(iter(turn.decision_matrix.values()), {})
        by_criterion = {c: {m: row[c] for m, row in turn.decision_matrix.items()}
                        for c in criteria}
        return " | scores: " + json.dumps(by_criterion, separators=(",", ":"))
    return ""


def turn_header(round_no: int, turn: int, phase: str, kind: DebateTurnType) -> str:
    """The first line of a turn's message: round, turn, phase, role."""
    return (f"Round {round_no} of 4: {ROUND_TASKS[round_no]}. Turn {turn} of 13 ({phase}). "
            f"Your role: {kind.value}.")


def turn_message(round_no: int, turn: int, phase: str, kind: DebateTurnType, targets: list[str],
                 context: str, turns: list[DebateTurn], max_criteria: int) -> str:
    """The user message for one debate turn."""
    return (f"{turn_header(round_no, turn, phase, kind)}\n{context}\nDebate so far:\n"
            f"{transcript(turns)}\n{role_instruction(round_no, kind, targets, max_criteria)}")


def cr_retry_message(header: str, matrix: dict[str, float], result: AHPResult,
                     pairs: list[str], threshold: float) -> str:
    """Re-ask the Director for only ``pairs``, the judgements least consistent with its others.

    The message stands alone (the debate's transcript and the Director's previous reply are
    left out: shown its own reply, a small model at temperature 0 copies it).
    """
    said = "; ".join(f"{key}: {value}" for key, value in matrix.items())
    lines = [f"- {key}: you said {_as_words(*judgement(matrix, key))}; your other judgements "
             f"imply {_as_words(*implied_value(result, key), about='about ')}."
             for key in pairs]
    return (f"{header}\nCR retry: your judgements were {said}. Their consistency ratio is "
            f"{result.consistency_ratio:.3f}, above the threshold {threshold:.2f}, because these "
            "disagree with your others:\n" + "\n".join(lines) + "\nJudge only these pairs "
            "again, so that they agree with your other judgements.\n" + SAATY_GUIDE)


def _as_words(key: str, value: float, about: str = "") -> str:
    a, b = split_pair_key(key)
    if value == 1.0:
        return f"{a} and {b} {about}equally important"
    return f"{a} {about}{value} times as important as {b}"


def diversity_feedback(repeats: dict[float, int]) -> str:
    """Re-ask the round 3 Director whose scores repeat (the seed: same score <= 3 times)."""
    used = ", ".join(f"{score} used {count} times" for score, count in repeats.items())
    return (f"Score diversity: {used}; use the same score at most 3 times. Give every score "
            "again, separating the majors more clearly.")
