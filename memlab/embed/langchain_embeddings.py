"""MemlabEmbeddings: a memlab Embedder as a LangChain ``Embeddings``, so a peer library (mem0,
LangMem) embeds with exactly the vectors memlab's own conditions use.

Needs ``langchain-core`` (the ``memlab[peers]`` extra).
"""

from __future__ import annotations

from memlab.embed.base import Embedder
from memlab.errors import MissingDependencyError

try:
    from langchain_core.embeddings import Embeddings
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "the peer conditions need the peers extra; run: pip install -e \".[peers]\"") from None


class MemlabEmbeddings(Embeddings):
    """LangChain's embedding interface over ``embedder`` (unit-length float vectors).

    Example:
        >>> from memlab.embed.hashing import HashingEmbedder
        >>> vectors = MemlabEmbeddings(HashingEmbedder(dim=8)).embed_documents(["a b", "c"])
        >>> len(vectors), len(vectors[0])
        (2, 8)
    """

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.dim = embedder.dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_one(text)]
