"""Recalled consolidated memories, summaries and schemas name the turns they came from
(metadata ``turn_numbers``, read by the runner's continuity metric)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memory_fakes import memory_llm

from memlab.agent import Agent
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import MEMORIES, Scope

START = datetime(2025, 5, 1, 8, tzinfo=UTC)
TOPICS = ["pasta cooking", "pasta sauce", "hiking boots", "hiking trail"]


def conversation(agent: Agent, n: int) -> None:
    """Turn t (1-based) mentions its own marker word, so a summary shows which turns it holds."""
    for t in range(1, n + 1):
        agent.observe(f"My note about {TOPICS[(t - 1) // 5 % 4]} is marker{t}.", "Noted.",
                      timestamp=START + timedelta(hours=t))


def turns_in(text: str) -> list[int]:
    """The turns whose marker word a summary holds."""
    return sorted({int(t) for t in re.findall(r"marker(\d+)", text)})


def make(key: str, tmp_path, **config):
    llm = memory_llm()
    memory = MEMORIES.create(key, scope=Scope(user_id="alice"), llm=llm,
                             embedder=HashingEmbedder(), workdir=tmp_path, config=config)
    return memory, Agent(memory, llm)


def test_episodes_record_their_turn_number(tmp_path):
    memory, agent = make("sleep", tmp_path, auto_sleep_episodes=0)
    conversation(agent, 3)
    assert [ep.context["turn_number"] for ep in memory.episodes.all()] == [1, 2, 3]


def test_sleep_consolidated_and_schema_items_carry_their_source_turns(tmp_path):
    memory, agent = make("sleep", tmp_path, auto_sleep_episodes=0, relevant_memories=4,
                         related_schemas=2, schema_min_score=0.0,
                         cycle={"batch_size": 5, "decay": False})
    conversation(agent, 20)
    stats = agent.sleep()
    assert stats.failures == [] and stats.memories_created == 4 and stats.schemas_created >= 1
    items = memory.recall("my note about pasta cooking and hiking").items
    consolidated = [i for i in items if i.kind == "consolidated"]
    assert len(consolidated) == 4
    by_id = {}
    for item in consolidated:  # the turns named are exactly the turns the summary holds
        assert item.metadata["turn_numbers"] == turns_in(item.text)
        assert len(item.metadata["turn_numbers"]) == 5
        by_id[item.id] = item.metadata["turn_numbers"]
    schemas = [i for i in items if i.kind == "schema"]
    assert schemas
    for item in schemas:
        related = memory.schemas.get(item.id).related_memory_ids
        assert len(related) >= 2
        assert item.metadata["turn_numbers"] == sorted(t for m in related for t in by_id[m])


def test_episodic_summary_items_carry_their_source_turns(tmp_path):
    memory, agent = make("episodic_summary", tmp_path, summarize_every=20, keep_recent=5,
                         batch_size=5)
    conversation(agent, 20)
    assert len(agent.cycles) == 1 and agent.cycles[0].memories_created == 3
    summaries = [i for i in memory.recall("note about pasta sauce marker8").items
                 if i.kind == "summary"]
    assert summaries
    for item in summaries:
        assert item.metadata["turn_numbers"] == turns_in(item.text)
        assert item.metadata["turn_numbers"] in ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10],
                                                 [11, 12, 13, 14, 15])
