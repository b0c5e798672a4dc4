"""The Agent loop on FakeLLM with small hand-written conditions (no stores needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.agent import Agent, TurnTrace, render_options
from memlab.errors import LLMTimeoutError
from memlab.llm.fake import FakeLLM
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem, Scope
from memlab.memory.vanilla import VanillaMemory
from memlab.models.sleep import CycleStats


class ListMemory(MemorySystem):
    """Remembers every exchange; recalls a fixed item and all history; sleeps every 3 turns."""

    key = "list"

    def __init__(self, *args, uncapped: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.exchanges: list[Exchange] = []
        self.uncapped = uncapped
        self.sleeps = 0

    def observe(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)

    def recall(self, query: str) -> MemoryContext:
        items = [MemoryItem(id="fact-1", kind="fact", text="the user likes tea")]
        return MemoryContext(items=items, history=list(self.exchanges), truncated_turns=2,
                             metadata={"uncapped_history": self.uncapped})

    def should_sleep(self) -> bool:
        return len(self.exchanges) % 3 == 0 and len(self.exchanges) > 0

    def sleep(self) -> CycleStats:
        self.sleeps += 1
        return CycleStats(episodes_considered=len(self.exchanges))


def scope() -> Scope:
    return Scope(user_id="alice")


def test_vanilla_puts_no_memory_in_the_prompt():
    llm = FakeLLM(["hi"])
    agent = Agent(VanillaMemory(scope()), llm)
    agent.observe("my name is Bob", "noted")
    trace = agent.interact("what is my name?")
    sent = llm.history[-1]
    assert [m.role for m in sent] == ["system", "user"]
    assert "Bob" not in sent[0].content
    assert trace.prompt_tokens_memory == 0 and trace.prompt_tokens_history == 0
    assert trace.memory_ids == [] and trace.reply == "hi"


def test_trace_splits_tokens_and_lists_memories():
    llm = FakeLLM(["answer"])
    memory = ListMemory(scope())
    agent = Agent(memory, llm, persona="a tea lover", history_turns=5)
    agent.observe("first", "one")
    trace = agent.interact("what do I like?")
    system = llm.history[-1][0].content
    assert "the user likes tea" in system and "a tea lover" in system
    assert trace.prompt_tokens_memory > 0 and trace.prompt_tokens_history == 1 + 1 + 8
    assert trace.prompt_tokens_user == 4 + 4
    parts = (trace.prompt_tokens_system + trace.prompt_tokens_memory
             + trace.prompt_tokens_history + trace.prompt_tokens_user)
    assert parts == trace.prompt_tokens  # FakeLLM counts words + 4 per message
    assert trace.memory_ids == ["fact-1", "turn:1"]
    assert trace.memory_kinds == ["fact", "turn"]
    assert trace.truncated_turns == 2 and trace.completion_tokens == 1
    assert agent.turn_number == 2 and memory.exchanges[-1].assistant == "answer"


def test_history_is_capped_unless_the_context_is_uncapped():
    for uncapped, expected in ((False, 2), (True, 6)):
        llm = FakeLLM(["x"])
        agent = Agent(ListMemory(scope(), uncapped=uncapped), llm, history_turns=2)
        for i in range(6):
            agent.memory.observe(Exchange(user=f"u{i}", assistant=f"a{i}", turn_number=i))
        agent.interact("q", store=False)
        history = llm.history[-1][1:-1]
        assert len(history) == 2 * expected
        assert history[-1].content == "a5"


def test_store_false_stores_nothing_and_options_are_one_constrained_letter():
    llm = FakeLLM(["B"])
    memory = ListMemory(scope())
    agent = Agent(memory, llm)
    trace = agent.interact("pick one", store=False, options=["red", "blue"])
    assert memory.exchanges == [] and agent.turn_number == 0
    assert "B. blue" in llm.history[-1][-1].content
    assert agent.last_messages[-1].content == render_options("pick one", ["red", "blue"])
    assert llm.params[-1]["choices"] == ["A", "B"]
    assert trace.reply == "B" and trace.choice == 1


def test_an_unconstrained_reply_naming_no_option_chooses_nothing():
    agent = Agent(ListMemory(scope()), FakeLLM(["I would rather not say."]))
    assert agent.interact("pick one", options=["red", "blue"]).choice is None


def test_answer_false_builds_the_prompt_without_a_call_or_a_store():
    llm = FakeLLM(["never sent"])
    memory = ListMemory(scope())
    agent = Agent(memory, llm)
    trace = agent.interact("what colour?", answer=False)
    assert llm.history == [] and memory.exchanges == [] and not trace.answered
    assert trace.prompt_tokens > 0 and trace.messages[-1].content == "what colour?"


def test_a_clock_reaches_the_prompt_and_marks_history_where_it_jumps():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2024, 1, 8, 19, 0, tzinfo=UTC)
    memory = ListMemory(scope())
    llm = FakeLLM(["ok"] * 5)
    agent = Agent(memory, llm)
    for minutes in (0, 1, 120):
        agent.interact(f"message at +{minutes}", timestamp=t0 + timedelta(minutes=minutes))
    agent.interact("which joke?", timestamp=t0 + timedelta(minutes=180))
    sent = llm.history[-1]
    assert "It is now" not in sent[0].content  # the system prompt stays the same
    assert sent[-1].content == "It is now Mon 08 Jan 2024 22:00.\n\nwhich joke?"
    users = [m.content for m in sent[1:-1:2]]
    assert users == ["[Mon 08 Jan 2024 19:00] message at +0", "message at +1",
                     "[Mon 08 Jan 2024 21:00] message at +120"]


def test_the_prompt_of_one_question_starts_with_the_whole_prompt_of_the_last():
    """Only the clock and the message change at the end, so a history that grows keeps the
    last prompt's history as a prefix the model does not read again (PROMPT_LAYOUT)."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2024, 1, 8, 19, 0, tzinfo=UTC)
    llm = FakeLLM(["ok"] * 3)
    agent = Agent(ListMemory(scope(), uncapped=True), llm)
    agent.interact("first question", timestamp=t0)
    agent.observe("filler", "noted", timestamp=t0 + timedelta(minutes=5))
    agent.interact("second question", timestamp=t0 + timedelta(minutes=10))
    first, second = llm.history
    assert second[:len(first) - 1] == first[:-1]
    assert first[-1].content.startswith("It is now Mon 08 Jan 2024 19:00.")


def test_failing_llm_is_recorded_not_raised():
    def boom(messages):
        raise LLMTimeoutError("no answer in 60 s")

    memory = ListMemory(scope())
    trace = Agent(memory, FakeLLM([boom])).interact("hello")
    assert isinstance(trace, TurnTrace)
    assert trace.error == "LLMTimeoutError: no answer in 60 s" and trace.reply == ""
    assert memory.exchanges == []


def test_auto_sleep_runs_after_threshold_and_lands_on_the_trace():
    memory = ListMemory(scope())
    agent = Agent(memory, FakeLLM(["r"]))
    stamp = datetime(2024, 1, 1, tzinfo=UTC)
    agent.observe("a", "b", timestamp=stamp, session_id="s1")
    assert memory.exchanges[0].timestamp == stamp and memory.exchanges[0].session_id == "s1"
    first = agent.interact("c")
    assert not first.slept and first.cycle_stats is None
    third = agent.interact("d")
    assert third.slept and third.cycle_stats["episodes_considered"] == 3
    assert memory.sleeps == 1 and len(agent.cycles) == 1


@pytest.mark.parametrize("turns", [0, 3])
def test_explicit_sleep_returns_none_for_conditions_without_a_cycle(turns):
    agent = Agent(VanillaMemory(scope()), FakeLLM())
    for i in range(turns):
        agent.observe(f"u{i}", "a")
    assert agent.sleep() is None and agent.cycles == []
