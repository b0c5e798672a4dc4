"""oracle: an upper bound that puts exactly the question's evidence, verbatim, into the prompt.

Not a memory architecture: the runner tells it, before each question, which stored turns the
suite names as that question's evidence (``set_evidence``), and recall returns those turns and
nothing else. Beside vanilla (no memory) it bounds every comparison: a condition far below the
oracle loses evidence or drowns it; the oracle's own accuracy is the answering model's ceiling
on the suite (a question type the oracle cannot pass measures the model, not memory).
"""

from __future__ import annotations

from pydantic import BaseModel

from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySize, MemorySystem


class OracleConfig(BaseModel):
    """oracle has nothing to configure."""


class OracleMemory(MemorySystem):
    """Keeps every exchange by turn number; recalls only the current question's evidence."""

    key = "oracle"
    uses_memory_prompts = False
    Config = OracleConfig
    uses_evidence = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turns: dict[int, Exchange] = {}
        self.evidence: list[int] = []

    def observe(self, exchange: Exchange) -> None:
        self.turns[exchange.turn_number] = exchange

    def set_evidence(self, turns: list[int]) -> None:
        self.evidence = sorted(turns)

    def recall(self, query: str) -> MemoryContext:
        items = [MemoryItem(id=f"turn:{n}", kind="turn", text=self.turns[n].render(),
                            timestamp=self.turns[n].timestamp, metadata={"turn_number": n})
                 for n in self.evidence if n in self.turns]
        return MemoryContext(items=items)

    def size(self) -> MemorySize:
        """Every exchange it keeps, each as recall shows it (``User: ...\\nAI: ...``): any may be
        some question's evidence."""
        return MemorySize.of(exchange.render() for exchange in self.turns.values())
