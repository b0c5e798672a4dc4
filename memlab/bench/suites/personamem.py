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

from memlab.bench.base import Suite, SuiteEvent
from memlab.bench.scoring import option_letter
from memlab.bench.suites.persona import PersonaSuiteBase
from memlab.errors import ConfigError
from memlab.userfiles import open_text

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


def parse_options(raw: str) -> list[str]:
    """``all_options`` (a Python-literal or JSON list) without the ``(a)`` labels."""
    try:
        options = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        options = json.loads(raw)
    if not isinstance(options, list):
        raise ConfigError(f"field 'all_options': expected a list, got {type(options).__name__}")
    return [_LABEL.sub("", str(o)) for o in options]


class PersonaMemSuite(PersonaSuiteBase):
    """One shared context of a PersonaMem file pair, with its questions at their end indexes.

    Args:
        shared_context_id: the context to load (default: the first one with questions).
    """

    def __init__(self, questions_csv: str | Path, contexts_jsonl: str | Path, *,
                 shared_context_id: str | None = None, limit: int | None = None):
        self.questions_csv, self.contexts_jsonl = Path(questions_csv), Path(contexts_jsonl)
        rows = _read_rows(self.questions_csv)
        self.context_id = shared_context_id or (rows[0]["shared_context_id"] if rows else None)
        numbered = [(i + 2, r) for i, r in enumerate(rows)
                    if r["shared_context_id"] == self.context_id][:limit]
        self.rows = [row for _, row in numbered]
        messages = _read_context(self.contexts_jsonl, self.context_id)
        _check_rows(self.questions_csv, numbered, len(messages))
        self.persona = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        self._events = _build_events(messages, self.rows, self.questions_csv)

    def events(self) -> list[SuiteEvent]:
        return self._events

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "source": str(self.questions_csv),
                "shared_context_id": self.context_id, "questions": len(self.rows)}


def _read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        raise ConfigError(f"questions file {path} does not exist")
    with open_text(path, "questions file") as f:
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows):
        for field in ("question_id", "shared_context_id", "end_index_in_shared_context",
                      "all_options", "correct_answer"):
            if not row.get(field):
                raise ConfigError(f"{path}: row {i + 2}: field '{field}' is missing or empty")
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


def _read_context(path: Path, context_id: str | None) -> list[dict[str, Any]]:
    if not path.exists():
        raise ConfigError(f"contexts file {path} does not exist")
    with open_text(path, "contexts file") as f:
        for line in f:
            if context_id and f'"{context_id}"' in line[:len(context_id) + 10]:
                try:
                    return json.loads(line)[context_id]
                except (json.JSONDecodeError, KeyError) as exc:
                    raise ConfigError(f"{path}: shared context {context_id!r} is not a JSON "
                                      f"object of messages ({exc})") from None
    raise ConfigError(f"{path}: no shared context {context_id!r}")


def _history_event(index: int, msg: dict[str, Any]) -> SuiteEvent:
    meta = msg.get("memlab") or {}
    return SuiteEvent(index=index, kind=meta.get("kind", "filler"), text=msg["content"],
                      reply=None, session_id=meta.get("session_id"),
                      timestamp=meta.get("timestamp"), metadata=meta.get("metadata", {}))


def _build_events(messages: list[dict[str, Any]], rows: list[dict[str, str]],
                  path: Path) -> list[SuiteEvent]:
    by_end: dict[int, list[dict[str, str]]] = {}
    for row in rows:
        by_end.setdefault(int(row["end_index_in_shared_context"]), []).append(row)
    events: list[SuiteEvent] = []
    last_max = max(by_end, default=0)
    for position in range(len(messages) + 1):
        for row in by_end.get(position, []):
            events.append(_question(len(events), row, path))
        if position >= min(len(messages), last_max):
            continue
        msg = messages[position]
        if msg["role"] == "user":
            events.append(_history_event(len(events), msg))
        elif msg["role"] == "assistant" and events and events[-1].kind != "question":
            prev = events[-1]
            prev.reply = msg["content"] if prev.reply is None else f"{prev.reply}\n{msg['content']}"
    return events


def _question(index: int, row: dict[str, str], path: Path) -> SuiteEvent:
    options = parse_options(row["all_options"])
    answer = row["correct_answer"].strip().strip("()").lower()
    if len(answer) != 1 or not 0 <= ord(answer) - ord("a") < len(options):
        raise ConfigError(f"{path}: question {row.get('question_id')}: field 'correct_answer' "
                          f"{row['correct_answer']!r} is not one of the options")
    extra = json.loads(row["memlab_metadata"]) if row.get("memlab_metadata") else {}
    meta = extra.get("metadata") or {"question_type": row.get("question_type"),
                                     "topic": row.get("topic")}
    return SuiteEvent(index=index, kind="question", text=row["user_question_or_message"],
                      test_id=row.get("question_id"), test_type=row.get("question_type"),
                      session_id=extra.get("session_id"), timestamp=extra.get("timestamp"),
                      store=False, options=options, answer_index=ord(answer) - ord("a"),
                      evidence=extra.get("evidence") or [], metadata=meta)
