"""Every condition on the real local model, MiniLM and the real embedded stores.

A 30-turn conversation: a fact in turn 2 and a question about it in turn 30, the turns between
are filler stored through ``observe`` (no model call). Only turns 2 and 30 call the answering
model, plus the condition's own calls (sleep / summary compression, hybrid extraction). The
test asserts the pipeline runs and every trace is complete; which conditions answer right is
printed (reported, not asserted: a 0.5B model is not always right).
"""

from __future__ import annotations

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
        return get_llm("local", llm_cache=False)
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
