"""rag (DD-02, seed 002 RAGBaseline): every exchange a TurnDocument in the vector store.

recall = the top-k turns most similar to the query + the last few turns verbatim as history.

chroma holds the TurnDocuments (the store of record); the search runs on an exact in-process
index of the same vectors, rebuilt from chroma at open, like the record stores'. chroma's HNSW
search is approximate and its graph differs from process to process (records of one write are
inserted in parallel, in a per-process order), so it missed true top-5 turns (3-8% of queries
at ~1,000 turns, hashing embedder) and a resumed run, which rebuilds the store in a new
process, recalled other turns than the run it replays. Exact cosine, equal similarities going
to the earlier turn, gives the same top-k in every process, whether or not ids are
reproducible. TurnDocuments reach chroma in batches (write-behind): one chroma write costs a
disk sync (~30 ms here) whatever its size.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from pydantic import BaseModel, Field

from memlab.memory._backends import CachedEmbedder, RunFolder, open_vector_store, resolve_embedder
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySize, MemorySystem
from memlab.models.turns import TurnDocument
from memlab.stores.matrix import VectorMatrix
from memlab.stores.vector import PAGE


class RagConfig(BaseModel):
    """Settings of the rag condition."""

    top_k: int = Field(5, ge=1, description="turns retrieved by similarity")
    recent_turns: int = Field(2, ge=0, description="last turns sent verbatim as history")
    min_similarity: float = Field(0.0, ge=0, le=1, description="hits below are dropped")
    flush_every: int = Field(32, ge=1, description="TurnDocuments written to chroma per batch "
                             "(1: write every turn at once)")
    collection: str = Field(TurnDocument.collection_name, description="vector collection prefix")
    chroma_url: str | None = Field(None, description="chroma server (else MEMLAB_CHROMA_URL)")


def _metadata(doc: TurnDocument) -> dict:
    return {"turn_number": doc.turn_number, "timestamp": doc.timestamp.isoformat()}


class RagMemory(MemorySystem):
    """Retrieve-then-read over raw turns; no distillation (DD-02's "dumb" persistence)."""

    key = "rag"
    uses_memory_prompts = False
    Config = RagConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.embedder = CachedEmbedder(resolve_embedder(self.embedder))
        self.folder = RunFolder(self.workdir)
        self.vectors = open_vector_store(self.scope.key, self.embedder, self.folder.path,
                                         namespace=self.config.collection,
                                         run_namespace=self.namespace,
                                         chroma_url=self.config.chroma_url)
        self.recent: deque[Exchange] = deque(maxlen=max(self.config.recent_turns, 1))
        self.pending: list[tuple[TurnDocument, np.ndarray]] = []  # not yet written to chroma
        self.reload()

    def reload(self) -> None:
        """(Re)build the search index from the TurnDocuments in chroma."""
        self.flush()
        stored = self.vectors.vectors()
        ids = list(stored)
        hits = [hit for start in range(0, len(ids), PAGE)
                for hit in self.vectors.get(ids[start:start + PAGE])]
        hits.sort(key=lambda hit: (hit.metadata.get("turn_number", 0), hit.id))  # turn order
        self.index = VectorMatrix(self.embedder.dim)
        self.turns: list[tuple[str, str, dict]] = []  # (id, text, metadata) per index row
        self.row_of: dict[str, int] = {}
        for hit in hits:
            self._index(hit.id, hit.text, hit.metadata, stored[hit.id])

    def _index(self, doc_id: str, text: str, metadata: dict, vector: np.ndarray) -> None:
        self.row_of[doc_id] = self.index.append(vector, True, 0.0)
        self.turns.append((doc_id, text, metadata))

    def observe(self, exchange: Exchange) -> None:
        doc = TurnDocument(content=exchange.render(), turn_number=exchange.turn_number,
                           timestamp=exchange.timestamp)
        vector = self.embedder.embed_one(doc.content)
        self._index(doc.id, doc.content, _metadata(doc), vector)
        self.pending.append((doc, vector))
        if len(self.pending) >= self.config.flush_every:
            self.flush()
        self.recent.append(exchange.model_copy(
            update={"metadata": {**exchange.metadata, "id": doc.id}}))

    def flush(self) -> None:
        """Write the pending TurnDocuments to the vector store."""
        if self.pending:
            docs = [doc for doc, _ in self.pending]
            self.vectors.add([d.id for d in docs], [d.content for d in docs],
                             [_metadata(d) for d in docs],
                             embeddings=np.stack([vector for _, vector in self.pending]))
            self.pending = []

    def _search(self, query: str, k: int, skip: set[str]) -> list[MemoryItem]:
        """The ``k`` turns most similar to ``query`` but those in ``skip`` (exact cosine to 6
        decimals; of equal ones the earlier turn)."""
        similarities = np.round(self.index.similarities(self.embedder.embed_one(query)), 6)
        similarities[[self.row_of[i] for i in skip if i in self.row_of]] = -np.inf
        rows = np.flatnonzero(np.isfinite(similarities))
        if len(rows) > k:  # every row at or above the k-th similarity: all of a tie
            kth = -np.partition(-similarities[rows], k - 1)[k - 1]
            rows = rows[similarities[rows] >= kth]
        best = sorted(rows.tolist(), key=lambda row: (-similarities[row], row))
        items = []
        for row in best[:k]:
            doc_id, text, metadata = self.turns[row]
            items.append(MemoryItem(id=doc_id, kind="turn", text=text,
                                    score=float(np.clip(similarities[row], 0.0, 1.0)),
                                    timestamp=metadata.get("timestamp"), metadata=metadata))
        return items

    def recall(self, query: str) -> MemoryContext:
        history = list(self.recent)[-self.config.recent_turns:] if self.config.recent_turns else []
        in_history = {ex.metadata["id"] for ex in history}
        items = [item for item in self._search(query, self.config.top_k, in_history)
                 if item.score >= self.config.min_similarity]
        return MemoryContext(items=items, history=history)

    def size(self) -> MemorySize:
        """The TurnDocuments in its search index (those in chroma and those still waiting to be
        written there), one item per stored exchange with its rendered text; the last turns it
        sends as history are among them."""
        return MemorySize.of(text for _, text, _ in self.turns)

    def close(self) -> None:
        self.flush()
        self.vectors.close()
        self.folder.cleanup()
