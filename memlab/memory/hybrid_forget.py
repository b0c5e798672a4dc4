"""hybrid: the user's requests to forget ("Forget every name I have given you", "please clear my
shopping list", "Cancel every instruction about a sentence to say ...").

A request is an imperative at the start of a clause, or after "please" / "can you" / "could
you" (``FORGET_REQUEST``): "I had to cancel my trip" and "Don't forget my keys" are not
requests. For a request, the current facts closest to it (at most ``candidates``) are shown to
the memory model, numbered, and it names the ones the request covers (``FORGET_PROMPT``, one
call per request). Those facts stop being current: kept, with ``forgotten_turn`` set, and no
longer recalled. Without a model, or when its reply cannot be read, nothing is forgotten (a
wrong guess would lose facts) and the failure is counted.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from memlab.errors import LLMError
from memlab.llm.base import LLMClient, Message
from memlab.memory.hybrid_extract import REPLY_INSTRUCTION

FORGET_PROMPT = (
    "The user asks the assistant to forget something. Below the request are numbered facts "
    "the assistant remembers about the user. List the number of every fact the request asks "
    "to forget, and no other.\nExample:\n"
    "Request: Forget what I told you about my car.\n"
    "Facts:\n1. The user's car is a red Volvo.\n2. The user's sister lives in Oslo.\n"
    "3. The user parks the car behind the library.\n"
    '{"forget": [1, 3]}'
)
FORGET_VERBS = ("forget", "cancel", "clear", "delete", "erase", "disregard")
FORGET_REQUEST = re.compile(
    r"(?:^|[.;:!?]\s+|\b(?:please|can you|could you|you can|you may)\s+)"
    rf"(?:{'|'.join(FORGET_VERBS)})\b", re.IGNORECASE)


class ForgetReply(BaseModel):
    """The memory model's answer: numbers of the facts shown."""

    forget: list[int] = Field(description="numbers of the facts shown, from 1")


def is_forget_request(message: str) -> bool:
    """Whether ``message`` asks the assistant to forget, cancel or clear something."""
    return bool(FORGET_REQUEST.search(message.strip()))


def render_request(request: str, facts: list[str]) -> str:
    """The user message of the forget call: the request and the numbered facts."""
    numbered = "\n".join(f"{i}. {fact}" for i, fact in enumerate(facts, 1))
    return f"Request: {request.strip()}\nFacts:\n{numbered}"


def choose_forgotten(llm: LLMClient | None, request: str,
                     facts: list[str]) -> tuple[list[int], str | None]:
    """Indexes (0-based) of the ``facts`` that ``request`` asks to forget, and the failure if
    any (then no index: nothing is forgotten on a guess)."""
    if not facts:
        return [], None
    if llm is None:
        return [], "no llm"
    from memlab.llm.structured import complete_json

    schema = {"type": "object", "properties": {"forget": {
        "type": "array", "maxItems": len(facts),
        "items": {"type": "integer", "enum": list(range(1, len(facts) + 1))}}},
        "required": ["forget"], "additionalProperties": False}
    messages = [Message(role="system", content=FORGET_PROMPT),
                Message(role="user", content=render_request(request, facts))]
    try:
        reply = complete_json(llm, messages, ForgetReply, max_tokens=64, schema=schema,
                              instruction=REPLY_INSTRUCTION)
    except LLMError as exc:
        return [], f"{type(exc).__name__}: {exc}"
    return sorted({n - 1 for n in reply.forget if 1 <= n <= len(facts)}), None
