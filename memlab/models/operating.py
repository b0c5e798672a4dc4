"""Seed 000, DD-01: the hybrid system's operating-memory objects.

Both objects live as one JSON string each in operating memory (Redis or the in-process KV);
:attr:`storage_key` gives the key. Stores call :meth:`touch` before every save so that
``last_updated`` says when the object was last written.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from memlab.models._common import NonBlankStr, SeedModel, UtcDatetime, new_id, utc_now

__all__ = ["EventStatus", "PersonalMemoryState", "SharedWorkspaceState"]


class EventStatus(StrEnum):
    """Status of a collaborative event; resolved and cancelled are terminal (they trigger archiving)."""

    ACTIVE = "active"
    RESOLVED = "resolved"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self is not EventStatus.ACTIVE


class PersonalMemoryState(SeedModel):
    """The private, transient state of one agent (key ``personal_state:{agent_id}``)."""

    agent_id: NonBlankStr = Field(description="identifier of the agent that owns this state")
    current_task_id: str | None = Field(None, description="high-level task in focus")
    scratchpad: dict[str, Any] = Field(
        default_factory=dict, description="volatile key-value thinking space"
    )
    promotion_candidates: dict[str, Any] = Field(
        default_factory=dict, description="facts staged for the ConsolidationAgent"
    )
    last_updated: UtcDatetime = Field(
        default_factory=utc_now, description="when this state was last written (auto-set)"
    )

    @property
    def storage_key(self) -> str:
        return f"personal_state:{self.agent_id}"

    def touch(self) -> PersonalMemoryState:
        """Set ``last_updated`` to now (stores call this on every save); returns self."""
        self.last_updated = utc_now()
        return self


class SharedWorkspaceState(SeedModel):
    """The shared "negotiation table" of one multi-agent event (key ``shared_state:{event_id}``)."""

    event_id: NonBlankStr = Field(default_factory=new_id, description="unique event id (auto-set)")
    status: EventStatus = Field(description="active, resolved or cancelled")
    shared_data: dict[str, Any] = Field(default_factory=dict, description="the shared whiteboard")
    participating_agents: list[str] = Field(
        default_factory=list, description="agent_ids that contributed to this event"
    )
    created_at: UtcDatetime = Field(default_factory=utc_now, description="creation time (auto-set)")
    last_updated: UtcDatetime = Field(
        default_factory=utc_now, description="last modification time (auto-set)"
    )

    @property
    def storage_key(self) -> str:
        return f"shared_state:{self.event_id}"

    @property
    def is_terminal(self) -> bool:
        """True once the event is resolved or cancelled (time to archive it)."""
        return self.status.is_terminal

    def touch(self) -> SharedWorkspaceState:
        """Set ``last_updated`` to now (stores call this on every save); returns self."""
        self.last_updated = utc_now()
        return self

    def add_participant(self, agent_id: str) -> None:
        """Record that ``agent_id`` contributed, once."""
        if agent_id not in self.participating_agents:
            self.participating_agents = [*self.participating_agents, agent_id]
