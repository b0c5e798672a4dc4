"""The files of one run: append-only JSON-lines journals and the model-call journal.

A run's turns and model calls are appended one JSON line at a time, flushed (and fsync'ed) before
the next step starts, so a killed process leaves at most a torn tail (a partial last line, or
NUL bytes after a power loss), which ``read_jsonl(..., repair=True)`` cuts off with a warning. ``CallJournal`` records every model call of a run and
plays the recorded answers back, in place of the model, when a resumed run replays its prefix:
no model call is paid twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
from collections import defaultdict, deque
from importlib import metadata
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.llm.base import Completion, Message

log = logging.getLogger(__name__)


def read_jsonl(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every record (one JSON object a line) of ``path`` ([] when it does not exist).

    A torn tail (a process killed mid-write, or a power loss that leaves NUL bytes: partial
    JSON, invalid UTF-8, a line that is not an object, a last line without its newline) is left
    out; with ``repair`` the file is cut after its last valid record and a warning names the
    file and the byte offset.

    Raises:
        ConfigError: a bad line is followed by valid records (not a torn tail): the message
            names the file and the line; nothing is changed.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    records, good = _parse_records(path, data)
    if repair and good < len(data):
        log.warning("%s: torn tail of %d bytes cut at byte offset %d (after record %d)",
                    path, len(data) - good, good, len(records))
        with path.open("r+b") as fh:
            fh.truncate(good)
            fh.flush()
            os.fsync(fh.fileno())
    return records


def _parse_records(path: Path, data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of ``data`` and the byte offset where its valid prefix ends."""
    records: list[dict[str, Any]] = []
    good, bad, position = 0, None, 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        start, position = position, position + len(line) + 1
        if start >= len(data):
            break  # the empty piece after the final newline
        complete = position <= len(data)
        record, problem = _parse_line(line) if complete else (None, "no newline at its end")
        if record is None and problem is None:
            continue  # a blank line
        if problem is not None:
            bad = bad or (number, start, problem)
            continue
        if bad is not None:
            raise ConfigError(
                f"{path}: line {bad[0]} (byte offset {bad[1]}) {bad[2]}, and valid records "
                f"follow it: this is not a torn tail; fix or remove line {bad[0]}")
        records.append(record)
        good = position
    return records, good


def _parse_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None), (None, None) for a blank line, or (None, what is wrong)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 ({exc.reason} at byte {exc.start})"
    if not text.strip():
        return None, None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"is not JSON ({exc.msg})"
    if not isinstance(record, dict):
        return None, f"is not a JSON object (a {type(record).__name__})"
    return record, None


class JsonlWriter:
    """Appends one JSON object per line, flushed (and fsync'ed when asked) per record."""

    def __init__(self, path: Path, *, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON via a temporary file and a rename (never half-written)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


PACKAGES = ("memlab", "pydantic", "numpy", "pandas", "llama_cpp_python", "chromadb",
            "onnxruntime", "tokenizers", "google-genai", "httpx",
            "mem0ai", "langmem", "trustcall", "langgraph", "langchain-core")  # the peers extra


def environment_info() -> dict[str, Any]:
    """memlab version, git commit, python and package versions (for a run's manifest)."""
    import memlab

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {"memlab_version": memlab.__version__, "git_commit": git_commit(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "packages": packages}


def git_commit() -> str | None:
    """HEAD of the git checkout memlab is imported from (None outside one)."""
    import memlab

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(memlab.__file__).parent, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def call_key(*parts: Any) -> str:
    """A stable hash of a model call (provider, model, messages, parameters)."""
    def plain(value: Any) -> Any:
        if isinstance(value, Message):
            return value.model_dump()
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        return value

    blob = json.dumps(plain(list(parts)), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class CallJournal:
    """Record/replay log of a run's model calls, installed as the LLM client's ``cache``.

    Every answer the run obtains is appended to ``calls.jsonl`` with the runner step it belongs
    to, its position in that step, and ``paid`` (a real model call) or not (served by the shared
    response cache ``inner``). Entries already in the file when the journal opens are pending: a
    resumed run replaying its prefix gets, for each call, the entry recorded at the same step and
    position (the same request shape: provider, model, parameters), returned unchanged, so the
    replayed turns get the recorded replies and nothing is paid twice. The call's prompt is
    checked too: a replay whose prompt differs (a memory whose recall is not deterministic) still
    gets the recorded answer and is counted in ``mismatched``. A call not found by position is
    looked up by its exact request.

    Attributes:
        paid: real model calls over the whole run (all processes), the no-repeat counter.
        replayed: calls this process served from the journal.
        mismatched: replayed calls whose prompt differed from the recorded one.
    """

    def __init__(self, path: Path, *, inner: Any = None, fsync: bool = True):
        self.path = Path(path)
        self.inner = inner
        entries = read_jsonl(self.path, repair=True)
        for number, entry in enumerate(entries, start=1):
            _check_entry(self.path, number, entry)
        self._by_key: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._by_slot: dict[tuple[str, int], dict[str, Any]] = {}
        for entry in entries:
            self._by_key[entry["key"]].append(entry)
            self._by_slot[(entry.get("step", ""), entry.get("ordinal", -1))] = entry
        self._used: set[int] = set()
        self.paid = sum(1 for e in entries if e.get("paid"))
        self.recorded = len(entries)
        self.replayed = self.mismatched = 0
        self.step, self._ordinal = "", 0
        self._writer = JsonlWriter(self.path, fsync=fsync)

    def begin_step(self, step: str) -> None:
        """Calls from now on belong to runner step ``step`` (e.g. "main:12", "sleep")."""
        self.step, self._ordinal = step, 0

    # -- the LLMClient cache protocol
    def get(self, provider: str, model: str, messages: list[Message],
            params: dict[str, Any]) -> Completion | None:
        key, shape = call_key(provider, model, messages, params), call_key(provider, model, params)
        entry = self._take(key, shape)
        if entry is not None:
            return Completion(**entry["completion"])
        hit = self.inner.get(provider, model, messages, params) if self.inner else None
        if hit is not None:
            self._append(key, shape, {"completion": hit.model_dump(mode="json")}, paid=False)
        return hit

    def put(self, provider: str, model: str, messages: list[Message], params: dict[str, Any],
            result: Completion) -> None:
        key, shape = call_key(provider, model, messages, params), call_key(provider, model, params)
        self._append(key, shape, {"completion": result.model_dump(mode="json")}, paid=True)
        if self.inner is not None:
            self.inner.put(provider, model, messages, params, result)

    # -- option log-probabilities (``LLMClient.score_options`` uses these when present)
    def get_scores(self, provider: str, model: str, messages: list[Message],
                   options: list[str]) -> list[float] | None:
        key = call_key("scores", provider, model, messages, options)
        shape = call_key("scores", provider, model, options)
        entry = self._take(key, shape)
        if entry is not None:
            return list(entry["scores"])
        inner = getattr(self.inner, "get_scores", None)
        hit = inner(provider, model, messages, options) if inner else None
        if hit is not None:
            self._append(key, shape, {"scores": list(hit)}, paid=False)
        return hit

    def put_scores(self, provider: str, model: str, messages: list[Message],
                   options: list[str], scores: list[float]) -> None:
        key = call_key("scores", provider, model, messages, options)
        shape = call_key("scores", provider, model, options)
        self._append(key, shape, {"scores": [float(s) for s in scores]}, paid=True)
        if hasattr(self.inner, "put_scores"):
            self.inner.put_scores(provider, model, messages, options, scores)

    def _take(self, key: str, shape: str) -> dict[str, Any] | None:
        slot = (self.step, self._ordinal)
        self._ordinal += 1
        entry = self._by_slot.get(slot)
        if entry is None or entry["n"] in self._used or entry.get("shape") != shape:
            entry = next((e for e in self._by_key.get(key, ()) if e["n"] not in self._used), None)
        if entry is None:
            return None
        self._used.add(entry["n"])
        self.replayed += 1
        self.mismatched += int(entry["key"] != key)
        return entry

    def _append(self, key: str, shape: str, body: dict[str, Any], *, paid: bool) -> None:
        self._writer.write({"n": self.recorded, "key": key, "shape": shape, "step": self.step,
                            "ordinal": self._ordinal - 1, "paid": paid, **body})
        self.recorded += 1
        self.paid += int(paid)

    def close(self) -> None:
        self._writer.close()


def _check_entry(path: Path, number: int, entry: dict[str, Any]) -> None:
    """A journal entry has an int ``n``, a str ``key`` and a completion or scores."""
    if not (isinstance(entry.get("n"), int) and isinstance(entry.get("key"), str)
            and isinstance(entry.get("completion", entry.get("scores")), dict | list)):
        raise ConfigError(f"{path}: record {number} is not a model-call entry (needs n, key and "
                          f"completion or scores; has {sorted(entry)[:8]})")
