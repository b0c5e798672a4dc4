"""The embedder contract and its registry."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from memlab.registry import Registry


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    Attributes:
        name: identifies the model in manifests and collection metadata.
        dim: vector dimension.
    """

    name: str = "base"
    dim: int = 0

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, rows of unit length."""

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


EMBEDDERS: Registry[Embedder] = Registry("embedder", group="memlab.embedders", base=Embedder)
EMBEDDERS.register("minilm", "memlab.embed.minilm:MiniLMEmbedder",
                   "all-MiniLM-L6-v2 (384 dims), shipped in a PyPI package, offline")
EMBEDDERS.register("hashing", "memlab.embed.hashing:HashingEmbedder",
                   "deterministic hashing of words, for unit tests only")


def get_embedder(name: str = "minilm", **kwargs) -> Embedder:
    """Create an embedder by registry key ("minilm" offline model, "hashing" for unit tests)."""
    return EMBEDDERS.create(name, **kwargs)
