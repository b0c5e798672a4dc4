"""Phase 1 of the sleep cycle: prioritised replay (seed 002 calculate_replay_priority).

priority = w_recency * exp(-decay_rate * age_hours) + w_importance * importance
         + w_novelty * novelty + w_access * min(access_count, access_cap) / access_cap
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from memlab.models.sleep import Episode


class ReplayWeights(BaseModel):
    """Weights of the replay priority (they need not sum to 1; the defaults do)."""

    recency: float = Field(0.3, ge=0, description="weight of the exp-decayed recency score")
    importance: float = Field(0.4, ge=0, description="weight of the episode's importance (0..1)")
    novelty: float = Field(0.2, ge=0, description="weight of the episode's novelty (0..1)")
    access: float = Field(0.1, ge=0, description="weight of the access bonus")
    decay_rate: float = Field(0.03, ge=0,
                              description="recency decay per hour of age (0.03: half-life ~23 h)")
    access_cap: int = Field(5, ge=1, description="access bonus = min(access_count, cap) / cap")


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def conversation_now(episodes: Iterable[Episode]) -> datetime:
    """The conversation's clock: the newest episode timestamp (wall clock when there is none).

    Simulated benchmark clocks can be years from the wall clock, so recency is measured
    against the conversation itself.
    """
    stamps = [_utc(ep.timestamp) for ep in episodes]
    return max(stamps) if stamps else datetime.now(UTC)


def calculate_replay_priority(episode: Episode, *, now: datetime | None = None,
                              weights: ReplayWeights | None = None) -> float:
    """Replay priority of one episode (higher replays first, lower decays first).

    Args:
        episode: has ``timestamp``, ``importance``, ``novelty`` and ``access_count``.
        now: the clock to age against (default: the episode's own time, recency 1).
        weights: the four weights, the decay rate and the access cap.
    """
    w = weights or ReplayWeights()
    stamp = _utc(episode.timestamp)
    age_hours = max(0.0, ((_utc(now) if now else stamp) - stamp).total_seconds() / 3600.0)
    recency = math.exp(-w.decay_rate * age_hours)
    access_bonus = min(episode.access_count, w.access_cap) / w.access_cap
    return (w.recency * recency + w.importance * float(episode.importance)
            + w.novelty * float(episode.novelty) + w.access * access_bonus)


def rank_episodes(episodes: Iterable[Episode], *, now: datetime | None = None,
                  weights: ReplayWeights | None = None) -> list[tuple[Episode, float]]:
    """Episodes with their priorities, highest first (ties: older first, so order is stable)."""
    episodes = list(episodes)
    now = now or conversation_now(episodes)
    scored = [(ep, calculate_replay_priority(ep, now=now, weights=weights)) for ep in episodes]
    return sorted(scored, key=lambda pair: (-pair[1], _utc(pair[0].timestamp)))


def select_episodes_for_replay(episodes: Iterable[Episode], *, max_episodes: int = 50,
                               min_priority: float = 0.0, now: datetime | None = None,
                               weights: ReplayWeights | None = None) -> list[Episode]:
    """The episodes to replay this cycle: priority >= ``min_priority``, best ``max_episodes``.

    Raises:
        ValueError: ``max_episodes`` < 1.
    """
    if max_episodes < 1:
        raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
    ranked = rank_episodes(episodes, now=now, weights=weights)
    return [ep for ep, priority in ranked if priority >= min_priority][:max_episodes]
