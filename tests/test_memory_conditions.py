"""Unit tests of the baseline and hybrid conditions on FakeLLM and the hashing embedder."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from memory_fakes import memory_llm

from memlab.agent import Agent
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.memory.full_context import parse_history
from memlab.stores.operating import OperatingMemory

TOPICS = ["weather", "football", "cooking pasta", "train timetables", "gardening", "films"]


def filler(i: int) -> tuple[str, str]:
    topic = TOPICS[i % len(TOPICS)]
    return f"Let's chat about {topic} for a bit, round {i}.", f"Sure, {topic} is fun."


def make(key, tmp_path, user="alice", llm=None, **kw):
    return MEMORIES.create(key, scope=Scope(user_id=user), llm=llm or memory_llm(),
                           embedder=HashingEmbedder(), workdir=tmp_path, **kw)


# ---------------------------------------------------------------- full_context
def test_full_context_keeps_everything_until_the_window_then_records_the_cut(tmp_path):
    llm = FakeLLM(context_window=300)
    memory = make("full_context", tmp_path, llm=llm, config={"reserve_tokens": 100})
    for i in range(5):
        memory.observe(Exchange(user=f"message {i}", assistant="fine", turn_number=i + 1))
    ctx = memory.recall("q")
    assert ctx.truncated_turns == 0 and len(ctx.history) == 5
    assert ctx.metadata["uncapped_history"] is True
    for i in range(5, 40):
        memory.observe(Exchange(user=f"message {i}", assistant="fine", turn_number=i + 1))
    ctx = memory.recall("q")
    assert ctx.truncated_turns > 0
    assert ctx.truncated_turns + len(ctx.history) == 40
    assert ctx.history[-1].user == "message 39"  # newest kept, oldest cut
    assert ctx.history[0].user == f"message {ctx.truncated_turns}"
    assert ctx.metadata["history_tokens"] <= 200


def test_full_context_cut_reaches_the_agent_trace_and_the_log_is_one_text_block(tmp_path):
    llm = FakeLLM(["ok"], context_window=150)
    operating = OperatingMemory.from_url(None)
    memory = make("full_context", tmp_path, llm=llm,
                  config={"reserve_tokens": 50, "cut_block": 0}, operating=operating)
    agent = Agent(memory, llm)
    for i in range(30):
        agent.observe(*filler(i))
    trace = agent.interact("what did we talk about?")
    assert trace.truncated_turns > 0
    assert trace.prompt_tokens_history > 5 * 10  # more than the default 5-turn cap: uncapped
    log = operating.get_history(memory.conversation_id)
    assert log.raw_text.count("User: ") == 31
    reopened = make("full_context", tmp_path, llm=FakeLLM(context_window=10_000),
                    operating=operating)
    restored = reopened.recall("q")  # from operating memory, in a new instance
    assert len(restored.history) == 31 and restored.truncated_turns == 0
    assert restored.history[-1].user == "what did we talk about?"


def test_full_context_cuts_in_blocks_so_the_prompt_prefix_stays_put(tmp_path):
    llm = FakeLLM(["ok"], context_window=300)  # budget 200 tokens
    memory = make("full_context", tmp_path, llm=llm, config={"reserve_tokens": 100})
    for i in range(40):
        memory.observe(Exchange(user=f"message {i}", assistant="fine", turn_number=i + 1))
    first = memory.recall("q")
    assert first.metadata["history_tokens"] <= 100  # cut to half the budget at once
    for i in range(40, 45):  # a few more turns: still within the budget, nothing more is cut
        memory.observe(Exchange(user=f"message {i}", assistant="fine", turn_number=i + 1))
    later = memory.recall("q")
    assert later.truncated_turns == first.truncated_turns
    assert [ex.user for ex in later.history[:len(first.history)]] == \
        [ex.user for ex in first.history]  # the same prefix: the model's KV cache applies
    assert later.history[-1].user == "message 44"


@pytest.mark.parametrize("span", [1000, 4000, 8000])
def test_full_context_sized_for_a_span_never_cuts_into_it(tmp_path, span):
    """After a block cut the history still holds the last ``span`` tokens of conversation
    (chat format included, 8 tokens an exchange: at most a quarter of an exchange of LTM's
    length), so every test whose evidence lies within the span keeps it."""
    from memlab.lab import window_for_cut_history

    llm = FakeLLM(context_window=window_for_cut_history(span))
    memory = make("full_context", tmp_path, llm=llm)
    said, cuts = [], 0  # the words of each exchange, as the fake counts tokens
    for i in range(span // 10):  # 40-word exchanges: about 4 spans of conversation
        user, reply = filler(i)
        user, reply = f"{user} {user} {user}", f"{reply} {reply} {reply}"
        memory.observe(Exchange(user=user, assistant=reply, turn_number=i + 1))
        said.append(len(user.split()) + len(reply.split()))
        context = memory.recall("q")
        cuts = max(cuts, context.truncated_turns)
        kept = sum(said[context.truncated_turns:])
        assert kept >= min(span, sum(said))
    assert cuts > 0  # the conversation did outgrow the window


def test_full_context_requires_a_model():
    with pytest.raises(ConfigError, match="full_context: llm"):
        MEMORIES.create("full_context", scope=Scope(user_id="a"))


def test_parse_history_round_trips_the_seed_format():
    raw = "User: hi\nAI: hello\nUser: two\nlines\nAI: ok"
    assert parse_history(raw) == [("hi", "hello"), ("two\nlines", "ok")]


# ---------------------------------------------------------------- rag
def test_rag_finds_the_needle_among_top_k_after_200_filler_turns(tmp_path):
    memory = make("rag", tmp_path)
    memory.observe(Exchange(user="My sister Margarethe lives in Valparaiso.",
                            assistant="Noted.", turn_number=1))
    for i in range(200):
        user, assistant = filler(i)
        memory.observe(Exchange(user=user, assistant=assistant, turn_number=i + 2))
    ctx = memory.recall("Where does my sister Margarethe live?")
    assert len(ctx.items) == memory.config.top_k
    assert any("Valparaiso" in item.text for item in ctx.items)
    assert [ex.turn_number for ex in ctx.history] == [200, 201]  # the last 2 turns
    assert all(item.kind == "turn" and "turn_number" in item.metadata for item in ctx.items)
    memory.close()


# ~1,000 filler turns written 32 at a time as rag writes them; a question every 10 turns.
# Prints the turns' texts, the questions and per question the recalled (id, turn number).
RAG_IN_A_FRESH_PROCESS = """
import json, random, sys
from memlab.bench.filler import filler_pair
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.models._common import seed_ids

seed_ids("rag-exact")
memory = MEMORIES.create("rag", scope=Scope(user_id="alice"), embedder=HashingEmbedder(),
                         workdir=sys.argv[1])
said, asked = random.Random(0), random.Random(1)
texts, questions, recalled = [], [], []
for turn in range(1, 1001):
    user, assistant = filler_pair(said)
    exchange = Exchange(user=user, assistant=assistant, turn_number=turn)
    memory.observe(exchange)
    texts.append(exchange.render())
    if turn % 10 == 0:
        questions.append(filler_pair(asked)[0])
        items = memory.recall(questions[-1]).items
        recalled.append([(i.id, i.metadata["turn_number"]) for i in items])
memory.close()
print(json.dumps({"texts": texts, "questions": questions, "recalled": recalled}))
"""


def test_rag_recalls_the_exact_top_k_and_the_same_turns_in_two_processes(tmp_path):
    """rag searched chroma's HNSW graph, which differs per process and can miss true top-5
    turns: two processes (a resumed run replays in a new one) recalled different turns."""
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", RAG_IN_A_FRESH_PROCESS, str(tmp_path / name)],
        capture_output=True, text=True, check=True, timeout=300).stdout)
        for name in ("first", "second")]
    assert runs[0] == runs[1]
    embedder, run, missed = HashingEmbedder(), runs[0], []
    stored = embedder.embed(run["texts"]).astype(np.float64)  # row t-1: turn t
    for n, (question, items) in enumerate(zip(run["questions"], run["recalled"], strict=True)):
        turn = 10 * (n + 1)  # the last two turns are the history, not items
        similarity = stored[: turn - 2] @ embedder.embed([question])[0]
        chosen = [similarity[t - 1] for _, t in items]
        assert len(items) == 5 and all(np.diff(chosen) <= 1e-6)  # best first
        # every turn above the 5th recalled one is recalled (at a tie either may be)
        recalled = {t for _, t in items}
        missed += [(turn, t + 1) for t in np.flatnonzero(similarity > chosen[-1] + 1e-6)
                   if t + 1 not in recalled]
    assert missed == []


def test_rag_a_tie_at_the_kth_place_goes_to_the_earliest_turns(tmp_path):
    """30 identical exchanges, more than chroma was asked for: the same 5 in every process,
    whatever their ids (a server rebuilding a session from its journal draws new ones)."""
    memory = make("rag", tmp_path, config={"recent_turns": 0})
    for i in range(40):
        user, assistant = ("Do you think it will rain this weekend?", "Maybe.") if i % 4 \
            else filler(i)
        memory.observe(Exchange(user=user, assistant=assistant, turn_number=i + 1))
    items = memory.recall("Will it rain this weekend?").items
    assert [item.metadata["turn_number"] for item in items] == [2, 3, 4, 6, 7]
    memory.close()


def test_rag_does_not_repeat_history_turns_as_items(tmp_path):
    memory = make("rag", tmp_path, config={"top_k": 3})
    for i in range(3):
        memory.observe(Exchange(user=f"pasta recipe {i}", assistant="ok", turn_number=i))
    ctx = memory.recall("pasta recipe")
    history_ids = {ex.metadata["id"] for ex in ctx.history}
    assert len(ctx.items) == 1 and not history_ids & {item.id for item in ctx.items}


# ---------------------------------------------------------------- hybrid
def test_hybrid_newer_fact_supersedes_older_and_recall_says_blue(tmp_path):
    memory = make("hybrid", tmp_path, config={"extraction_gate": "every_turn"})
    agent = Agent(memory, memory_llm("fine"))
    agent.observe("My favourite colour is red.", "Red, noted.")
    for i in range(10):
        agent.observe(*filler(i))
    agent.observe("My favorite color is blue now.", "Blue it is.")
    for i in range(3):
        agent.observe(*filler(i))
    ctx = memory.recall("What is my favourite colour?")
    facts = [item for item in ctx.items if item.kind == "fact"]
    assert any("blue" in f.text for f in facts)
    assert not any("red" in item.text for item in ctx.items)
    current = memory.facts.current_id("favourite colour")
    chain = memory.facts.history(current)
    assert [("blue" in f.content, "red" in f.content) for f in chain] == [(True, False),
                                                                          (False, True)]
    assert chain[1].superseded_by == chain[0].id and chain[0].supersedes == chain[1].id
    assert memory.extractions["llm"] == 15 and memory.extractions["rules"] == 0
    state = memory.state()
    assert state.scratchpad["turn_number"] == 15 and state.promotion_candidates == {}
    assert len(ctx.history) == memory.config.recent_turns


def test_hybrid_falls_back_to_rules_when_the_extractor_output_is_broken(tmp_path):
    memory = make("hybrid", tmp_path, llm=memory_llm(broken=frozenset({"extract"})))
    memory.observe(Exchange(user="My cat is called Tiger.", assistant="Cute.", turn_number=1))
    assert memory.extractions == {"llm": 0, "rules": 1, "none": 0}
    assert memory.failures and memory.failures[0].startswith("turn 1:")
    assert memory.state().scratchpad["extractor"] == "rules"
    assert any("Tiger" in item.text for item in memory.recall("cat name").items)


def test_hybrid_low_confidence_candidates_stay_staged(tmp_path):
    memory = make("hybrid", tmp_path, config={"promote_threshold": 0.95})
    memory.observe(Exchange(user="My car is a Volvo.", assistant="ok", turn_number=1))
    state = memory.state()
    assert len(state.promotion_candidates) == 1
    staged = next(iter(state.promotion_candidates.values()))
    assert staged["confidence"] == 0.9 and staged["extractor"] == "llm"
    assert [i.kind for i in memory.recall("car").items] == ["scratchpad"]


def test_hybrid_cue_gate_skips_the_extractor_on_impersonal_turns(tmp_path):
    llm = memory_llm()
    memory = make("hybrid", tmp_path, llm=llm, config={"extraction_gate": "cue"})
    memory.observe(Exchange(user="Trains are late today.", assistant="ok", turn_number=1))
    memory.observe(Exchange(user="My train was late.", assistant="ok", turn_number=2))
    assert memory.extractions == {"llm": 1, "rules": 0, "none": 1} and llm.calls == 1


def test_hybrid_workspace_lifecycle_archives_into_long_term_memory(tmp_path):
    operating = OperatingMemory.from_url(None)
    memory = make("hybrid", tmp_path, operating=operating)
    ws = memory.open_event({"alert": "Vessel V-123 delayed"})
    assert operating.list_workspaces() == [ws.event_id]
    memory.write_shared(ws.event_id, "port_congestion", 0.91)
    ws = memory.add_participant(ws.event_id, "port_agent_007")
    assert ws.participating_agents == [memory.agent_id, "port_agent_007"]
    memory.resolve_event(ws.event_id)
    assert operating.list_workspaces() == []  # archived, then removed
    events = [i for i in memory.recall("vessel V-123 delayed").items if i.kind == "event"]
    assert len(events) == 1 and "0.91" in events[0].text and "resolved" in events[0].text
    other = memory.open_event({"alert": "crane down"})
    memory.cancel_event(other.event_id)
    texts = [i.text for i in memory.recall("crane down").items if i.kind == "event"]
    assert any("cancelled" in t for t in texts)


# ---------------------------------------------------------------- vanilla
def test_vanilla_recalls_nothing_after_many_turns(tmp_path):
    memory = make("vanilla", tmp_path)
    for i in range(20):
        memory.observe(Exchange(user=f"My name is Bob {i}", assistant="ok", turn_number=i))
    ctx = memory.recall("what is my name?")
    assert ctx.items == [] and ctx.history == [] and ctx.render() == ""


@pytest.mark.parametrize("needle_at", [3, 15])  # already written to chroma / still pending
def test_rag_searches_written_and_pending_turns_and_persists_on_close(tmp_path, needle_at):
    memory = make("rag", tmp_path, config={"flush_every": 7})
    for i in range(20):
        user, assistant = filler(i)
        if i == needle_at:
            user = "My locker number is forty-two at the Zermatt gym."
        memory.observe(Exchange(user=user, assistant=assistant, turn_number=i + 1))
    assert memory.vectors.count() == 14 and len(memory.pending) == 6
    assert any("Zermatt" in i.text for i in memory.recall("Zermatt gym locker").items)
    memory.close()
    reopened = make("rag", tmp_path)
    assert reopened.vectors.count() == 20
    assert "Zermatt" in reopened.recall("Zermatt gym locker").items[0].text


# ---------------------------------------------------------------- episodic
def test_episodic_recent_five_as_history_and_relevant_episode_as_item(tmp_path):
    memory = make("episodic", tmp_path)
    agent = Agent(memory, memory_llm())
    agent.observe("My grandmother Rosalind grows orchids.", "Lovely.")
    for i in range(12):
        agent.observe(*filler(i))
    ctx = memory.recall("What does Rosalind grow?")
    assert [ex.turn_number for ex in ctx.history] == [9, 10, 11, 12, 13]
    assert ctx.items and "orchids" in ctx.items[0].text and ctx.items[0].kind == "episode"
    assert not {i.id for i in ctx.items} & {ex.metadata["id"] for ex in ctx.history}
    assert memory.episodes.all()[0].importance > memory.episodes.all()[1].importance


def test_episodic_summary_compresses_old_episodes_and_recalls_summaries(tmp_path):
    llm = memory_llm()
    memory = make("episodic_summary", tmp_path, llm=llm,
                  config={"summarize_every": 20, "keep_recent": 5, "batch_size": 5})
    agent = Agent(memory, llm)
    agent.observe("My grandmother Rosalind grows orchids.", "Lovely.")
    for i in range(19):
        agent.observe(*filler(i))
    assert len(agent.cycles) == 1
    stats = agent.cycles[0]
    assert stats.memories_created == 3 and stats.schemas_created == 0
    assert stats.episodes_forgotten == 0 and stats.failures == []
    assert len(memory.episodes.get_unconsolidated()) == 5  # the newest stay raw
    ctx = memory.recall("What does Rosalind grow?")
    summaries = [i for i in ctx.items if i.kind == "summary"]
    assert summaries and any("Rosalind" in s.text for s in summaries)
    episodes = [i for i in ctx.items if i.kind == "episode"]
    consolidated = {ep.id for ep in memory.episodes.all() if ep.consolidated}
    assert not {e.id for e in episodes} & consolidated  # summarised episodes left out
    assert not memory.should_sleep()
