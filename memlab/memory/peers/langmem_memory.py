"""LangMem as a memory condition: its memory store manager (``create_memory_store_manager``)
per exchange, the LangGraph store's semantic search per query, on memlab's model (handed to
LangMem as a LangChain chat model: trustcall's tool calls become grammar-constrained JSON) and
memlab's embedder (the store's index).

The store is LangGraph's ``InMemoryStore``: a killed run rebuilds it by replaying its journaled
model calls, as every memlab condition is rebuilt. LangMem and trustcall draw uuid4 for memory
ids and for the session tag inside their prompt; memlab seeds those draws, so a replay asks the
same prompts and rebuilds the same ids.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memlab.memory.base import Exchange, MemoryItem, MemorySize
from memlab.memory.peers.common import PeerConfig, PeerMemory

LANGMEM_VERSION = "0.0.30"
LISTING_PAGE = 1000  # memories listed per store call when counting them


class LangMemConfig(PeerConfig):
    """Settings of the langmem condition."""

    query_limit: int = Field(5, ge=1, description="existing memories LangMem revises per add")
    enable_deletes: bool = Field(False, description="let LangMem delete memories (its default)")


class LangMemMemory(PeerMemory):
    """LangMem's memory store manager for one user and agent.

    Args:
        store: a LangGraph store to share (the isolation test shares one between users);
            default a fresh ``InMemoryStore`` indexed with memlab's embedder.
    """

    key = "langmem"
    Config = LangMemConfig
    uuid_modules = ("langmem.knowledge.extraction", "trustcall._base")

    def __init__(self, *args, store: Any = None, **kwargs):
        super().__init__(*args, **kwargs)
        from langgraph.store.memory import InMemoryStore
        from langmem import create_memory_store_manager

        self.store = store or InMemoryStore(index={"dims": self.embeddings.dim,
                                                   "embed": self.embeddings})
        self.namespace = ("memories", self.scope.agent_id, self.scope.user_id)
        self.manager = create_memory_store_manager(
            self.chat, namespace=self.namespace, store=self.store,
            query_limit=self.config.query_limit, enable_deletes=self.config.enable_deletes)

    def _add(self, exchange: Exchange) -> int:
        messages = [{"role": "user", "content": exchange.user},
                    {"role": "assistant", "content": exchange.assistant}]
        return len(self.manager.invoke({"messages": messages}))

    def _search(self, query: str, k: int) -> list[MemoryItem]:
        return [MemoryItem(id=f"langmem:{hit.key}", kind="memory", text=memory_text(hit.value),
                           score=hit.score)
                for hit in self.store.search(self.namespace, query=query, limit=k)]

    def size(self) -> MemorySize:
        """Every memory in this user's namespace of the LangGraph store, each with its text
        as recall shows it: the store's listing (a search without a query embeds nothing)."""
        texts: list[str] = []
        while page := self.store.search(self.namespace, limit=LISTING_PAGE, offset=len(texts)):
            texts += [memory_text(hit.value) for hit in page]
        return MemorySize.of(texts)


def memory_text(value: dict[str, Any]) -> str:
    """The text of a stored LangMem memory (``{"kind": ..., "content": {"content": ...}}``)."""
    content = value.get("content", value)
    if isinstance(content, dict):
        return str(content.get("content", content))
    return str(content)
