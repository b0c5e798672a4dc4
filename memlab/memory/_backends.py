"""Where a condition's stores live: run folder, run namespace, operating memory, vector store,
record stores, embedder.

Embedded defaults (in-process KV, chromadb and SQLite in the run folder) unless
``MEMLAB_REDIS_URL`` / ``MEMLAB_CHROMA_URL`` / ``MEMLAB_SQL_URL`` (or the condition's config)
name a server. Everything a run stores on a server carries the run's namespace
(``memlab.stores.base.run_namespace``): the Redis key prefix, the chroma collection tag, the
SQL rows' namespace column; :func:`purge_namespace` deletes all of it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlab.config import get_settings
from memlab.embed.base import Embedder, get_embedder

if TYPE_CHECKING:
    from memlab.stores.operating import OperatingMemory
    from memlab.stores.records import RecordBackends
    from memlab.stores.vector import ChromaVectorStore


class RunFolder:
    """The condition's folder: ``workdir`` when given, else a temp folder removed on cleanup."""

    def __init__(self, workdir: Path | None):
        self.owned = workdir is None
        self.path = Path(tempfile.mkdtemp(prefix="memlab-")) if workdir is None else Path(workdir)
        self.path.mkdir(parents=True, exist_ok=True)

    def cleanup(self) -> None:
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)


class CachedEmbedder(Embedder):
    """Remembers the last ``maxsize`` texts' vectors, so a text embedded for an in-process
    search is not embedded again when the vector store writes or queries it."""

    def __init__(self, inner: Embedder, maxsize: int = 4096):
        self.inner, self.maxsize = inner, maxsize
        self.name, self.dim = inner.name, inner.dim
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._cache[text] = vector
        rows = []
        for text in texts:
            self._cache.move_to_end(text)
            rows.append(self._cache[text])
        while len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)


def resolve_embedder(embedder: Embedder | None) -> Embedder:
    """The given embedder, else the one ``MEMLAB_EMBEDDER`` names (MiniLM by default)."""
    return embedder if embedder is not None else get_embedder(get_settings().embedder)


def purge_namespace(namespace: str, *, workdir: Path | None = None) -> None:
    """Delete everything stored under ``namespace`` on every configured backend.

    Redis keys (``MEMLAB_REDIS_URL``), chroma collections (``MEMLAB_CHROMA_URL``) and SQL rows
    (``MEMLAB_SQL_URL``); with ``workdir``, also the embedded chroma and SQLite files there (if
    they exist). The in-process operating memory belongs to one memory object and needs none.

    Raises:
        StoreUnavailableError: a configured server cannot be reached (named in the message).
    """
    from memlab.stores.operating import OperatingMemory
    from memlab.stores.records import CHROMA_FOLDER, SQLITE_FILE, purge_records
    from memlab.stores.sql import make_engine
    from memlab.stores.vector import make_client, purge_run

    settings = get_settings()
    if settings.redis_url:
        operating = OperatingMemory.from_url(settings.redis_url, namespace=namespace)
        try:
            operating.clear()
        finally:
            operating.close()
    embedded = Path(workdir) if workdir is not None else None
    if settings.chroma_url or (embedded and (embedded / CHROMA_FOLDER).exists()):
        path = None if settings.chroma_url else embedded / CHROMA_FOLDER
        client = make_client(path=path, url=settings.chroma_url)
        try:
            purge_run(client, namespace)
        finally:
            client.close()
    if settings.sql_url or (embedded and (embedded / SQLITE_FILE).exists()):
        engine = make_engine(settings.sql_url, None if settings.sql_url else embedded / SQLITE_FILE)
        try:
            purge_records(engine, namespace)
        finally:
            engine.dispose()


def open_operating_memory(redis_url: str | None = None, *,
                          namespace: str = "") -> OperatingMemory:
    """Operating memory on Redis (config or ``MEMLAB_REDIS_URL``, keys in ``namespace``), else
    in-process."""
    from memlab.stores.operating import OperatingMemory

    return OperatingMemory.from_url(redis_url or get_settings().redis_url, namespace=namespace)


def open_vector_store(scope_key: str, embedder: Embedder, folder: Path, *, namespace: str,
                      run_namespace: str = "", chroma_url: str | None = None
                      ) -> ChromaVectorStore:
    """A scoped chroma collection of the run in ``folder``/chroma (or on the configured server)."""
    from memlab.stores.vector import ChromaVectorStore

    url = chroma_url or get_settings().chroma_url
    return ChromaVectorStore(scope_key, embedder, path=None if url else folder / "chroma",
                             url=url, namespace=namespace, run_namespace=run_namespace)


def open_record_backends(folder: Path) -> RecordBackends:
    """SQL engine + chroma client for the record stores (the run folder, or the servers)."""
    from memlab.stores.records import RecordBackends

    return RecordBackends(folder)
