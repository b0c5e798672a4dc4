"""The engine under memory's record stores: records in the SQL layer, vectors in the vector layer.

Every record (an Episode, a ConsolidatedMemory, a Schema, a DistilledFact) is one row of the
``memory_records`` table (:mod:`memlab.stores.sql`: ``memory.sqlite`` in the run folder, or
PostgreSQL via ``MEMLAB_SQL_URL``), keyed by (namespace, kind, scope, id) and holding the record
as JSON; its embedding is a document in a chroma collection per (namespace, kind, embedder,
scope) (:mod:`memlab.stores.vector`: ``chroma/`` in the run folder, or a server via
``MEMLAB_CHROMA_URL``). Those two are the store of record.

Search runs on an in-process index rebuilt from them at open (the records and a
:class:`~memlab.stores.matrix.VectorMatrix`): one matrix-vector product, under a millisecond at
10k records, where a chroma query costs 3-9 ms and the sleep condition searches up to four times
per turn. A record reaches SQL at once (write-through); its vector reaches chroma in batches of
``flush_every`` and on close (write-behind: one chroma write costs about as much as a turn's
budget). A record whose vector is missing at open (a process killed before its flush, or another
embedder) is re-embedded, so nothing is lost. One writer per scope at a time is assumed (the
agent that owns the memory); :meth:`ScopedRecordStore.reload` picks up another process's writes.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from pydantic import BaseModel
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    insert,
    inspect,
    select,
)
from sqlalchemy import update as sql_update
from sqlalchemy.exc import SQLAlchemyError

from memlab.config import get_settings
from memlab.embed.base import Embedder
from memlab.errors import ConfigError, StoreError
from memlab.stores.base import run_namespace
from memlab.stores.matrix import VectorMatrix
from memlab.stores.sql import JSONType, make_engine, shown_url, transaction
from memlab.stores.vector import ChromaVectorStore, make_client

M = TypeVar("M", bound=BaseModel)

SQLITE_FILE = "memory.sqlite"
CHROMA_FOLDER = "chroma"
WRITE_CHUNK = 1000  # vectors per chroma write when flushing

records_metadata = MetaData()
memory_records = Table(
    "memory_records",
    records_metadata,
    Column("namespace", String(255), primary_key=True),
    Column("kind", String(64), primary_key=True),
    Column("scope", String(512), primary_key=True),
    Column("id", String(128), primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("data", JSONType, nullable=False),
)


class RecordBackends:
    """The SQL engine and chroma client shared by the record stores of one memory.

    Args:
        workdir: the run folder: ``memory.sqlite`` and ``chroma/`` live there unless a URL is set.
        sql_url: database server (default ``MEMLAB_SQL_URL``; unset: SQLite in ``workdir``).
        chroma_url: chroma server (default ``MEMLAB_CHROMA_URL``; unset: embedded in ``workdir``).
    """

    def __init__(self, workdir: str | Path, *, sql_url: str | None = None,
                 chroma_url: str | None = None):
        settings = get_settings()
        self.sql_url = sql_url or settings.sql_url
        self.chroma_url = chroma_url or settings.chroma_url
        # a run rebuilds its memory from the journal: commits need not wait for the disk
        self.engine = make_engine(self.sql_url, Path(workdir) / SQLITE_FILE, durable=False)
        self.sql_shown = shown_url(self.engine)
        create_tables(self.engine)
        self.chroma_path = None if self.chroma_url else Path(workdir) / CHROMA_FOLDER
        self.chroma = make_client(path=self.chroma_path, url=self.chroma_url)

    def close(self) -> None:
        self.engine.dispose()
        self.chroma.close()  # chroma stops the folder's system with its last client


def create_tables(engine: Any) -> None:
    """Create ``memory_records`` unless it exists (a concurrent creator may win the race)."""
    try:
        with transaction(engine, shown_url(engine)) as conn:
            records_metadata.create_all(conn)
    except (StoreError, SQLAlchemyError):
        with transaction(engine, shown_url(engine)) as conn:
            records_metadata.create_all(conn)  # the table exists now, or the error is real


def purge_records(engine: Any, namespace: str) -> int:
    """Delete every record of ``namespace`` (all kinds and scopes); returns how many."""
    create_tables(engine)
    with transaction(engine, shown_url(engine)) as conn:
        return conn.execute(delete(memory_records).where(
            memory_records.c.namespace == namespace)).rowcount


def read_records(engine: Any, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Stored records of ``kind`` as JSON dicts (of one namespace, or all), in insertion order."""
    table = memory_records
    query = select(table.c.data).where(table.c.kind == kind)
    if namespace is not None:
        query = query.where(table.c.namespace == namespace)
    with transaction(engine, shown_url(engine)) as conn:
        if not inspect(conn).has_table(table.name):
            return []
        return [row.data for row in conn.execute(query.order_by(table.c.scope, table.c.seq))]


class ScopedRecordStore(ABC, Generic[M]):
    """One kind of pydantic record for one scope, with embedding search.

    Subclasses set ``table`` (the kind), ``model`` and implement :meth:`text_of`; they may
    override :meth:`recallable` (rows excluded from recall) and :meth:`time_of`.

    Args:
        workdir: the run folder (SQLite file and embedded chroma, unless servers are set).
        scope: whose memory this is (user or agent id); no call returns another scope's record.
        embedder: computes the vectors used by ``search``.
        namespace: the run this memory belongs to (default: ``run_namespace(workdir)``).
        backends: an SQL engine and chroma client to share (default: opened for ``workdir``
            and closed with the store).
        flush_every: vectors buffered before a chroma write.
    """

    table: str = "records"
    model: type[M]

    def __init__(self, workdir: str | Path, scope: str, embedder: Embedder, *,
                 namespace: str | None = None, backends: RecordBackends | None = None,
                 flush_every: int = 32):
        if not scope or not str(scope).strip():
            raise ConfigError("scope: must be a non-empty user or agent id")
        namespace = namespace or run_namespace(workdir)
        self.scope, self.embedder, self.namespace = str(scope), embedder, namespace
        self.flush_every = flush_every
        self._owns_backends = backends is None
        self.backends = backends or RecordBackends(workdir)
        self.vectors = ChromaVectorStore(
            self.scope, embedder, client=self.backends.chroma, url=self.backends.chroma_url,
            path=self.backends.chroma_path, namespace=self.table, run_namespace=namespace)
        table = memory_records
        self._where = (table.c.namespace == namespace, table.c.kind == self.table,
                       table.c.scope == self.scope)
        # built once: constructing a statement costs more than running it on SQLite
        self._update = sql_update(table).where(*self._where, table.c.id == bindparam(
            "record_id")).values(data=bindparam("record_data"))
        self._lock = threading.RLock()
        self._pending: dict[str, tuple[str, np.ndarray]] = {}  # id -> (text, vector) for chroma
        self.reload()

    # --- hooks ---------------------------------------------------------------------------------
    @abstractmethod
    def text_of(self, record: M) -> str:
        """The text of ``record`` that is embedded and searched."""

    def recallable(self, record: M) -> bool:
        return True

    def time_of(self, record: M) -> float:
        stamp = getattr(record, "timestamp", None) or getattr(record, "created_at", None)
        return stamp.timestamp() if stamp is not None else 0.0

    # --- loading and writing -------------------------------------------------------------------
    def _tx(self):
        return transaction(self.backends.engine, self.backends.sql_shown)

    def reload(self) -> None:
        """(Re)load this scope's records from SQL and their vectors from the vector store."""
        with self._lock:
            self.flush()
            with self._tx() as conn:
                rows = conn.execute(select(memory_records.c.data).where(*self._where)
                                    .order_by(memory_records.c.seq)).all()
            stored = self.vectors.vectors()
            self._records: list[M] = []
            self._row_of: dict[str, int] = {}
            self._matrix = VectorMatrix(self.embedder.dim)
            missing: list[M] = []
            for row in rows:
                record = self.model.model_validate(row.data)
                vector = stored.get(record.id)
                if vector is None or vector.shape != (self.embedder.dim,):
                    missing.append(record)
                    vector = np.zeros(self.embedder.dim, np.float32)
                self._append_in_memory(record, vector)
            if missing:
                self._reindex(missing)

    def _append_in_memory(self, record: M, vector: np.ndarray) -> None:
        row = self._matrix.append(vector, self.recallable(record), self.time_of(record))
        self._records.append(record)
        self._row_of[record.id] = row

    def _insert(self, records: list[M]) -> list[str]:
        with self._lock:
            if any(r.id in self._row_of for r in records):
                raise StoreError(f"{self.table}: id already exists in scope {self.scope!r}")
            vectors = self.embedder.embed([self.text_of(r) for r in records])
            seq = len(self._records)
            rows = [{"namespace": self.namespace, "kind": self.table, "scope": self.scope,
                     "id": r.id, "seq": seq + i, "data": r.model_dump(mode="json")}
                    for i, r in enumerate(records)]
            with self._tx() as conn:
                conn.execute(insert(memory_records), rows)
            for record, vector in zip(records, vectors, strict=True):
                self._append_in_memory(record, vector)
                self._pending[record.id] = (self.text_of(record), vector)
            self._flush_when_full()
            return [r.id for r in records]

    def _save(self, records: Iterable[M], reembed: bool = False) -> None:
        """Write changed records back (and re-embed them when their text changed)."""
        records = list(records)
        with self._lock:
            for record in records:
                row = self._row_of[record.id]
                self._records[row] = record
                self._matrix.active[row] = self.recallable(record)
                self._matrix.times[row] = self.time_of(record)
            with self._tx() as conn:
                conn.execute(self._update, [{"record_id": r.id, "record_data": r.model_dump(
                    mode="json")} for r in records])
            if reembed:
                self._reindex(records)

    def _reindex(self, records: list[M]) -> None:
        """Embed ``records`` again: into the index now, the vector store at the next flush."""
        vectors = self.embedder.embed([self.text_of(r) for r in records])
        for record, vector in zip(records, vectors, strict=True):
            self._matrix.vectors[self._row_of[record.id]] = vector
            self._pending[record.id] = (self.text_of(record), vector)
        self._flush_when_full()

    def _modify(self, ids: Iterable[str], change: Callable[[M], None]) -> list[str]:
        """Apply ``change`` to each known record and persist; returns the ids changed."""
        with self._lock:
            changed = []
            for record_id in dict.fromkeys(ids):
                row = self._row_of.get(record_id)
                if row is not None:
                    record = self._records[row].model_copy(deep=True)
                    change(record)
                    changed.append(record)
            if changed:
                self._save(changed)
            return [r.id for r in changed]

    def _flush_when_full(self) -> None:
        if len(self._pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the buffered vectors to the vector store."""
        with self._lock:
            pending = list(self._pending.items())
            for start in range(0, len(pending), WRITE_CHUNK):
                chunk = pending[start:start + WRITE_CHUNK]
                self.vectors.add([i for i, _ in chunk], [text for _, (text, _) in chunk],
                                 embeddings=np.stack([vector for _, (_, vector) in chunk]))
            self._pending.clear()

    # --- reading -------------------------------------------------------------------------------
    def get(self, record_id: str) -> M | None:
        with self._lock:
            row = self._row_of.get(record_id)
            return None if row is None else self._records[row].model_copy(deep=True)

    def all(self) -> list[M]:
        """Every record of this scope, in insertion order."""
        with self._lock:
            return [r.model_copy(deep=True) for r in self._records]

    def count(self) -> int:
        return len(self._records)

    def search(self, query: str, k: int = 5, everything: bool = False) -> list[tuple[M, float]]:
        """The ``k`` records most similar to ``query``, best first, with cosine similarity."""
        if k < 1:
            raise ConfigError(f"k: must be >= 1, got {k}")
        vector = self.embedder.embed([query])[0]
        with self._lock:
            hits = self._matrix.top(vector, k, everything)
            return [(self._records[row].model_copy(deep=True), sim) for row, sim in hits]

    def close(self) -> None:
        """Flush the buffered vectors; release the backends this store opened."""
        with self._lock:
            self.flush()
            if self._owns_backends:
                self.backends.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
