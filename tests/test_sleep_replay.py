"""Phase 1 (replay priority and selection) and phase 4 (decay) as pure functions."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memlab.models.sleep import Episode
from memlab.sleep.decay import decay_episodes, select_episodes_to_forget
from memlab.sleep.replay import (
    ReplayWeights,
    calculate_replay_priority,
    conversation_now,
    rank_episodes,
    select_episodes_for_replay,
)

T0 = datetime(2025, 3, 1, 12, tzinfo=UTC)


def ep(hours_ago: float = 0.0, importance=0.5, novelty=0.5, access=0, **kw) -> Episode:
    return Episode(content="x", timestamp=T0 - timedelta(hours=hours_ago), importance=importance,
                   novelty=novelty, access_count=access, **kw)


def test_priority_is_the_weighted_sum_with_exponential_recency():
    w = ReplayWeights(recency=1, importance=2, novelty=3, access=4, decay_rate=0.1, access_cap=5)
    got = calculate_replay_priority(ep(10, 0.2, 0.4, access=2), now=T0, weights=w)
    assert got == pytest.approx(math.exp(-1.0) + 0.4 + 1.2 + 4 * 2 / 5)


def test_access_bonus_is_capped_at_five():
    w = ReplayWeights(recency=0, importance=0, novelty=0, access=1)
    assert calculate_replay_priority(ep(access=5), weights=w) == pytest.approx(1.0)
    assert calculate_replay_priority(ep(access=50), weights=w) == pytest.approx(1.0)
    assert calculate_replay_priority(ep(access=1), weights=w) == pytest.approx(0.2)


def test_older_less_important_episodes_rank_lower():
    old, new = ep(48, importance=0.2), ep(1, importance=0.2)
    vital = ep(48, importance=1.0, novelty=1.0)
    ranked = [e.id for e, _ in rank_episodes([old, new, vital], now=T0)]
    assert ranked.index(new.id) < ranked.index(old.id)
    assert ranked.index(vital.id) < ranked.index(old.id)


def test_selection_respects_limit_and_minimum():
    episodes = [ep(h, importance=i) for h, i in [(0, 0.9), (5, 0.1), (10, 0.8), (20, 0.0)]]
    chosen = select_episodes_for_replay(episodes, max_episodes=2, now=T0)
    assert [e.id for e in chosen] == [episodes[0].id, episodes[2].id]
    floor = calculate_replay_priority(episodes[2], now=T0)
    assert len(select_episodes_for_replay(episodes, min_priority=floor, now=T0)) == 2
    with pytest.raises(ValueError, match="max_episodes"):
        select_episodes_for_replay(episodes, max_episodes=0)


def test_clock_defaults_to_the_newest_episode_not_the_wall_clock():
    episodes = [ep(100), ep(0)]
    assert conversation_now(episodes) == T0
    ranked = rank_episodes(episodes)
    assert ranked[0][0].id == episodes[1].id  # years-old simulated clocks still rank by recency


class ListStore:
    def __init__(self, episodes):
        self.episodes = {e.id: e for e in episodes}

    def all(self):
        return list(self.episodes.values())

    def mark_forgotten(self, ids):
        for episode_id in ids:
            self.episodes[episode_id].forgotten = True
        return ids


def test_decay_forgets_only_consolidated_low_priority_episodes_and_keeps_them():
    weak_done = ep(72, importance=0.1, novelty=0.1, consolidated=True)
    weak_open = ep(72, importance=0.1, novelty=0.1)  # not consolidated: its content lives nowhere else
    strong_done = ep(72, importance=1.0, novelty=1.0, consolidated=True)
    newest = ep(0, consolidated=True)
    store = ListStore([weak_done, weak_open, strong_done, newest])
    forgotten = decay_episodes(store, threshold=0.3)
    assert forgotten == [weak_done.id]
    assert len(store.all()) == 4 and store.episodes[weak_done.id].forgotten
    assert decay_episodes(store, threshold=0.3) == []  # already forgotten: not counted twice


def test_min_age_protects_young_episodes():
    young = ep(1, importance=0.0, novelty=0.0, consolidated=True)
    anchor = ep(0)
    assert select_episodes_to_forget([young, anchor], threshold=0.9, now=T0) == [young]
    assert select_episodes_to_forget([young, anchor], threshold=0.9, now=T0,
                                     min_age_hours=2) == []
