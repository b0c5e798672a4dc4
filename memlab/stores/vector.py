"""Vector store on chromadb: PersistentClient in a folder by default, HttpClient for a server.

Isolation: one collection per (namespace, scope), named from a hash of the scope; every
document also carries its scope in metadata and hits from another scope are dropped. Embeddings
are computed by memlab's embedder and passed to chroma precomputed, so chroma's own default
embedder (which downloads a model) is never used. Telemetry is off.

Deadlines: chromadb's HttpClient talks to its server with no timeout at all (its httpx session
is built with ``timeout=None`` and no setting changes that), so a server that accepts and never
answers would hang a run forever. :func:`make_client` first asks the server for a heartbeat
within ``store_timeout_s`` (MEMLAB_STORE_TIMEOUT_S), then puts the same timeout on the client's
session, so every later call fails with :class:`StoreUnavailableError` naming the URL.

Approximate search: chroma answers a query from an HNSW graph. :data:`HNSW` is the index of
every collection memlab creates; a collection made before (chroma's defaults) gets its
``ef_search`` raised when opened. The graph itself is not reproducible: chroma 1.5.9 inserts the
records of one write in parallel in an order that changes per process (whatever
``num_threads`` says), so two processes writing the same records can build different graphs.
Memory conditions therefore search exact in-process indexes and keep chroma as their store of
record (:mod:`memlab.memory.rag`, :mod:`memlab.stores.records`).
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import numpy as np

from memlab.config import Settings, get_settings
from memlab.embed.base import Embedder
from memlab.errors import ConfigError, MissingDependencyError, StoreError, StoreUnavailableError
from memlab.stores.base import SCOPE_FIELD, VectorHit, VectorStore

try:
    import chromadb
    from chromadb.api.types import EmbeddingFunction
    from chromadb.config import Settings as ChromaSettings
except ImportError:  # pragma: no cover - chromadb is a core dependency
    chromadb = None
    EmbeddingFunction = object  # type: ignore[assignment,misc]

PAGE = 1000  # documents or collections per chroma request when reading everything
# Measured on chroma 1.5.9, ltm conversation turns written 32 at a time: with chroma's defaults
# (ef_construction 100, ef_search 100) a true top-5 neighbour was missed by 3-8% of queries at
# ~1,000 turns (hashing embedder) and 6% at 11,000 (MiniLM); with these settings by none at
# 1,000 (14 processes) and 11,000 (MiniLM), 0.4% at 11,000 (hashing). Cost at 10k documents:
# about +0.5-1.8 ms a query, 14% slower inserts. ef_construction is fixed when a collection is
# created; ef_search can be raised later (see _raise_ef_search).
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 500}

log = logging.getLogger(__name__)


class MemlabEmbeddingFunction(EmbeddingFunction):  # type: ignore[misc,valid-type]
    """Adapts a memlab :class:`Embedder` to chroma's embedding-function protocol."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def __call__(self, input):  # noqa: A002 - chroma's parameter name
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "memlab"

    def get_config(self) -> dict[str, Any]:
        return {"embedder": self.embedder.name, "dim": self.embedder.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MemlabEmbeddingFunction:
        from memlab.embed.base import get_embedder

        key = "hashing" if str(config.get("embedder", "")).startswith("hashing") else "minilm"
        return MemlabEmbeddingFunction(get_embedder(key))

    def default_space(self) -> str:
        return "cosine"


def collection_name(namespace: str, scope: str, run_namespace: str = "",
                    embedder: str = "") -> str:
    """A valid chroma collection name for ``scope`` (any string) inside ``namespace``.

    With a ``run_namespace`` the name starts with the run's tag (:func:`run_tag`), so a run's
    collections can be found and purged, and the embedder (name and dimension) is part of it,
    so vectors of another embedder never share a collection. chroma allows 63 characters: the
    readable part is cut, the digest covers everything.
    """
    if not run_namespace:
        digest = hashlib.blake2b(scope.encode(), digest_size=10).hexdigest()
        return f"{namespace}-{digest}"
    digest = hashlib.blake2b(f"{namespace}\0{scope}\0{embedder}".encode(),
                             digest_size=10).hexdigest()
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", namespace)[:24].strip("_-") or "c"
    return f"{run_tag(run_namespace)}-{readable}-{digest}"


def run_tag(run_namespace: str) -> str:
    """The prefix of every chroma collection of ``run_namespace`` (13 characters)."""
    return "m" + hashlib.blake2b(run_namespace.encode(), digest_size=6).hexdigest()


def purge_run(client: Any, run_namespace: str) -> int:
    """Delete every collection of ``run_namespace`` on ``client``; returns how many."""
    prefix = run_tag(run_namespace) + "-"
    names, offset = [], 0
    while True:
        page = client.list_collections(limit=PAGE, offset=offset)
        names += [c.name for c in page if c.name.startswith(prefix)]
        if len(page) < PAGE:
            break
        offset += PAGE
    for name in names:
        client.delete_collection(name)
    return len(names)


def make_client(*, path: str | Path | None = None, url: str | None = None,
                timeout_s: float | None = None):
    """Return a chroma client: HttpClient for ``url``, else PersistentClient in ``path``.

    Args:
        timeout_s: deadline of every call to a server (default ``store_timeout_s``).
    """
    if chromadb is None:
        raise MissingDependencyError("chromadb is not installed; run: pip install chromadb==1.5.9")
    settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        return _http_client(url, timeout_s or get_settings().store_timeout_s, settings)
    if path is None:
        raise ConfigError("vector store: give a folder (path) or a server URL (MEMLAB_CHROMA_URL)")
    Path(path).mkdir(parents=True, exist_ok=True)
    # chroma caches one system per path string in the process: a relative path would be
    # shared by two folders of the same name (a chdir in between) and hit the wrong database
    return chromadb.PersistentClient(path=str(Path(path).resolve()), settings=settings)


def _http_client(url: str, timeout_s: float, settings: Any):
    """An HttpClient whose every request has ``timeout_s`` (see the module docstring)."""
    parsed = urlparse(url if "://" in url else f"http://{url}")
    if not parsed.hostname:
        raise ConfigError(f"chroma_url: {url!r} is not a URL like http://127.0.0.1:8000")
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    _heartbeat(f"{parsed.scheme or 'http'}://{parsed.hostname}:{port}", url, timeout_s)
    try:
        client = chromadb.HttpClient(
            host=parsed.hostname, port=port, ssl=parsed.scheme == "https", settings=settings
        )
    except Exception as exc:  # chroma raises ValueError/ConnectionError variants
        raise StoreUnavailableError(f"chroma server at {url} unreachable: {exc}") from exc
    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        raise MissingDependencyError(
            f"chromadb {chromadb.__version__}: cannot put a timeout on its HttpClient; "
            "install the version memlab pins: pip install chromadb==1.5.9")
    session.timeout = httpx.Timeout(timeout_s)
    return client


def _heartbeat(base: str, url: str, timeout_s: float) -> None:
    """Any HTTP answer within ``timeout_s`` will do; silence or a refused connection will not."""
    try:
        httpx.get(f"{base}/api/v2/heartbeat", timeout=timeout_s)
    except httpx.TimeoutException as exc:
        raise StoreUnavailableError(
            f"chroma server at {url}: no answer within {timeout_s:g} s "
            "(store_timeout_s, MEMLAB_STORE_TIMEOUT_S)") from exc
    except httpx.HTTPError as exc:
        raise StoreUnavailableError(f"chroma server at {url} unreachable: {exc}") from exc


TIE_SLACK = 8  # extra hits fetched at first so that ties at the k-th place are broken by id


class ChromaVectorStore(VectorStore):
    """chromadb-backed :class:`VectorStore` for one scope.

    Args:
        scope: user or agent id the store is bound to.
        embedder: memlab embedder used for documents and queries.
        path: folder of the embedded PersistentClient (ignored when ``url`` is given).
        url: chroma server URL (``MEMLAB_CHROMA_URL``); switches to HttpClient.
        namespace: collection prefix (e.g. ``goodai_ltm_full_history``).
        client: an existing chroma client to share between scopes.
        timeout_s: deadline of every call to a server (default ``store_timeout_s``).
        run_namespace: the run the collection belongs to (see :func:`collection_name`).
    """

    def __init__(
        self,
        scope: str,
        embedder: Embedder,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        namespace: str = "memlab",
        client: Any = None,
        timeout_s: float | None = None,
        run_namespace: str = "",
    ):
        if not scope or not scope.strip():
            raise ConfigError("scope: must be a non-empty user or agent id")
        self.scope, self.embedder, self.url = scope, embedder, url
        self.where_shown = url or str(path)
        self._owns_client = client is None
        self.client = client if client is not None else make_client(
            path=path, url=url, timeout_s=timeout_s)
        self.collection = self._call(
            self.client.get_or_create_collection,
            name=collection_name(namespace, scope, run_namespace,
                                 f"{embedder.name}/{embedder.dim}"),
            configuration={"hnsw": dict(HNSW)},
            metadata={"hnsw:space": "cosine", SCOPE_FIELD: scope, "embedder": embedder.name},
            embedding_function=MemlabEmbeddingFunction(embedder),
        )
        self._raise_ef_search()

    @classmethod
    def from_settings(
        cls,
        scope: str,
        embedder: Embedder,
        workdir: str | Path,
        settings: Settings | None = None,
        **kwargs: Any,
    ) -> ChromaVectorStore:
        """A server when ``MEMLAB_CHROMA_URL`` is set, else embedded in ``<workdir>/chroma``."""
        url = (settings or get_settings()).chroma_url
        return cls(scope, embedder, path=Path(workdir) / "chroma", url=url, **kwargs)

    def close(self) -> None:
        """Release the client this store made. chroma counts the clients of one folder in the
        process and stops its system (sqlite files, index) with the last one, so a folder
        removed after every memory on it closed can be made anew at the same path."""
        if self._owns_client:
            self._owns_client = False
            closing = getattr(self.client, "close", None)
            if closing is not None:
                closing()

    def _raise_ef_search(self) -> None:
        """Give a collection created with a lower ``ef_search`` (an older run folder) memlab's.

        chroma reads it when it loads the index, so it holds from the next process on (or at
        once if this process has not loaded the index yet); ``ef_construction`` cannot change.
        """
        hnsw = (self.collection.configuration_json or {}).get("hnsw") or {}
        if hnsw.get("ef_search", HNSW["ef_search"]) >= HNSW["ef_search"]:
            return
        try:
            self.collection.modify(configuration={"hnsw": {"ef_search": HNSW["ef_search"]}})
        except Exception as exc:  # the collection still works, with its own ef_search
            log.warning("chroma at %s: could not raise ef_search of %s to %d: %s",
                        self.where_shown, self.collection.name, HNSW["ef_search"], exc)

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, StoreError):
            raise
        except httpx.TimeoutException as exc:
            raise StoreUnavailableError(f"chroma at {self.where_shown}: no answer in time "
                                        f"(store_timeout_s): {exc!r}") from exc
        except Exception as exc:
            kind = type(exc).__name__
            if "connect" in kind.lower() or "connect" in str(exc).lower():
                raise StoreUnavailableError(f"chroma at {self.where_shown}: {exc}") from exc
            raise StoreError(f"chroma at {self.where_shown}: {kind}: {exc}") from exc

    def add(self, ids, texts, metadatas=None, embeddings=None) -> None:
        if any(x is not None and len(x) != len(ids) for x in (texts, metadatas, embeddings)):
            raise ConfigError("add: ids, texts, metadatas and embeddings must have the same length")
        if not ids:
            return
        metas = [{**(m or {}), SCOPE_FIELD: self.scope} for m in (metadatas or [{}] * len(ids))]
        vectors = self.embedder.embed(list(texts)) if embeddings is None else embeddings
        self._call(
            self.collection.upsert,
            ids=list(ids),
            documents=list(texts),
            embeddings=vectors,
            metadatas=metas,
        )

    def query(self, text, k=5, where=None) -> list[VectorHit]:
        """The ``k`` most similar documents; equal similarities ordered by id.

        chroma returns any of several documents at the same distance (identical texts), so
        more are fetched until the last one is below the ``k``-th (``TIE_SLACK`` more, then
        twice as many each round), and ties are broken by id: a run is reproducible.
        """
        if k < 1:
            raise ConfigError(f"k: must be >= 1, got {k}")
        vector = self.embedder.embed([text])
        n = k + TIE_SLACK
        while True:
            hits = self._nearest(vector, n, where)
            if len(hits) < n or _rounded(hits[-1]) < _rounded(hits[k - 1]):
                break
            n *= 2
        hits.sort(key=lambda hit: (-_rounded(hit), hit.id))
        return hits[:k]

    def _nearest(self, vector, n: int, where) -> list[VectorHit]:
        """chroma's ``n`` nearest documents of this scope, nearest first."""
        result = self._call(
            self.collection.query,
            query_embeddings=vector,
            n_results=n,
            where=_scoped_where(where),
            include=["documents", "metadatas", "distances"],
        )
        rows = zip(
            result["ids"][0],
            result["documents"][0],
            result["metadatas"][0],
            result["distances"][0],
            strict=True,
        )
        return [
            VectorHit(
                id=i,
                text=doc or "",
                metadata=_public(meta),
                similarity=float(np.clip(1.0 - dist, 0.0, 1.0)),
            )
            for i, doc, meta, dist in rows
            if (meta or {}).get(SCOPE_FIELD) == self.scope
        ]

    def get(self, ids) -> list[VectorHit]:
        if not ids:
            return []
        result = self._call(self.collection.get, ids=list(ids), include=["documents", "metadatas"])
        found = {
            i: VectorHit(id=i, text=doc or "", metadata=_public(meta))
            for i, doc, meta in zip(
                result["ids"], result["documents"], result["metadatas"], strict=True
            )
            if (meta or {}).get(SCOPE_FIELD) == self.scope
        }
        return [found[i] for i in ids if i in found]

    def vectors(self) -> dict[str, np.ndarray]:
        result: dict[str, np.ndarray] = {}
        offset = 0
        while True:
            page = self._call(self.collection.get, include=["embeddings", "metadatas"],
                              limit=PAGE, offset=offset)
            ids = page["ids"]
            rows = zip(ids, page["embeddings"] if ids else [], page["metadatas"], strict=True)
            result.update((i, np.asarray(vector, np.float32)) for i, vector, meta in rows
                          if (meta or {}).get(SCOPE_FIELD) == self.scope)
            if len(ids) < PAGE:
                return result
            offset += PAGE

    def delete(self, ids) -> None:
        if ids:
            self._call(self.collection.delete, ids=list(ids))

    def count(self) -> int:
        return int(self._call(self.collection.count))


def _scoped_where(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """The user's filter; the scope is enforced by the collection, so it is not repeated here."""
    if where is not None and not isinstance(where, dict):
        raise ConfigError(f"where: must be a dict of metadata filters, got {type(where).__name__}")
    return where or None


def _rounded(hit: VectorHit) -> float:
    """Similarity to the 6 decimals at which two hits count as a tie."""
    return round(hit.similarity or 0.0, 6)


def _public(meta: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (meta or {}).items() if k != SCOPE_FIELD}
