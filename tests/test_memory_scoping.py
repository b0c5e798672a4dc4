"""Memory is scoped: persona A's agent never recalls persona B's memories, on every condition."""

from __future__ import annotations

import pytest
from memory_fakes import memory_llm

from memlab.agent import Agent
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import CONDITIONS, MEMORIES, Scope
from memlab.stores.operating import OperatingMemory

SECRETS = ("PINEAPPLE", "WALNUT")
SHARES_OPERATING = {"full_context", "hybrid"}
SCOPE_PAIRS = {
    "two_users": (Scope(user_id="alice"), Scope(user_id="bob")),
    # "a" + "b:c" and "a:b" + "c" joined naively are both "a:b:c"
    "colon_in_ids": (Scope(agent_id="a", user_id="b:c"), Scope(agent_id="a:b", user_id="c")),
    "percent_in_ids": (Scope(agent_id="a%3A", user_id="b"), Scope(agent_id="a:", user_id="b")),
}


def test_scope_keys_of_distinct_pairs_differ_and_plain_ids_keep_their_key():
    for first, second in SCOPE_PAIRS.values():
        assert first.key != second.key
    assert Scope(agent_id="rag", user_id="persona_1").key == "rag:persona_1"


@pytest.mark.parametrize("pair", SCOPE_PAIRS)
@pytest.mark.parametrize("key", CONDITIONS)
def test_persona_a_never_recalls_persona_b(tmp_path, key, pair):
    operating = OperatingMemory.from_url(None)  # one operating memory for both personas
    scopes = SCOPE_PAIRS[pair]
    extra = {"operating": operating} if key in SHARES_OPERATING else {}

    def open_agent(scope):
        llm = memory_llm("fine")
        return Agent(MEMORIES.create(key, scope=scope, llm=llm, embedder=HashingEmbedder(),
                                     workdir=tmp_path, **extra), llm)

    agents = [open_agent(scope) for scope in scopes]
    for turn in range(8):  # interleaved, as two users of one deployment would be
        for agent, secret in zip(agents, SECRETS, strict=True):
            text = (f"My secret code word is {secret}." if turn == 1
                    else f"Tell me about rivers, part {turn}.")
            agent.observe(text, "Noted." if turn == 1 else "Rivers flow.")
    for agent in agents:
        agent.sleep()
        agent.memory.close()
    agents = [open_agent(scope) for scope in scopes]  # reopened: what the stores hold
    for agent, secret, other in zip(agents, SECRETS, SECRETS[::-1], strict=True):
        agent.interact("What is my secret code word?")
        prompt = "\n".join(m.content for m in agent.last_messages)
        assert other not in prompt
        ctx = agent.memory.recall("What is my secret code word?")
        recalled = ctx.render() + "\n".join(ex.render() for ex in ctx.history)
        assert other not in recalled
        if key not in ("vanilla", "oracle"):  # the oracle recalls only named evidence
            assert secret in prompt  # the condition does remember its own persona
        agent.memory.close()
