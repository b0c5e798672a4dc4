"""Seed 000, DD-02 and DD-03: the baselines' turn payload and per-turn memory objects.

The seed's ``QdrantDocument`` is :class:`TurnDocument` here (memlab's vector store is chromadb);
``QdrantDocument`` stays importable as an alias.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from memlab.models._common import NonBlankStr, SeedModel, UtcDatetime, UuidStr, new_id, utc_now

__all__ = ["BenchmarkTurnPayload", "ConversationHistoryLog", "QdrantDocument", "TurnDocument"]


class BenchmarkTurnPayload(SeedModel):
    """Input from the benchmark runner to the agent for one turn (transient, HTTP body)."""

    history: str = Field(description="the whole conversation so far, concatenated")
    message: str = Field(description="the user message the agent must answer")


class TurnDocument(SeedModel):
    """One user-AI exchange stored as one point of the vector store (the seed's QdrantDocument)."""

    collection_name: ClassVar[str] = "goodai_ltm_full_history"

    id: UuidStr = Field(default_factory=new_id, description="UUID of the point")
    content: str = Field(description="the exchange text; this is what gets embedded")
    turn_number: int = Field(ge=0, description="sequential index of the turn")
    timestamp: UtcDatetime = Field(default_factory=utc_now, description="when the turn occurred")


QdrantDocument = TurnDocument


class ConversationHistoryLog(SeedModel):
    """The full-context baseline's memory: one text block (key ``full_history:{conversation_id}``)."""

    conversation_id: NonBlankStr = Field(description="which conversation this log holds")
    raw_text: str = Field(description="the complete conversation text, turns appended at the end")

    @property
    def storage_key(self) -> str:
        return f"full_history:{self.conversation_id}"

    def append_turn(self, user: str, assistant: str) -> None:
        """Append one exchange as ``User: ...\\nAI: ...`` lines."""
        turn = f"User: {user}\nAI: {assistant}"
        self.raw_text = f"{self.raw_text}\n{turn}" if self.raw_text else turn
