"""full_context (DD-03): the whole ConversationHistoryLog in the prompt, oldest turns cut to fit.

The log lives in operating memory under ``full_history:{conversation_id}`` (one text block,
appended atomically). Token counts per exchange are cached in process so recall stays linear in
the turns that fit, not in the whole history.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from memlab.errors import ConfigError
from memlab.memory._backends import open_operating_memory
from memlab.memory.base import Exchange, MemoryContext, MemorySystem

_TURN = re.compile(r"(?m)^User: ")


class FullContextConfig(BaseModel):
    """Settings of the full_context condition."""

    reserve_tokens: int = Field(
        1024, ge=0, description="tokens of the window kept free for system prompt, current "
        "message and reply; history gets context_window - reserve_tokens")
    turn_overhead_tokens: int = Field(
        8, ge=0, description="chat-format tokens per exchange (two messages), as the Agent counts")
    redis_url: str | None = Field(None, description="operating memory server (else MEMLAB_REDIS_URL)")


def parse_history(raw_text: str) -> list[tuple[str, str]]:
    """Split a ConversationHistoryLog's ``User: ...\\nAI: ...`` text into (user, assistant) pairs."""
    pairs = []
    for chunk in _TURN.split(raw_text)[1:]:
        user, _, assistant = chunk.partition("\nAI: ")
        pairs.append((user, assistant.rstrip("\n")))
    return pairs


class FullContextMemory(MemorySystem):
    """Every exchange, newest last; the oldest are cut when the history passes the window."""

    key = "full_context"
    Config = FullContextConfig

    def __init__(self, *args, operating=None, **kwargs):
        super().__init__(*args, **kwargs)
        if self.llm is None:
            raise ConfigError("full_context: llm is required (its tokenizer and context_window)")
        self.conversation_id = self.scope.key
        self._owns_operating = operating is None
        self.operating = operating or open_operating_memory(self.config.redis_url,
                                                            namespace=self.namespace)
        self._turns: list[tuple[Exchange, int]] = []
        log = self.operating.get_history(self.conversation_id)
        for number, (user, assistant) in enumerate(parse_history(log.raw_text), start=1):
            self._remember(Exchange(user=user, assistant=assistant, turn_number=number))

    @property
    def budget(self) -> int:
        """History tokens allowed: the model's window minus the reserve."""
        return max(0, self.llm.context_window - self.config.reserve_tokens)

    def _remember(self, exchange: Exchange) -> None:
        tokens = (self.llm.count_tokens(exchange.user) + self.llm.count_tokens(exchange.assistant)
                  + self.config.turn_overhead_tokens)
        self._turns.append((exchange, tokens))

    def observe(self, exchange: Exchange) -> None:
        self.operating.append_turn(self.conversation_id, exchange.user, exchange.assistant)
        self._remember(exchange)

    def recall(self, query: str) -> MemoryContext:
        used, kept = 0, 0
        for _, tokens in reversed(self._turns):
            if used + tokens > self.budget:
                break
            used, kept = used + tokens, kept + 1
        history = [ex for ex, _ in self._turns[len(self._turns) - kept:]] if kept else []
        return MemoryContext(history=history, truncated_turns=len(self._turns) - kept,
                             metadata={"uncapped_history": True, "history_tokens": used,
                                       "budget_tokens": self.budget})

    def close(self) -> None:
        if self._owns_operating:
            self.operating.close()
