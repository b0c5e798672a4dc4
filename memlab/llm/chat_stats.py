"""ChatStats: what a peer library's model calls cost, summed over its life."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memlab.llm.base import Completion


class ChatStats(BaseModel):
    """What a peer's model calls cost, summed over its life (replay-stable: seconds are the
    recorded latencies, so a resumed run reports what the first process paid)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    parse_failures: int = 0
    cut_replies: int = Field(0, description="replies that reached max_tokens: the lenient JSON "
                             "repair keeps their complete calls, the last one may be cut short")
    failures: list[str] = Field(default_factory=list, description="the first few, for the log")

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.cached += int(completion.cached)
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.seconds += completion.latency_s

    def fail(self, message: str) -> None:
        self.parse_failures += 1
        if len(self.failures) < 20:
            self.failures.append(message[:300])
