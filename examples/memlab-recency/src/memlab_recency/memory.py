"""recency: every exchange a document in a BM25 index; recall weighs relevance by recency.

score(turn) = bm25(query, turn) x (floor + (1 - floor) x 0.5 ** (age / half_life)), age in turns
since it was stored, so of two equally relevant turns the newer wins (a changed preference
replaces the old one) while an old turn that alone matches still comes back. The last few
exchanges go verbatim into the prompt as history. Everything lives in this object: a resumed
run rebuilds it by replaying the conversation (docs/plugins.md in memlab).
"""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, Field

from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem
from memlab_recency.bm25 import BM25Index


class RecencyConfig(BaseModel):
    """Settings of the recency condition."""

    top_k: int = Field(5, ge=1, description="turns recalled by weighted relevance")
    half_life_turns: float = Field(50.0, gt=0, description="turns after which recency halves")
    floor: float = Field(0.3, ge=0, le=1, description="weight of a turn however old")
    recent_turns: int = Field(2, ge=0, description="last turns sent verbatim as history")


class RecencyMemory(MemorySystem):
    """Recency-weighted BM25 retrieval over the stored turns (an example memlab plugin)."""

    key = "recency"
    Config = RecencyConfig
    uses_memory_prompts = False  # it sends no prompt to a model

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.index = BM25Index()
        self.turns: list[Exchange] = []  # row i of the index
        self.recent: deque[Exchange] = deque(maxlen=max(self.config.recent_turns, 1))

    def observe(self, exchange: Exchange) -> None:
        self.index.add(exchange.render())
        self.turns.append(exchange)
        self.recent.append(exchange)

    def weight(self, row: int) -> float:
        """How much the turn at ``row`` counts for being recent (1 for the newest)."""
        age = len(self.turns) - 1 - row
        floor = self.config.floor
        return floor + (1 - floor) * 0.5 ** (age / self.config.half_life_turns)

    def recall(self, query: str) -> MemoryContext:
        history = list(self.recent)[-self.config.recent_turns:] if self.config.recent_turns else []
        shown = {ex.turn_number for ex in history}
        scored = [(score * self.weight(row), row) for row, score in
                  enumerate(self.index.scores(query))
                  if score > 0 and self.turns[row].turn_number not in shown]
        best = sorted(scored, key=lambda pair: (-pair[0], -pair[1]))[:self.config.top_k]
        items = [self._item(row, score) for score, row in best]
        return MemoryContext(items=items, history=history)

    def _item(self, row: int, score: float) -> MemoryItem:
        turn = self.turns[row]
        return MemoryItem(id=f"recency:{turn.turn_number}", kind="turn", text=turn.render(),
                          score=score, timestamp=turn.timestamp,
                          metadata={"turn_number": turn.turn_number})

    def stats(self) -> dict[str, int]:
        return {"turns_indexed": len(self.turns)}
