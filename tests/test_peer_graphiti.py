"""The graphiti condition (graphiti-core on embedded Kuzu) on FakeLLM and the hashing embedder:
the graph it builds, facts with validity times traced to their turns, constrained model calls,
scopes, replay, the network guard and telemetry. The contract and the checks every peer shares
run in tests/test_memory_contract.py and tests/test_peers.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("graphiti_core")

from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.errors import MissingDependencyError  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.memory.base import MEMORIES, Exchange, Scope  # noqa: E402
from memlab.memory.peers import graphiti_memory  # noqa: E402
from memlab.memory.peers.graphiti_memory import fact_text, group_id, search_text  # noqa: E402
from memlab.network import NetworkBlockedError  # noqa: E402
from memlab.testing.fakes import peer_reply  # noqa: E402

START = datetime(2025, 3, 3, 9, tzinfo=UTC)
SAID = ("Let's chat about football.", "My sister is called Quenby and she lives in Tromso.",
        "My car is a green Volvo estate from 2011.")


def make(workdir, scope=Scope(user_id="alice"), llm=None, embedder=None):
    return MEMORIES.create("graphiti", scope=scope, llm=llm or FakeLLM([peer_reply]),
                           embedder=embedder or HashingEmbedder(dim=384), workdir=workdir)


def fed(memory, said=SAID):
    for turn, text in enumerate(said, 1):
        memory.observe(Exchange(user=text, assistant="Noted.", turn_number=turn,
                                timestamp=START + timedelta(days=turn)))
    return memory


def test_observed_turns_become_entities_facts_and_episodes_in_kuzu(tmp_path):
    llm = FakeLLM([peer_reply])
    memory = fed(make(tmp_path, llm=llm))
    stats = memory.stats()
    # user, Quenby, Tromso, Volvo (+ football's content word); one fact per named turn
    assert stats["graph"]["episodes"] == 3 and stats["graph"]["facts"] == 3
    assert stats["graph"]["entities"] >= 4 and stats["failed_turns"] == 0
    assert stats["llm"]["calls"] == len(llm.params) and stats["llm"]["parse_failures"] == 0
    assert list((tmp_path / "graphiti").glob("s*.kuzu"))  # the database is in the run folder
    memory.close()


def test_every_model_call_is_constrained_and_graphitis_raw_schema_is_not_shown(tmp_path):
    llm = FakeLLM([peer_reply])
    fed(make(tmp_path, llm=llm)).close()
    assert llm.params and all(p["json_schema"] for p in llm.params)
    prompts = ["\n".join(m.content for m in call) for call in llm.history]
    assert not any("Respond with a JSON object in the following format" in p for p in prompts)
    assert not any('"title"' in json.dumps(p["json_schema"]) for p in llm.params)


def repeating(messages):
    """peer_reply, with every list of entities and facts written out twice over."""
    reply = json.loads(peer_reply(messages))
    for field in ("extracted_entities", "edges"):
        if reply.get(field):
            reply[field] = reply[field] * 2
    return json.dumps(reply)


def test_a_reply_that_repeats_its_list_ends_before_the_first_repeat(tmp_path):
    plain, llm = FakeLLM([peer_reply]), FakeLLM([repeating])
    fed(make(tmp_path / "plain", llm=plain)).close()
    memory = fed(make(tmp_path / "repeating", llm=llm))
    assert all(p.get("json_repeats") for p in llm.params)
    # the repeats never reach graphiti: the same facts from the same calls as the plain replies
    # (uncut, graphiti ends with the same facts, in over ten times the time here)
    assert memory.stats()["graph"]["facts"] == 3 and memory.stats()["failed_turns"] == 0
    assert [call[-1].content for call in llm.history] == [
        call[-1].content for call in plain.history]
    memory.close()


def test_recall_gives_facts_with_validity_times_and_the_turns_they_came_from(tmp_path):
    memory = fed(make(tmp_path))
    facts = [i for i in memory.recall("What is my sister called?").items if "Quenby" in i.text]
    assert len(facts) == 1 and facts[0].kind == "fact"
    assert facts[0].source_turns == [2]  # the episode of turn 2, by graphiti's provenance
    assert facts[0].timestamp.date() == (START + timedelta(days=2)).date()  # its reference time
    assert "(valid from Wed 05 Mar 2025" in facts[0].text and facts[0].text.endswith("until now)")
    car = [i for i in memory.recall("What car do I drive?").items if "Volvo" in i.text]
    assert car and car[0].source_turns == [3]
    memory.close()


def test_the_recall_floor_decides_what_cosine_alone_finds(tmp_path):
    """A query that shares no word with any fact: graphiti's 0.6 floor finds nothing by cosine
    (BM25 has no word to go on), a floor of -1 lets the nearest facts through."""
    query = "Which relative resides abroad?"
    default = fed(make(tmp_path / "default"))
    assert not [i for i in default.recall(query).items if i.kind == "fact"]
    default.close()
    memory = MEMORIES.create("graphiti", scope=Scope(user_id="alice"), llm=FakeLLM([peer_reply]),
                             embedder=HashingEmbedder(dim=384), workdir=tmp_path / "open",
                             config={"sim_min_score": -1.0})
    facts = [i for i in fed(memory).recall(query).items if i.kind == "fact"]
    assert facts and all(i.source_turns for i in facts)
    memory.close()


def test_a_fact_that_stopped_holding_says_until_when():
    edge = SimpleNamespace(fact="Alice lives in Oslo", valid_at=START,
                           invalid_at=START + timedelta(days=40))
    assert fact_text(edge) == ("Alice lives in Oslo (valid from Mon 03 Mar 2025 09:00 until "
                               "Sat 12 Apr 2025 09:00)")


def test_scopes_get_their_own_partition_even_when_their_keys_collide_naively(tmp_path):
    pair = (Scope(agent_id="a", user_id="b:c"), Scope(agent_id="a:b", user_id="c"))
    assert group_id(pair[0].key) != group_id(pair[1].key)
    memories = [make(tmp_path, scope=s) for s in pair]
    fed(memories[0], ("My secret code word is PINEAPPLE.",))
    fed(memories[1], ("My secret code word is WALNUT.",))
    texts = ["\n".join(i.text for i in m.recall("What is my secret code word?").items)
             for m in memories]
    assert "PINEAPPLE" in texts[0] and "WALNUT" not in texts[0]
    assert "WALNUT" in texts[1] and "PINEAPPLE" not in texts[1]
    for memory in memories:
        memory.close()


def test_a_replay_into_a_fresh_folder_rebuilds_the_same_graph(tmp_path):
    from memlab.models import seed_ids

    recalled = []
    for name in ("first", "replayed"):
        seed_ids("graphiti-test")
        memory = fed(make(tmp_path / name))
        items = memory.recall("What is my sister called?").items
        recalled.append([(i.id, i.text, i.source_turns) for i in items])
        recalled.append(memory.stats()["graph"])
        memory.close()
        seed_ids(None)
    assert recalled[0] and recalled[0] == recalled[2] and recalled[1] == recalled[3]


def test_the_query_reaches_full_text_search_as_words():
    assert search_text("What is my sister called?") == "What is my sister called"
    assert search_text("?!") == ""


def test_a_garbled_reply_is_counted_and_the_turn_fails_without_stopping_the_run(tmp_path):
    replies = {"n": 0}

    def garbled_first(messages):
        replies["n"] += 1
        return "Sure! {not json" if replies["n"] == 1 else peer_reply(messages)

    memory = fed(make(tmp_path, llm=FakeLLM([garbled_first])))
    stats = memory.stats()
    assert stats["failed_turns"] == 1 and stats["llm"]["parse_failures"] == 1
    assert "turn 1" in stats["failures"][0] and stats["graph"]["facts"] == 2
    memory.close()


class LeakyEmbedder(HashingEmbedder):
    """Phones home from inside graphiti (its loop thread) on the second embedding."""

    def embed(self, texts):
        self.seen = getattr(self, "seen", 0) + 1
        if self.seen == 2:
            socket.create_connection(("192.0.2.1", 443), timeout=1)
        return super().embed(texts)


def test_the_guard_stops_a_connection_graphiti_makes_on_its_own_thread(tmp_path):
    memory = make(tmp_path, embedder=LeakyEmbedder(dim=384))
    with pytest.raises(NetworkBlockedError, match="192.0.2.1"):
        fed(memory)
    memory.close()


def test_without_the_extra_the_error_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphiti_core", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match=r'pip install -e "\.\[graphiti\]"'):
        graphiti_memory.import_graphiti()


def test_telemetry_is_off_and_nothing_is_written_to_home(tmp_path):
    """A fresh process (graphiti turns telemetry off by itself under pytest) with HOME in tmp:
    telemetry reads as off while graphiti runs and no ~/.cache/graphiti is written."""
    code = """if True:
        import sys
        from memlab.embed.hashing import HashingEmbedder
        from memlab.llm.fake import FakeLLM
        from memlab.memory.base import MEMORIES, Exchange, Scope
        from memlab.testing.fakes import peer_reply
        m = MEMORIES.create("graphiti", scope=Scope(user_id="u"), llm=FakeLLM([peer_reply]),
                            embedder=HashingEmbedder(dim=64), workdir=sys.argv[1])
        m.observe(Exchange(user="My cat is called Pixel.", assistant="Nice.", turn_number=1))
        from graphiti_core.telemetry import telemetry
        print(telemetry.is_telemetry_enabled(), "pytest" in sys.modules, m.stats()["graph"]["facts"])
        m.close()
    """
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(Path(__file__).parent.parent)}
    env.pop("GRAPHITI_TELEMETRY_ENABLED", None)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], env=env,
                         cwd=Path(__file__).parent.parent, capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    assert out == ["False", "False", "1"] and not list(home.rglob("*"))
