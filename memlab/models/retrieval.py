"""Seed 001: the document-QA agent's Query, RetrievedChunk, AgentResponse, VectorEmbedding.

The query state machine is PENDING -> PROCESSING -> COMPLETED | FAILED. Assigning
``query.status`` (or calling :meth:`Query.transition_to`) with any other move raises
:class:`IllegalQueryTransition`, a ``ValueError``.

``Query.timestamp`` must lie within the last 24 hours. Validation measures that against the
current time, or against ``context={"now": <datetime>}`` when given (to reload stored queries).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from memlab.models._common import (
    IllegalStatusTransition,
    NonBlankStr,
    SeedModel,
    StatusMachine,
    UtcDatetime,
    new_id,
    utc_now,
)

__all__ = [
    "QUERY_TRANSITIONS",
    "AgentResponse",
    "EmbeddingCollection",
    "IllegalQueryTransition",
    "Query",
    "QueryStatus",
    "RetrievedChunk",
    "VectorEmbedding",
    "check_collection_dimensions",
]

QUERY_MAX_AGE = timedelta(hours=24)
CLOCK_SKEW = timedelta(minutes=5)  # a timestamp this far in the future still counts as "now"


class QueryStatus(StrEnum):
    """Query processing states."""

    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


QUERY_TRANSITIONS: dict[QueryStatus, frozenset[QueryStatus]] = {
    QueryStatus.PENDING: frozenset({QueryStatus.PROCESSING}),
    QueryStatus.PROCESSING: frozenset({QueryStatus.COMPLETED, QueryStatus.FAILED}),
    QueryStatus.COMPLETED: frozenset(),
    QueryStatus.FAILED: frozenset(),
}


class IllegalQueryTransition(IllegalStatusTransition):
    """A query was moved between states the seed's state machine does not connect."""


class Query(StatusMachine):
    """A user question about the document, with its processing status."""

    TRANSITIONS: ClassVar[dict[Any, frozenset]] = QUERY_TRANSITIONS
    RULE: ClassVar[str] = "PENDING -> PROCESSING -> COMPLETED | FAILED"

    id: str = Field(default_factory=new_id)
    text: NonBlankStr = Field(min_length=1, max_length=1000, description="1-1000 characters")
    timestamp: UtcDatetime = Field(default_factory=utc_now, description="within the last 24 hours")
    user_id: str | None = None
    session_id: str | None = None
    status: QueryStatus = QueryStatus.PENDING

    @field_validator("timestamp")
    @classmethod
    def _within_last_24_hours(cls, value: datetime, info: ValidationInfo) -> datetime:
        now = (info.context or {}).get("now") or utc_now()
        if value < now - QUERY_MAX_AGE or value > now + CLOCK_SKEW:
            raise ValueError(f"must be within the last 24 hours (now is {now.isoformat()})")
        return value

    def illegal(self, source: Any, target: Any) -> ValueError:
        return IllegalQueryTransition(source, target, QUERY_TRANSITIONS[source], self.RULE)

    @property
    def is_finished(self) -> bool:
        return self.status in (QueryStatus.COMPLETED, QueryStatus.FAILED)


class RetrievedChunk(SeedModel):
    """A segment of the document retrieved for a query."""

    id: str = Field(default_factory=new_id)
    content: str = Field(min_length=10, max_length=5000, description="10-5000 characters")
    source_document: NonBlankStr = Field(description="document/chapter reference, not empty")
    page_number: int | None = Field(None, ge=0)
    similarity_score: float = Field(ge=0.0, le=1.0, description="0.0-1.0")
    metadata: dict[str, Any] = Field(default_factory=dict)


class AgentResponse(SeedModel):
    """The agent's answer to a query, with the chunks it used and the sources it cites."""

    id: str = Field(default_factory=new_id)
    query_id: str
    content: str = Field(min_length=10, max_length=10000, description="10-10000 characters")
    retrieved_chunks: list[RetrievedChunk] = Field(min_length=1, description="at least 1 chunk")
    timestamp: UtcDatetime = Field(default_factory=utc_now)
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="0.0-1.0 if provided")
    sources: list[str] = Field(default_factory=list)


class VectorEmbedding(SeedModel):
    """The vector of one chunk of a document."""

    id: str = Field(default_factory=new_id)
    text_content: NonBlankStr = Field(description="the embedded text, not empty")
    vector: list[float] = Field(min_length=1)
    document_id: str
    chunk_index: int = Field(ge=0, description="position of the chunk, non-negative")

    @property
    def dimension(self) -> int:
        return len(self.vector)


def check_collection_dimensions(
    embeddings: list[VectorEmbedding], expected: int | None = None
) -> int | None:
    """Check every vector has the same dimensionality; return it (None for no embeddings).

    Raises:
        ValueError: naming the first embedding whose dimension differs.
    """
    for index, emb in enumerate(embeddings):
        if expected is None:
            expected = emb.dimension
        elif emb.dimension != expected:
            raise ValueError(
                f"vector must have consistent dimensionality within a collection: "
                f"embeddings[{index}] (id {emb.id!r}) has {emb.dimension}, expected {expected}"
            )
    return expected


class EmbeddingCollection(SeedModel):
    """Embeddings of one collection; all vectors share one dimensionality."""

    name: NonBlankStr
    dimension: int | None = Field(None, ge=1, description="set from the first embedding if None")
    embeddings: list[VectorEmbedding] = Field(default_factory=list)

    @field_validator("embeddings")
    @classmethod
    def _consistent_dimension(
        cls, value: list[VectorEmbedding], info: ValidationInfo
    ) -> list[VectorEmbedding]:
        check_collection_dimensions(value, info.data.get("dimension"))
        return value

    @model_validator(mode="after")
    def _set_dimension(self) -> EmbeddingCollection:
        if self.dimension is None and self.embeddings:
            # object.__setattr__ skips re-validation (this validator would run again).
            object.__setattr__(self, "dimension", self.embeddings[0].dimension)
        return self

    def add(self, embedding: VectorEmbedding) -> None:
        """Append one embedding.

        Raises:
            ValueError: its dimension differs from the collection's.
        """
        expected = self.dimension if self.dimension is not None else embedding.dimension
        if embedding.dimension != expected:
            raise ValueError(
                "vector must have consistent dimensionality within a collection: "
                f"embedding {embedding.id!r} has {embedding.dimension}, expected {expected}"
            )
        self.embeddings = [*self.embeddings, embedding]
