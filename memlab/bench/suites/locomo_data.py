"""LoCoMo's published file (``locomo10.json``), read and checked, and its counts.

The file is a JSON list of samples. Each has ``sample_id``; ``conversation`` with
``speaker_a``, ``speaker_b``, ``session_<n>_date_time`` strings ("1:56 pm on 8 May, 2023") and
``session_<n>`` lists of turns ``{"speaker", "dia_id": "D1:3", "text"}`` (an image turn adds
``img_url``, ``blip_caption``, ``query``); ``qa`` with ``question``, ``answer`` (a string or a
number), ``evidence`` (dia_ids, possibly empty) and ``category`` 1-5, where category 5 carries
``adversarial_answer`` (and only sometimes ``answer``). ``event_summary``, ``observation`` and
``session_summary`` are ignored. A ``session_<n>_date_time`` without its ``session_<n>`` list
(the published conv-26 dates sessions 20-35 it does not hold) is ignored too; an empty session
list is skipped.

Evidence strings are read for every ``D<session>:<turn>`` id they contain (so "D8:6; D9:17"
names two turns), zero-padded numbers read as numbers ("D30:05" is turn D30:5, the one
unambiguous slip in the published file); an id naming no turn of the conversation is kept as
unresolved, counted, and never fatal: the question keeps the evidence that resolves. Text an
evidence string holds besides its ids ("D", "D:11:26": which turn is meant cannot be told) is
counted as malformed, never guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from memlab.bench.suites.published import DataFile, expect_list, fault, load_json, parse_model

Answer = StrictStr | StrictInt | StrictFloat
_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SEPARATORS = re.compile(r"[\s;,]+")
_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+"
                   r"(\d{4})\s*$", re.IGNORECASE)


class LoCoMoTurn(BaseModel):
    """One turn of a session (image fields other than the caption are kept, unused)."""

    model_config = ConfigDict(extra="allow")

    speaker: StrictStr = Field(min_length=1)
    dia_id: StrictStr = Field(min_length=1)
    text: StrictStr
    blip_caption: StrictStr | None = None


class LoCoMoQuestion(BaseModel):
    """One ``qa`` item: category 5 (adversarial) needs ``adversarial_answer``, 1-4 ``answer``."""

    model_config = ConfigDict(extra="allow")

    question: StrictStr = Field(min_length=1)
    answer: Answer | None = None
    adversarial_answer: Answer | None = None
    evidence: list[StrictStr] = Field(default_factory=list)
    category: StrictInt = Field(ge=1, le=5)

    @model_validator(mode="after")
    def _has_answer(self) -> LoCoMoQuestion:
        if self.category == 5 and self.adversarial_answer is None:
            raise ValueError("category 5 needs 'adversarial_answer' (the answer it baits)")
        if self.category != 5 and self.answer is None:
            raise ValueError(f"category {self.category} needs 'answer'")
        return self


@dataclass
class Session:
    number: int
    date: datetime
    turns: list[LoCoMoTurn]


@dataclass
class Conversation:
    """One sample: its speakers, its sessions in order and its questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    questions: list[LoCoMoQuestion]
    turn_ids: set[str] = field(default_factory=set)


def read_locomo(path: str | Path | None) -> tuple[DataFile, list[Conversation]]:
    """The file's samples, checked.

    Raises:
        ConfigError: the file, the sample and the field that break the format.
    """
    file = load_json(path, "locomo")
    samples = expect_list(file.content, file, "top level", "samples")
    conversations = [_sample(file, i, raw) for i, raw in enumerate(samples)]
    seen: dict[str, int] = {}
    for i, conversation in enumerate(conversations):
        if conversation.sample_id in seen:
            raise fault(file, f"sample #{i}", "sample_id",
                        f"{conversation.sample_id!r} repeats sample #{seen[conversation.sample_id]}")
        seen[conversation.sample_id] = i
    return file, conversations


def _sample(file: DataFile, i: int, raw: Any) -> Conversation:
    where = f"sample #{i}"
    if not isinstance(raw, dict):
        raise fault(file, where, "sample", f"must be an object, got {type(raw).__name__}")
    sample_id = raw.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        raise fault(file, where, "sample_id", "is missing or not a string")
    where = f"sample {sample_id!r}"
    conversation = raw.get("conversation")
    if not isinstance(conversation, dict):
        raise fault(file, where, "conversation", "is missing or not an object")
    speakers = [conversation.get(k) for k in ("speaker_a", "speaker_b")]
    for key, speaker in zip(("speaker_a", "speaker_b"), speakers, strict=True):
        if not isinstance(speaker, str) or not speaker:
            raise fault(file, where, f"conversation.{key}", "is missing or not a string")
    qa = expect_list(raw.get("qa"), file, where, "qa")
    questions = [parse_model(LoCoMoQuestion, q, file, where, f"qa[{n}]") for n, q in enumerate(qa)]
    sessions = _sessions(file, where, conversation)
    ids = [turn.dia_id for s in sessions for turn in s.turns]
    repeated = sorted({d for d in ids if ids.count(d) > 1})
    if repeated:
        raise fault(file, where, "dia_id", f"{repeated[:3]} name more than one turn")
    return Conversation(sample_id, speakers[0], speakers[1], sessions, questions, set(ids))


def _sessions(file: DataFile, where: str, conversation: dict[str, Any]) -> list[Session]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    sessions = []
    for n in numbers:
        key = f"session_{n}"
        turns = expect_list(conversation[key], file, where, f"conversation.{key}")
        if not turns:
            continue
        stamp = conversation.get(f"{key}_date_time")
        if not isinstance(stamp, str):
            raise fault(file, where, f"conversation.{key}_date_time",
                        "is missing or not a string (every session needs its date)")
        date = parse_date(stamp)
        if date is None:
            raise fault(file, where, f"conversation.{key}_date_time",
                        f"{stamp!r} is not a time like '1:56 pm on 8 May, 2023'")
        parsed = [parse_model(LoCoMoTurn, t, file, where, f"conversation.{key}[{k}]")
                  for k, t in enumerate(turns)]
        sessions.append(Session(n, date, parsed))
    if not sessions:
        raise fault(file, where, "conversation", "holds no session_<n> list of turns")
    return sessions


def parse_date(text: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` as a datetime (None when it is not one)."""
    match = _DATE.match(text)
    if not match:
        return None
    hour, minute, half, day, month, year = match.groups()
    half = "PM" if half.lower().startswith("p") else "AM"
    try:
        return datetime.strptime(f"{hour}:{minute} {half} {day} {month} {year}",
                                 "%I:%M %p %d %B %Y")
    except ValueError:
        return None


def format_date(moment: datetime) -> str:
    """A time the way LoCoMo writes a session's ``date_time`` (``parse_date``'s inverse):
    ``"1:56 pm on 8 May, 2023"``. Every session's string in the published file is written back
    exactly from its parsed time (tests/test_suite_locomo.py checks all 272)."""
    half = "am" if moment.hour < 12 else "pm"
    return (f"{moment.hour % 12 or 12}:{moment.minute:02d} {half} on {moment.day} "
            f"{moment.strftime('%B')}, {moment.year}")


def dia_ids(evidence: list[str]) -> list[str]:
    """Every ``D<session>:<turn>`` id in the evidence strings, in order, once each, its
    numbers without leading zeros (``D30:05`` is ``D30:5``)."""
    found = [f"D{int(session)}:{int(turn)}" for item in evidence
             for session, turn in _DIA_ID.findall(item)]
    return list(dict.fromkeys(found))


def padded_ids(evidence: list[str]) -> int:
    """Ids in the evidence strings written with leading zeros (read as numbers by ``dia_ids``)."""
    return sum(m.group(0) != f"D{int(m.group(1))}:{int(m.group(2))}"
               for item in evidence for m in _DIA_ID.finditer(item))


def malformed_evidence(evidence: list[str]) -> int:
    """Evidence strings holding text besides their ids and separators ("D", "D:11:26")."""
    return sum(bool(_SEPARATORS.sub("", _DIA_ID.sub("", item))) for item in evidence)


def render_turn(turn: LoCoMoTurn) -> str:
    """A turn as memory stores it: LoCoMo's own ``Speaker said, "text"`` with the image caption
    it shares (``[shares a photo of ...]``)."""
    text = f'{turn.speaker} said, "{turn.text}"'
    return f"{text} [shares {turn.blip_caption}]" if turn.blip_caption else text


def locomo_counts(file: DataFile, conversations: list[Conversation],
                  count_tokens: Any) -> dict[str, Any]:
    """What ``memlab suites info locomo`` prints: samples, sessions, turns, tokens, questions by
    category, questions with evidence, evidence ids that name no turn, ids read without their
    leading zeros, and evidence strings that name no turn unambiguously."""
    questions = [q for c in conversations for q in c.questions]
    unresolved = sum(d not in c.turn_ids for c in conversations for q in c.questions
                     for d in dia_ids(q.evidence))
    turns = [t for c in conversations for s in c.sessions for t in s.turns]
    by_category = Counter(q.category for q in questions)
    return {
        "file": str(file.path), "sha256": file.sha256, "samples": len(conversations),
        "sessions": sum(len(c.sessions) for c in conversations), "turns": len(turns),
        "image_turns": sum(t.blip_caption is not None for t in turns),
        "tokens_estimated": sum(count_tokens(render_turn(t)) for t in turns),
        "questions": len(questions),
        "questions_by_category": {str(k): by_category[k] for k in sorted(by_category)},
        "questions_with_evidence": sum(any(d in c.turn_ids for d in dia_ids(q.evidence))
                                       for c in conversations for q in c.questions),
        "evidence_ids_unresolved": unresolved,
        "evidence_ids_zero_padded": sum(padded_ids(q.evidence) for q in questions),
        "evidence_strings_malformed": sum(malformed_evidence(q.evidence) for q in questions),
        "per_sample": {c.sample_id: {"sessions": len(c.sessions),
                                     "turns": sum(len(s.turns) for s in c.sessions),
                                     "questions": len(c.questions)} for c in conversations},
    }
