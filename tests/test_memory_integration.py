"""Every condition on the real local model, MiniLM and the real embedded stores.

A 30-turn conversation: a fact in turn 2 and a question about it in turn 30, the turns between
are filler stored through ``observe`` (no model call). Only turns 2 and 30 call the answering
model, plus the condition's own calls (sleep / summary compression, hybrid extraction). The
test asserts the pipeline runs and every trace is complete; which conditions answer right is
printed (reported, not asserted: a 0.5B model is not always right).
"""

from __future__ import annotations

import re

import pytest
from services import require_or_skip

from memlab.agent import Agent
from memlab.errors import MissingDependencyError
from memlab.memory.base import CONDITIONS, MEMORIES, Scope

pytestmark = pytest.mark.integration

FACT = "Please remember this: my daughter's name is Ottilie and she is seven years old."
QUESTION = "What is my daughter's name?"
FILLER = [
    ("Tell me a fun fact about rivers.", "The Amazon carries more water than any other river."),
    ("Which planets have rings?", "Saturn, Jupiter, Uranus and Neptune all have rings."),
    ("How do bees make honey?", "Bees turn flower nectar into honey by evaporating its water."),
    ("Why is the sky blue?", "Air scatters blue sunlight more than red light."),
    ("What do penguins eat?", "Penguins mostly eat fish, squid and krill."),
]
CONFIGS = {  # keep the conditions' own model calls few and short
    "episodic_summary": {"summarize_every": 25, "keep_recent": 5, "batch_size": 10,
                         "compress_max_tokens": 96, "compress_max_retries": 0},
    "sleep": {"auto_sleep_episodes": 25, "cycle": {
        "batch_size": 13, "compress_max_tokens": 96, "compress_max_retries": 0,
        "induction": {"max_tokens": 64, "max_retries": 0}}},
    "hybrid": {"extraction_gate": "cue", "extract_max_tokens": 96},
}
ANSWERS: dict[str, bool] = {}


@pytest.fixture(scope="module")
def local_llm():
    from memlab.llm import get_llm

    try:
        return get_llm("local", local_size="0.5b", llm_cache=False)
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


@pytest.fixture(scope="module", autouse=True)
def report_answers():
    yield
    right = sorted(k for k, ok in ANSWERS.items() if ok)
    wrong = sorted(k for k, ok in ANSWERS.items() if not ok)
    print(f"\n[memory integration] answered right: {right}; wrong: {wrong}")


@pytest.mark.parametrize("key", CONDITIONS)
def test_thirty_turns_fact_then_question(key, local_llm, minilm, tmp_path):
    memory = MEMORIES.create(key, scope=Scope(user_id="persona-1"), llm=local_llm,
                             embedder=minilm, workdir=tmp_path, config=CONFIGS.get(key))
    agent = Agent(memory, local_llm, max_tokens=20)
    agent.observe("Hello there!", "Hello! How can I help you today?")
    traces = [agent.interact(FACT)]
    for turn in range(3, 30):
        agent.observe(*FILLER[turn % len(FILLER)])
    if memory.uses_evidence:  # the oracle is told the question needs turn 2 (the fact)
        memory.set_evidence([2])
    traces.append(agent.interact(QUESTION))
    assert agent.turn_number == 30
    for trace in traces:
        assert trace.error is None and trace.reply.strip()
        assert trace.prompt_tokens >= trace.prompt_tokens_user > 0
        assert trace.prompt_tokens_system > 0 and trace.completion_tokens > 0
        assert trace.llm_latency_s > 0 and trace.memory_latency_s > 0
        assert len(trace.memory_ids) == len(trace.memory_kinds)
    question = traces[-1]
    if key == "vanilla":
        assert question.memory_ids == [] and question.prompt_tokens_memory == 0
    else:
        assert question.memory_ids
    if key in ("sleep", "episodic_summary"):
        assert agent.cycles, "the auto-sleep / summary cycle did not run"
        stats = agent.cycles[0]
        assert stats.memories_created + len(stats.failures) >= 1
        print(f"\n[{key}] cycle: {stats.memories_created} memories, {stats.schemas_created} "
              f"schemas, {stats.episodes_forgotten} forgotten, failures={stats.failures}")
    if key == "hybrid":
        print(f"\n[hybrid] extractions={memory.extractions} failures={memory.failures}")
    ANSWERS[key] = "ottilie" in question.reply.lower()
    print(f"\n[{key}] reply: {question.reply!r}")
    memory.close()


def says(text: str, word: str) -> bool:
    return re.search(rf"\b{word}\b", text, re.IGNORECASE) is not None


def test_hybrid_newer_colour_supersedes_the_older_on_the_real_model(local_llm, minilm, tmp_path):
    """A pipeline property on the 0.5B model: extraction -> promotion -> supersession."""
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="persona-2"), llm=local_llm,
                             embedder=minilm, workdir=tmp_path,
                             config={"extract_max_tokens": 96})
    agent = Agent(memory, local_llm, max_tokens=16)
    agent.interact("My favourite colour is red.")
    for user, assistant in FILLER[:2]:
        agent.observe(user, assistant)
    agent.interact("Actually my favourite colour is now blue.")
    facts = memory.facts.all()
    print(f"\n[hybrid supersession] extractions={memory.extractions} failures={memory.failures}")
    for f in facts:
        print(f"  turn {f.turn_number} {f.source} subject={f.subject!r} content={f.content!r} "
              f"superseded_by={f.superseded_by[:8]!r}")
    current = {f.id: f for f in facts if not f.superseded_by and f.kind == "fact"}
    colour = [f for f in current.values() if "colour" in f.subject]
    assert len(colour) == 1 and says(colour[0].content, "blue")
    assert colour[0].turn_number == 4
    assert not any(says(f.content, "red") for f in current.values())
    red = [f for f in facts if says(f.content, "red")]
    assert red and all(f.superseded_by for f in red)
    assert colour[0].id in {f.superseded_by for f in red}
    recalled = [i for i in memory.recall("What is my favourite colour?").items if i.kind == "fact"]
    assert any(says(i.text, "blue") for i in recalled)
    assert not any(says(i.text, "red") for i in recalled)
    memory.close()
