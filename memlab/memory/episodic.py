"""episodic (seed 002 EpisodicOnlyAgent): every exchange an Episode in the EpisodicMemoryStore.

recall = ``get_recent(5)`` as chat history + the episodes most relevant to the query. The
episode helpers here (importance, novelty, episode <-> exchange) are shared by
episodic_summary and sleep, which extend this condition.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from memlab.memory._backends import (
    CachedEmbedder,
    RunFolder,
    open_record_backends,
    resolve_embedder,
)
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySize, MemorySystem
from memlab.models.sleep import Episode
from memlab.stores.episodic import EpisodicMemoryStore
from memlab.stores.records import ScopedRecordStore

S = TypeVar("S", bound=ScopedRecordStore)
R = TypeVar("R")

_PERSONAL = re.compile(r"\b(my|i am|i'm|i have|i've|i like|i love|i prefer|i hate|i live|i work|"
                       r"remember|important|never|always|allergic|birthday|name)\b", re.I)
_SPECIFIC = re.compile(r"\d|\b[A-Z][a-z]{2,}\b")


def estimate_importance(text: str) -> float:
    """Rule-based importance 0-1: personal statements and specifics (numbers, names) matter.

    0.2 base, +0.4 for a first-person fact or an explicit "remember", +0.2 for a number or a
    capitalised name after the first word, +0.1 for a long message (> 25 words).
    """
    score = 0.2
    if _PERSONAL.search(text):
        score += 0.4
    if _SPECIFIC.search(text.split(" ", 1)[1] if " " in text else ""):
        score += 0.2
    if len(text.split()) > 25:
        score += 0.1
    return min(score, 1.0)


def exchange_of(episode: Episode) -> Exchange:
    """The exchange an episode was stored from (metadata carries the episode id)."""
    ctx = episode.context
    return Exchange(user=ctx.get("user", episode.content), assistant=ctx.get("assistant", ""),
                    turn_number=ctx.get("turn_number", 0), timestamp=episode.timestamp,
                    session_id=ctx.get("session_id"), metadata={"id": episode.id})


def recallable_texts(store: ScopedRecordStore[R], text: Callable[[R], str]) -> list[str]:
    """``text`` of each record of ``store`` that recall may still return (the store's own
    ``recallable`` rule: a forgotten episode is kept but never recalled), in insertion order."""
    return [text(record) for record in store.all() if store.recallable(record)]


class EpisodicConfig(BaseModel):
    """Settings of the episodic condition."""

    recent_episodes: int = Field(5, ge=0, description="get_recent(n): latest episodes sent as history")
    relevant_episodes: int = Field(5, ge=0, description="episodes recalled by similarity")
    min_similarity: float = Field(0.0, ge=0, le=1, description="relevant episodes below are dropped")
    count_recall_access: bool = Field(
        False, description="bump access_count of recalled episodes (one store write per recall)")
    estimate_novelty: bool = Field(
        False, description="novelty = 1 - similarity to the closest stored episode (one extra "
        "search per turn); otherwise novelty is 0.5")


class EpisodicMemory(MemorySystem):
    """Raw episodes, recent + relevant; no compression, no forgetting."""

    key = "episodic"
    uses_memory_prompts = False
    Config = EpisodicConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # cached: novelty embeds an episode's text just before the store embeds it again
        self.embedder = CachedEmbedder(resolve_embedder(self.embedder))
        self.folder = RunFolder(self.workdir)
        self.backends = open_record_backends(self.folder.path)
        self.episodes = self.open_store(EpisodicMemoryStore)
        self.new_episodes = 0  # episodes stored since the last sleep / compression

    def open_store(self, store_class: type[S], **kwargs: Any) -> S:
        """A record store of this memory's scope and run, on its shared backends."""
        return store_class(self.folder.path, self.scope.key, self.embedder,
                           namespace=self.namespace, backends=self.backends, **kwargs)

    def novelty_of(self, content: str) -> float:
        if not self.config.estimate_novelty or self.episodes.count() == 0:
            return 0.5
        best = self.episodes.get_relevant_scored(content, k=1, include_forgotten=True)
        return float(min(1.0, max(0.0, 1.0 - best[0][1]))) if best else 1.0

    def observe(self, exchange: Exchange) -> None:
        content = exchange.render()
        self.episodes.add_episode(
            content, context={"user": exchange.user, "assistant": exchange.assistant,
                              "turn_number": exchange.turn_number,
                              "session_id": exchange.session_id},
            importance=estimate_importance(exchange.user), novelty=self.novelty_of(content),
            tags=[exchange.session_id] if exchange.session_id else [],
            timestamp=exchange.timestamp)
        self.new_episodes += 1

    def recall_episodes(self, query: str) -> tuple[list[MemoryItem], list[Exchange]]:
        """Relevant episodes (items) and the recent ones (history, oldest first)."""
        n = self.config.recent_episodes
        recent = list(reversed(self.episodes.get_recent(n))) if n else []
        history = [exchange_of(ep) for ep in recent]
        seen = {ep.id for ep in recent}
        items: list[MemoryItem] = []
        if self.config.relevant_episodes:
            k = self.config.relevant_episodes + len(seen)
            for ep, sim in self.episodes.get_relevant_scored(query, k=k):
                if ep.id in seen or sim < self.config.min_similarity or not self.keep_episode(ep):
                    continue
                items.append(MemoryItem(id=ep.id, kind="episode", text=ep.content, score=sim,
                                        timestamp=ep.timestamp,
                                        metadata={"turn_number": ep.context.get("turn_number")}))
        items = items[: self.config.relevant_episodes]
        if self.config.count_recall_access and items:
            self.episodes.mark_accessed([item.id for item in items])
        return items, history

    def episode_turns(self, episode_ids: list[str]) -> list[int]:
        """Sorted turn numbers of the given episodes (each records its turn in ``context``)."""
        turns = set()
        for episode_id in episode_ids:
            episode = self.episodes.get(episode_id)
            if episode is not None and isinstance(episode.context.get("turn_number"), int):
                turns.add(episode.context["turn_number"])
        return sorted(turns)

    def keep_episode(self, episode: Episode) -> bool:
        """Whether a relevant episode goes into the prompt (subclasses filter)."""
        return True

    def recall(self, query: str) -> MemoryContext:
        items, history = self.recall_episodes(query)
        return MemoryContext(items=items, history=history)

    def size(self) -> MemorySize:
        """The episodes recall can still return (all but forgotten ones), each with its stored
        text (``User: ...\\nAI: ...``), as a relevant episode is shown."""
        return MemorySize.of(self.episode_texts())

    def episode_texts(self) -> list[str]:
        """The texts of the episodes recall can still return (see :meth:`size`)."""
        return recallable_texts(self.episodes, lambda episode: episode.content)

    def close(self) -> None:
        self.episodes.close()
        self.backends.close()
        self.folder.cleanup()
