"""Seed 001 models: Query (+ state machine), RetrievedChunk, AgentResponse, VectorEmbedding."""

from datetime import timedelta

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models import utc_now
from memlab.models.retrieval import (
    AgentResponse,
    EmbeddingCollection,
    IllegalQueryTransition,
    Query,
    QueryStatus,
    RetrievedChunk,
    VectorEmbedding,
    check_collection_dimensions,
)


def reject(model: type[BaseModel], data: dict, *fragments: str, context=None) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data, context=context)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


CHUNK = {
    "content": "Humanoid robots walk on two legs.",
    "source_document": "chapter_3",
    "similarity_score": 0.82,
}


def emb(dim: int, index: int = 0) -> VectorEmbedding:
    return VectorEmbedding(text_content="t", vector=[0.1] * dim, document_id="d", chunk_index=index)


SAMPLES = {
    "Query": Query(text="What is a humanoid robot?", user_id="u", session_id="s"),
    "RetrievedChunk": RetrievedChunk(**CHUNK, page_number=12, metadata={"embedding_id": "e1"}),
    "AgentResponse": AgentResponse(
        query_id="q1",
        content="A humanoid robot is ...",
        retrieved_chunks=[CHUNK],
        confidence=0.7,
        sources=["chapter_3"],
    ),
    "VectorEmbedding": emb(4),
    "EmbeddingCollection": EmbeddingCollection(name="book", embeddings=[emb(4), emb(4, 1)]),
}


# --- Query -------------------------------------------------------------------------------


def test_query_text_length_1_to_1000():
    assert len(Query(text="x" * 1000).text) == 1000
    assert Query(text="?").text == "?"
    reject(Query, {"text": "x" * 1001}, "text", "at most 1000 characters")
    reject(Query, {"text": ""}, "text", "at least 1 character")


def test_query_text_not_whitespace_only():
    reject(Query, {"text": "   \t"}, "text", "empty or whitespace only")


def test_query_timestamp_within_last_24_hours():
    now = utc_now()
    assert Query(text="q", timestamp=now - timedelta(hours=23)).timestamp < now
    reject(
        Query,
        {"text": "q", "timestamp": now - timedelta(hours=25)},
        "timestamp",
        "within the last 24 hours",
    )
    reject(
        Query,
        {"text": "q", "timestamp": now + timedelta(hours=1)},
        "timestamp",
        "within the last 24 hours",
    )


def test_query_timestamp_checked_against_context_now():
    old = utc_now() - timedelta(days=30)
    data = {"text": "q", "timestamp": old.isoformat()}
    assert Query.model_validate(data, context={"now": old + timedelta(hours=1)}).timestamp == old
    reject(Query, data, "timestamp", context={"now": old + timedelta(hours=25)})


def test_query_state_machine_happy_paths():
    q = Query(text="q")
    assert q.status is QueryStatus.PENDING
    q.transition_to("PROCESSING").transition_to(QueryStatus.COMPLETED)
    assert q.status is QueryStatus.COMPLETED and q.is_finished
    failed = Query(text="q").transition_to("PROCESSING")
    failed.status = QueryStatus.FAILED
    assert failed.status is QueryStatus.FAILED


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ([], "COMPLETED"),
        ([], "FAILED"),
        ([], "PENDING"),
        (["PROCESSING"], "PENDING"),
        (["PROCESSING", "COMPLETED"], "FAILED"),
        (["PROCESSING", "COMPLETED"], "PROCESSING"),
        (["PROCESSING", "FAILED"], "COMPLETED"),
    ],
)
def test_query_illegal_transitions_raise(path, illegal):
    q = Query(text="q")
    for step in path:
        q.transition_to(step)
    before = q.status
    with pytest.raises(IllegalQueryTransition, match="status: illegal transition") as exc:
        q.status = illegal
    assert isinstance(exc.value, ValueError)
    assert q.status is before


def test_query_status_must_be_a_state():
    reject(Query, {"text": "q", "status": "DONE"}, "status", "'PENDING'")


# --- RetrievedChunk ----------------------------------------------------------------------


def test_chunk_content_10_to_5000():
    assert RetrievedChunk(**{**CHUNK, "content": "x" * 10})
    assert RetrievedChunk(**{**CHUNK, "content": "x" * 5000})
    reject(RetrievedChunk, {**CHUNK, "content": "x" * 9}, "content", "at least 10 characters")
    reject(RetrievedChunk, {**CHUNK, "content": "x" * 5001}, "content", "at most 5000 characters")


def test_chunk_similarity_0_to_1():
    assert RetrievedChunk(**{**CHUNK, "similarity_score": 1.0}).similarity_score == 1.0
    reject(RetrievedChunk, {**CHUNK, "similarity_score": 1.1}, "similarity_score", "less than")
    reject(RetrievedChunk, {**CHUNK, "similarity_score": -0.1}, "similarity_score", "greater")


def test_chunk_source_document_not_empty():
    reject(RetrievedChunk, {**CHUNK, "source_document": ""}, "source_document", "empty")
    reject(RetrievedChunk, {**CHUNK, "source_document": "  "}, "source_document", "empty")


# --- AgentResponse -----------------------------------------------------------------------


def response(**kw) -> dict:
    return {
        "query_id": "q",
        "content": "An answer of some length.",
        "retrieved_chunks": [CHUNK],
        **kw,
    }


def test_response_content_10_to_10000():
    assert AgentResponse(**response(content="y" * 10000))
    reject(AgentResponse, response(content="short"), "content", "at least 10 characters")
    reject(AgentResponse, response(content="y" * 10001), "content", "at most 10000 characters")


def test_response_needs_at_least_one_chunk():
    reject(AgentResponse, response(retrieved_chunks=[]), "retrieved_chunks", "at least 1 item")


def test_response_confidence_optional_0_to_1():
    assert AgentResponse(**response()).confidence is None
    reject(AgentResponse, response(confidence=1.5), "confidence", "less than or equal to 1")
    reject(AgentResponse, response(confidence=-1), "confidence", "greater than or equal to 0")


def test_response_validates_nested_chunks():
    bad = {**CHUNK, "similarity_score": 3}
    reject(AgentResponse, response(retrieved_chunks=[bad]), "retrieved_chunks.0.similarity_score")


# --- VectorEmbedding ---------------------------------------------------------------------


def test_embedding_text_not_empty_and_index_non_negative():
    base = {"text_content": "t", "vector": [0.1], "document_id": "d", "chunk_index": 0}
    reject(VectorEmbedding, {**base, "text_content": " "}, "text_content", "empty")
    reject(VectorEmbedding, {**base, "chunk_index": -1}, "chunk_index", "greater than or equal")
    reject(VectorEmbedding, {**base, "vector": []}, "vector", "at least 1 item")


def test_check_collection_dimensions():
    assert check_collection_dimensions([emb(384), emb(384)]) == 384
    assert check_collection_dimensions([]) is None
    with pytest.raises(ValueError, match="consistent dimensionality.*embeddings\\[1\\]"):
        check_collection_dimensions([emb(384), emb(768)])
    with pytest.raises(ValueError, match="expected 768"):
        check_collection_dimensions([emb(384)], expected=768)


def test_collection_dimension_consistent():
    coll = EmbeddingCollection(name="c", embeddings=[emb(3)])
    assert coll.dimension == 3
    coll.add(emb(3, 1))
    with pytest.raises(ValueError, match="consistent dimensionality"):
        coll.add(emb(5, 2))
    assert len(coll.embeddings) == 2
    reject(
        EmbeddingCollection,
        {"name": "c", "embeddings": [emb(3), emb(4)]},
        "embeddings",
        "consistent dimensionality",
    )
    reject(
        EmbeddingCollection,
        {"name": "c", "dimension": 4, "embeddings": [emb(3)]},
        "embeddings",
        "expected 4",
    )


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (Query, '{"text": 5}', ("text", "valid string")),
    (
        RetrievedChunk,
        '{"content": "long enough text", "source_document": "s", "similarity_score": "high"}',
        ("similarity_score", "valid number"),
    ),
    (
        AgentResponse,
        '{"query_id": "q", "content": "long enough", "retrieved_chunks": {}}',
        ("retrieved_chunks", "valid array"),
    ),
    (
        VectorEmbedding,
        '{"text_content": "t", "vector": ["a"], "document_id": "d", "chunk_index": 0}',
        ("vector.0", "valid number"),
    ),
    (EmbeddingCollection, '{"name": "c", "dimension": 0}', ("dimension", "greater")),
    (Query, '{"text": "q",}', ("Invalid JSON",)),
]
