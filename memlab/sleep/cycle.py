"""SleepCycle (seed 002): replay -> compression -> schema formation -> decay.

A cycle never crashes and never loses an episode: each phase (and each compression batch) that
fails is recorded on ``CycleStats.failures``; episodes whose batch failed stay unconsolidated
and are replayed next cycle; decay only flags consolidated episodes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from memlab.models.sleep import CycleStats, Episode, SleepPhase
from memlab.sleep.compress import MemoryCompressor
from memlab.sleep.decay import decay_episodes
from memlab.sleep.induce import InductionConfig, induce_schemas
from memlab.sleep.replay import ReplayWeights, conversation_now, select_episodes_for_replay

if TYPE_CHECKING:
    from memlab.embed.base import Embedder
    from memlab.llm.base import LLMClient
    from memlab.stores.consolidated import ConsolidatedMemoryStore
    from memlab.stores.episodic import EpisodicMemoryStore
    from memlab.stores.schemas import SchemaStore


class CycleConfig(BaseModel):
    """Every weight and threshold of one sleep cycle."""

    weights: ReplayWeights = Field(default_factory=ReplayWeights,
                                   description="replay priority weights (phases 1 and 4)")
    max_replay: int = Field(100, ge=1, description="episodes replayed (and compressed) per cycle")
    min_replay_priority: float = Field(0.0, ge=0, description="episodes below wait for a later cycle")
    batch_size: int = Field(10, ge=1, description="episodes per compression call (1 = single)")
    compress_max_tokens: int = Field(256, ge=16, description="reply limit of one compression")
    compress_max_retries: int = Field(1, ge=0, description="complete_json re-asks on bad JSON")
    schema_formation: bool = Field(True, description="run phase 3")
    induction: InductionConfig = Field(default_factory=InductionConfig)
    decay: bool = Field(True, description="run phase 4")
    forget_threshold: float = Field(
        0.4, ge=0, description="consolidated episodes with replay priority below are forgotten")
    min_age_hours: float = Field(0.0, ge=0, description="younger episodes are never forgotten")


class _Metered:
    """Counts the model calls and tokens of a cycle (delegates everything else)."""

    def __init__(self, llm: LLMClient):
        self.llm, self.calls, self.prompt_tokens, self.completion_tokens = llm, 0, 0, 0

    def complete(self, messages: Any, **params: Any):
        completion = self.llm.complete(messages, **params)
        self.calls += 0 if completion.cached else 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        return completion

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


class SleepCycle:
    """One consolidation cycle over a scope's three stores."""

    def __init__(self, episodic: EpisodicMemoryStore, consolidated: ConsolidatedMemoryStore,
                 schemas: SchemaStore | None, llm: LLMClient, *,
                 embedder: Embedder | None = None, config: CycleConfig | None = None):
        self.episodic, self.consolidated, self.schemas = episodic, consolidated, schemas
        self.llm, self.embedder = llm, embedder
        self.config = config or CycleConfig()

    @staticmethod
    @contextmanager
    def _phase(stats: CycleStats, phase: SleepPhase) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        except Exception as exc:  # a phase failing must not end the cycle
            stats.failures = [*stats.failures, f"{phase.value}: {type(exc).__name__}: {exc}"]
        finally:
            stats.phase_durations_s = {**stats.phase_durations_s,
                                       phase: time.perf_counter() - start}

    def run(self, now: datetime | None = None) -> CycleStats:
        """Run the four phases and return their statistics."""
        stats, meter = CycleStats(), _Metered(self.llm)
        selected: list[Episode] = []
        with self._phase(stats, SleepPhase.REPLAY):
            selected = self.replay(stats, now)
        with self._phase(stats, SleepPhase.COMPRESSION):
            self.compress(selected, stats, meter)
        if self.config.schema_formation and self.schemas is not None:
            with self._phase(stats, SleepPhase.SCHEMA_FORMATION):
                self.form_schemas(stats, meter)
        if self.config.decay:
            with self._phase(stats, SleepPhase.DECAY):
                forgotten = decay_episodes(self.episodic, threshold=self.config.forget_threshold,
                                           weights=self.config.weights, now=now,
                                           min_age_hours=self.config.min_age_hours)
                stats.forgotten_episode_ids = forgotten
                stats.episodes_forgotten = len(forgotten)
        stats.llm_calls = meter.calls
        stats.prompt_tokens, stats.completion_tokens = meter.prompt_tokens, meter.completion_tokens
        stats.finished_at = datetime.now(UTC)
        return stats

    def compress_only(self, episodes: list[Episode]) -> CycleStats:
        """Phase 2 alone on ``episodes`` (episodic_summary: no replay priority, schemas or decay)."""
        stats, meter = CycleStats(episodes_considered=len(episodes)), _Metered(self.llm)
        with self._phase(stats, SleepPhase.COMPRESSION):
            self.compress(episodes, stats, meter)
        stats.llm_calls = meter.calls
        stats.prompt_tokens, stats.completion_tokens = meter.prompt_tokens, meter.completion_tokens
        stats.finished_at = datetime.now(UTC)
        return stats

    def replay(self, stats: CycleStats, now: datetime | None = None) -> list[Episode]:
        """Phase 1: pick the unconsolidated episodes to replay and count the access."""
        episodes = self.episodic.get_unconsolidated()
        stats.episodes_considered = len(episodes)
        selected = select_episodes_for_replay(
            episodes, max_episodes=self.config.max_replay,
            min_priority=self.config.min_replay_priority,
            now=now or conversation_now(episodes), weights=self.config.weights)
        if selected:
            self.episodic.mark_accessed([ep.id for ep in selected])
        stats.episodes_replayed = len(selected)
        return selected

    def compress(self, episodes: list[Episode], stats: CycleStats, llm: Any) -> None:
        """Phase 2: compress batches (in time order); a failed batch stays unconsolidated."""
        compressor = MemoryCompressor(llm, self.consolidated,
                                      max_tokens=self.config.compress_max_tokens,
                                      max_retries=self.config.compress_max_retries)
        ordered = sorted(episodes, key=lambda ep: ep.timestamp)
        size = self.config.batch_size
        for start in range(0, len(ordered), size):
            batch = ordered[start:start + size]
            try:
                memory_id = compressor.consolidate(batch)
                self.episodic.mark_consolidated([ep.id for ep in batch])
            except Exception as exc:  # malformed output, model or store failure: keep episodes
                stats.failures = [*stats.failures, f"compression: batch of {len(batch)} episodes "
                                  f"kept unconsolidated: {type(exc).__name__}: {exc}"]
                continue
            stats.created_memory_ids = [*stats.created_memory_ids, memory_id]
            stats.memories_created += 1

    def form_schemas(self, stats: CycleStats, llm: Any) -> None:
        """Phase 3: induce schemas from groups of related consolidated memories."""
        result = induce_schemas(self.consolidated.all(), llm, self.schemas, self.embedder,
                                config=self.config.induction)
        stats.created_schema_ids = result.created
        stats.schemas_created = len(result.created)
        stats.schemas_updated = len(result.updated)
        stats.failures = [*stats.failures, *result.failures]
