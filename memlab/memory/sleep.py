"""sleep (seed 002 SleepConsolidatedAgent): episodic memory + the full four-phase sleep cycle.

recall (seed 002 sequence diagram) = get_recent(5) + relevant episodes (forgotten ones
excluded) + relevant consolidated memories + schemas related to their concepts. Consolidated
and schema items carry ``turn_numbers`` (the turns of their source episodes) for provenance. Auto-sleep
after ``auto_sleep_episodes`` new episodes.
"""

from __future__ import annotations

import re

from pydantic import Field

from memlab.errors import ConfigError
from memlab.memory.base import MemoryContext, MemoryItem, MemorySize
from memlab.memory.episodic import EpisodicConfig, EpisodicMemory, recallable_texts
from memlab.models.sleep import CycleStats, Schema
from memlab.sleep.cycle import CycleConfig, SleepCycle
from memlab.stores.consolidated import ConsolidatedMemoryStore
from memlab.stores.schemas import SchemaStore


class SleepConfig(EpisodicConfig):
    """Settings of the sleep condition (the cycle's own are in ``cycle``)."""

    estimate_novelty: bool = Field(True, description="novelty feeds the replay priority")
    count_recall_access: bool = Field(True, description="recall feeds the access bonus")
    auto_sleep_episodes: int = Field(20, ge=0, description="new episodes that trigger a sleep "
                                     "cycle (0: only explicit sleep)")
    relevant_memories: int = Field(3, ge=0, description="consolidated memories recalled")
    related_schemas: int = Field(2, ge=0, description="schemas recalled")
    schema_min_score: float = Field(0.2, ge=0, le=1, description="schemas scoring below are left out")
    cycle: CycleConfig = Field(default_factory=CycleConfig)


class SleepMemory(EpisodicMemory):
    """The sleep-inspired memory: episodes, consolidated memories and schemas."""

    key = "sleep"
    uses_memory_prompts = True  # the compressor's and schema induction's prompts
    Config = SleepConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.llm is None:
            raise ConfigError("sleep: llm is required (it compresses episodes and names schemas)")
        self.consolidated = self.open_store(ConsolidatedMemoryStore)
        self.schemas = self.open_store(SchemaStore)
        self.cycle = SleepCycle(self.episodes, self.consolidated, self.schemas, self.llm,
                                embedder=self.embedder, config=self.config.cycle)

    def should_sleep(self) -> bool:
        every = self.config.auto_sleep_episodes
        return bool(every) and self.new_episodes >= every

    def sleep(self) -> CycleStats:
        self.new_episodes = 0
        return self.cycle.run()

    def recall(self, query: str) -> MemoryContext:
        items, history = self.recall_episodes(query)
        concepts: list[str] = []
        if self.config.relevant_memories and self.consolidated.count():
            for memory, sim in self.consolidated.get_relevant_scored(
                    query, k=self.config.relevant_memories):
                turns = self.episode_turns(memory.source_episode_ids)
                items.append(MemoryItem(id=memory.id, kind="consolidated", text=memory.summary,
                                        score=sim, metadata={"key_concepts": memory.key_concepts,
                                                             "turn_numbers": turns}))
                concepts += memory.key_concepts
            if self.config.count_recall_access:
                self.consolidated.mark_accessed([i.id for i in items if i.kind == "consolidated"])
        items += self.schema_items(query, concepts)
        return MemoryContext(items=items, history=history)

    def schema_items(self, query: str, concepts: list[str]) -> list[MemoryItem]:
        """Schemas related to the recalled concepts plus the query's own words."""
        k = self.config.related_schemas
        if not k or not self.schemas.count():
            return []
        wanted = list(dict.fromkeys(concepts + re.findall(r"[a-z]{4,}", query.lower())))
        found = self.schemas.find_related_scored(wanted, k=k,
                                                 min_score=self.config.schema_min_score)
        return [MemoryItem(id=s.id, kind="schema", text=schema_text(s),
                           score=score, metadata={"core_concepts": s.core_concepts,
                                                  "turn_numbers": self.schema_turns(s)})
                for s, score in found]

    def schema_turns(self, schema: Schema) -> list[int]:
        """Turn numbers behind a schema: the union over its related consolidated memories."""
        episode_ids = []
        for memory_id in schema.related_memory_ids:
            memory = self.consolidated.get(memory_id)
            episode_ids += memory.source_episode_ids if memory is not None else []
        return self.episode_turns(episode_ids)

    def size(self) -> MemorySize:
        """What recall can return: the episodes not forgotten (decay flags them, never deletes
        them), the consolidated memories and the schemas, each with the text recall shows."""
        return MemorySize.of(self.episode_texts()
                             + recallable_texts(self.consolidated, lambda memory: memory.summary)
                             + recallable_texts(self.schemas, schema_text))

    def close(self) -> None:
        self.consolidated.close()
        self.schemas.close()
        super().close()


def schema_text(schema: Schema) -> str:
    """A schema as a recalled item shows it: ``name: description``."""
    return f"{schema.name}: {schema.description}"
