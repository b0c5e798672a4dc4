"""How a run asks its questions: which are answered, option order, evidence, the stored prompt.

- **Answered sample** (``RunSpec.answered``): the model answers the questions of a seeded
  sample of tests (the same sample in every condition of a suite and seed, so comparisons stay
  paired); every other question is recalled and its prompt built, for evidence recall, but not
  sent to the model, and the needles of its test are stored with a scripted acknowledgement
  (as every needle is with ``RunSpec.needle_replies="scripted"``).
- **Option rotation**: the options of a multiple-choice question are shown so that the correct
  one lands on letter ``(ordinal + seed) mod n`` (``ordinal``: the question's position among the
  suite's multiple-choice questions), the others keeping their order. Across consecutive
  questions every letter is the answer equally often, so a model's letter bias cancels.
- **Prompt store**: the prompt of every question, content-addressed under
  ``<run>/prompts/<sha256>.json``, so what an answer was given can be audited.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from memlab.bench.base import SuiteEvent
from memlab.bench.evidence import PromptPart, check_evidence, evidence_recall
from memlab.llm.base import Message
from memlab.memory.base import MemoryContext

SCRIPTED_ACK = "Noted."  # the stored reply to a needle of a test that is not answered


def answered_tests(events: list[SuiteEvent], k: int | None, seed: int) -> set[str] | None:
    """Test ids whose questions the model answers (None: every test's).

    The sample depends only on the suite's events and ``seed``, never on the condition.
    """
    if k is None:
        return None
    tests = sorted({e.test_id or str(e.index) for e in events if e.kind == "question"})
    if k >= len(tests):
        return set(tests)
    return set(random.Random(f"answered:{seed}").sample(tests, k))


def is_answered(event: SuiteEvent, sample: set[str] | None) -> bool:
    return sample is None or (event.test_id or str(event.index)) in sample


def option_orders(events: list[SuiteEvent], seed: int) -> dict[int, list[int]]:
    """Event index -> the original option indices in the order they are shown."""
    orders, ordinal = {}, 0
    for event in events:
        if event.kind != "question" or not event.options or event.answer_index is None:
            continue
        n = len(event.options)
        others = [i for i in range(n) if i != event.answer_index]
        slot = (ordinal + seed) % n
        orders[event.index] = others[:slot] + [event.answer_index] + others[slot:]
        ordinal += 1
    return orders


def prompt_parts(context: MemoryContext, messages: list[Message],
                 turn_events: dict[int, int]) -> list[PromptPart]:
    """The memory items and history turns of a prompt, each with the events it derives from.

    ``turn_events`` maps the agent's turn numbers to suite event indices; the system message's
    instruction part and the question itself are not memory and are left out.
    """
    def sources(turns: list[int]) -> frozenset[int]:
        return frozenset(turn_events[t] for t in turns if t in turn_events)

    parts = [PromptPart(item.text, sources(item.source_turns)) for item in context.items]
    sent = (len(messages) - 2) // 2  # user/assistant pairs between system message and question
    history = context.history[len(context.history) - sent:] if sent else []
    for number, exchange in enumerate(history):
        user, assistant = messages[1 + 2 * number], messages[2 + 2 * number]
        parts.append(PromptPart(f"{user.content}\n{assistant.content}",
                                sources([exchange.turn_number])))
    return parts


def evidence_fields(event: SuiteEvent, parts: list[PromptPart], turn_texts: dict[int, str],
                    *, provenance: bool) -> dict:
    """The ``evidence`` records and ``evidence_recall`` of one question's turn record."""
    records = check_evidence(event.evidence, turn_texts, parts, provenance=provenance)
    return {"evidence": records, "evidence_recall": evidence_recall(records)}


class PromptStore:
    """Prompts by content hash in one folder (a prompt seen before is not written again)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def put(self, messages: list[Message]) -> str:
        body = json.dumps([m.model_dump() for m in messages], ensure_ascii=False)
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        path = self.folder / f"{digest}.json"
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(body, encoding="utf-8")
            tmp.replace(path)
        return digest

    def get(self, digest: str) -> list[Message]:
        data = json.loads((self.folder / f"{digest}.json").read_text(encoding="utf-8"))
        return [Message(**m) for m in data]


class QuestionPlan:
    """What a run does with its questions (see the module docstring), for one suite and spec.

    Args:
        events: the suite's conversation.
        spec: the run (``answered``, ``seed``).
        run_dir: the run folder (prompts go to ``prompts/`` inside it).
    """

    def __init__(self, events: list[SuiteEvent], spec: Any, run_dir: Path):
        self.sample = answered_tests(events, spec.answered, spec.seed)
        self.scripted_needles = spec.needle_replies == "scripted"
        self.orders = option_orders(events, spec.seed)
        self.turn_texts = {e.index: e.text for e in events}
        self.prompts = PromptStore(Path(run_dir) / "prompts")

    def answered(self, event: SuiteEvent) -> bool:
        """Whether the model answers ``event``: a question of a sampled test, or its needle
        when needles get the model's replies (filler: True, it is scripted by design)."""
        if event.kind == "needle" and self.scripted_needles:
            return False
        return event.kind == "filler" or is_answered(event, self.sample)

    @staticmethod
    def original(order: list[int] | None, shown: int | None) -> int | None:
        """The original index of the option shown at ``shown``."""
        if shown is None or order is None:
            return shown
        return order[shown] if 0 <= shown < len(order) else None

    @staticmethod
    def evidence_turns(event: SuiteEvent, turn_events: dict[int, int]) -> list[int]:
        """The agent's turn numbers of the turns ``event`` names as its evidence."""
        wanted = {e.index for e in event.evidence}
        return sorted(t for t, index in turn_events.items() if index in wanted)

    def audit(self, event: SuiteEvent, trace: Any, turn_events: dict[int, int], *,
              provenance: bool) -> dict[str, Any]:
        """The stored prompt (``prompt_sha``) of every turn the agent built one for and, for a
        question, its evidence recall fields."""
        if not trace.messages:
            return {}
        fields: dict[str, Any] = {"prompt_sha": self.prompts.put(trace.messages)}
        if event.kind == "question":
            parts = prompt_parts(trace.context or MemoryContext(), trace.messages, turn_events)
            fields |= evidence_fields(event, parts, self.turn_texts, provenance=provenance)
        return fields
