"""episodic_summary (seed 002 EpisodicSummarizationAgent): episodic + periodic LLM compression.

Every ``summarize_every`` new episodes, the old unconsolidated episodes (all but the newest
``keep_recent``) are compressed in batches into summaries (ConsolidatedMemoryStore). No replay
priority, no schemas, no decay. recall = recent episodes + relevant raw episodes not yet
summarised + relevant summaries.
"""

from __future__ import annotations

from pydantic import Field

from memlab.errors import ConfigError
from memlab.memory.base import MemoryContext, MemoryItem, MemorySize
from memlab.memory.episodic import EpisodicConfig, EpisodicMemory, recallable_texts
from memlab.models.sleep import CycleStats, Episode
from memlab.sleep.cycle import CycleConfig, SleepCycle
from memlab.stores.consolidated import ConsolidatedMemoryStore


class EpisodicSummaryConfig(EpisodicConfig):
    """Settings of the episodic_summary condition."""

    summarize_every: int = Field(20, ge=0, description="new episodes between compressions (0: never)")
    keep_recent: int = Field(5, ge=0, description="newest episodes left raw at each compression")
    batch_size: int = Field(10, ge=1, description="episodes per compression call")
    relevant_summaries: int = Field(3, ge=0, description="summaries recalled by similarity")
    recall_summarised_episodes: bool = Field(
        False, description="also recall raw episodes already covered by a summary")
    compress_max_tokens: int = Field(256, ge=16, description="reply limit of one compression")
    compress_max_retries: int = Field(1, ge=0, description="complete_json re-asks on bad JSON")


class EpisodicSummaryMemory(EpisodicMemory):
    """Raw recent episodes, LLM summaries of older ones."""

    key = "episodic_summary"
    uses_memory_prompts = True  # the compressor's prompt
    Config = EpisodicSummaryConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.llm is None:
            raise ConfigError(f"{self.key}: llm is required (it compresses episodes)")
        self.consolidated = self.open_store(ConsolidatedMemoryStore)

    def should_sleep(self) -> bool:
        every = self.config.summarize_every
        return bool(every) and self.new_episodes >= every

    def sleep(self) -> CycleStats:
        """Compress the old unconsolidated episodes; failed batches stay raw (see failures)."""
        episodes = self.episodes.get_unconsolidated()
        keep = self.config.keep_recent
        old = episodes[:-keep] if keep else episodes
        cycle = SleepCycle(self.episodes, self.consolidated, None, self.llm, config=CycleConfig(
            batch_size=self.config.batch_size, compress_max_tokens=self.config.compress_max_tokens,
            compress_max_retries=self.config.compress_max_retries))
        self.new_episodes = 0
        return cycle.compress_only(old)

    def keep_episode(self, episode: Episode) -> bool:
        return self.config.recall_summarised_episodes or not episode.consolidated

    def summary_items(self, query: str, k: int, kind: str = "summary") -> list[MemoryItem]:
        if not k or not self.consolidated.count():
            return []
        return [MemoryItem(id=m.id, kind=kind, text=m.summary, score=sim,
                           metadata={"key_concepts": m.key_concepts,
                                     "turn_numbers": self.episode_turns(m.source_episode_ids)})
                for m, sim in self.consolidated.get_relevant_scored(query, k=k)]

    def recall(self, query: str) -> MemoryContext:
        items, history = self.recall_episodes(query)
        items += self.summary_items(query, self.config.relevant_summaries)
        return MemoryContext(items=items, history=history)

    def size(self) -> MemorySize:
        """Episodes plus summaries (each summary's text as recall shows it). A summarised
        episode stays stored and counted: the recent history still sends it, and relevant
        search does with ``recall_summarised_episodes``."""
        summaries = recallable_texts(self.consolidated, lambda memory: memory.summary)
        return MemorySize.of(self.episode_texts() + summaries)

    def close(self) -> None:
        self.consolidated.close()
        super().close()
