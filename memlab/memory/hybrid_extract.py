"""hybrid: extraction of promotion candidates (DD-01 ``promotion_candidates``) from one exchange.

The LLM extracts facts through ``complete_json``; only when its output cannot be repaired (or
the call fails) does a cheap rule-based extractor stand in. Every candidate records which one
produced it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from memlab.errors import LLMError
from memlab.llm.base import LLMClient, Message
from memlab.memory.base import Exchange

Extractor = Literal["llm", "rules", "none"]

EXTRACT_PROMPT = (
    "You read one exchange between a user and an assistant and list durable facts the USER "
    "states about themselves, their life, preferences or plans (not questions, not small talk). "
    "For each fact give: subject, what it is about in 1-4 words (e.g. daughter's name, "
    "favourite colour); content, one full sentence about the user that keeps every name, "
    "number and relation (e.g. The user's daughter is called Ottilie.); confidence, 0..1. "
    'Reply with JSON only: {"candidates": [{"subject": ..., "content": ..., "confidence": ...}]}'
    ', or {"candidates": []} when there is no such fact.'
)
CUE = re.compile(r"\b(i|i'm|i've|i'd|my|mine|we|our|remember)\b", re.IGNORECASE)
_MY_X_IS = re.compile(r"\bmy ([a-z][a-z' -]{1,40}?) (?:is|are|was|=) ([^.?!;\n]{1,120})",
                      re.IGNORECASE)
_I_VERB = re.compile(r"\bi (?:really )?(live|work|like|love|prefer|hate|study|am allergic to)"
                     r" (?:in |at |as )?([^.?!;,\n]{1,80})", re.IGNORECASE)
_SPELLING = {"favorite": "favourite", "color": "colour", "colors": "colours"}


class PromotionCandidate(BaseModel):
    """A fact staged for the ConsolidationAgent."""

    subject: str = Field(min_length=1, description="what the fact is about (supersession key)")
    content: str = Field(min_length=1, description="the fact as one sentence")
    confidence: float = Field(ge=0.0, le=1.0)
    extractor: Extractor = "llm"


class ExtractionResult(BaseModel):
    """What the LLM extractor must return."""

    candidates: list[PromotionCandidate] = Field(default_factory=list)


def subject_key(subject: str) -> str:
    """Normalised subject: lower case, words only, UK spelling ("Favorite Color" -> "favourite colour")."""
    words = re.findall(r"[a-z0-9]+", subject.lower())
    return " ".join(_SPELLING.get(w, w) for w in words if w not in {"the", "a", "an", "user", "s"})


def rule_based_candidates(exchange: Exchange, confidence: float = 0.75) -> list[PromotionCandidate]:
    """First-person statements of the user ("my X is Y", "I live in Y", "I like Y")."""
    found = []
    for subject, value in _MY_X_IS.findall(exchange.user):
        found.append(PromotionCandidate(subject=subject, content=f"The user's {subject} is "
                                        f"{value.strip()}.", confidence=confidence,
                                        extractor="rules"))
    for match in _I_VERB.finditer(exchange.user):
        verb, value = match.group(1).lower(), match.group(2).strip()
        subject = verb if verb in {"live", "work", "study"} else f"{verb} {value}"
        found.append(PromotionCandidate(subject=subject, content=f"The user said: "
                                        f"{match.group(0).strip()}.", confidence=confidence,
                                        extractor="rules"))
    return found


def extract_candidates(llm: LLMClient | None, exchange: Exchange, *,
                       max_tokens: int = 192) -> tuple[list[PromotionCandidate], Extractor, str | None]:
    """Candidates of one exchange, which extractor produced them, and the LLM failure if any."""
    if llm is None:
        return rule_based_candidates(exchange), "rules", "no llm"
    from memlab.llm.structured import complete_json

    messages = [Message(role="system", content=EXTRACT_PROMPT),
                Message(role="user", content=exchange.render())]
    try:
        result = complete_json(llm, messages, ExtractionResult, max_tokens=max_tokens)
    except LLMError as exc:
        return rule_based_candidates(exchange), "rules", f"{type(exc).__name__}: {exc}"
    for candidate in result.candidates:
        candidate.extractor = "llm"
    return result.candidates, "llm", None
