"""What the debate asks the LLM to return at each turn, as pydantic models for ``complete_json``.

Models that must know the round's criteria or majors are built per round (``*_model(...)``) so
that a reply naming the wrong pairs or missing a score fails validation and is re-asked with
the error. The seed's own objects (Criterion, the director decisions) come from
:mod:`memlab.models.decision`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from memlab.models.decision import (
    ComparisonMatrix,
    Criterion,
    DecisionMatrix,
    Round2DirectorDecision,
    Round3DirectorDecision,
    check_comparison_matrix,
    check_decision_matrix,
)

PAIR_SEPARATOR = " vs "  # the seed's comparison key separator


class TurnReply(BaseModel):
    """A critique: just the argument."""

    content: str = Field(min_length=1, description="your argument, 1-4 sentences")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be empty or whitespace only")
        return value.strip()


class CriterionDraft(BaseModel):
    name: str = Field(min_length=1, max_length=60, description="short criterion name")
    description: str = ""
    type: Literal["benefit", "cost"] = "benefit"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("name must not be empty or whitespace only")
        if PAIR_SEPARATOR in value:
            raise ValueError(f"name must not contain {PAIR_SEPARATOR!r} (it separates pair keys)")
        return value.strip()


class CriteriaProposal(TurnReply):
    """Round 1 proposal or defense: the criteria this agent argues for."""

    criteria: list[CriterionDraft] = Field(min_length=1, max_length=10)


class SelectedCriterion(CriterionDraft):
    source_agent: str = Field("", description="the advisor who proposed it")
    reasoning: str = ""

    def to_criterion(self) -> Criterion:
        return Criterion(**self.model_dump())


class CriteriaDecision(TurnReply):
    """Round 1 director decision; the exact count is checked by :func:`criteria_decision_model`."""

    selected_criteria: list[SelectedCriterion]


def criteria_decision_model(max_criteria: int) -> type[CriteriaDecision]:
    """CriteriaDecision requiring exactly ``max_criteria`` uniquely named criteria."""

    class ExactCriteriaDecision(CriteriaDecision):
        @model_validator(mode="after")
        def _exactly(self) -> ExactCriteriaDecision:
            names = [c.name for c in self.selected_criteria]
            if len(names) != max_criteria:
                raise ValueError(f"selected_criteria must hold exactly {max_criteria} items, "
                                 f"got {len(names)}")
            if len(set(names)) != len(names):
                raise ValueError(f"selected_criteria names must be unique, got {names}")
            return self

    return ExactCriteriaDecision


class ComparisonProposal(TurnReply):
    comparison_matrix: ComparisonMatrix


class ComparisonDecision(ComparisonProposal):
    """Round 2 director decision: the final matrix, the reasoning and the spoken content."""

    reasoning: str = ""

    def to_decision(self) -> Round2DirectorDecision:
        return Round2DirectorDecision(comparison_matrix=self.comparison_matrix,
                                      reasoning=self.reasoning or self.content)


def comparison_model(criteria: list[str], director: bool = False) -> type[ComparisonProposal]:
    """A round 2 reply whose matrix must hold exactly the nC2 pairs of ``criteria``."""
    base = ComparisonDecision if director else ComparisonProposal

    class PairwiseReply(base):  # type: ignore[valid-type,misc]
        @model_validator(mode="after")
        def _pairs(self) -> PairwiseReply:
            check_comparison_matrix(self.comparison_matrix, criteria)
            return self

    return PairwiseReply


class DecisionProposal(TurnReply):
    decision_matrix: DecisionMatrix


class MatrixDecision(DecisionProposal):
    """Round 3 director decision: the final matrix, the reasoning and the spoken content."""

    reasoning: str = ""

    def to_decision(self) -> Round3DirectorDecision:
        return Round3DirectorDecision(decision_matrix=self.decision_matrix,
                                      reasoning=self.reasoning or self.content)


def decision_model(majors: list[str], criteria: list[str],
                   director: bool = False) -> type[DecisionProposal]:
    """A round 3 reply whose matrix must score every (major x criterion) combination."""
    base = MatrixDecision if director else DecisionProposal

    class ScoresReply(base):  # type: ignore[valid-type,misc]
        @model_validator(mode="after")
        def _complete(self) -> ScoresReply:
            check_decision_matrix(self.decision_matrix, majors, criteria)
            return self

    return ScoresReply
