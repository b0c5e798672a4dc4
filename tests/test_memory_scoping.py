"""Memory is scoped: persona A's agent never recalls persona B's memories, on every condition."""

from __future__ import annotations

import pytest
from memory_fakes import memory_llm

from memlab.agent import Agent
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import CONDITIONS, MEMORIES, Scope
from memlab.stores.operating import OperatingMemory

SECRETS = {"alice": "PINEAPPLE", "bob": "WALNUT"}
SHARES_OPERATING = {"full_context", "hybrid"}


@pytest.mark.parametrize("key", CONDITIONS)
def test_persona_a_never_recalls_persona_b(tmp_path, key):
    operating = OperatingMemory.from_url(None)  # one operating memory for both personas
    agents = {}
    for user in SECRETS:
        llm = memory_llm("fine")
        extra = {"operating": operating} if key in SHARES_OPERATING else {}
        memory = MEMORIES.create(key, scope=Scope(user_id=user), llm=llm,
                                 embedder=HashingEmbedder(), workdir=tmp_path, **extra)
        agents[user] = Agent(memory, llm)
    for turn in range(8):  # interleaved, as two users of one deployment would be
        for user, secret in SECRETS.items():
            text = (f"My secret code word is {secret}." if turn == 1
                    else f"Tell me about rivers, part {turn}.")
            agents[user].observe(text, "Noted." if turn == 1 else "Rivers flow.")
    for agent in agents.values():
        agent.sleep()
    for user, secret in SECRETS.items():
        other = next(s for u, s in SECRETS.items() if u != user)
        agent = agents[user]
        agent.interact("What is my secret code word?")
        prompt = "\n".join(m.content for m in agent.last_messages)
        assert other not in prompt
        ctx = agent.memory.recall("What is my secret code word?")
        recalled = ctx.render() + "\n".join(ex.render() for ex in ctx.history)
        assert other not in recalled
        if key != "vanilla":
            assert secret in prompt  # the condition does remember its own persona
        agent.memory.close()
