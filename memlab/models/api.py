"""The agent server's request and response bodies (HTTP JSON), besides the seed's
``BenchmarkTurnPayload`` (``memlab.models.turns``).

Every text field must be valid UTF-8 (a lone surrogate is refused, so nothing unstorable reaches
a store); timestamps are read as UTC (a naive one is UTC) and must lie in 1900..2999.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memlab.models._common import UtcDatetime
from memlab.models.turns import BenchmarkTurnPayload

__all__ = ["ErrorReply", "Health", "MemoryView", "ObserveReply", "ObserveRequest",
           "RecalledItem", "SeedTurnRequest", "SessionCreate", "SessionInfo", "SleepReply",
           "StoredTurn", "TurnRequest"]

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"must be valid UTF-8 text ({exc.reason} at character {exc.start})"
                         ) from None
    return value


def _in_range(value: datetime) -> datetime:
    if not EARLIEST <= value < LATEST:
        raise ValueError("must lie between 1900-01-01 and 2999-12-31")
    return value


Text = Annotated[str, AfterValidator(_utf8)]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S"),
                 AfterValidator(_utf8)]
Timestamp = Annotated[UtcDatetime, AfterValidator(_in_range)]
MaxTokens = Annotated[int, Field(ge=1, le=8192, description="reply length limit in tokens")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionCreate(_Body):
    """``POST /sessions``: a new session with its own, empty memory."""

    condition: str | None = Field(None, description="memory condition (default: the server's)")
    user_id: Name = Field("user", description="whose memory this is")
    agent_id: Name | None = Field(None, description="the agent holding it (default: condition)")
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="the condition's settings (memlab conditions)")
    max_tokens: MaxTokens | None = Field(None, description="default reply limit of its turns")


class SessionInfo(BaseModel):
    """A session as the server holds it."""

    id: str
    condition: str
    user_id: str
    agent_id: str
    options: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int | None = None
    created_at: datetime
    turns: int = Field(0, description="exchanges stored so far")


class TurnRequest(_Body):
    """``POST /sessions/{id}/turn``: answer ``message`` with memory, then store the exchange."""

    message: Text
    history: Text | None = Field(None, description="accepted for GoodAI/seed clients; the "
                                 "session's memory, not this text, builds the prompt")
    timestamp: Timestamp | None = Field(None, description="when the message was sent (the "
                                        "client's clock, e.g. GoodAI's simulated time)")
    max_tokens: MaxTokens | None = None


class SeedTurnRequest(BenchmarkTurnPayload):
    """``POST /turn``: the seed's BenchmarkTurnPayload, its text held to the server's rule (valid
    UTF-8), as ``POST /sessions/{id}/turn`` holds it."""

    @field_validator("history", "message")
    @classmethod
    def _valid_utf8(cls, value: str) -> str:
        return _utf8(value)


class ObserveRequest(_Body):
    """``POST /sessions/{id}/observe``: store an exchange without generating a reply."""

    user: Text
    assistant: Text
    timestamp: Timestamp | None = None


class ObserveReply(BaseModel):
    session_id: str
    turn_number: int
    slept: bool = False
    cycle_stats: dict[str, Any] | None = None


class SleepReply(BaseModel):
    session_id: str
    cycle_stats: dict[str, Any] | None = Field(
        None, description="the cycle's statistics; null: this condition has no sleep cycle")


class StoredTurn(BaseModel):
    """One acknowledged step of a session, as its journal holds it."""

    kind: Literal["turn", "observe", "sleep"]
    turn_number: int
    user: str = ""
    assistant: str = ""
    timestamp: datetime


class RecalledItem(BaseModel):
    kind: str
    id: str
    text: str
    score: float | None = None


class MemoryView(BaseModel):
    """``GET /sessions/{id}/memory``: what the session stored, and what it recalls for a query."""

    session: SessionInfo
    stored: list[StoredTurn]
    query: str | None = None
    recalled: list[RecalledItem] = Field(default_factory=list)


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    condition: str
    sessions: int
    auth: bool


class ErrorReply(BaseModel):
    """Every error: one line naming the field or the rule."""

    error: str
