"""A BM25 keyword index over short documents, in plain Python (no dependency)."""

from __future__ import annotations

import math
import re
from collections import Counter

WORD = re.compile(r"[a-z0-9]+")
# words too common in conversation to tell turns apart
STOP = frozenset("a an and are as at be but by do does did for from had has have i i'm in is "
                 "it its me my of on or so that the their them there they this to was we were "
                 "what when where which who why will with would you your ai user".split())


def terms(text: str) -> list[str]:
    """The lower-case words of ``text`` but stop words."""
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


class BM25Index:
    """Okapi BM25 over documents added one at a time (row ``i`` is the ``i``-th added).

    Args:
        k1: how fast a term's repeats stop adding to its weight.
        b: how much a long document's score is damped.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.counts: list[Counter[str]] = []
        self.lengths: list[int] = []
        self.document_frequency: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.counts)

    def add(self, text: str) -> int:
        """Index ``text``; returns its row."""
        counts = Counter(terms(text))
        self.counts.append(counts)
        self.lengths.append(sum(counts.values()))
        self.document_frequency.update(counts.keys())
        return len(self.counts) - 1

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every row for ``query`` (0 for a row sharing no term with it)."""
        n = len(self.counts)
        if n == 0:
            return []
        mean_length = sum(self.lengths) / n or 1.0
        out = [0.0] * n
        for term in set(terms(query)):
            df = self.document_frequency.get(term, 0)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for row, counts in enumerate(self.counts):
                tf = counts.get(term, 0)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * self.lengths[row] / mean_length)
                    out[row] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out
