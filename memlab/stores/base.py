"""Store contracts: one ABC per role, and the registries that pick a backend by name.

Roles: operating memory (:class:`KeyValueStore`), vector store (:class:`VectorStore`). The
relational store (:mod:`memlab.stores.sql`) is one SQLAlchemy implementation whose dialect (SQLite
or PostgreSQL) is picked by URL; the memory record stores (:mod:`memlab.stores.records`: episodic,
consolidated, schema, distilled facts) keep their records there and their vectors in the vector
store.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memlab.registry import Registry

SCOPE_FIELD = "memlab_scope"
"""Metadata key that records which scope a vector document belongs to."""


def run_namespace(folder: str | Path) -> str:
    """The namespace of the run (or ad-hoc agent) whose folder is ``folder``.

    The folder's name (a run folder is named by its run id) plus a short hash of its resolved
    path, so two results folders on one server never share memory.

    Example:
        >>> run_namespace("/results/ltm-rag-1000-s0")
        'ltm-rag-1000-s0.25653586'
    """
    path = Path(folder).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", path.name)[:80] or "run"
    return f"{name}.{hashlib.blake2b(str(path).encode(), digest_size=4).hexdigest()}"


class VectorHit(BaseModel):
    """One document returned by a vector store.

    Attributes:
        similarity: cosine similarity clipped to 0-1 for queries; None for plain ``get``.
    """

    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    similarity: float | None = Field(None, ge=0.0, le=1.0)


class VectorStore(ABC):
    """Documents with embeddings, bound to one scope (a user or agent id).

    Every call is scoped: ``query``/``get``/``count`` only ever see documents added under the
    same scope, whatever ``where`` says.
    """

    scope: str

    @abstractmethod
    def add(
        self, ids: list[str], texts: list[str], metadatas: list[dict[str, Any]] | None = None,
        embeddings: Any = None,
    ) -> None:
        """Add (or overwrite) documents; metadata values are str, int, float or bool.

        ``embeddings`` (one vector per text, from the store's embedder) skips embedding them.
        """

    @abstractmethod
    def query(self, text: str, k: int = 5, where: dict[str, Any] | None = None) -> list[VectorHit]:
        """Return the ``k`` most similar documents, best first, optionally filtered on metadata."""

    @abstractmethod
    def get(self, ids: list[str]) -> list[VectorHit]:
        """Return the documents with these ids that exist in this scope (in the order asked)."""

    @abstractmethod
    def vectors(self) -> dict[str, Any]:
        """Every document's embedding in this scope, by id (float32 arrays)."""

    @abstractmethod
    def delete(self, ids: list[str]) -> None:
        """Delete documents by id (unknown ids are ignored)."""

    @abstractmethod
    def count(self) -> int:
        """Number of documents in this scope."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


Updater = Callable[[str | None], str | None]
"""Takes the current value (None when missing), returns the new one (None deletes the key)."""


class KeyValueStore(ABC):
    """String keys to string values with the atomic operations operating memory needs.

    Attributes:
        url: where the data lives, as shown in error messages.
    """

    url: str = "memory://"

    @abstractmethod
    def get(self, key: str) -> str | None:
        """Return the value or None."""

    @abstractmethod
    def set(self, key: str, value: str) -> None:
        """Store a value."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Remove a key; True if it existed."""

    @abstractmethod
    def keys(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""

    @abstractmethod
    def update(self, key: str, fn: Updater) -> str | None:
        """Atomically replace the value with ``fn(current)``; concurrent updates never get lost.

        ``fn`` may be called more than once (optimistic retries) and must not have side effects.
        Returns the value written (None if deleted).
        """

    @abstractmethod
    def append(self, key: str, text: str, separator: str = "") -> None:
        """Atomically append ``text``, preceded by ``separator`` when the value is non-empty."""

    @abstractmethod
    def clear(self) -> int:
        """Delete every key of this store (on a shared server: its namespace); returns how many."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


KV_STORES: Registry[KeyValueStore] = Registry("operating memory")
KV_STORES.register("memory", "memlab.stores.kv:InProcessKV")
KV_STORES.register("redis", "memlab.stores.kv:RedisKV")

VECTOR_STORES: Registry[VectorStore] = Registry("vector store")
VECTOR_STORES.register("chroma", "memlab.stores.vector:ChromaVectorStore")
