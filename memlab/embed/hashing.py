"""A deterministic hashing embedder for unit tests only (bag of words and character trigrams)."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memlab.embed.base import Embedder, normalise

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder(Embedder):
    """Texts sharing words land close together; no model, no randomness across processes."""

    name = "hashing"

    def __init__(self, dim: int = 256):
        self.dim = dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 40) & 1 else -1.0

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                index, sign = self._bucket("w:" + word)
                out[row, index] += sign
                for i in range(len(word) - 2):
                    index, sign = self._bucket("t:" + word[i : i + 3])
                    out[row, index] += 0.25 * sign
        return normalise(out)
