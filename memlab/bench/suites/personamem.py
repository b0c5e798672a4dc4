"""PersonaMem's published format: ``questions_<size>.csv`` + ``shared_contexts_<size>.jsonl``.

A shared context is one JSON line ``{shared_context_id: [messages]}`` (a system persona message,
then user/assistant messages); each question row names its context and is answered at
``end_index_in_shared_context`` (after ``messages[:end_index]``). ``all_options`` is a Python-
literal list of ``"(a) ..."`` strings and ``correct_answer`` is ``"(c)"``.

memlab's writer adds a ``memlab`` key to messages and a ``memlab_metadata`` column so that its
own samples load back identically; published files without them load as well.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memlab.bench.base import Suite, SuiteEvent
from memlab.bench.scoring import option_letter
from memlab.bench.suites.options import is_count
from memlab.bench.suites.persona import PersonaSuiteBase
from memlab.errors import ConfigError, fields_message
from memlab.userfiles import open_text, parse_json

COLUMNS = ("persona_id", "question_id", "question_type", "topic", "context_length_in_tokens",
           "context_length_in_letters", "distance_to_ref_in_blocks", "distance_to_ref_in_tokens",
           "num_irrelevant_tokens", "distance_to_ref_proportion_in_context",
           "user_question_or_message", "correct_answer", "all_options", "shared_context_id",
           "end_index_in_shared_context", "memlab_metadata")
_LABEL = re.compile(r"^\(([a-z])\)\s*")


def write_personamem(suite: Suite, folder: str | Path, *, size: str = "32k",
                     persona_id: int = 0, count_tokens: Any = None) -> tuple[Path, Path]:
    """Write ``suite``'s history and questions in PersonaMem's format; returns both paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    count = count_tokens or (lambda t: max(len(t.split()), (len(t) + 3) // 4))
    events = suite.events()  # generates the persona too
    messages = [{"role": "system", "content": getattr(suite, "persona", "")}]
    rows = []
    for event in events:
        if event.kind != "question":
            messages.append({"role": "user", "content": event.text, "memlab": _event_meta(event)})
            messages.append({"role": "assistant", "content": event.reply or ""})
        else:
            rows.append((event, len(messages)))  # answered after messages[:end_index]
    context_id = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()
    tokens = sum(count(m["content"]) for m in messages)
    letters = sum(len(m["content"]) for m in messages)
    contexts = folder / f"shared_contexts_{size}.jsonl"
    contexts.write_text(json.dumps({context_id: messages}, default=str) + "\n", encoding="utf-8")
    questions = folder / f"questions_{size}.csv"
    with questions.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for event, end_index in rows:
            writer.writerow(_row(event, persona_id, context_id, tokens, letters, end_index))
    return questions, contexts


def _event_meta(event: SuiteEvent) -> dict[str, Any]:
    return {"session_id": event.session_id, "timestamp": event.timestamp.isoformat()
            if event.timestamp else None, "metadata": event.metadata, "kind": event.kind}


def _row(event: SuiteEvent, persona_id: int, context_id: str, tokens: int, letters: int,
         end_index: int) -> dict[str, Any]:
    meta = event.metadata
    options = [f"{option_letter(i)} {o}" for i, o in enumerate(event.options or [])]
    return {"persona_id": persona_id, "question_id": event.test_id,
            "question_type": event.test_type, "topic": meta.get("topic", ""),
            "context_length_in_tokens": tokens, "context_length_in_letters": letters,
            "distance_to_ref_in_blocks": "", "distance_to_ref_in_tokens": "",
            "num_irrelevant_tokens": "", "distance_to_ref_proportion_in_context": "",
            "user_question_or_message": event.text,
            "correct_answer": option_letter(event.answer_index or 0),
            "all_options": repr(options), "shared_context_id": context_id,
            "end_index_in_shared_context": end_index,
            "memlab_metadata": json.dumps({"session_id": event.session_id, "metadata": meta,
                                           "timestamp": event.timestamp.isoformat()
                                           if event.timestamp else None,
                                           "evidence": [e.model_dump() for e in event.evidence]},
                                          default=str)}


def parse_options(raw: str, where: str = "") -> list[str]:
    """``all_options`` (a Python-literal or JSON list of text) without the ``(a)`` labels.

    Raises:
        ConfigError: not such a list (``where`` says which file and row).
    """
    try:
        options = ast.literal_eval(raw)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        try:  # JSON spells true/false/null differently from Python
            options = json.loads(raw)
        except (ValueError, RecursionError):
            options = None
    if not isinstance(options, list) or not options or not all(isinstance(o, str)
                                                                 for o in options):
        raise ConfigError(f"{where}field 'all_options': {raw[:60]!r} is not a list of options "
                          "like ['(a) ...', '(b) ...']")
    return [_LABEL.sub("", o) for o in options]


class PersonaMemSuite(PersonaSuiteBase):
    """One shared context of a PersonaMem file pair, with its questions at their end indexes.

    Args:
        shared_context_id: the context to load (default: the first one with questions).
        limit: ask only the first this many of its questions.

    Raises:
        ConfigError: a file or a row that breaks PersonaMem's format, or no question to ask;
            the message names the file, the row or message, and the field.
    """

    def __init__(self, questions_csv: str | Path, contexts_jsonl: str | Path, *,
                 shared_context_id: str | None = None, limit: int | None = None):
        self.questions_csv, self.contexts_jsonl = Path(questions_csv), Path(contexts_jsonl)
        if limit is not None and not (is_count(limit) and limit >= 1):
            raise ConfigError(f"limit: {limit!r} must be a whole number of at least 1")
        rows = _read_rows(self.questions_csv)
        self.context_id = shared_context_id or rows[0][1]["shared_context_id"]
        numbered = [(n, r) for n, r in rows if r["shared_context_id"] == self.context_id][:limit]
        if not numbered:
            raise ConfigError(f"{self.questions_csv}: no question row of shared context "
                              f"{self.context_id!r}, so nothing would be measured")
        self.rows = [row for _, row in numbered]
        messages = _read_context(self.contexts_jsonl, self.context_id)
        _check_rows(self.questions_csv, numbered, len(messages))
        self.persona = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        self._events = _build_events(messages, numbered, self.questions_csv, self.contexts_jsonl)

    def events(self) -> list[SuiteEvent]:
        return self._events

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "source": str(self.questions_csv),
                "shared_context_id": self.context_id, "questions": len(self.rows)}


REQUIRED = ("question_id", "shared_context_id", "end_index_in_shared_context",
            "user_question_or_message", "all_options", "correct_answer")


def _read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The question rows, each with its row number in the file (the header is row 1)."""
    if not path.exists():
        raise ConfigError(f"questions file {path} does not exist")
    try:
        with open_text(path, "questions file") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise ConfigError(f"{path}: column(s) {', '.join(missing)} missing from the "
                                  f"header (rule: PersonaMem's questions file has "
                                  f"{', '.join(REQUIRED)})")
            rows = [(i + 2, row) for i, row in enumerate(reader)]
    except csv.Error as exc:
        raise ConfigError(f"{path}: not a CSV file ({exc})") from None
    if not rows:
        raise ConfigError(f"{path}: no question rows under the header, so nothing would be "
                          "measured")
    for number, row in rows:
        for field in REQUIRED:
            if not row.get(field):
                raise ConfigError(f"{path}: row {number}: field '{field}' is missing or empty")
    return rows


def _check_rows(path: Path, numbered: list[tuple[int, dict[str, str]]], n_messages: int) -> None:
    """Every question is asked inside its context (end index 0..n_messages), and no question id
    repeats: a row that cannot be placed is an error, never a question silently left out.

    Raises:
        ConfigError: naming the file, the row and the field.
    """
    field, seen = "end_index_in_shared_context", {}
    for number, row in numbered:
        raw = row[field]
        try:
            end = int(raw)
        except ValueError:
            raise ConfigError(f"{path}: row {number}: field '{field}' {raw!r} is not an "
                              "integer") from None
        if not 0 <= end <= n_messages:
            raise ConfigError(
                f"{path}: row {number}: field '{field}' {end} is outside shared context "
                f"{row['shared_context_id']!r} ({n_messages} messages: 0..{n_messages})")
        question_id = row["question_id"]
        if question_id in seen:
            raise ConfigError(f"{path}: row {number}: field 'question_id' {question_id!r} "
                              f"repeats row {seen[question_id]}")
        seen[question_id] = number


def _read_context(path: Path, context_id: str) -> list[dict[str, Any]]:
    """The messages of ``context_id``, checked (a list of ``{"role", "content"}`` objects)."""
    if not path.exists():
        raise ConfigError(f"contexts file {path} does not exist")
    with open_text(path, "contexts file") as f:
        for number, line in enumerate(f, 1):
            if f'"{context_id}"' in line[:len(context_id) + 10]:
                data = parse_json(line, path, "contexts file",
                                  f"line {number} (shared context {context_id!r})")
                if not isinstance(data, dict) or context_id not in data:
                    raise ConfigError(f"{path}: line {number}: not an object holding shared "
                                      f"context {context_id!r} (rule: {{id: [messages]}})")
                return _check_messages(path, context_id, data[context_id])
    raise ConfigError(f"{path}: no shared context {context_id!r}")


ROLES = ("system", "user", "assistant")


def _check_messages(path: Path, context_id: str, messages: Any) -> list[dict[str, Any]]:
    where = f"{path}: shared context {context_id!r}"
    if not isinstance(messages, list):
        raise ConfigError(f"{where}: must be a list of messages, got {type(messages).__name__}")
    for k, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ConfigError(f"{where}: message {k} must be an object with 'role' and "
                              f"'content', got {type(msg).__name__}")
        if msg.get("role") not in ROLES:
            raise ConfigError(f"{where}: message {k}: field 'role' {msg.get('role')!r} must be "
                              f"one of {', '.join(ROLES)}")
        if not isinstance(msg.get("content"), str):
            raise ConfigError(f"{where}: message {k}: field 'content' must be text")
        if not isinstance(msg.get("memlab", {}), dict):
            raise ConfigError(f"{where}: message {k}: field 'memlab' must be an object")
    return messages


def _history_event(index: int, msg: dict[str, Any]) -> SuiteEvent:
    meta = msg.get("memlab") or {}
    return SuiteEvent(index=index, kind=meta.get("kind", "filler"), text=msg["content"],
                      reply=None, session_id=meta.get("session_id"),
                      timestamp=meta.get("timestamp"), metadata=meta.get("metadata", {}))


def _build_events(messages: list[dict[str, Any]], numbered: list[tuple[int, dict[str, str]]],
                  path: Path, contexts: Path) -> list[SuiteEvent]:
    by_end: dict[int, list[tuple[int, dict[str, str]]]] = {}
    for number, row in numbered:
        by_end.setdefault(int(row["end_index_in_shared_context"]), []).append((number, row))
    events: list[SuiteEvent] = []
    last_max = max(by_end, default=0)
    for position in range(len(messages) + 1):
        for number, row in by_end.get(position, []):
            events.append(_question(len(events), row, path, number))
        if position >= min(len(messages), last_max):
            continue
        msg = messages[position]
        if msg["role"] == "user":
            try:
                events.append(_history_event(len(events), msg))
            except ValidationError as exc:
                raise ConfigError(f"{contexts}: message {position}: field 'memlab': "
                                  f"{fields_message(exc.errors())}") from None
        elif msg["role"] == "assistant" and events and events[-1].kind != "question":
            prev = events[-1]
            prev.reply = msg["content"] if prev.reply is None else f"{prev.reply}\n{msg['content']}"
    return events


def _question(index: int, row: dict[str, str], path: Path, number: int) -> SuiteEvent:
    where = f"{path}: row {number}: "
    options = parse_options(row["all_options"], where)
    answer = row["correct_answer"].strip().strip("()").lower()
    if len(answer) != 1 or not 0 <= ord(answer) - ord("a") < len(options):
        raise ConfigError(f"{where}question {row.get('question_id')}: field 'correct_answer' "
                          f"{row['correct_answer']!r} is not one of the options")
    extra = _memlab_metadata(row, path, number)
    meta = extra.get("metadata") or {"question_type": row.get("question_type"),
                                     "topic": row.get("topic")}
    try:
        return SuiteEvent(index=index, kind="question", text=row["user_question_or_message"],
                          test_id=row.get("question_id"), test_type=row.get("question_type"),
                          session_id=extra.get("session_id"), timestamp=extra.get("timestamp"),
                          store=False, options=options, answer_index=ord(answer) - ord("a"),
                          evidence=extra.get("evidence") or [], metadata=meta)
    except ValidationError as exc:
        raise ConfigError(f"{where}field 'memlab_metadata': {fields_message(exc.errors())}"
                          ) from None


def _memlab_metadata(row: dict[str, str], path: Path, number: int) -> dict[str, Any]:
    """memlab's own ``memlab_metadata`` column: a JSON object ({} when absent)."""
    if not row.get("memlab_metadata"):
        return {}
    field = f"row {number}: field 'memlab_metadata'"
    extra = parse_json(row["memlab_metadata"], path, "questions file", field)
    if not isinstance(extra, dict):
        raise ConfigError(f"{path}: {field}: must be a JSON object, got {type(extra).__name__}")
    return extra
