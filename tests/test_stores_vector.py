"""Vector store contract: chromadb embedded (PersistentClient) and a real `chroma run` server."""

from __future__ import annotations

import itertools

import pytest

from memlab.errors import ConfigError
from memlab.stores.base import SCOPE_FIELD, VECTOR_STORES
from memlab.stores.vector import (
    HNSW,
    ChromaVectorStore,
    MemlabEmbeddingFunction,
    collection_name,
    make_client,
)

_ids = itertools.count()

FACTS = [
    ("f1", "My sister Anna lives in Lisbon.", {"turn_number": 1, "kind": "fact"}),
    ("f2", "I am allergic to peanuts.", {"turn_number": 2, "kind": "fact"}),
    ("f3", "Our dog is a beagle called Biscuit.", {"turn_number": 3, "kind": "pet"}),
    ("f4", "The meeting moved to Thursday at 3 pm.", {"turn_number": 4, "kind": "fact"}),
]


@pytest.fixture(params=["embedded", "server"])
def where(request, tmp_path) -> dict:
    """Where a store of this backend lives: ``path`` (embedded) or ``url`` (server)."""
    if request.param == "embedded":
        return {"path": tmp_path / "chroma"}
    return {"url": request.getfixturevalue("chroma_server").url}


@pytest.fixture
def make_store(where, minilm):
    """Factory: make_store(scope) -> a ChromaVectorStore of this backend, fresh namespace."""
    namespace = f"test{next(_ids)}"
    made: list[ChromaVectorStore] = []

    def make(scope: str) -> ChromaVectorStore:
        made.append(ChromaVectorStore(scope, minilm, namespace=namespace, **where))
        return made[-1]

    yield make
    for store in made:
        store.close()


def _fill(store: ChromaVectorStore) -> None:
    store.add([f[0] for f in FACTS], [f[1] for f in FACTS], [f[2] for f in FACTS])


def test_query_ranks_the_relevant_document_first(make_store):
    store = make_store("alice")
    _fill(store)
    hits = store.query("What kind of dog do we have?", k=3)
    assert [h.id for h in hits][0] == "f3" and len(hits) == 3
    sims = [h.similarity for h in hits]
    assert sims == sorted(sims, reverse=True) and all(0.0 <= s <= 1.0 for s in sims)
    assert hits[0].metadata == {"turn_number": 3, "kind": "pet"}  # scope key not exposed


@pytest.mark.parametrize("order", [("t1", "t2"), ("t2", "t1")])
def test_identical_documents_tie_in_id_order_whatever_was_stored_first(make_store, order):
    """Two identical exchanges tie in similarity; the hit kept at k is the lower id, however
    they were inserted (chroma returned the first inserted, so a replay could differ)."""
    store = make_store("alice")
    _fill(store)
    for doc_id in order:
        store.add([doc_id], ["Do you think it will rain this weekend?"])
    hits = store.query("Will it rain this weekend?", k=1)
    assert [h.id for h in hits] == ["t1"]
    assert [h.id for h in store.query("Will it rain this weekend?", k=2)] == ["t1", "t2"]


def test_a_tie_larger_than_the_first_fetch_is_still_broken_by_id(make_store):
    """30 identical documents at the k-th place: chroma's first k + TIE_SLACK hits are any of
    them (its graph differs per process); the k kept must be the lowest ids all the same."""
    store = make_store("alice")
    _fill(store)
    ids = [f"t{i:02d}" for i in range(30)]
    store.add(ids[::-1], ["Do you think it will rain this weekend?"] * 30)
    hits = store.query("Will it rain this weekend?", k=5)
    assert [h.id for h in hits] == ids[:5]


def test_collections_get_memlabs_hnsw_settings_and_an_old_one_its_ef_search(where, minilm):
    """New collections are made with :data:`HNSW`; one made with chroma's defaults (an older
    run folder) keeps its ef_construction, which chroma cannot change, gets memlab's ef_search
    and still answers."""
    namespace = f"old{next(_ids)}"
    client = make_client(**where)
    old = client.get_or_create_collection(
        collection_name(namespace, "alice"), embedding_function=MemlabEmbeddingFunction(minilm),
        metadata={"hnsw:space": "cosine", SCOPE_FIELD: "alice", "embedder": minilm.name})
    old.add(ids=[f[0] for f in FACTS], documents=[f[1] for f in FACTS],
            metadatas=[{**f[2], SCOPE_FIELD: "alice"} for f in FACTS])
    assert old.configuration_json["hnsw"]["ef_search"] < HNSW["ef_search"]
    reopened = ChromaVectorStore("alice", minilm, namespace=namespace, **where)
    hnsw = reopened.collection.configuration_json["hnsw"]
    assert hnsw["ef_search"] == HNSW["ef_search"]
    assert hnsw["ef_construction"] == old.configuration_json["hnsw"]["ef_construction"]
    assert reopened.query("What kind of dog do we have?", k=1)[0].id == "f3"
    fresh = ChromaVectorStore("bob", minilm, namespace=namespace, **where)
    hnsw = fresh.collection.configuration_json["hnsw"]
    assert {key: hnsw[key] for key in HNSW} == HNSW


def test_where_filters_on_metadata(make_store):
    store = make_store("alice")
    _fill(store)
    hits = store.query("What kind of dog do we have?", k=4, where={"kind": "fact"})
    assert {h.id for h in hits} == {"f1", "f2", "f4"}
    hits = store.query("anything", k=4, where={"turn_number": {"$gte": 3}})
    assert {h.id for h in hits} == {"f3", "f4"}


def test_get_delete_count_and_upsert(make_store):
    store = make_store("alice")
    _fill(store)
    assert [h.id for h in store.get(["f4", "nope", "f1"])] == ["f4", "f1"]
    assert store.get(["f1"])[0].similarity is None
    store.delete(["f1", "nope"])
    assert store.count() == 3 and store.get(["f1"]) == []
    store.add(["f2"], ["I am allergic to cats."], [{"kind": "fact"}])
    assert store.count() == 3 and store.get(["f2"])[0].text == "I am allergic to cats."


def test_scopes_are_isolated(make_store):
    alice, bob = make_store("alice"), make_store("bob")
    _fill(alice)
    bob.add(["f1"], ["Bob's car is a red Volvo."])
    for query in ("Where does Anna live?", "dog beagle Biscuit", "peanuts"):
        assert [h.id for h in bob.query(query, k=10)] == ["f1"]
        assert all("Volvo" not in h.text for h in alice.query(query, k=10))
    assert bob.query("x", k=10, where={SCOPE_FIELD: "alice"}) == []
    assert [h.text for h in bob.get(["f1", "f2", "f3"])] == ["Bob's car is a red Volvo."]
    bob.delete(["f2", "f3"])
    assert alice.count() == 4 and bob.count() == 1


def test_documents_survive_a_new_client(make_store):
    _fill(make_store("carol"))
    reopened = make_store("carol")
    assert reopened.count() == 4
    assert reopened.query("Where does Anna live?", k=1)[0].id == "f1"


def test_memlab_embedding_function_is_registered_not_chromas_default(make_store):
    store = make_store("dave")
    config = store.collection.configuration_json["embedding_function"]
    assert config["name"] == "memlab" and config["config"]["dim"] == 384


def test_bad_input_is_rejected_with_the_field(make_store):
    store = make_store("erin")
    with pytest.raises(ConfigError, match="same length"):
        store.add(["a", "b"], ["only one"])
    with pytest.raises(ConfigError, match="k: must be >= 1"):
        store.query("x", k=0)
    with pytest.raises(ConfigError, match="scope"):
        make_store(" ")


def test_registry_resolves_chroma():
    assert VECTOR_STORES.resolve("chroma") is ChromaVectorStore


def test_from_settings_and_unreachable_server(tmp_path, hashing_embedder):
    from services import free_port

    from memlab.config import get_settings
    from memlab.errors import StoreUnavailableError

    store = ChromaVectorStore.from_settings("u", hashing_embedder, tmp_path, get_settings())
    assert store.count() == 0 and (tmp_path / "chroma").is_dir()
    dead = get_settings(chroma_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(StoreUnavailableError, match="127.0.0.1"):
        ChromaVectorStore.from_settings("u", hashing_embedder, tmp_path, dead)
