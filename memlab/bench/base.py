"""The suite contract: a suite is a scripted conversation plus the rules that score it.

A suite yields SuiteEvents in conversation order. The runner sends filler through
``Agent.observe`` (no model call) and needles and questions through ``Agent.interact``; it then
hands the replies back to ``Suite.score``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

EventKind = Literal["filler", "needle", "question"]


class SuiteEvent(BaseModel):
    """One user turn of a suite's conversation.

    Attributes:
        index: position in the conversation (0-based, unique, increasing).
        kind: filler (observed, not answered), needle (answered and stored), question (answered).
        reply: for filler, the scripted assistant line stored with it.
        store: whether the exchange is stored as memory (questions: False unless the suite says).
        options: answer options of a multiple-choice question; ``answer_index`` the correct one.
        timestamp: the simulated clock at this turn.
        tokens: the span position, in the model's tokens, of the start of this turn.
    """

    index: int = Field(ge=0)
    kind: EventKind
    text: str
    reply: str | None = None
    test_id: str | None = None
    test_type: str | None = None
    session_id: str | None = None
    timestamp: datetime | None = None
    store: bool = True
    options: list[str] | None = None
    answer_index: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Response(BaseModel):
    """What the agent did with one event (what scorers and metrics read)."""

    index: int
    reply: str = ""
    choice: int | None = Field(None, description="option picked by log-probability scoring")
    memory_ids: list[str] = Field(default_factory=list)
    error: str | None = None


class TestScore(BaseModel):
    """The score of one test (GoodAI) or one question (PersonaMem), 0..max_score."""

    __test__ = False  # not a pytest class

    test_id: str
    test_type: str
    score: float = Field(ge=0)
    max_score: float = Field(gt=0)
    reasoning: list[str] = Field(default_factory=list)
    judge: Literal["rule", "llm"] = "rule"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return self.score / self.max_score


class Suite(ABC):
    """A benchmark suite (LTM or Persona), generated or loaded."""

    name: str = "suite"

    @abstractmethod
    def events(self) -> list[SuiteEvent]:
        """The conversation, in order (deterministic for a given seed)."""

    @abstractmethod
    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        """Score every test from the responses, keyed by event index."""

    def describe(self) -> dict[str, Any]:
        """Parameters that identify this suite instance (written to the run manifest)."""
        return {"name": self.name}
