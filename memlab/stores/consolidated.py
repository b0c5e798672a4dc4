"""ConsolidatedMemoryStore (seed 002): compressed summaries of episodes, from sleep phase 2."""

from __future__ import annotations

from memlab.models.sleep import ConsolidatedMemory
from memlab.stores.records import ScopedRecordStore


class ConsolidatedMemoryStore(ScopedRecordStore[ConsolidatedMemory]):
    """Consolidated memories of one scope, in the SQL and vector layers, searchable by embedding."""

    table = "consolidated_memories"
    model = ConsolidatedMemory

    def text_of(self, record: ConsolidatedMemory) -> str:
        concepts = ", ".join(record.key_concepts)
        return f"{record.summary}\n{concepts}" if concepts else record.summary

    def add_memory(
        self,
        summary: str,
        source_episode_ids: list[str] | None = None,
        key_concepts: list[str] | None = None,
        importance: float = 0.5,
        themes: list[str] | None = None,
        relationships: list[str] | None = None,
        confidence: float | None = None,
    ) -> str:
        """Store one consolidated memory; returns its id."""
        memory = ConsolidatedMemory(
            summary=summary,
            source_episode_ids=source_episode_ids or [],
            key_concepts=key_concepts or [],
            importance=importance,
            themes=themes or [],
            relationships=relationships or [],
            confidence=confidence,
        )
        return self.add(memory)

    def add(self, memory: ConsolidatedMemory) -> str:
        """Store a ready-made ConsolidatedMemory (its id must be new in this scope)."""
        return self._insert([memory])[0]

    def get_relevant(self, query: str, k: int = 5) -> list[ConsolidatedMemory]:
        """The ``k`` memories most similar to ``query``, best first."""
        return [m for m, _ in self.search(query, k)]

    def get_relevant_scored(self, query: str, k: int = 5) -> list[tuple[ConsolidatedMemory, float]]:
        return self.search(query, k)

    def mark_accessed(self, ids: list[str]) -> list[str]:
        """Count one access for each id; returns the ids found."""

        def bump(memory: ConsolidatedMemory) -> None:
            memory.access_count += 1

        return self._modify(ids, bump)

    def for_episode(self, episode_id: str) -> list[ConsolidatedMemory]:
        """Memories that were built from ``episode_id``."""
        return [m for m in self.all() if episode_id in m.source_episode_ids]
