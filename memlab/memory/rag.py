"""rag (DD-02, seed 002 RAGBaseline): every exchange a TurnDocument in the vector store.

recall = the top-k turns most similar to the query + the last few turns verbatim as history.
TurnDocuments reach chroma in batches (write-behind): one chroma write costs a disk sync
(~30 ms here) whatever its size, so turns not yet written are searched in process, with the
same vectors, until the batch is full or the memory is closed.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from pydantic import BaseModel, Field

from memlab.memory._backends import CachedEmbedder, RunFolder, open_vector_store, resolve_embedder
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem
from memlab.models.turns import TurnDocument


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
        self.pending: list[tuple[TurnDocument, np.ndarray]] = []

    def observe(self, exchange: Exchange) -> None:
        doc = TurnDocument(content=exchange.render(), turn_number=exchange.turn_number,
                           timestamp=exchange.timestamp)
        self.pending.append((doc, self.embedder.embed_one(doc.content)))
        if len(self.pending) >= self.config.flush_every:
            self.flush()
        self.recent.append(exchange.model_copy(
            update={"metadata": {**exchange.metadata, "id": doc.id}}))

    def flush(self) -> None:
        """Write the pending TurnDocuments to the vector store."""
        if self.pending:
            docs = [doc for doc, _ in self.pending]
            self.vectors.add([d.id for d in docs], [d.content for d in docs],
                             [_metadata(d) for d in docs])
            self.pending = []

    def _search(self, query: str, k: int) -> list[MemoryItem]:
        query_vector = self.embedder.embed_one(query)
        items = [MemoryItem(id=h.id, kind="turn", text=h.text, score=h.similarity or 0.0,
                            timestamp=h.metadata.get("timestamp"), metadata=h.metadata)
                 for h in self.vectors.query(query, k=k)]
        for doc, vector in self.pending:
            similarity = float(np.clip(vector @ query_vector, 0.0, 1.0))
            items.append(MemoryItem(id=doc.id, kind="turn", text=doc.content, score=similarity,
                                    timestamp=doc.timestamp, metadata=_metadata(doc)))
        return sorted(items, key=lambda item: -item.score)

    def recall(self, query: str) -> MemoryContext:
        history = list(self.recent)[-self.config.recent_turns:] if self.config.recent_turns else []
        in_history = {ex.metadata["id"] for ex in history}
        items = [item for item in self._search(query, self.config.top_k + len(history))
                 if item.id not in in_history and item.score >= self.config.min_similarity]
        return MemoryContext(items=items[: self.config.top_k], history=history)

    def close(self) -> None:
        self.flush()
        self.vectors.close()
        self.folder.cleanup()
