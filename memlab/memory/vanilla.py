"""vanilla (seed 002 VanillaLLM): no memory; the prompt is the system prompt + current message."""

from __future__ import annotations

from pydantic import BaseModel

from memlab.memory.base import Exchange, MemoryContext, MemorySize, MemorySystem


class VanillaConfig(BaseModel):
    """vanilla has nothing to configure."""


class VanillaMemory(MemorySystem):
    """Remembers nothing: ``observe`` only counts, ``recall`` is always empty."""

    key = "vanilla"
    uses_memory_prompts = False
    Config = VanillaConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.observed = 0

    def observe(self, exchange: Exchange) -> None:
        self.observed += 1

    def recall(self, query: str) -> MemoryContext:
        return MemoryContext()

    def size(self) -> MemorySize:
        """Empty: vanilla keeps nothing (it counts exchanges, it does not store them)."""
        return MemorySize(items=0, tokens=0)
