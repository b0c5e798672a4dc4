"""Embedders: an offline sentence model by default, a hashing embedder for unit tests."""

from memlab.embed.base import EMBEDDERS, Embedder, get_embedder

__all__ = ["EMBEDDERS", "Embedder", "get_embedder"]
