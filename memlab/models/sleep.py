"""Seed 002: the sleep-inspired memory's objects and the statistics of one sleep cycle.

Episodes live in the EpisodicMemoryStore, ConsolidatedMemory in the ConsolidatedMemoryStore,
Schema in the SchemaStore; CompressionResult is what the LLM returns in phase 2; CycleStats is
what ``SleepCycle.run`` returns (the seed's ``cycle_stats``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from memlab.models._common import NonBlankStr, SeedModel, UtcDatetime, new_id, utc_now

__all__ = [
    "CompressionResult",
    "ConsolidatedMemory",
    "CycleStats",
    "Episode",
    "Schema",
    "SleepPhase",
]


class SleepPhase(StrEnum):
    """The four phases of a sleep cycle, in order."""

    REPLAY = "replay"
    COMPRESSION = "compression"
    SCHEMA_FORMATION = "schema_formation"
    DECAY = "decay"


class Episode(SeedModel):
    """One stored interaction (user input + response) with its replay metadata."""

    id: str = Field(default_factory=new_id, description="UUID")
    timestamp: UtcDatetime = Field(default_factory=utc_now)
    content: NonBlankStr = Field(description="the interaction text")
    context: dict[str, Any] = Field(default_factory=dict, description="persona, session, ...")
    importance: float = Field(0.5, ge=0.0, le=1.0, description="importance score 0-1")
    novelty: float = Field(0.5, ge=0.0, le=1.0, description="novelty score 0-1")
    access_count: int = Field(0, ge=0, description="times replayed or recalled")
    tags: list[str] = Field(default_factory=list)
    consolidated: bool = Field(False, description="compressed into a ConsolidatedMemory")
    forgotten: bool = Field(False, description="marked forgotten by decay (never deleted)")
    last_accessed: UtcDatetime | None = None

    def mark_accessed(self) -> None:
        """Count one more access (replay or recall)."""
        self.access_count += 1
        self.last_accessed = utc_now()


class ConsolidatedMemory(SeedModel):
    """A compressed summary of one or more episodes."""

    id: str = Field(default_factory=new_id, description="UUID")
    timestamp: UtcDatetime = Field(default_factory=utc_now)
    summary: NonBlankStr
    source_episode_ids: list[str] = Field(default_factory=list)
    key_concepts: list[str] = Field(default_factory=list)
    importance: float = Field(0.5, ge=0.0, le=1.0, description="importance score 0-1")
    access_count: int = Field(0, ge=0)
    themes: list[str] = Field(default_factory=list, description="from the CompressionResult")
    relationships: list[str] = Field(default_factory=list, description="from the CompressionResult")
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="compression confidence 0-1")


class Schema(SeedModel):
    """A pattern induced from a group of related consolidated memories."""

    id: str = Field(default_factory=new_id, description="UUID")
    name: NonBlankStr
    description: str
    core_concepts: list[str] = Field(default_factory=list)
    related_memory_ids: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    confidence: float = Field(0.5, ge=0.0, le=1.0, description="confidence 0-1")
    created_at: UtcDatetime = Field(default_factory=utc_now)
    updated_at: UtcDatetime = Field(default_factory=utc_now)


class CompressionResult(SeedModel):
    """What MemoryCompressor parses from the LLM: summary, concepts, themes, relationships."""

    # Parsed from LLM output: tolerate extra keys a model adds, validate the ones we need.
    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    summary: NonBlankStr
    key_concepts: list[str] = Field(default_factory=list)
    themes: list[str] = Field(default_factory=list)
    relationships: list[str] = Field(default_factory=list)
    confidence: float = Field(0.5, ge=0.0, le=1.0, description="confidence 0-1")


class CycleStats(SeedModel):
    """Statistics of one sleep cycle (the seed's ``cycle_stats``)."""

    cycle_id: str = Field(default_factory=new_id)
    started_at: UtcDatetime = Field(default_factory=utc_now)
    finished_at: UtcDatetime | None = None
    episodes_considered: int = Field(0, ge=0, description="unconsolidated episodes at start")
    episodes_replayed: int = Field(0, ge=0)
    memories_created: int = Field(0, ge=0)
    schemas_created: int = Field(0, ge=0)
    schemas_updated: int = Field(0, ge=0)
    episodes_forgotten: int = Field(0, ge=0)
    created_memory_ids: list[str] = Field(default_factory=list)
    created_schema_ids: list[str] = Field(default_factory=list)
    forgotten_episode_ids: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list, description="one message per failed step")
    phase_durations_s: dict[SleepPhase, float] = Field(default_factory=dict)
    llm_calls: int = Field(0, ge=0)
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)

    @field_validator("phase_durations_s")
    @classmethod
    def _durations_non_negative(cls, value: dict[SleepPhase, float]) -> dict[SleepPhase, float]:
        for phase, seconds in value.items():
            if seconds < 0:
                raise ValueError(f"duration of phase {phase.value!r} must be >= 0, got {seconds}")
        return value

    @property
    def duration_s(self) -> float:
        """Total seconds over all phases."""
        return float(sum(self.phase_durations_s.values()))

    @property
    def ok(self) -> bool:
        """True when no step failed."""
        return not self.failures
