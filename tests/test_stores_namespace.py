"""The run namespace: every store of a run carries it on the servers, and purge deletes it all.

Redis keys (``memlab:{namespace}:...``), chroma collections (tagged by the namespace) and SQL rows
(the ``namespace`` column) of one run are deleted by ``purge_namespace``; another run's are kept.
"""

from __future__ import annotations

import pytest
from memory_fakes import memory_llm
from sqlalchemy import func, select

from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.memory._backends import purge_namespace
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.stores.base import run_namespace
from memlab.stores.kv import RedisKV
from memlab.stores.records import memory_records
from memlab.stores.sql import make_engine
from memlab.stores.vector import make_client, run_tag

pytestmark = pytest.mark.services

FACTS = ["My favourite colour is teal.", "I live in Porto.", "Remember: my cat is Mia."]


@pytest.fixture
def servers(monkeypatch, redis_server, postgres_server, chroma_server):
    for name, server in (("REDIS", redis_server), ("SQL", postgres_server),
                         ("CHROMA", chroma_server)):
        monkeypatch.setenv(f"MEMLAB_{name}_URL", server.url)
    return redis_server, postgres_server, chroma_server


def fill(condition: str, workdir) -> str:
    """Store a few exchanges with ``condition`` in ``workdir``; its namespace."""
    memory = MEMORIES.create(condition, scope=Scope(user_id="u1", agent_id=condition),
                             llm=memory_llm(), embedder=HashingEmbedder(), workdir=workdir)
    for turn, fact in enumerate(FACTS, start=1):
        memory.observe(Exchange(user=fact, assistant="Noted.", turn_number=turn))
    memory.close()
    return memory.namespace


def on_servers(namespace: str, servers) -> dict[str, int]:
    """How many Redis keys, SQL rows and chroma collections ``namespace`` holds."""
    redis, postgres, chroma = servers
    kv = RedisKV(redis.url, namespace=f"memlab:{namespace}:")
    engine = make_engine(postgres.url)
    with engine.connect() as conn:
        rows = conn.execute(select(func.count()).where(
            memory_records.c.namespace == namespace)).scalar()
    engine.dispose()
    collections = [c for c in make_client(url=chroma.url).list_collections()
                   if c.name.startswith(run_tag(namespace) + "-")]
    return {"redis keys": len(kv.keys()), "sql rows": rows, "collections": len(collections)}


def test_purge_deletes_one_runs_memory_on_every_server_and_keeps_the_others(tmp_path, servers):
    kept, purged = tmp_path / "kept", tmp_path / "purged"
    for workdir in (kept, purged):
        for condition in ("hybrid", "rag", "sleep", "full_context"):
            assert fill(condition, workdir) == run_namespace(workdir)
    before = {w: on_servers(run_namespace(w), servers) for w in (kept, purged)}
    for counts in before.values():  # hybrid + full_context keys, rag + sleep collections, rows
        assert counts["redis keys"] >= 2 and counts["sql rows"] >= 3
        assert counts["collections"] >= 2
    purge_namespace(run_namespace(purged))
    assert on_servers(run_namespace(purged), servers) == {
        "redis keys": 0, "sql rows": 0, "collections": 0}
    assert on_servers(run_namespace(kept), servers) == before[kept]


def test_purge_with_a_workdir_clears_the_embedded_stores(tmp_path, monkeypatch):
    for name in ("REDIS", "SQL", "CHROMA"):
        monkeypatch.delenv(f"MEMLAB_{name}_URL", raising=False)
    namespace = fill("sleep", tmp_path)
    reopened = MEMORIES.create("sleep", scope=Scope(user_id="u1", agent_id="sleep"),
                               llm=memory_llm(), embedder=HashingEmbedder(), workdir=tmp_path)
    assert reopened.episodes.count() == len(FACTS)
    reopened.close()
    purge_namespace(namespace, workdir=tmp_path)
    again = MEMORIES.create("sleep", scope=Scope(user_id="u1", agent_id="sleep"),
                            llm=memory_llm(), embedder=HashingEmbedder(), workdir=tmp_path)
    assert again.episodes.count() == 0 and again.episodes.vectors.vectors() == {}
    again.close()


def test_clearing_redis_without_a_namespace_is_refused(redis_server):
    with pytest.raises(ConfigError, match="namespace"):
        RedisKV(redis_server.url).clear()


def test_an_ad_hoc_memory_reopened_on_its_folder_finds_its_history(tmp_path, servers):
    """make_agent's case: no namespace given, so it comes from the folder."""
    fill("full_context", tmp_path)
    memory = MEMORIES.create("full_context", scope=Scope(user_id="u1", agent_id="full_context"),
                             llm=memory_llm(), workdir=tmp_path)
    assert [ex.user for ex in memory.recall("?").history] == FACTS
    other = MEMORIES.create("full_context", scope=Scope(user_id="u1", agent_id="full_context"),
                            llm=memory_llm(), workdir=tmp_path / "elsewhere")
    assert other.recall("?").history == []


@pytest.mark.parametrize("condition", ["sleep", "hybrid"])
def test_a_server_session_leaves_nothing_on_the_servers(tmp_path, servers, condition):
    """A session's memory on Redis / SQL / chroma is purged when the session is deleted, and the
    previous process's copy when a restarted server rebuilds the session from its journal."""
    from memlab.models.api import ObserveRequest, SessionCreate
    from memlab.server import SessionManager
    from memlab.server.sessions import Ticket

    def manager():
        return SessionManager(tmp_path, condition=condition, llm=memory_llm(),
                              embedder=HashingEmbedder())

    first = manager()
    info = first.create(SessionCreate(user_id="u1"))
    session = first.get(info.id)
    for fact in FACTS:
        first.observe(session, ObserveRequest(user=fact, assistant="Noted."), Ticket())
    old = session.namespace
    assert sum(on_servers(old, servers).values()) > 0  # positive control: it did store there
    first.close()
    second = manager()  # a restarted server: the session is rebuilt from its journal
    rebuilt = second.get(info.id)
    assert rebuilt.namespace != old
    assert on_servers(old, servers) == {"redis keys": 0, "sql rows": 0, "collections": 0}
    second.delete(info.id)
    assert on_servers(rebuilt.namespace, servers) == {"redis keys": 0, "sql rows": 0,
                                                      "collections": 0}
