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
from memlab.memory.base import Exchange, MemoryContext, MemorySize, MemorySystem

_TURN = re.compile(r"(?m)^User: ")


class FullContextConfig(BaseModel):
    """Settings of the full_context condition."""

    reserve_tokens: int = Field(
        1024, ge=0, description="tokens of the window kept free for system prompt, current "
        "message and reply; history gets context_window - reserve_tokens")
    turn_overhead_tokens: int = Field(
        8, ge=0, description="chat-format tokens per exchange (two messages), as the Agent counts")
    cut_block: float = Field(
        0.5, ge=0, lt=1, description="share of the history budget freed at once when the "
        "history passes it (0: cut one turn at a time). Cutting in blocks keeps the prompt's "
        "prefix the same from one answer to the next, so the model reuses its evaluated prefix "
        "(KV cache) instead of re-reading the whole history for every answer; the history "
        "then holds between (1 - cut_block) and all of the budget")
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
    uses_memory_prompts = False
    Config = FullContextConfig
    sized_to_answering_model = True  # the history must fit the window of the model it goes to

    def __init__(self, *args, operating=None, **kwargs):
        super().__init__(*args, **kwargs)
        if self.llm is None:
            raise ConfigError("full_context: llm is required (its tokenizer and context_window)")
        self.conversation_id = self.scope.key
        self._owns_operating = operating is None
        self.operating = operating or open_operating_memory(self.config.redis_url,
                                                            namespace=self.namespace)
        self._turns: list[tuple[Exchange, int]] = []
        self._start, self._kept_tokens = 0, 0  # first turn in the prompt; tokens from it on
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
        self._kept_tokens += tokens

    def observe(self, exchange: Exchange) -> None:
        self.operating.append_turn(self.conversation_id, exchange.user, exchange.assistant)
        self._remember(exchange)

    def recall(self, query: str) -> MemoryContext:
        if self._kept_tokens > self.budget:
            self._cut(self.budget * (1 - self.config.cut_block))
        history = [ex for ex, _ in self._turns[self._start:]]
        return MemoryContext(history=history, truncated_turns=self._start,
                             metadata={"uncapped_history": True,
                                       "history_tokens": self._kept_tokens,
                                       "budget_tokens": self.budget})

    def size(self) -> MemorySize:
        """The whole stored history, one item per exchange (``User: ...\\nAI: ...``), those
        already cut from the prompt included: the log keeps them, and the window, not the
        memory, decides how many are sent. Tokens by the suites' estimate, not the model's
        tokenizer counts this condition caches for its cuts, so it compares with the others."""
        return MemorySize.of(exchange.render() for exchange, _ in self._turns)

    def _cut(self, target: float) -> None:
        """Drop the oldest turns still in the prompt until the rest fits ``target`` tokens."""
        while self._start < len(self._turns) and self._kept_tokens > target:
            self._kept_tokens -= self._turns[self._start][1]
            self._start += 1

    def close(self) -> None:
        if self._owns_operating:
            self.operating.close()
