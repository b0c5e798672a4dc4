"""Seed 003: the prioritisation framework's input, personas, debates, AHP/TOPSIS state and outputs.

Three value-driven agents and a Director debate three rounds of 13 turns each (criteria, AHP
pairwise comparisons, decision matrix); round 4 is TOPSIS. The rule functions live in
``_decision_rules`` and are re-exported here.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from memlab.models._common import NonBlankStr, SeedModel, UtcDatetime, new_id, utc_now
from memlab.models._decision_rules import (
    DEBATE_TURNS,
    MBTI_TYPES,
    SCALE_VALUES,
    DebateTurnType,
    check_comparison_matrix,
    check_comparison_values,
    check_debate_turns,
    check_decision_matrix,
    check_decision_scores,
    check_ranks,
    check_unique,
    check_weights,
    expected_turn_type,
    pair_key,
    phase_of,
    repeated_scores,
    split_pair_key,
)

__all__ = [
    "DEBATE_TURNS", "MBTI_TYPES", "SCALE_VALUES", "AgentPersona", "CRRepair",
    "ComparisonMatrix", "ConversationState", "Criterion", "DebateTurn", "DebateTurnType",
    "DecisionMatrix", "JudgementChange", "Round1Output", "Round2DirectorDecision",
    "Round2Output", "Round3DirectorDecision", "Round3Output", "SessionSettings",
    "TopsisResult", "UserInput", "check_comparison_matrix", "check_debate_turns",
    "check_decision_matrix", "check_weights", "expected_turn_type", "pair_key",
    "repeated_scores", "round_output_filename", "split_pair_key",
]

ComparisonMatrix = Annotated[dict[str, float], AfterValidator(check_comparison_values)]
"""Pairwise comparisons: key ``"CriteriaA vs CriteriaB"``, value on the Saaty scale 1.0-9.0."""


def _decision_scores(value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    check_decision_scores(value)
    return value


DecisionMatrix = Annotated[dict[str, dict[str, float]], AfterValidator(_decision_scores)]
"""Scores: key1 major, key2 criterion, value 1.0-9.0 in 0.5 increments."""


class SessionSettings(SeedModel):
    """``settings`` of the user input."""

    max_criteria: int = Field(5, ge=3, le=10, description="number of criteria, range 3-10")
    cr_threshold: float = Field(0.10, ge=0.05, le=0.20, description="AHP CR threshold 0.05-0.20")
    cr_max_retries: int = Field(3, ge=0, description="maximum CR retry attempts")
    enable_streaming: bool = False


class UserInput(SeedModel):
    """The user's profile and the majors to evaluate (``data/user_inputs/*.json``)."""

    mbti: str = Field(description="one of the 16 MBTI types")
    strengths: list[str] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)
    favorite_subjects: list[str] = Field(default_factory=list)
    disliked_subjects: list[str] = Field(default_factory=list)
    good_at_subjects: list[str] = Field(default_factory=list)
    bad_at_subjects: list[str] = Field(default_factory=list)
    core_values: list[str] = Field(min_length=1, max_length=6,
                                   description="1-6 items: 3 advisors hold 1-2 each")
    candidate_majors: list[str] = Field(min_length=2, description="at least 2 items")
    settings: SessionSettings = Field(default_factory=SessionSettings)

    @field_validator("mbti")
    @classmethod
    def _mbti_type(cls, value: str) -> str:
        normalised = value.strip().upper()
        if normalised not in MBTI_TYPES:
            raise ValueError(
                f"must be one of the 16 MBTI types {sorted(MBTI_TYPES)}, got {value!r}"
            )
        return normalised

    @field_validator("candidate_majors")
    @classmethod
    def _unique_majors(cls, value: list[str]) -> list[str]:
        check_unique(value, "candidate majors")
        return value


class AgentPersona(SeedModel):
    """A value-driven debate agent generated from the user's core values."""

    name: NonBlankStr
    core_values: list[str] = Field(min_length=1, max_length=2, description="1-2 values per agent")
    persona_description: str
    debate_stance: str
    system_prompt: str


class Criterion(SeedModel):
    """One evaluation criterion selected in round 1."""

    name: NonBlankStr
    description: str = ""
    type: str = Field("benefit", description="criterion type, e.g. benefit or cost")
    source_agent: str = ""
    reasoning: str = ""


class DebateTurn(SeedModel):
    """One turn of a 13-turn debate (rounds 1-3), with the round's optional payload."""

    turn: int = Field(ge=1, le=DEBATE_TURNS, description="turn number 1-13")
    phase: str = Field(description="e.g. 'Phase 1: PassionDriven leads'")
    speaker: NonBlankStr
    type: DebateTurnType
    content: str
    target: str | list[str] | None = Field(None, description="agent(s) a critique/defense answers")
    timestamp: UtcDatetime = Field(default_factory=utc_now)
    selected_criteria: list[Criterion] | None = Field(None, description="round 1")
    comparison_matrix: ComparisonMatrix | None = Field(None, description="round 2")
    decision_matrix: DecisionMatrix | None = Field(None, description="round 3")

    @model_validator(mode="after")
    def _turn_structure(self) -> DebateTurn:
        expected = expected_turn_type(self.turn)
        if self.type is not expected:
            raise ValueError(
                f"type: turn {self.turn} must be {expected.value!r} in the 13-turn structure, "
                f"got {self.type.value!r}"
            )
        phase = phase_of(self.turn)
        if not self.phase.startswith(f"Phase {phase}"):
            raise ValueError(
                f"phase: turn {self.turn} belongs to 'Phase {phase}', got {self.phase!r}"
            )
        needs_target = self.type in (DebateTurnType.CRITIQUE, DebateTurnType.DEFENSE)
        if needs_target and not self.targets:
            raise ValueError(f"target: a {self.type.value} turn must name its target agent(s)")
        return self

    @property
    def targets(self) -> list[str]:
        """``target`` as a list."""
        if self.target is None:
            return []
        return [self.target] if isinstance(self.target, str) else list(self.target)


class JudgementChange(SeedModel):
    """One comparison a CR repair changed: ``{"A vs B": v}`` before and after."""

    before: ComparisonMatrix
    after: ComparisonMatrix


class CRRepair(SeedModel):
    """How round 2's matrix was repaired when cr_max_retries left CR above cr_threshold.

    The Director attempt with the lowest CR was kept; its judgement furthest from the ratio of
    its own weights was set to that ratio on the Saaty scale, one pair at a time (see
    ``memlab.decision.ahp.repair_consistency``).
    """

    attempt: int = Field(ge=1, description="the Director attempt repaired (1 = first reply)")
    cr_before: float = Field(ge=0.0)
    cr_after: float = Field(ge=0.0)
    director_matrix: ComparisonMatrix = Field(description="the Director's matrix as given")
    changed: list[JudgementChange] = Field(min_length=1)


class Round2DirectorDecision(SeedModel):
    """The Director's final comparison matrix of round 2 (``cr_repair`` when it was repaired)."""

    comparison_matrix: ComparisonMatrix
    reasoning: str = ""
    cr_repair: CRRepair | None = None


class Round3DirectorDecision(SeedModel):
    """The Director's final decision matrix of round 3."""

    decision_matrix: DecisionMatrix
    reasoning: str = ""


class TopsisResult(SeedModel):
    """TOPSIS outcome for one alternative (major)."""

    alternative: NonBlankStr
    distance_to_ideal: float = Field(ge=0.0, description="distance to A+")
    distance_to_anti_ideal: float = Field(ge=0.0, description="distance to A-")
    closeness_coefficient: float = Field(ge=0.0, le=1.0, description="range 0.0-1.0")
    rank: int = Field(ge=1)


def _check_criteria(criteria: list[Criterion], settings: SessionSettings) -> list[str]:
    names = [c.name for c in criteria]
    if len(names) != settings.max_criteria:
        raise ValueError(
            f"selected_criteria: must hold exactly max_criteria = {settings.max_criteria} "
            f"items, got {len(names)}"
        )
    check_unique(names, "selected_criteria: criterion names")
    return names


def _prefixed(field: str, check: Any, *args: Any) -> None:
    """Run ``check(*args)``; re-raise its ValueError with the field name in front."""
    try:
        check(*args)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


def _debate(value: list[DebateTurn]) -> list[DebateTurn]:
    check_debate_turns(value)
    return value


def _full_debate(value: list[DebateTurn]) -> list[DebateTurn]:
    check_debate_turns(value, complete=True)
    return value


def _ranking(value: list[TopsisResult]) -> list[TopsisResult]:
    check_unique([r.alternative for r in value], "alternatives")
    check_ranks([r.rank for r in value])
    return value


Debate = Annotated[list[DebateTurn], AfterValidator(_debate)]
FullDebate = Annotated[list[DebateTurn], AfterValidator(_full_debate)]
Ranking = Annotated[list[TopsisResult], AfterValidator(_ranking)]


def _weights(value: dict[str, float]) -> dict[str, float]:
    if value:
        check_weights(value)
    return value


Weights = Annotated[dict[str, float], AfterValidator(_weights)]


class ConversationState(SeedModel):
    """The workflow state across all four rounds. Each round's fields are checked once set.

    ``consistency_ratio <= cr_threshold`` is a Round 2 acceptance rule: the state may hold a
    failing CR between retries; :class:`Round2Output` enforces it.
    """

    user_input: UserInput
    session_id: NonBlankStr = Field(default_factory=new_id)
    alternatives: list[str] = Field(default_factory=list, description="the candidate majors")
    agent_personas: list[AgentPersona] = Field(default_factory=list)
    # Round 1: criteria selection
    round1_debate_turns: Debate = Field(default_factory=list)
    selected_criteria: list[Criterion] = Field(default_factory=list)
    # Round 2: AHP pairwise comparison
    round2_debate_turns: Debate = Field(default_factory=list)
    comparison_matrix: ComparisonMatrix = Field(default_factory=dict)
    criteria_weights: Weights = Field(default_factory=dict)
    consistency_ratio: float | None = Field(None, ge=0.0)
    eigenvalue_max: float | None = None
    round2_director_decision: Round2DirectorDecision | None = None
    # Round 3: decision matrix
    round3_debate_turns: Debate = Field(default_factory=list)
    decision_matrix: DecisionMatrix = Field(default_factory=dict)
    round3_director_decision: Round3DirectorDecision | None = None
    # Round 4: TOPSIS
    normalized_matrix: dict[str, dict[str, float]] = Field(default_factory=dict)
    weighted_matrix: dict[str, dict[str, float]] = Field(default_factory=dict)
    ideal_solution: dict[str, float] = Field(default_factory=dict, description="A+")
    anti_ideal_solution: dict[str, float] = Field(default_factory=dict, description="A-")
    topsis_results: Ranking = Field(default_factory=list)
    final_ranking: Ranking = Field(default_factory=list)

    @property
    def criteria_names(self) -> list[str]:
        return [c.name for c in self.selected_criteria]

    @model_validator(mode="after")
    def _rounds_consistent(self) -> ConversationState:
        majors = self.user_input.candidate_majors
        if not self.alternatives:
            object.__setattr__(self, "alternatives", list(majors))
        unknown = [a for a in self.alternatives if a not in majors]
        if unknown:
            raise ValueError(f"alternatives: {unknown} are not among candidate_majors {majors}")
        names = self.criteria_names
        if self.selected_criteria:
            _check_criteria(self.selected_criteria, self.user_input.settings)
        if self.comparison_matrix:
            _prefixed("comparison_matrix", check_comparison_matrix, self.comparison_matrix, names)
        if self.criteria_weights:
            _prefixed("criteria_weights", check_weights, self.criteria_weights, names)
        if self.decision_matrix:
            _prefixed(
                "decision_matrix",
                check_decision_matrix,
                self.decision_matrix,
                self.alternatives,
                names,
            )
        return self

    def round1_output(self) -> Round1Output:
        """The round 1 file content (validated)."""
        return Round1Output.model_validate(self.model_dump(include=_fields(Round1Output)))

    def round2_output(self) -> Round2Output:
        """The round 2 file content (validated, including CR <= cr_threshold)."""
        return Round2Output.model_validate(self.model_dump(include=_fields(Round2Output)))

    def round3_output(self) -> Round3Output:
        """The round 3 file content (validated)."""
        return Round3Output.model_validate(self.model_dump(include=_fields(Round3Output)))


def _fields(model: type[SeedModel]) -> set[str]:
    return set(model.model_fields)


def round_output_filename(round_number: int, session_id: str) -> str:
    """``round{n}_test_{session_id}.json``, the name the seed gives each round's output file."""
    if round_number not in (1, 2, 3):
        raise ValueError(f"round_number must be 1, 2 or 3, got {round_number}")
    return f"round{round_number}_test_{session_id}.json"


class Round1Output(SeedModel):
    """``output/round1_test_{session_id}.json``."""

    user_input: UserInput
    agent_personas: list[AgentPersona]
    round1_debate_turns: FullDebate
    selected_criteria: list[Criterion]

    @model_validator(mode="after")
    def _round1(self) -> Round1Output:
        _check_criteria(self.selected_criteria, self.user_input.settings)
        return self


class Round2Output(SeedModel):
    """``output/round2_test_{session_id}.json``."""

    user_input: UserInput
    agent_personas: list[AgentPersona]
    selected_criteria: list[Criterion]
    round2_debate_turns: FullDebate
    comparison_matrix: ComparisonMatrix
    criteria_weights: dict[str, float]
    consistency_ratio: float = Field(ge=0.0)
    eigenvalue_max: float
    round2_director_decision: Round2DirectorDecision

    @model_validator(mode="after")
    def _round2(self) -> Round2Output:
        names = _check_criteria(self.selected_criteria, self.user_input.settings)
        _prefixed("comparison_matrix", check_comparison_matrix, self.comparison_matrix, names)
        _prefixed("criteria_weights", check_weights, self.criteria_weights, names)
        threshold = self.user_input.settings.cr_threshold
        if self.consistency_ratio > threshold:
            raise ValueError(
                f"consistency_ratio: must be <= cr_threshold {threshold}, "
                f"got {self.consistency_ratio}"
            )
        return self


class Round3Output(SeedModel):
    """``output/round3_test_{session_id}.json``."""

    user_input: UserInput
    agent_personas: list[AgentPersona]
    selected_criteria: list[Criterion]
    criteria_weights: dict[str, float]
    round3_debate_turns: FullDebate
    decision_matrix: DecisionMatrix
    round3_director_decision: Round3DirectorDecision

    @model_validator(mode="after")
    def _round3(self) -> Round3Output:
        names = _check_criteria(self.selected_criteria, self.user_input.settings)
        _prefixed("criteria_weights", check_weights, self.criteria_weights, names)
        majors = self.user_input.candidate_majors
        _prefixed("decision_matrix", check_decision_matrix, self.decision_matrix, majors, names)
        return self
