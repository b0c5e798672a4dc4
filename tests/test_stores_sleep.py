"""The sleep system's stores (seed 002): episodic, consolidated, schema; scoped and persisted.

Every test runs twice: on the embedded backends (SQLite and chroma in the folder) and on the
servers (PostgreSQL via MEMLAB_SQL_URL, a chroma server via MEMLAB_CHROMA_URL). Each test's
folder gives its stores their own namespace, so the tests share the servers without mixing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from memlab.errors import ConfigError, StoreError
from memlab.models.sleep import Episode, Schema
from memlab.stores.consolidated import ConsolidatedMemoryStore
from memlab.stores.episodic import EpisodicMemoryStore
from memlab.stores.schemas import SchemaStore

T0 = datetime(2025, 9, 14, 18, 0, tzinfo=UTC)


@pytest.fixture(params=["embedded", "servers"], autouse=True)
def backend(request, monkeypatch):
    """Which backends the stores of this test run on (servers: set through the environment)."""
    if request.param == "servers":
        monkeypatch.setenv("MEMLAB_SQL_URL", request.getfixturevalue("postgres_server").url)
        monkeypatch.setenv("MEMLAB_CHROMA_URL", request.getfixturevalue("chroma_server").url)
    return request.param


@pytest.fixture
def episodes(tmp_path, hashing_embedder):
    with EpisodicMemoryStore(tmp_path, "alice", hashing_embedder) as store:
        yield store


def flushed(store: EpisodicMemoryStore) -> list[str]:
    """The ids in a closed store's chroma collection, read through a client of its own (the
    store released its client at close)."""
    from memlab.stores.vector import make_client

    client = make_client(path=store.backends.chroma_path, url=store.backends.chroma_url)
    try:
        return sorted(client.get_collection(store.vectors.collection.name).get()["ids"])
    finally:
        client.close()


def _add_days(store: EpisodicMemoryStore, texts: list[str]) -> list[str]:
    return [store.add_episode(t, timestamp=T0 + timedelta(days=i)) for i, t in enumerate(texts)]


def test_add_get_and_model_rules(episodes):
    eid = episodes.add_episode(
        "User: hi\nAI: hello",
        context={"persona": "p1"},
        importance=0.9,
        novelty=0.2,
        tags=["greeting"],
    )
    got = episodes.get(eid)
    assert got.context == {"persona": "p1"} and got.importance == 0.9 and got.tags == ["greeting"]
    assert not got.consolidated and not got.forgotten and got.access_count == 0
    with pytest.raises(ValidationError, match="importance"):
        episodes.add_episode("x", importance=1.5)
    with pytest.raises(ValidationError, match="content"):
        episodes.add_episode("   ")
    with pytest.raises(StoreError, match="already exists"):
        episodes.add(got)
    assert episodes.get("missing") is None


def test_get_recent_orders_by_timestamp(episodes):
    ids = _add_days(episodes, ["day0", "day1", "day2", "day3"])
    late = episodes.add_episode("inserted last but oldest", timestamp=T0 - timedelta(days=1))
    assert [e.id for e in episodes.get_recent(3)] == [ids[3], ids[2], ids[1]]
    assert episodes.get_recent(10)[-1].id == late


def test_relevance_and_forgetting(episodes):
    ids = _add_days(
        episodes,
        ["User: my cat is called Tom", "User: I work as a nurse", "User: my cat sleeps all day"],
    )
    assert episodes.get_relevant("cat Tom", k=1)[0].id == ids[0]
    episodes.mark_forgotten([ids[0]])
    assert ids[0] not in [e.id for e in episodes.get_relevant("cat Tom", k=3)]
    assert ids[0] not in [e.id for e in episodes.get_recent(5)]
    assert episodes.get_relevant("cat Tom", k=1, include_forgotten=True)[0].id == ids[0]
    assert episodes.get(ids[0]).forgotten and episodes.count() == 3
    assert episodes.count(include_forgotten=False) == 2 and len(episodes.all()) == 3


def test_unconsolidated_and_access_marks(episodes):
    ids = _add_days(episodes, ["a one", "b two", "c three"])
    assert episodes.mark_consolidated([ids[0], "unknown"]) == [ids[0]]
    episodes.mark_forgotten([ids[2]])
    assert [e.id for e in episodes.get_unconsolidated()] == [ids[1]]
    episodes.mark_accessed([ids[1], ids[1]])  # duplicates count once per call
    episodes.mark_accessed([ids[1]])
    assert episodes.get(ids[1]).access_count == 2 and episodes.get(ids[1]).last_accessed


def test_returned_records_are_copies(episodes):
    eid = episodes.add_episode("original text")
    episodes.get(eid).tags.append("mutated")
    assert episodes.get(eid).tags == []


def test_scopes_share_a_file_but_never_mix(tmp_path, hashing_embedder):
    alice = EpisodicMemoryStore(tmp_path, "alice", hashing_embedder)
    bob = EpisodicMemoryStore(tmp_path, "bob", hashing_embedder)
    alice.add_episode("alice's secret: the code is 4711")
    bob.add_episode("bob likes chess")
    assert [e.content for e in bob.get_relevant("secret code 4711", k=10)] == ["bob likes chess"]
    assert [e.content for e in bob.all()] == ["bob likes chess"]
    assert bob.mark_forgotten([alice.all()[0].id]) == []
    with pytest.raises(ConfigError, match="scope"):
        EpisodicMemoryStore(tmp_path, "", hashing_embedder)


def test_consolidated_store(tmp_path, hashing_embedder):
    store = ConsolidatedMemoryStore(tmp_path, "alice", hashing_embedder)
    m1 = store.add_memory(
        "User owns a cat called Tom",
        ["e1", "e2"],
        ["cat", "pet"],
        importance=0.8,
        themes=["pets"],
        relationships=["user-owns-cat"],
        confidence=0.9,
    )
    store.add_memory("User works night shifts as a nurse", ["e3"], ["job"])
    assert store.get_relevant("what pet does the user have, a cat?", k=1)[0].id == m1
    store.mark_accessed([m1])
    got = store.get(m1)
    assert got.access_count == 1 and got.themes == ["pets"] and got.confidence == 0.9
    assert [m.id for m in store.for_episode("e2")] == [m1]


def test_schema_store_find_related_and_update(tmp_path, hashing_embedder):
    store = SchemaStore(tmp_path, "alice", hashing_embedder)
    pets = store.add_schema(
        Schema(
            name="Pet care",
            description="looking after animals",
            core_concepts=["cat", "dog", "vet"],
        )
    )
    work = store.add_schema(
        Schema(
            name="Work life", description="job and shifts", core_concepts=["job", "nurse", "shift"]
        )
    )
    assert store.find_related_schemas(["Nurse", "shift"], k=1)[0].id == work
    assert store.find_related_schemas("taking the cat to the vet", k=1)[0].id == pets
    assert store.find_related_schemas([], k=3) == []
    before = store.get(pets).updated_at
    updated = store.update_schema(
        pets, core_concepts=["cat", "dog", "vet", "hamster"], confidence=0.8
    )
    assert updated.updated_at >= before and store.get(pets).confidence == 0.8
    assert store.find_related_schemas(["hamster"], k=1)[0].id == pets
    with pytest.raises(StoreError, match="not found"):
        store.update_schema("missing", confidence=0.1)
    with pytest.raises(ValidationError, match="confidence"):
        store.update_schema(pets, confidence=2.0)


_READER = textwrap.dedent("""
    import json, sys
    from memlab.embed.hashing import HashingEmbedder
    from memlab.stores.consolidated import ConsolidatedMemoryStore
    from memlab.stores.episodic import EpisodicMemoryStore
    from memlab.stores.schemas import SchemaStore
    e = EpisodicMemoryStore(sys.argv[1], "alice", HashingEmbedder())
    c = ConsolidatedMemoryStore(sys.argv[1], "alice", HashingEmbedder())
    s = SchemaStore(sys.argv[1], "alice", HashingEmbedder())
    print(json.dumps({
        "episodes": [x.id for x in e.get_relevant("cat Tom", k=5)],
        "forgotten": [x.id for x in e.all() if x.forgotten],
        "access": {x.id: x.access_count for x in e.all()},
        "memories": [x.summary for x in c.all()],
        "schemas": [x.name for x in s.find_related_schemas(["cat"], k=1)],
    }))
""")


def test_a_new_process_sees_all_three_stores(tmp_path, hashing_embedder):
    e = EpisodicMemoryStore(tmp_path, "alice", hashing_embedder)
    keep = e.add_episode("User: my cat is called Tom")
    gone = e.add_episode("User: my cat Tom is grey")
    e.mark_forgotten([gone])
    e.mark_accessed([keep])
    ConsolidatedMemoryStore(tmp_path, "alice", hashing_embedder).add_memory("User has a cat")
    SchemaStore(tmp_path, "alice", hashing_embedder).add_schema(
        Schema(name="Pets", description="animals", core_concepts=["cat"])
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", _READER, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    import json

    seen = json.loads(out)
    assert seen["episodes"] == [keep] and seen["forgotten"] == [gone]
    assert seen["access"] == {keep: 1, gone: 0}
    assert seen["memories"] == ["User has a cat"] and seen["schemas"] == ["Pets"]


def test_reopen_with_another_embedder_reembeds(tmp_path, hashing_embedder, minilm):
    EpisodicMemoryStore(tmp_path, "alice", hashing_embedder).add_episode("My dog is a beagle")
    reopened = EpisodicMemoryStore(tmp_path, "alice", minilm)
    hits = reopened.get_relevant_scored("what breed is my dog?", k=1)
    assert hits[0][0].content == "My dog is a beagle" and hits[0][1] > 0.4


def test_episode_model_round_trips(episodes):
    ep = Episode(content="given", importance=0.7)
    assert episodes.add(ep) == ep.id and episodes.get(ep.id) == ep


def test_records_and_vectors_live_on_the_configured_backends(tmp_path, hashing_embedder, backend):
    from memlab.stores.base import run_namespace
    from memlab.stores.records import memory_records
    from memlab.stores.vector import run_tag

    store = EpisodicMemoryStore(tmp_path, "alice", hashing_embedder, flush_every=2)
    ids = [store.add_episode(f"User: fact number {i}") for i in range(3)]
    assert store.namespace == run_namespace(tmp_path)
    with store.backends.engine.connect() as conn:
        rows = conn.execute(memory_records.select().where(
            memory_records.c.namespace == store.namespace).order_by(memory_records.c.seq)).all()
    assert [r.id for r in rows] == ids and {r.kind for r in rows} == {"episodes"}
    assert store.backends.engine.dialect.name == (
        "postgresql" if backend == "servers" else "sqlite")
    assert (tmp_path / "memory.sqlite").exists() == (backend == "embedded")
    assert store.vectors.collection.name.startswith(run_tag(store.namespace) + "-")
    assert sorted(store.vectors.vectors()) == sorted(ids[:2])  # the third waits for a flush
    store.close()
    assert flushed(store) == sorted(ids)


def test_vectors_lost_before_a_flush_are_rebuilt_at_open(tmp_path, hashing_embedder):
    """A process killed before its vectors reached chroma: the records are in SQL, and the
    next open embeds them again, so search finds them as before."""
    first = EpisodicMemoryStore(tmp_path, "alice", hashing_embedder)
    ids = _add_days(first, ["User: my cat is called Tom", "User: I work as a nurse"])
    assert first.vectors.vectors() == {}  # nothing flushed: the "killed" process never closes
    second = EpisodicMemoryStore(tmp_path, "alice", hashing_embedder)
    assert [e.id for e in second.get_relevant("cat Tom", k=2)] == ids
    second.close()
    assert flushed(second) == sorted(ids)


def test_two_folders_never_share_records(tmp_path, hashing_embedder, backend):
    """On one database and one chroma server, stores of two folders see only their own."""
    one = EpisodicMemoryStore(tmp_path / "one", "alice", hashing_embedder)
    two = EpisodicMemoryStore(tmp_path / "two", "alice", hashing_embedder)
    one.add_episode("User: the code is 4711")
    one.close()
    assert two.all() == [] and two.get_relevant("code 4711", k=3) == []
    assert EpisodicMemoryStore(tmp_path / "two", "alice", hashing_embedder).count() == 0
