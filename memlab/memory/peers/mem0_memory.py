"""mem0 (PyPI ``mem0ai``) as a memory condition: ``Memory.add`` per exchange, ``Memory.search``
per query, on memlab's model (mem0's LangChain LLM provider) and embedder (its LangChain
embedder provider), with chroma in the run folder as its vector store.

mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` when it is imported: they are set first (telemetry
off, its folder inside the run folder), or it would reach PostHog, fetch a notice config from
GitHub and write ``~/.mem0``. Its extraction reply is constrained to the JSON its prompt asks
for (``{"memory": [{"id": ..., "text": ..., "attributed_to": ...}]}``), line breaks allowed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memlab.errors import ConfigError
from memlab.llm.structured import MEMORY_MAX_CHARS, MEMORY_MAX_ITEMS, prompt_schema
from memlab.memory.base import Exchange, MemoryItem, MemorySize
from memlab.memory.peers.common import PeerConfig, PeerMemory

MEM0_VERSION = "2.2.1"


class Mem0Fact(BaseModel):
    id: str
    text: str = Field(min_length=1)
    attributed_to: str
    linked_memory_ids: list[str] = Field(default_factory=list)


class Mem0Extraction(BaseModel):
    """The reply mem0's additive extraction prompt asks for (its "Output format", fields in
    its order: a grammar without the fields the prompt requires pushed the model off its path)."""

    memory: list[Mem0Fact]


class Mem0Config(PeerConfig):
    """Settings of the mem0 condition."""

    collection: str = Field("mem0", description="chroma collection mem0 writes")
    threshold: float = Field(0.1, ge=0, le=1, description="mem0's search score threshold")


def import_mem0(folder: Path) -> Any:
    """``mem0.Memory``, importing mem0 with telemetry off and its folder in ``folder``.

    Raises:
        ConfigError: mem0 was already imported with telemetry on (it reads the variable once).
    """
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(folder)
        folder.mkdir(parents=True, exist_ok=True)
    from mem0 import Memory
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        raise ConfigError("MEM0_TELEMETRY: mem0 was imported with telemetry on before memlab "
                          "could turn it off; import memlab's mem0 condition first")
    return Memory


class Mem0Memory(PeerMemory):
    """mem0's Memory for one user and agent."""

    key = "mem0"
    Config = Mem0Config
    uuid_modules = ("mem0.memory.main",)
    clock_modules = ("mem0.configs.prompts",)  # its extraction prompt's two dates

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.chat.response_schema = prompt_schema(Mem0Extraction, max_items=MEMORY_MAX_ITEMS,
                                                  max_chars=MEMORY_MAX_CHARS)
        # mem0's prompt states the format, indented: no second statement of it, line breaks
        # allowed (with both, the 1.5B model answered '{"memory":[]}' to every exchange)
        self.chat.schema_instruction, self.chat.json_newlines = False, True
        memory_cls = import_mem0(self.folder.path / "mem0")
        with self._library():
            self.memory = memory_cls.from_config({
                "llm": {"provider": "langchain", "config": {"model": self.chat}},
                "embedder": {"provider": "langchain", "config": {"model": self.embeddings}},
                "vector_store": {"provider": "chroma", "config": {
                    "collection_name": self.config.collection,
                    "path": str(self.folder.path / "mem0_chroma")}},
                "history_db_path": str(self.folder.path / "mem0_history.db"),
            })
        self.owner = {"user_id": self.scope.user_id, "agent_id": self.scope.agent_id}

    def _add(self, exchange: Exchange) -> int:
        messages = [{"role": "user", "content": exchange.user},
                    {"role": "assistant", "content": exchange.assistant}]
        result = self.memory.add(messages, **self.owner, metadata={
            "observed_turn": exchange.turn_number,
            "observed_at": exchange.timestamp.isoformat()})
        return len(result.get("results", []))

    def _search(self, query: str, k: int) -> list[MemoryItem]:
        found = self.memory.search(query, top_k=k, filters=dict(self.owner),
                                   threshold=self.config.threshold)
        items = []
        for hit in found.get("results", []):
            meta = hit.get("metadata") or {}
            items.append(MemoryItem(id=f"mem0:{hit['id']}", kind="memory", text=hit["memory"],
                                    score=hit.get("score"), timestamp=meta.get("observed_at"),
                                    metadata={"observed_turn": meta.get("observed_turn")}))
        return items

    def size(self) -> MemorySize:
        """Every memory mem0 keeps for this user and agent, each with its text: mem0's
        ``get_all``, a listing of its chroma collection (no model or embedding call), asked
        for more until it returns fewer than asked."""
        limit = 1024
        with self._library():
            while len(found := self.memory.get_all(filters=dict(self.owner),
                                                   top_k=limit)["results"]) >= limit:
                limit *= 4
        return MemorySize.of(hit["memory"] for hit in found)

    def close(self) -> None:
        vector_store = getattr(self.memory, "vector_store", None)
        client = getattr(vector_store, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        db = getattr(self.memory, "db", None)
        if db is not None and hasattr(db, "close"):
            db.close()
        super().close()
