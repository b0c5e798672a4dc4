"""Evidence recall: did the evidence a question needs reach the prompt it was answered from?

The model-free measure memory papers report beside accuracy (Recall@k on LongMemEval and
LoCoMo). For each piece of evidence of a question (``memlab.bench.base.Evidence``: an earlier
turn and the answer text it carries), three checks on the prompt the answering model saw, memory
block and history only (the question and its options are left out: an option often quotes the
answer):

- ``direct``: the evidence turn's own user text is in the prompt verbatim (case and whitespace
  aside): a retrieved turn, a raw episode, a history message;
- ``derived``: a prompt item derived from that turn (its provenance, the turn numbers a summary,
  consolidated memory, schema or fact records) carries the answer: at least
  ``ANSWER_COVERAGE`` of the answer's content words are in that item's text. Provenance alone
  overstates recall: a summary of the turn that lost the answer brings nothing;
- ``answer_in_prompt``: the answer's content words are anywhere in the prompt (how a memory that
  keeps no provenance, such as a peer library's, is judged).

A piece of evidence is ``reached`` when direct or derived (or, for a memory without provenance,
when its answer is in the prompt); a question's ``evidence_recall`` is the share reached (None
when the suite names no evidence for it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memlab.bench.base import Evidence

ANSWER_COVERAGE = 0.8
_WORD = re.compile(r"[a-z0-9]+")
_SPACE = re.compile(r"\s+")
STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been it its this "
    "that these those i me my you your he she his her we our they their them so because".split())


@dataclass(frozen=True)
class PromptPart:
    """One piece of a rendered prompt: its text and the event indices it was derived from."""

    text: str
    sources: frozenset[int]


def normalise(text: str) -> str:
    """Lower case, one space between words (for verbatim containment)."""
    return _SPACE.sub(" ", text.lower()).strip()


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content (all its words when it has no other)."""
    words = _WORD.findall(text.lower())
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words


def carries(text: str, answer: str, coverage: float = ANSWER_COVERAGE) -> bool:
    """Whether ``text`` holds at least ``coverage`` of ``answer``'s content words."""
    wanted = set(content_words(answer))
    if not wanted:
        return False
    present = set(_WORD.findall(text.lower()))
    return len(wanted & present) / len(wanted) >= coverage


def check_evidence(evidence: Iterable[Evidence], turn_texts: dict[int, str],
                   parts: list[PromptPart], *, provenance: bool = True) -> list[dict]:
    """One record per piece of evidence: ``index``, ``direct``, ``derived``,
    ``answer_in_prompt``, ``reached``.

    Args:
        evidence: what the question needs.
        turn_texts: event index -> the user text of that turn.
        parts: the prompt's memory items and history messages with their provenance.
        provenance: whether the memory records provenance (else the answer anywhere counts).
    """
    whole = normalise("\n".join(p.text for p in parts))
    records = []
    for item in evidence:
        own = normalise(turn_texts.get(item.index, ""))
        direct = bool(own) and own in whole
        derived = item.answer is not None and any(
            item.index in p.sources and carries(p.text, item.answer) for p in parts)
        anywhere = item.answer is not None and carries(whole, item.answer)
        reached = direct or derived or (not provenance and anywhere)
        records.append({"index": item.index, "direct": direct, "derived": derived,
                        "answer_in_prompt": anywhere, "reached": reached})
    return records


def evidence_recall(records: list[dict]) -> float | None:
    """Share of the evidence reached (None without evidence)."""
    return sum(r["reached"] for r in records) / len(records) if records else None
