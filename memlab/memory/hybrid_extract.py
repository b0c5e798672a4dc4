"""hybrid: extraction of promotion candidates (DD-01 ``promotion_candidates``) from one exchange.

The LLM extracts facts through ``complete_json``; only when its output cannot be repaired (or
the call fails) does a cheap rule-based extractor stand in. Every candidate records which one
produced it. With ``check=True`` the LLM's candidates are checked against the user's own words
(a small model often copies the assistant's reply or invents a fact): a candidate sharing no
content word with the user's message is dropped, and a first-person rule candidate ("my X is
Y") on the same subject replaces an LLM candidate that carries fewer of the user's words.
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
    "Rewrite what the user's message says about the user, and any standing request of theirs, "
    "as facts in the third person, so an assistant can remember them later. For each fact: "
    "subject, the attribute in 1-4 words without its value (e.g. name, favourite colour, "
    "opinion of board games, reply when greeted); content, one sentence starting 'The user' "
    "that keeps every name, date, item, reason and quoted sentence of the message; confidence "
    "0..1.\nExamples:\n"
    "User: I've changed my mind about board games: since May 02 I dislike them because the "
    "rules take too long.\n"
    '{"candidates": [{"subject": "opinion of board games", "content": "Since May 02 the user '
    'dislikes board games because the rules take too long.", "confidence": 0.9}]}\n'
    "User: You can call me Rowan. By the way, I once climbed a volcano.\n"
    '{"candidates": [{"subject": "name", "content": "The user wants to be called Rowan.", '
    '"confidence": 0.9}, {"subject": "past experience", "content": "The user once climbed a '
    'volcano.", "confidence": 0.9}]}\n'
    "User: Whenever I say good morning, reply: 'Rise and shine'\n"
    '{"candidates": [{"subject": "reply when greeted", "content": "When the user says good '
    'morning, the user wants the reply \'Rise and shine\'.", "confidence": 0.9}]}'
)
# The prompt shows the reply by example, so the JSON schema is not shown as well
# (``complete_json``'s ``instruction``; the schema still constrains generation). Shown the schema
# and told it may reply {"candidates": []}, the 1.5B model kept 0 of 40 held-out planted facts
# ("My name is Honora." included) and the 0.5B 25 of 40 (1 of 8 changes of mind); with this
# prompt and no escape hatch (``check_candidates`` drops what the message does not ground,
# questions included) 40 and 37 of 40 (benchmarks/bench_extraction.py, results/extraction.json).
# Subjects of the examples that name no attribute of their own: the 0.5B copies them (it gave
# all 12 of bench_extraction's standing instructions, held out and development, the subject
# "reply when greeted"; given "reply to good morning" instead, it copied that 11 times and the
# condition "good morning" into 8 of the facts), and facts sharing a subject supersede each
# other, so each trigger replaced the one before it. Such a
# subject, when the message does not say it, is replaced by the fact's content. ("name" is
# a real attribute: a newer name supersedes.)
EXAMPLE_SUBJECTS = tuple(s for s in re.findall(r'"subject": "([^"]+)"', EXTRACT_PROMPT)
                         if s != "name")
REPLY_INSTRUCTION = "Reply with the JSON object only."
# The reply ends before a candidate that repeats an earlier one word for word
# (``memlab.llm.jsoncut.cut_repeats``): once the 0.5B repeats a candidate it repeats until its
# token budget ends (every one of 75 such replies in the locomo grid's hybrid cell, 34 in the
# quick, standard and peers-standard records), and ``check_candidates`` keeps one of equal
# candidates anyway. On LoCoMo that was 23% of what the extraction wrote.
EXTRACT_STOPS_REPEATS = True
CUE = re.compile(r"\b(i|i'm|i've|i'd|my|mine|we|our|remember)\b", re.IGNORECASE)
_MY_X_IS = re.compile(r"\bmy ([a-z][a-z' -]{1,40}?) (?:is|are|was|=) ([^.?!;\n]{1,120})",
                      re.IGNORECASE)
_I_VERB = re.compile(r"\bi (?:really )?(live|work|like|love|prefer|hate|study|am allergic to)"
                     r" (?:in |at |as )?([^.?!;,\n]{1,80})", re.IGNORECASE)
# where the thing liked ends and the reason begins ("city breaks because it is cheap")
_REASON = re.compile(r"\s(?:because|since|as|when|while|but|so|though|although|if|for)\s|\s-+\s",
                     re.IGNORECASE)
# "opinion of X", "feelings about X", "preference for X": the subject is X
_ATTITUDE = re.compile(r"^(?:the user'?s? )?(?:opinions?|views?|feelings?|attitudes?|"
                       r"preferences?|stances?|thoughts?)\s+(?:of|on|about|for|towards?)\s+(?=\S)")
_PRONOUNS = {"it", "this", "that", "them", "these", "those", "him", "her", "you", "one"}
_SPELLING = {"favorite": "favourite", "color": "colour", "colors": "colours"}
_SUBJECT_STOP = {"the", "a", "an", "user", "users", "s", "my", "actually", "now", "current"}
_COPULA = re.compile(r"\s(?:is|are|was|were|=)\s")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"[^.?!\n]+[.?!]*")
_FILLER_WORDS = {  # words that do not ground a fact in the user's message
    "the", "and", "but", "for", "with", "that", "this", "these", "those", "are", "was", "were",
    "has", "have", "had", "not", "you", "your", "user", "users", "said", "she", "her", "his",
    "him", "they", "them", "their", "its", "our", "from", "about", "into", "will", "would",
    "can", "could", "please", "remember", "tell", "know", "now", "actually", "just", "also",
    "very", "really", "what", "which", "who", "how", "why", "when", "where", "there", "here",
    # the prompt's examples' own frame words: "because" and "too" grounded a copy of the board
    # games example in "I can't stand jazz records because the venues are too loud."
    "because", "since", "too", "than", "then", "once", "some", "every", "whenever", "reply"}


class FactDraft(BaseModel):
    """One fact as the LLM writes it (what its grammar allows: no internal fields)."""

    subject: str = Field(min_length=1)
    content: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)


class PromotionCandidate(FactDraft):
    """A fact staged for the ConsolidationAgent."""

    subject: str = Field(min_length=1, description="the attribute only, 1-4 words, without "
                         "its value, e.g. favourite colour (the supersession key)")
    content: str = Field(min_length=1, description="the fact about the user as one sentence")
    extractor: Extractor = "llm"


class ExtractionResult(BaseModel):
    """What the LLM extractor must return."""

    candidates: list[FactDraft] = Field(default_factory=list)


def subject_key(subject: str) -> str:
    """Normalised subject: the part before a copula, lower case, words only, no articles,
    possessives or "my"/"user", UK spelling.

    "Favorite Color" -> "favourite colour"; "My favourite colour is now blue" -> "favourite
    colour"; "blue is my favourite colour" -> "favourite colour"; "User's daughter's name" ->
    "daughter name". An attitude's frame goes: "opinion of city breaks" and "city breaks" are
    one subject (the 0.5B writes either for the same liking, and the rules write the first).
    """
    text = _ATTITUDE.sub("", subject.lower().replace("\u2019", "'").strip())
    head, *tail = _COPULA.split(f" {text} ", maxsplit=1)
    if tail and tail[0].startswith("my "):  # inverted: "blue is my favourite colour"
        head = tail[0]
    words = _WORD.findall(head) or _WORD.findall(text)
    return " ".join(_SPELLING.get(w, w) for w in words if w not in _SUBJECT_STOP)


def content_words(text: str) -> set[str]:
    """Lower-case words of 3+ letters that can ground a fact (no pronouns or fillers)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _FILLER_WORDS}


def opinion_subject(value: str) -> str | None:
    """The subject of a stated liking ("I like Y because ..."): "opinion of Y", the attribute
    the extraction prompt names for a change of mind (``subject_key``: Y), so a later "since May
    I dislike Y" supersedes it. Y ends before its reason; None when Y is a pronoun ("I love
    it")."""
    thing = _REASON.split(value, maxsplit=1)[0].strip(" '\"")
    thing = re.sub(r"^to\s+", "", thing, flags=re.IGNORECASE)
    if not thing or thing.lower() in _PRONOUNS:
        return None
    return f"opinion of {thing}"


def rule_based_candidates(exchange: Exchange, confidence: float = 0.75) -> list[PromotionCandidate]:
    """First-person statements of the user ("my X is Y", "I live in Y", "I like Y"); a liking's
    subject is ``opinion_subject``'s (before 2026-12-04 it was the whole clause, "like city
    breaks because it", which no change of mind superseded)."""
    found = []
    for subject, value in _MY_X_IS.findall(exchange.user):
        found.append(PromotionCandidate(subject=subject, content=f"The user's {subject} is "
                                        f"{value.strip()}.", confidence=confidence,
                                        extractor="rules"))
    for match in _I_VERB.finditer(exchange.user):
        verb, value = match.group(1).lower(), match.group(2).strip()
        subject = verb if verb in {"live", "work", "study"} else opinion_subject(value)
        if subject is None:
            continue
        found.append(PromotionCandidate(subject=subject, content=f"The user said: "
                                        f"{_sentence_at(exchange.user, match.start())}",
                                        confidence=confidence, extractor="rules"))
    return found


def _sentence_at(text: str, position: int) -> str:
    """The whole sentence of ``text`` around ``position`` (its date and reason with it: "since
    March 20 I really like jazz records because ..."), ending in its punctuation."""
    for sentence in _SENTENCE.finditer(text):
        if sentence.start() <= position < sentence.end():
            found = sentence.group(0).strip()
            return found if found[-1] in ".?!" else f"{found}."
    return f"{text.strip()}."


def check_candidates(llm_found: list[PromotionCandidate],
                     exchange: Exchange) -> list[PromotionCandidate]:
    """The LLM's candidates grounded in the user's message, merged with the rule candidates.

    A candidate is grounded when its content shares a content word with a statement of the
    user (questions do not count: "Which planets have rings?" grounds no fact).
    A subject copied from the prompt's examples (``EXAMPLE_SUBJECTS``) that the message does not
    say becomes the candidate's content. Candidates on the same subject (``subject_key``): the
    one carrying more of the user's words is kept (ties: the LLM's). Rule candidates on new
    subjects are added.
    """
    said = set().union(*(content_words(sentence) for sentence in _SENTENCE.findall(exchange.user)
                          if not sentence.rstrip().endswith("?")))
    copied = {subject_key(subject) for subject in EXAMPLE_SUBJECTS}
    llm_found = [c.model_copy(update={"subject": c.content})
                 if subject_key(c.subject) in copied and not content_words(c.subject) & said
                 else c for c in llm_found]
    kept: dict[str, tuple[int, PromotionCandidate]] = {}
    for source in (llm_found, rule_based_candidates(exchange)):
        for candidate in source:
            overlap = len(content_words(candidate.content) & said)
            key = subject_key(candidate.subject) or candidate.subject
            if overlap and (key not in kept or overlap > kept[key][0]):
                kept[key] = (overlap, candidate)
    return [candidate for _, candidate in kept.values()]


def extract_candidates(llm: LLMClient | None, exchange: Exchange, *, max_tokens: int = 192,
                       check: bool = False) -> tuple[list[PromotionCandidate], Extractor, str | None]:
    """Candidates of one exchange, which extractor produced them, and the LLM failure if any.

    Args:
        check: ground the LLM's candidates in the user's message (``check_candidates``).
    """
    if llm is None:
        return rule_based_candidates(exchange), "rules", "no llm"
    from memlab.llm.structured import MEMORY_MAX_CHARS, MEMORY_MAX_ITEMS, complete_json

    messages = [Message(role="system", content=EXTRACT_PROMPT),
                Message(role="user", content=exchange.render())]
    try:
        result = complete_json(llm, messages, ExtractionResult, max_tokens=max_tokens,
                               max_items=MEMORY_MAX_ITEMS, max_chars=MEMORY_MAX_CHARS,
                               instruction=REPLY_INSTRUCTION,
                               stop_repeats=EXTRACT_STOPS_REPEATS)
    except LLMError as exc:
        return rule_based_candidates(exchange), "rules", f"{type(exc).__name__}: {exc}"
    drafts = [PromotionCandidate(**draft.model_dump(), extractor="llm")
              for draft in result.candidates]
    found = check_candidates(drafts, exchange) if check else drafts
    return found, "llm", None
