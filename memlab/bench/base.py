"""The suite contract: a suite is a scripted conversation plus the rules that score it.

A suite yields SuiteEvents in conversation order. The runner sends filler through
``Agent.observe`` (no model call) and needles and questions through ``Agent.interact``; it then
hands the replies back to ``Suite.score``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from memlab.errors import ConfigError
from memlab.memory.base import format_time
from memlab.registry import Registry

EventKind = Literal["filler", "needle", "question"]


class Evidence(BaseModel):
    """One piece of evidence a question needs: an earlier event and the answer it carries.

    Attributes:
        index: the event (its ``SuiteEvent.index``) whose user turn holds the evidence.
        answer: the answer text this turn carries (a colour, a reason, a date); a memory derived
            from the turn counts as bringing the evidence only when this text survived into it.
            None when the turn carries no single answer string (then only the verbatim turn
            counts).
    """

    index: int = Field(ge=0)
    answer: str | None = None


class SuiteEvent(BaseModel):
    """One user turn of a suite's conversation.

    Attributes:
        index: position in the conversation (0-based, unique, increasing).
        kind: filler (observed, not answered), needle (answered and stored), question (answered).
        reply: for filler, the scripted assistant line stored with it.
        store: whether the exchange is stored as memory (questions: False unless the suite says).
        options: answer options of a multiple-choice question; ``answer_index`` the correct one.
        timestamp: the simulated clock at this turn.
        evidence: for a question, the earlier turns it needs (empty: the suite names none).
        prompt: the user message as the answering model sees it, when it differs from
            ``text`` (a published protocol's answer instruction around the question); ``text``
            stays what the memory is queried with and what is stored.
        user_id: whose conversation this turn belongs to, for a suite of several
            conversations (each its own memory scope; one user's events are contiguous);
            None: the suite's one user.
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
    evidence: list[Evidence] = Field(default_factory=list)
    prompt: str | None = None
    user_id: str | None = None
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
    score: float = Field(ge=0, allow_inf_nan=False)
    max_score: float = Field(gt=0, allow_inf_nan=False)
    reasoning: list[str] = Field(default_factory=list)
    judge: Literal["rule", "llm"] = "rule"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return self.score / self.max_score


class Suite(ABC):
    """A benchmark suite (LTM or Persona), generated or loaded.

    Attributes:
        name: the suite's key in ``SUITES``.
        options: the keyword arguments a RunSpec's ``suite_options`` may set.
        whole_history: a question may need any earlier turn, so full_context's window must hold
            the whole stored conversation in chat format (``memlab.lab.window_for_conversation``),
            not only the span. False (LTM): a test's evidence lies within its memory span.
        states_clock: the answer prompt starts the message with the present time ("It is now
            ..."); a suite whose published protocol states none (LoCoMo) sets it False.
    """

    name: str = "suite"
    options: ClassVar[tuple[str, ...]] = ()
    whole_history: ClassVar[bool] = False
    states_clock: bool = True

    @classmethod
    def build(cls, *, span: int, seed: int = 0, llm: Any = None,
              options: dict[str, Any] | None = None) -> Suite:
        """The suite a RunSpec names: ``span`` tokens in ``llm``'s tokenizer, seeded.

        Raises:
            ConfigError: an option this suite does not accept (the message lists those it does).
        """
        options = dict(options or {})
        unknown = sorted(set(options) - set(cls.options))
        if unknown:
            raise ConfigError(f"field 'suite_options': suite {cls.name!r} does not accept "
                              f"{unknown}; it accepts: {', '.join(cls.options) or 'none'}")
        return cls._build(span=span, seed=seed, llm=llm, **options)

    @classmethod
    def _build(cls, *, span: int, seed: int, llm: Any, **options: Any) -> Suite:
        return cls(span=span, seed=seed, count_tokens=getattr(llm, "count_tokens", None),
                   **options)

    @abstractmethod
    def events(self) -> list[SuiteEvent]:
        """The conversation, in order (deterministic for a given seed)."""

    @abstractmethod
    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        """Score every test from the responses, keyed by event index."""

    def describe(self) -> dict[str, Any]:
        """Parameters that identify this suite instance (written to the run manifest)."""
        return {"name": self.name}

    def format_time(self, moment: datetime) -> str:
        """A time as the answer prompt writes it (the runner gives this to the Agent):
        memlab's ``Mon 08 Jan 2024 19:00``; a published suite may write its data set's own."""
        return format_time(moment)

    @classmethod
    def info(cls, data: str) -> dict[str, Any]:
        """Counts of the published data file at ``data`` (``memlab suites info``).

        Raises:
            ConfigError: the suite is not read from a file, or the file is malformed.
        """
        raise ConfigError(f"suite {cls.name!r} is generated, not read from a data file: "
                          "'suites info' describes the suites read from a published file")


SUITES: Registry[Suite] = Registry("suite", group="memlab.suites", base=Suite)
SUITES.register("ltm", "memlab.bench.suites.ltm:LTMSuite",
                "GoodAI LTM Benchmark v3 style: tests interleaved in one conversation, "
                "generated (9 types) or loaded from GoodAI definitions")
SUITES.register("persona", "memlab.bench.suites.persona:PersonaSuite",
                "PersonaMem style: a persona's changing preferences over sessions, "
                "4-option questions of the 7 PersonaMem types")
SUITES.register("locomo", "memlab.bench.suites.locomo:LoCoMoSuite",
                "LoCoMo (published locomo10.json, option data=PATH): two people's multi-session "
                "chats, questions scored by F1, BLEU-1 and an LLM judge")
SUITES.register("longmemeval", "memlab.bench.suites.longmemeval:LongMemEvalSuite",
                "LongMemEval (published longmemeval_s/_m/_oracle JSON, option data=PATH): "
                "one question per chat history, LLM-judged per question type")
