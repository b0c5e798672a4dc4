"""The engine under the sleep stores: pydantic records in SQLite, their embeddings in NumPy.

Each store keeps one scope's records in memory (a dict and a float32 matrix loaded at open) and
writes every change through to SQLite, so a new process opened on the same folder sees them.
A recall is one matrix-vector product: a few milliseconds at 10k records. One writer per scope
at a time is assumed (the agent that owns the memory); :meth:`ScopedRecordStore.reload`
picks up another process's writes.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
from pydantic import BaseModel

from memlab.embed.base import Embedder
from memlab.errors import ConfigError, StoreError

M = TypeVar("M", bound=BaseModel)

DEFAULT_FILE = "sleep_memory.sqlite"


def sqlite_path(path_or_workdir: str | Path) -> Path:
    """A ``.sqlite``/``.db`` path is used as is; anything else is a folder holding the file."""
    path = Path(path_or_workdir)
    if path.suffix in {".sqlite", ".db", ".sqlite3"}:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    path.mkdir(parents=True, exist_ok=True)
    return path / DEFAULT_FILE


class VectorMatrix:
    """Growable (rows, dim) float32 matrix with a per-row 'eligible for recall' flag."""

    def __init__(self, dim: int):
        self.dim, self.size = dim, 0
        self.vectors = np.zeros((64, dim), dtype=np.float32)
        self.active = np.zeros(64, dtype=bool)
        self.times = np.zeros(64, dtype=np.float64)

    def append(self, vector: np.ndarray, active: bool, time: float) -> int:
        if self.size == len(self.vectors):
            grow = len(self.vectors)
            self.vectors = np.vstack([self.vectors, np.zeros((grow, self.dim), np.float32)])
            self.active = np.concatenate([self.active, np.zeros(grow, bool)])
            self.times = np.concatenate([self.times, np.zeros(grow)])
        row = self.size
        self.vectors[row], self.active[row], self.times[row] = vector, active, time
        self.size += 1
        return row

    def top(self, query: np.ndarray, k: int, everything: bool = False) -> list[tuple[int, float]]:
        """Rows of the ``k`` highest cosine similarities among active rows (or all)."""
        sims = self.similarities(query)
        if not everything:
            sims = np.where(self.active[: self.size], sims, -np.inf)
        return self.best(sims, k)

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row to ``query`` (rows and query are unit vectors)."""
        # einsum runs single-threaded: multi-threaded BLAS gemv showed 8-20 ms wake-up spikes
        # on a busy 2-core machine, einsum stays under 1 ms at 10k rows.
        return np.einsum("ij,j->i", self.vectors[: self.size], query.astype(np.float32))

    def latest(self, n: int, everything: bool = False) -> list[int]:
        """Rows of the ``n`` latest times among active rows (or all), latest first.

        Equal times go to the later insertion.
        """
        order = np.lexsort((np.arange(self.size), self.times[: self.size]))[::-1]
        if not everything:
            order = order[self.active[order]]
        return order[:n].tolist()

    @staticmethod
    def best(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
        k = min(k, len(scores))
        if k <= 0:
            return []
        idx = np.argpartition(-scores, k - 1)[:k]
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        return [(int(i), float(scores[i])) for i in idx if np.isfinite(scores[i])]


class ScopedRecordStore(ABC, Generic[M]):
    """One table of pydantic records for one scope, with embedding search.

    Subclasses set ``table``, ``model`` and implement :meth:`text_of`; they may override
    :meth:`recallable` (rows excluded from recall) and :meth:`time_of`.

    Args:
        path_or_workdir: a folder (holds ``sleep_memory.sqlite``) or a ``.sqlite`` file.
        scope: whose memory this is (user or agent id); no call returns another scope's record.
        embedder: computes the vectors used by ``get_relevant``.
    """

    table: str = "records"
    model: type[M]

    def __init__(self, path_or_workdir: str | Path, scope: str, embedder: Embedder):
        if not scope or not str(scope).strip():
            raise ConfigError("scope: must be a non-empty user or agent id")
        self.scope, self.embedder = str(scope), embedder
        self.path = sqlite_path(path_or_workdir)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} (scope TEXT NOT NULL, id TEXT NOT NULL, "
            "seq INTEGER NOT NULL, data TEXT NOT NULL, embedding BLOB NOT NULL, embedder TEXT NOT NULL, "
            "PRIMARY KEY (scope, id))"
        )
        self._db.commit()
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
    def reload(self) -> None:
        """(Re)load this scope's records and vectors from SQLite."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT data, embedding, embedder FROM {self.table} WHERE scope = ? ORDER BY seq",
                (self.scope,),
            ).fetchall()
            self._records: list[M] = []
            self._row_of: dict[str, int] = {}
            self._matrix = VectorMatrix(self.embedder.dim)
            stale: list[M] = []
            for data, blob, embedder in rows:
                record = self.model.model_validate_json(data)
                vector = np.frombuffer(blob, dtype=np.float32)
                if embedder != self.embedder.name or vector.shape != (self.embedder.dim,):
                    stale.append(record)
                    vector = np.zeros(self.embedder.dim, np.float32)
                self._append_in_memory(record, vector)
            if stale:
                self._save(stale, reembed=True)

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
            try:
                self._db.executemany(
                    f"INSERT INTO {self.table} (scope, id, seq, data, embedding, embedder) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (
                            self.scope,
                            r.id,
                            seq + i,
                            r.model_dump_json(),
                            v.tobytes(),
                            self.embedder.name,
                        )
                        for i, (r, v) in enumerate(zip(records, vectors, strict=True))
                    ],
                )
                self._db.commit()
            except sqlite3.IntegrityError as exc:
                self._db.rollback()
                raise StoreError(f"{self.table}: {exc} (scope {self.scope!r})") from exc
            for record, vector in zip(records, vectors, strict=True):
                self._append_in_memory(record, vector)
            return [r.id for r in records]

    def _save(self, records: Iterable[M], reembed: bool = False) -> None:
        """Write changed records back (and re-embed them when their text changed)."""
        records = list(records)
        with self._lock:
            vectors = self.embedder.embed([self.text_of(r) for r in records]) if reembed else None
            for i, record in enumerate(records):
                row = self._row_of[record.id]
                self._records[row] = record
                self._matrix.active[row] = self.recallable(record)
                self._matrix.times[row] = self.time_of(record)
                if vectors is not None:
                    self._matrix.vectors[row] = vectors[i]
            sql = f"UPDATE {self.table} SET data = ? WHERE scope = ? AND id = ?"
            params = [(r.model_dump_json(), self.scope, r.id) for r in records]
            if vectors is not None:
                sql = (
                    f"UPDATE {self.table} SET data = ?, embedding = ?, embedder = ? "
                    "WHERE scope = ? AND id = ?"
                )
                params = [
                    (r.model_dump_json(), v.tobytes(), self.embedder.name, self.scope, r.id)
                    for r, v in zip(records, vectors, strict=True)
                ]
            self._db.executemany(sql, params)
            self._db.commit()

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
        with self._lock:
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
