"""Contract: the record-store conditions on PostgreSQL + a chroma server give the embedded results.

episodic, episodic_summary and sleep keep their records in the SQL layer and their vectors in the
vector layer. The same run (persona suite, seed 0, Table 2 protocol, scripted FakeLLM, hashing
embedder) on SQLite + embedded chroma and on PostgreSQL + ``chroma run`` must write the same
turns.jsonl (timing fields aside) and scores.jsonl; the answers depend on the whole prompt, so a
memory recalled differently changes them.
"""

from __future__ import annotations

import hashlib

import pytest
from memory_fakes import memory_llm
from sqlalchemy import func, select
from test_runner import comparable

from memlab import lab
from memlab.bench.runlog import read_jsonl
from memlab.embed.hashing import HashingEmbedder
from memlab.stores.base import run_namespace
from memlab.stores.records import memory_records
from memlab.stores.sql import make_engine
from memlab.stores.vector import make_client, run_tag

pytestmark = pytest.mark.services


def digest_answer(messages) -> str:
    """An option chosen by a digest of the whole prompt (memory included)."""
    digest = hashlib.sha1("\n".join(m.content for m in messages).encode()).hexdigest()
    return f"Noted {digest[:8]}. <final_answer>({'abcd'[int(digest, 16) % 4]})</final_answer>"


def run_persona(condition: str, results_dir) -> object:
    spec = lab.RunSpec(suite="persona", condition=condition, span=300, seed=0, llm="fake",
                       embedder="hashing", probes_sleep=True)
    return lab.run(spec, results_dir, llm=memory_llm(digest_answer), embedder=HashingEmbedder(),
                   progress=False)


@pytest.mark.parametrize("condition", ["episodic", "episodic_summary", "sleep"])
def test_postgres_and_chroma_server_give_the_embedded_results(
        condition, tmp_path, monkeypatch, postgres_server, chroma_server):
    for name in ("REDIS", "SQL", "CHROMA"):
        monkeypatch.delenv(f"MEMLAB_{name}_URL", raising=False)
    embedded = run_persona(condition, tmp_path / "embedded")
    monkeypatch.setenv("MEMLAB_SQL_URL", postgres_server.url)
    monkeypatch.setenv("MEMLAB_CHROMA_URL", chroma_server.url)
    served = run_persona(condition, tmp_path / "served")

    turns = comparable(served / "turns.jsonl")
    assert turns == comparable(embedded / "turns.jsonl")
    assert read_jsonl(served / "scores.jsonl") == read_jsonl(embedded / "scores.jsonl")
    assert len({t["reply"] for t in turns if t["kind"] == "question"}) > 10  # prompts differ
    kinds = {kind for t in turns for kind in t.get("memory_kinds") or []}
    assert "episode" in kinds
    if condition != "episodic":  # cycles ran and their summaries reached prompts
        assert {"summary", "consolidated"} & kinds

    # ... and the served run really kept its memory on the servers, not in the folder
    assert list((embedded / "store").rglob("memory.sqlite"))
    assert not list((served / "store").rglob("memory.sqlite"))
    assert not list((served / "store").rglob("chroma"))
    namespace = run_namespace(served)
    engine = make_engine(postgres_server.url)
    with engine.connect() as conn:
        kinds_stored = dict(conn.execute(
            select(memory_records.c.kind, func.count()).where(
                memory_records.c.namespace == namespace).group_by(memory_records.c.kind)).all())
    engine.dispose()
    assert kinds_stored["episodes"] == sum(1 for t in turns if t["turn_number"])
    if condition != "episodic":
        assert kinds_stored["consolidated_memories"] >= 1
    if condition == "sleep":
        assert kinds_stored.get("schemas", 0) >= 1
    collections = [c.name for c in make_client(url=chroma_server.url).list_collections()]
    assert sum(name.startswith(run_tag(namespace) + "-") for name in collections) >= 1

    if condition == "sleep":  # the views read the records where the run kept them
        memories, schemas = lab.consolidated_memories(served), lab.schemas_formed(served)
        assert len(memories) == kinds_stored["consolidated_memories"]
        assert len(schemas) == kinds_stored["schemas"]
        monkeypatch.delenv("MEMLAB_SQL_URL")
        assert lab.consolidated_memories(embedded).equals(memories)
        assert lab.schemas_formed(embedded).equals(schemas)
