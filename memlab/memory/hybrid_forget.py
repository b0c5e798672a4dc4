"""hybrid: the user's requests to forget ("Forget every name I have given you", "please clear my
shopping list", "Cancel every instruction about a sentence to say ...").

A request is an imperative at the start of a clause, or after "please" / "can you" / "could
you" (``FORGET_REQUEST``): "I had to cancel my trip" and "Don't forget my keys" are not
requests. For a request, the memory model is asked of each current fact closest to it (at
most ``forget_candidates``) whether the request covers it: yes or no (``FORGET_PROMPT``; the
request comes first, so the calls share a prefix). (Asked instead to list the numbers of the
facts a request covers, the 1.5B model listed every fact shown, for all ten requests of
benchmarks/bench_forget.py.) The facts it answers yes to stop being current: kept, with
``forgotten_turn`` set, and no longer recalled. Without a model, or when a reply cannot be
read, nothing is forgotten (a wrong guess would lose facts) and the failure is counted.
"""

from __future__ import annotations

import re

from memlab.errors import LLMError
from memlab.llm.base import LLMClient, Message

FORGET_PROMPT = (
    "The user asks the assistant to forget something. You are shown the request and one fact "
    "the assistant remembers about the user. Answer yes if the fact is part of what the "
    "request names, even in other words, and no if the fact is about something else.\n"
    "Examples:\n"
    "Request: Forget what I told you about my car.\nFact: The user drives a red Volvo.\nyes\n"
    "Request: Forget what I told you about my car.\nFact: The user's sister lives in Oslo.\nno"
)
ANSWERS = ("yes", "no")
FORGET_VERBS = ("forget", "cancel", "clear", "delete", "erase", "disregard")
FORGET_REQUEST = re.compile(
    r"(?:^|[.;:!?]\s+|\b(?:please|can you|could you|you can|you may)\s+)"
    rf"(?:{'|'.join(FORGET_VERBS)})\b", re.IGNORECASE)


def is_forget_request(message: str) -> bool:
    """Whether ``message`` asks the assistant to forget, cancel or clear something."""
    return bool(FORGET_REQUEST.search(message.strip()))


def render_question(request: str, fact: str) -> str:
    """The user message of one fact's question (the request first: a shared prefix)."""
    return f"Request: {request.strip()}\nFact: {fact}\nDoes the request ask to forget this fact?"


def choose_forgotten(llm: LLMClient | None, request: str,
                     facts: list[str]) -> tuple[list[int], str | None]:
    """Indexes of the ``facts`` that ``request`` asks to forget, one yes/no question per fact,
    and the failure if any (then no index: nothing is forgotten on a guess)."""
    if facts and llm is None:
        return [], "no llm"
    chosen = []
    for i, fact in enumerate(facts):
        messages = [Message(role="system", content=FORGET_PROMPT),
                    Message(role="user", content=render_question(request, fact))]
        try:
            reply = llm.complete(messages, choices=list(ANSWERS), max_tokens=2, temperature=0.0)
        except LLMError as exc:
            return [], f"{type(exc).__name__}: {exc}"
        answer = reply.text.strip().lower()
        if answer not in ANSWERS:
            return [], f"reply {reply.text[:40]!r} is not yes or no"
        if answer == "yes":
            chosen.append(i)
    return chosen, None
