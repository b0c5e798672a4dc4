"""graphiti (PyPI ``graphiti-core``, Zep's memory engine) as a memory condition: a temporal
knowledge graph in an embedded Kuzu database in the run folder. Each exchange is one graphiti
episode added at its real time (``reference_time``); recall is graphiti's hybrid search (BM25
and cosine over the facts, fused by reciprocal rank), each fact shown with its validity times
and traced to the turns whose episodes it came from (``keeps_provenance``).

graphiti is async: it runs on a private event loop thread (``memlab.asyncloop.LoopThread``).
Its model calls go through memlab's LLM layer (``graphiti_clients``), its telemetry is off
(``GRAPHITI_TELEMETRY_ENABLED=false`` before import), and the peers' network guard holds
while it runs.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from pydantic import Field

from memlab.asyncloop import LoopThread
from memlab.errors import MissingDependencyError
from memlab.memory.base import Exchange, MemoryItem, MemorySize, format_time
from memlab.memory.peers.common import PeerConfig, PeerMemory

GRAPHITI_VERSION = "0.31.2"
INSTALL = 'pip install -e ".[graphiti]"'
GRAPHITI_MODULES = ("graphiti_core.nodes", "graphiti_core.edges", "graphiti_core.graphiti")


class GraphitiConfig(PeerConfig):
    """Settings of the graphiti condition."""

    max_tokens: int = Field(1024, ge=16, description="reply limit of one graphiti model call "
                            "(an edge list outgrows the peers' 512)")
    timeout: float = Field(3600.0, gt=0, description="seconds one add or search may take")
    sim_min_score: float | None = Field(
        None, ge=-1.0, le=1.0, description="recall's cosine floor: a fact less similar to the "
        "query is not found by cosine (BM25 still finds it by its words); None keeps graphiti's "
        "0.6, which keeps a tenth of LTM's evidence with MiniLM (benchmarks/"
        "evidence_similarity.py). Ingestion's own searches keep graphiti's floor")


def import_graphiti() -> dict[str, Any]:
    """graphiti's classes memlab uses, imported with telemetry off (graphiti reads
    ``GRAPHITI_TELEMETRY_ENABLED`` at each event; unset, it sends PostHog events and writes an
    id to ``~/.cache/graphiti``).

    Raises:
        MissingDependencyError: the ``graphiti`` extra is not installed.
    """
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import kuzu
            from graphiti_core import Graphiti
            from graphiti_core.driver.kuzu_driver import KuzuDriver
            from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF
            from graphiti_core.search.search_filters import SearchFilters

            from memlab.memory.peers import graphiti_clients
    except ImportError:
        raise MissingDependencyError(
            f"the graphiti condition needs the graphiti extra; run: {INSTALL}") from None
    return {"Graphiti": Graphiti, "KuzuDriver": KuzuDriver, "kuzu": kuzu,
            "search": EDGE_HYBRID_SEARCH_RRF, "SearchFilters": SearchFilters,
            "clients": graphiti_clients}


def group_id(scope_key: str) -> str:
    """The graphiti partition of a scope (graphiti allows letters, digits, ``-`` and ``_``)."""
    return "s" + hashlib.sha256(scope_key.encode()).hexdigest()[:20]


def search_text(query: str) -> str:
    """``query`` as words only: Kuzu's full-text search finds nothing for "called?"."""
    return " ".join(re.findall(r"\w+", query))


class GraphitiMemory(PeerMemory):
    """graphiti on Kuzu for one user and agent (its own database file and partition)."""

    key = "graphiti"
    Config = GraphitiConfig
    keeps_provenance = True
    uuid4_modules = GRAPHITI_MODULES
    clock_modules = ("graphiti_core.utils.datetime_utils",)  # graphiti's utc_now()

    def __init__(self, *args, **kwargs):
        self.parts = import_graphiti()
        super().__init__(*args, **kwargs)
        self.group = group_id(self.scope.key)
        self.episode_turns: dict[str, int] = {}  # episode uuid -> memlab turn number
        self.loop = LoopThread("memlab-graphiti")
        try:
            with self._library():
                self.driver, self.graph = self.loop.run(self._open(), self.config.timeout)
        except BaseException:
            self.loop.close()
            raise

    def _chat_model(self) -> Any:
        clients = self.parts["clients"]
        self.graph_embedder = clients.MemlabGraphitiEmbedder(self.embedder)
        return clients.MemlabGraphitiLLM(self.llm, self.config.max_tokens)

    async def _open(self) -> tuple[Any, Any]:
        from graphiti_core.driver.driver import GraphProvider
        from graphiti_core.graph_queries import get_fulltext_indices

        folder = self.folder.path / "graphiti"
        folder.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():  # "the Kuzu backend is deprecated"
            warnings.simplefilter("ignore", DeprecationWarning)
            driver = self.parts["KuzuDriver"](db=str(folder / f"{self.group}.kuzu"))
        driver._database = ""  # graphiti 0.31.2 compares group ids with it; Kuzu sets none
        # one thread per query: Kuzu's ORDER BY leaves rows of equal score (two facts whose
        # embeddings are equally near the query) in the order its threads happened to finish,
        # and graphiti's rank fusion turns that order into the order of a dedupe prompt's
        # facts: a resumed run's prompt once differed from an uninterrupted run's there, with
        # the two graphs identical to the bit (tests/test_peers.py kill -9, ~1 run in 30)
        driver.client = self.parts["kuzu"].AsyncConnection(
            driver.db, max_concurrent_queries=1, max_threads_per_query=1)
        # graphiti leaves Kuzu's full-text indexes to the caller (its build step is a no-op
        # there); the fts extension is bundled with kuzu 0.11: nothing is downloaded
        await driver.execute_query("LOAD fts")
        rows, _, _ = await driver.execute_query("CALL SHOW_INDEXES() RETURN index_name")
        existing = {row["index_name"] for row in rows}
        for statement in get_fulltext_indices(GraphProvider.KUZU):
            if statement.split("'")[3] not in existing:  # CALL CREATE_FTS_INDEX('T', 'name',
                await driver.execute_query(statement)
        clients = self.parts["clients"]
        graph = self.parts["Graphiti"](
            graph_driver=driver, llm_client=self.chat, embedder=self.graph_embedder,
            cross_encoder=clients.EmbeddingReranker(self.embedder), max_coroutines=1)
        return driver, graph

    def _add(self, exchange: Exchange) -> int:
        result = self.loop.run(self.graph.add_episode(
            name=f"turn {exchange.turn_number}",
            episode_body=f"user: {exchange.user}\nassistant: {exchange.assistant}",
            source_description="chat", reference_time=exchange.timestamp,
            group_id=self.group), self.config.timeout)
        self.episode_turns[result.episode.uuid] = exchange.turn_number
        return len(result.edges)

    def _search(self, query: str, k: int) -> list[MemoryItem]:
        words = search_text(query)
        if not words:
            return []
        config = self.parts["search"].model_copy(update={"limit": k})
        if self.config.sim_min_score is not None:
            config.edge_config = config.edge_config.model_copy(
                update={"sim_min_score": self.config.sim_min_score})
        found = self.loop.run(self.graph.search_(
            words, config=config, group_ids=[self.group],
            search_filter=self.parts["SearchFilters"]()), self.config.timeout)
        return [self._item(edge) for edge in found.edges[:k]]

    def _item(self, edge: Any) -> MemoryItem:
        turns = sorted({self.episode_turns[u] for u in edge.episodes if u in self.episode_turns})
        return MemoryItem(
            id=f"graphiti:{edge.uuid}", kind="fact", text=fact_text(edge),
            timestamp=edge.valid_at, metadata={
                "source_turns": turns, "episodes": list(edge.episodes),
                "valid_at": _iso(edge.valid_at), "invalid_at": _iso(edge.invalid_at)})

    def graph_counts(self, timeout: float = 30.0) -> dict[str, int] | None:
        """Entities, facts and episodes in this scope's graph (None when the loop is still busy
        with an add after ``timeout`` seconds: a run stopped mid-turn reports without them)."""
        counts = {}
        for name, pattern in (("entities", "(n:Entity)"), ("facts", "(n:RelatesToNode_)"),
                              ("episodes", "(n:Episodic)")):
            try:
                rows, _, _ = self.loop.run(self.driver.execute_query(
                    f"MATCH {pattern} WHERE n.group_id = $gid RETURN count(n) AS total",
                    gid=self.group), timeout)
            except FutureTimeout:
                return None
            counts[name] = int(rows[0]["total"]) if rows else 0
        return counts

    def size(self, timeout: float = 30.0) -> MemorySize | None:
        """The facts of this scope's graph (what recall searches; its entities and episodes
        are never shown), each as recall shows it, with when it held: one Kuzu query, no
        model call. None when the loop is still busy with an add after ``timeout`` seconds."""
        try:
            rows, _, _ = self.loop.run(self.driver.execute_query(
                "MATCH (n:RelatesToNode_) WHERE n.group_id = $gid "
                "RETURN n.fact AS fact, n.valid_at AS valid_at, n.invalid_at AS invalid_at",
                gid=self.group), timeout)
        except FutureTimeout:
            return None
        return MemorySize.of(fact_text(SimpleNamespace(**row)) for row in rows)

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "graph": self.graph_counts()}

    def close(self) -> None:
        if self.loop.thread.is_alive():
            self.loop.close()
            self.driver.client.close()  # its connections and query threads
            self.driver.db.close()
        super().close()


def fact_text(edge: Any) -> str:
    """A fact as the prompt shows it, with when it held: ``Alice moved to Oslo (valid from
    Mon 03 Mar 2025 09:00 until now)``."""
    since = format_time(edge.valid_at) if edge.valid_at else "unknown"
    until = format_time(edge.invalid_at) if edge.invalid_at else "now"
    return f"{edge.fact} (valid from {since} until {until})"


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
