"""Phase 4 of the sleep cycle: forgetting and decay (seed 002 decay_episodes).

Only episodes already consolidated can decay: their content survives in a ConsolidatedMemory.
A forgotten episode is kept and flagged (``Episode.forgotten``); recall excludes it. Nothing is
ever deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memlab.sleep.replay import ReplayWeights, conversation_now, rank_episodes

if TYPE_CHECKING:
    from memlab.models.sleep import Episode


class ForgettingStore(Protocol):
    def all(self) -> list[Episode]: ...

    def mark_forgotten(self, ids: list[str]) -> list[str]: ...


def select_episodes_to_forget(episodes: Iterable[Episode], *, threshold: float,
                              now: datetime | None = None,
                              weights: ReplayWeights | None = None,
                              min_age_hours: float = 0.0) -> list[Episode]:
    """Consolidated, not yet forgotten episodes whose replay priority is below ``threshold``.

    Args:
        threshold: priority under which a consolidated episode is forgotten.
        now: the clock (default: the newest episode's timestamp).
        min_age_hours: younger episodes are never forgotten.
    """
    episodes = list(episodes)
    now = now or conversation_now(episodes)
    chosen = []
    for episode, priority in rank_episodes(episodes, now=now, weights=weights):
        if not episode.consolidated or episode.forgotten or priority >= threshold:
            continue
        age_hours = (now - episode.timestamp).total_seconds() / 3600.0
        if age_hours >= min_age_hours:
            chosen.append(episode)
    return chosen


def decay_episodes(store: ForgettingStore, *, threshold: float,
                   weights: ReplayWeights | None = None, now: datetime | None = None,
                   min_age_hours: float = 0.0) -> list[str]:
    """Mark low-priority consolidated episodes of ``store`` forgotten; return their ids."""
    episodes = store.all()
    chosen = select_episodes_to_forget(episodes, threshold=threshold,
                                       now=now or conversation_now(episodes),
                                       weights=weights, min_age_hours=min_age_hours)
    ids = [episode.id for episode in chosen]
    if ids:
        store.mark_forgotten(ids)
    return ids
