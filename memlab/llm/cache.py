"""SQLite response cache: a repeated model call is answered from disk, identically.

Safe with several processes writing at once (WAL journal + busy timeout). Values are JSON,
never pickle. The key is the sha256 of the canonical JSON of (provider, model, messages,
params); clients never put an API key into any of these.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memlab.errors import StoreError, fields_message
from memlab.llm.base import Completion, Message
from memlab.userfiles import writable_folder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(provider: str, model: str, messages: list[Message], params: dict[str, Any],
              kind: str = "completion") -> str:
    """sha256 of the canonical JSON of one request."""
    payload = {"kind": kind, "provider": provider, "model": model,
               "messages": [m.model_dump() for m in messages], "params": params}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Completions (and option scores) keyed by request, in one SQLite file.

    Args:
        path: the SQLite file; its folder is created.
        busy_timeout_s: how long a writer waits for another process's lock.

    Attributes:
        hits: lookups answered from the cache by this object.
        misses: lookups that found nothing.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0):
        self.path = Path(path)
        writable_folder(self.path.parent, "LLM cache folder (MEMLAB_CACHE_DIR)")
        self.busy_timeout_s = busy_timeout_s
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        with self._lock:
            self._connection()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # never share a handle across fork
            try:
                conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s,
                                       isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc) from exc
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _unusable(self, exc: sqlite3.Error) -> StoreError:
        """The error for a cache file SQLite cannot use (corrupt, not a database, locked)."""
        corrupt = any(w in str(exc) for w in ("not a database", "malformed", "corrupt"))
        advice = ("; it only holds cached answers: move it aside or delete it (or set "
                  "MEMLAB_LLM_CACHE=0, or MEMLAB_CACHE_DIR to another folder)") if corrupt else ""
        return StoreError(f"LLM response cache {self.path}: {exc}{advice}")

    def _bad_row(self, value: str, problem: str) -> StoreError:
        """The error for a row whose value cannot be read back (written by hand, or by another
        memlab version): the file, the problem, what to do."""
        return StoreError(f"LLM response cache {self.path}: a cached answer cannot be read "
                          f"({problem}; value {value[:60]!r}); it only holds cached answers: "
                          "move it aside or delete it (or set MEMLAB_LLM_CACHE=0, or "
                          "MEMLAB_CACHE_DIR to another folder)")

    def _get_value(self, key: str) -> str | None:
        with self._lock:
            try:
                row = self._connection().execute(
                    "SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc) from exc
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return row[0]

    def _put_value(self, key: str, kind: str, provider: str, model: str, value: str) -> None:
        with self._lock:
            try:
                self._connection().execute(
                    "INSERT OR REPLACE INTO responses (key, kind, provider, model, value, "
                    "created) VALUES (?, ?, ?, ?, ?, ?)",
                    (key, kind, provider, model, value, time.time()))
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc) from exc

    def get(self, provider: str, model: str, messages: list[Message],
            params: dict[str, Any]) -> Completion | None:
        """The cached completion (``cached=True``, original token counts) or None."""
        start = time.perf_counter()
        value = self._get_value(cache_key(provider, model, messages, params))
        if value is None:
            return None
        try:
            hit = Completion.model_validate_json(value)
        except ValidationError as exc:
            raise self._bad_row(value, fields_message(exc.errors(), whole="row")) from None
        return hit.model_copy(update={"cached": True,
                                      "latency_s": time.perf_counter() - start})

    def put(self, provider: str, model: str, messages: list[Message], params: dict[str, Any],
            completion: Completion) -> None:
        stored = completion.model_copy(update={"cached": False})
        self._put_value(cache_key(provider, model, messages, params), "completion",
                        provider, model, stored.model_dump_json())

    def get_scores(self, provider: str, model: str, messages: list[Message],
                   options: list[str], *, identity: dict[str, Any] | None = None
                   ) -> list[float] | None:
        """Cached option scores; ``identity``: the client's ``cache_identity`` (server URL...)."""
        key = cache_key(provider, model, messages, {"options": options, **(identity or {})},
                        kind="scores")
        value = self._get_value(key)
        if value is None:
            return None
        try:
            return [float(x) for x in json.loads(value)]
        except (ValueError, TypeError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            raise self._bad_row(value, f"not a JSON list of numbers ({exc})") from None

    def put_scores(self, provider: str, model: str, messages: list[Message],
                   options: list[str], scores: list[float], *,
                   identity: dict[str, Any] | None = None) -> None:
        key = cache_key(provider, model, messages, {"options": options, **(identity or {})},
                        kind="scores")
        self._put_value(key, "scores", provider, model, json.dumps(scores))

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self)}

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
