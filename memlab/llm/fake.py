"""FakeLLM: scripted replies for unit tests only. Never used by a default run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memlab.llm.base import Completion, LLMClient, Message

Reply = str | Callable[[list[Message]], str]


class FakeLLM(LLMClient):
    """Answers from a script and records every call.

    Args:
        replies: strings or callables ``(messages) -> str`` used in order; the last one repeats.
        default: reply when no script is given.
        context_window: the window this fake pretends to have (tokens = whitespace words).

    Example:
        >>> llm = FakeLLM(["hello"])
        >>> llm.complete([{"role": "user", "content": "hi"}]).text
        'hello'
    """

    provider = "fake"
    model = "fake"

    def __init__(self, replies: Iterable[Reply] | None = None, *, default: Reply = "ok",
                 context_window: int = 4096, **_: Any):
        super().__init__()
        self.replies: list[Reply] = list(replies or [])
        self.default = default
        self.context_window = context_window
        self.history: list[list[Message]] = []
        self.params: list[dict[str, Any]] = []

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        index = len(self.history)
        self.history.append(messages)
        self.params.append(params)
        if self.replies:
            reply = self.replies[min(index, len(self.replies) - 1)]
        else:
            reply = self.default
        text = reply(messages) if callable(reply) else reply
        return Completion(text=text, prompt_tokens=self.count_message_tokens(messages),
                          completion_tokens=self.count_tokens(text), latency_s=1e-6,
                          model=self.model, provider=self.provider)

    def count_tokens(self, text: str) -> int:
        return len(text.split())
