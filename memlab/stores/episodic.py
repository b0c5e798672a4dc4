"""EpisodicMemoryStore (seed 002): every stored interaction, with replay metadata.

Forgotten episodes are kept and flagged (decay never deletes); recall skips them unless asked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memlab.models._common import utc_now
from memlab.models.sleep import Episode
from memlab.stores.records import ScopedRecordStore


class EpisodicMemoryStore(ScopedRecordStore[Episode]):
    """Episodes of one scope, in the SQL and vector layers, searchable by embedding.

    Example:
        >>> from memlab.embed.hashing import HashingEmbedder
        >>> import tempfile
        >>> store = EpisodicMemoryStore(tempfile.mkdtemp(), "alice", HashingEmbedder())
        >>> episode_id = store.add_episode("User: I live in Lyon\\nAI: Noted.")
        >>> store.get_relevant("Where do I live?", k=1)[0].id == episode_id
        True
    """

    table = "episodes"
    model = Episode

    def text_of(self, record: Episode) -> str:
        return record.content

    def recallable(self, record: Episode) -> bool:
        return not record.forgotten

    def add_episode(
        self,
        content: str,
        context: dict[str, Any] | None = None,
        importance: float = 0.5,
        novelty: float = 0.5,
        tags: list[str] | None = None,
        timestamp: datetime | None = None,
    ) -> str:
        """Store one interaction; returns its id. Scores are validated (0-1) by the model."""
        episode = Episode(
            content=content,
            context=context or {},
            importance=importance,
            novelty=novelty,
            tags=tags or [],
            timestamp=timestamp or utc_now(),
        )
        return self.add(episode)

    def add(self, episode: Episode) -> str:
        """Store a ready-made Episode (its id must be new in this scope)."""
        return self._insert([episode])[0]

    def get_recent(self, n: int = 5, include_forgotten: bool = False) -> list[Episode]:
        """The ``n`` latest episodes by timestamp, latest first."""
        with self._lock:
            rows = self._matrix.latest(n, everything=include_forgotten)
            return [self._records[row].model_copy(deep=True) for row in rows]

    def get_unconsolidated(self) -> list[Episode]:
        """Episodes not yet consolidated nor forgotten, oldest first."""
        with self._lock:
            found = [e for e in self._records if not e.consolidated and not e.forgotten]
            return [e.model_copy(deep=True) for e in sorted(found, key=lambda e: e.timestamp)]

    def get_relevant(
        self, query: str, k: int = 5, include_forgotten: bool = False
    ) -> list[Episode]:
        """The ``k`` episodes most similar to ``query``, best first."""
        return [e for e, _ in self.search(query, k, everything=include_forgotten)]

    def get_relevant_scored(
        self, query: str, k: int = 5, include_forgotten: bool = False
    ) -> list[tuple[Episode, float]]:
        """Like :meth:`get_relevant`, with each episode's cosine similarity."""
        return self.search(query, k, everything=include_forgotten)

    def mark_accessed(self, ids: list[str]) -> list[str]:
        """Count one access (replay or recall) for each id; returns the ids found."""
        return self._modify(ids, Episode.mark_accessed)

    def mark_consolidated(self, ids: list[str]) -> list[str]:
        return self._modify(ids, lambda e: setattr(e, "consolidated", True))

    def mark_forgotten(self, ids: list[str]) -> list[str]:
        """Flag episodes as forgotten: kept and listed by :meth:`all`, excluded from recall."""
        return self._modify(ids, lambda e: setattr(e, "forgotten", True))

    def count(self, include_forgotten: bool = True) -> int:
        if include_forgotten:
            return len(self._records)
        return int(self._matrix.active[: self._matrix.size].sum())
