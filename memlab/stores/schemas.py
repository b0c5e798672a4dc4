"""SchemaStore (seed 002): patterns induced from consolidated memories in sleep phase 3."""

from __future__ import annotations

from typing import Any

import numpy as np

from memlab.errors import ConfigError, StoreError
from memlab.models._common import utc_now
from memlab.models.sleep import Schema
from memlab.stores.records import ScopedRecordStore


def _norm(concept: str) -> str:
    return " ".join(concept.lower().split())


class SchemaStore(ScopedRecordStore[Schema]):
    """Schemas of one scope, found by concept overlap and embedding similarity."""

    table = "schemas"
    model = Schema

    def text_of(self, record: Schema) -> str:
        concepts = ", ".join(record.core_concepts)
        return f"{record.name}: {record.description}\n{concepts}"

    def time_of(self, record: Schema) -> float:
        return record.updated_at.timestamp()

    def add_schema(self, schema: Schema) -> str:
        """Store a new schema; returns its id."""
        return self._insert([schema])[0]

    def update_schema(self, schema_id: str, **changes: Any) -> Schema:
        """Change fields of a stored schema (validated), set ``updated_at``, re-embed it.

        Raises:
            StoreError: no schema ``schema_id`` in this scope.
        """
        current = self.get(schema_id)
        if current is None:
            raise StoreError(f"schema {schema_id!r} not found in scope {self.scope!r}")
        if "id" in changes and changes["id"] != schema_id:
            raise ConfigError("id: a schema's id cannot be changed")
        updated = Schema.model_validate(
            {**current.model_dump(), **changes, "updated_at": utc_now()}
        )
        self._save([updated], reembed=True)
        return updated

    def get_relevant(self, query: str, k: int = 5) -> list[Schema]:
        """The ``k`` schemas most similar to ``query`` (free text), best first."""
        return [s for s, _ in self.search(query, k)]

    def find_related_schemas(
        self, concepts: list[str] | str, k: int = 3, min_score: float = 0.0
    ) -> list[Schema]:
        """Schemas related to ``concepts``, best first (see :meth:`find_related_scored`)."""
        return [s for s, _ in self.find_related_scored(concepts, k, min_score)]

    def find_related_scored(
        self, concepts: list[str] | str, k: int = 3, min_score: float = 0.0
    ) -> list[tuple[Schema, float]]:
        """Rank schemas for a list of concepts or a free-text query.

        For a list, score = 0.5 * (share of the concepts among the schema's core concepts,
        case-insensitive) + 0.5 * cosine similarity of the joined concepts; for a string,
        cosine similarity alone. Schemas scoring below ``min_score`` are left out.
        """
        if isinstance(concepts, str):
            return [(s, v) for s, v in self.search(concepts, k) if v >= min_score]
        wanted = {_norm(c) for c in concepts if c.strip()}
        if not wanted or not self.count():
            return []
        query = self.embedder.embed([", ".join(sorted(wanted))])[0]
        with self._lock:
            sims = self._matrix.similarities(query)
            overlap = np.array(
                [
                    len(wanted & {_norm(c) for c in s.core_concepts}) / len(wanted)
                    for s in self._records
                ]
            )
            scores = 0.5 * overlap + 0.5 * sims
            best = self._matrix.best(np.where(scores >= min_score, scores, -np.inf), k)
            return [(self._records[row].model_copy(deep=True), score) for row, score in best]
