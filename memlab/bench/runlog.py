"""The files of one run: append-only JSON-lines journals, the model-call journal, the lock.

A run's turns and model calls are appended one JSON line at a time, flushed (and fsync'ed) before
the next step starts, so a killed process leaves at most a torn tail (a partial last line, or
NUL bytes after a power loss), which ``read_jsonl(..., repair=True)`` cuts off with a warning. ``CallJournal`` records every model call of a run and
plays the recorded answers back, in place of the model, when a resumed run replays its prefix:
no model call is paid twice. A failed call is journaled too (``error``, not paid) but never
played back: a resume retries it (``memlab.bench.failures``). ``run_lock`` keeps a second process
from writing the same run folder.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import socket
import sys
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, DamagedFileError, LiveCallError, LLMError, RunLockedError
from memlab.llm.base import Completion, Message

log = logging.getLogger(__name__)


def read_jsonl(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every record (one JSON object a line) of ``path`` ([] when it does not exist).

    A torn tail (a process killed mid-write, or a power loss that leaves NUL bytes: partial
    JSON, invalid UTF-8, a line that is not an object, a last line without its newline) is left
    out; with ``repair`` the file is cut after its last valid record and a warning names the
    file and the byte offset.

    Raises:
        DamagedFileError: a bad line is followed by valid records (not a torn tail): the
            message names the file and the line; nothing is changed.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    records, good, _ = _parse_records(path, data)
    if repair and good < len(data):
        log.warning("%s: torn tail of %d bytes cut at byte offset %d (after record %d)",
                    path, len(data) - good, good, len(records))
        with path.open("r+b") as fh:
            fh.truncate(good)
            fh.flush()
            os.fsync(fh.fileno())
    return records


def read_numbered(path: Path, *, repair: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """Every record of ``path`` with the number of its line (from 1), read as ``read_jsonl``
    reads it, so a caller checking the records' fields can name the line of a bad one."""
    records = read_jsonl(path, repair=repair)
    if not records:
        return []
    data = Path(path).read_bytes()
    numbered, line, seen = [], 1, 0
    for start, record in zip(_parse_records(path, data)[2], records, strict=True):
        line, seen = line + data.count(b"\n", seen, start), start
        numbered.append((line, record))
    return numbered


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every record of ``path`` with the byte offset where its line starts (torn tail left out)."""
    path = Path(path)
    if not path.exists():
        return []
    records, _, starts = _parse_records(path, path.read_bytes())
    return list(zip(starts, records, strict=True))


def move_tail(path: Path, offset: int, aside: Path) -> int:
    """Append the bytes of ``path`` from ``offset`` on to ``aside``, then cut ``path`` there.

    Both are fsync'ed, ``aside`` first: a crash in between leaves the tail in both files, never
    in neither. Returns the number of bytes moved.
    """
    with Path(path).open("r+b") as fh:
        fh.seek(offset)
        tail = fh.read()
        if not tail:
            return 0
        aside.parent.mkdir(parents=True, exist_ok=True)
        with aside.open("ab") as out:
            out.write(tail)
            out.flush()
            os.fsync(out.fileno())
        fh.truncate(offset)
        fh.flush()
        os.fsync(fh.fileno())
    return len(tail)


def _parse_records(path: Path, data: bytes) -> tuple[list[dict[str, Any]], int, list[int]]:
    """The records of ``data``, the byte offset where its valid prefix ends, and the offset
    where each record's line starts."""
    records: list[dict[str, Any]] = []
    starts: list[int] = []
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
            raise DamagedFileError(
                path, f"line {bad[0]} (byte offset {bad[1]}) {bad[2]}, and valid records "
                f"follow it: this is not a torn tail; fix or remove line {bad[0]}")
        records.append(record)
        starts.append(start)
        good = position
    return records, good, starts


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
        try:
            self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())
        except OSError as exc:
            raise named(exc, self.path) from exc

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError as exc:  # the record that failed to flush is a torn tail, cut on resume
            log.warning("%s: %s", self.path, exc.strerror or exc)


def named(exc: OSError, path: Path) -> OSError:
    """``exc`` with the file it happened to (a buffered write's error names none)."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON via a temporary file and a rename (never half-written)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str),
                       encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise named(exc, path) from exc


LOCK_FILE = "run.lock"


@contextmanager
def run_lock(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Hold ``run_dir``'s lock for the block: one writing process per run folder.

    The lock is an exclusive ``flock`` on ``run_dir/run.lock``, which records the holder (pid,
    host, start time, command). The kernel drops the lock when its process dies, however it
    dies, so a lock left by a killed process is simply taken again (the file then still names
    the dead holder, and a warning says it is taken over); two processes taking it at once get
    it one at a time, never both. The file is emptied on release, never deleted (deleting a
    lock file lets two processes lock two different files).

    Yields:
        The holder record written into the lock file.

    Raises:
        RunLockedError: another process holds the lock (the message names it).
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise named(exc, path) from exc
    try:
        _take(fd, path, Path(run_dir))
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "command": " ".join(sys.argv).replace("\n", " ")[:200]}
        _write_holder(fd, me)
        try:
            yield me
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def is_locked(run_dir: Path) -> bool:
    """Whether a live process holds ``run_dir``'s lock (is writing the run) right now."""
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no lock file: no process has ever written the run
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a file system without locks: nothing to tell
        return False
    finally:
        os.close(fd)  # closing the descriptor releases a lock taken here
    return False


def _take(fd: int, path: Path, run_dir: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunLockedError(
            f"run folder {str(run_dir)!r} is being written by {_holder_text(fd)}: wait for it "
            f"to finish or stop that process ({path} names it)") from None
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            raise named(exc, path) from exc
        log.warning("%s: this file system cannot lock files (%s); nothing stops a second "
                    "process from writing this run", path, exc.strerror)
        return
    stale = _holder_text(fd, default="")
    if stale:
        log.warning("%s: taking over the lock left by %s, which no longer holds it", path, stale)


def _holder_text(fd: int, default: str = "another process (not yet recorded)") -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "null")
    except (OSError, ValueError):
        holder = None
    if not isinstance(holder, dict):
        return default
    return (f"pid {holder.get('pid')} on host {holder.get('host')} since "
            f"{holder.get('started_at')} ({holder.get('command')})")


def _write_holder(fd: int, holder: dict[str, Any]) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode("utf-8"), 0)
    os.fsync(fd)


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

    A call that failed (``note_failure``) is journaled with its ``error`` and never played
    back: a resume retries it (``memlab.bench.failures`` cuts the run there).

    With ``replay_only`` (a replay of committed records, ``memlab.records``) a call is answered
    only by an entry of its exact request, never by position: a replay re-asks a scorer's
    deterministic prompts, and a verdict recorded for another prompt (a scorer that now asks
    one call fewer, or words a prompt otherwise) would be read as this one's. A call the journal
    does not hold raises ``LiveCallError`` instead of reaching the response cache or the model,
    and nothing is appended to the file.

    Attributes:
        paid: real model calls over the whole run (all processes), the no-repeat counter.
        replayed: calls this process served from the journal.
        mismatched: replayed calls whose prompt differed from the recorded one.
        failed: calls that failed in this process (journaled with their error).
    """

    def __init__(self, path: Path, *, inner: Any = None, fsync: bool = True,
                 replay_only: bool = False):
        self.path = Path(path)
        self.inner = inner
        self.replay_only = replay_only
        entries = read_jsonl(self.path, repair=True)
        for number, entry in enumerate(entries, start=1):
            _check_entry(self.path, number, entry)
        self._by_key: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._by_slot: dict[tuple[str, int], dict[str, Any]] = {}
        for entry in (e for e in entries if "error" not in e):  # a failure is never replayed
            self._by_key[entry["key"]].append(entry)
            self._by_slot[(entry.get("step", ""), entry.get("ordinal", -1))] = entry
        self._used: set[int] = set()
        self.paid = sum(1 for e in entries if e.get("paid"))
        self.recorded = len(entries)
        self.replayed = self.mismatched = self.failed = 0
        self.step, self._ordinal = "", 0
        self.step_failures = []
        self._writer = JsonlWriter(self.path, fsync=fsync)

    def begin_step(self, step: str) -> None:
        """Calls from now on belong to runner step ``step`` (e.g. "main:12", "sleep")."""
        self.step, self._ordinal = step, 0
        self.step_failures: list[tuple[str, bool]] = []  # (error, transient) of this step

    # -- the LLMClient cache protocol
    def get(self, provider: str, model: str, messages: list[Message],
            params: dict[str, Any]) -> Completion | None:
        key, shape = call_key(provider, model, messages, params), call_key(provider, model, params)
        entry = self._take(key, shape)
        if entry is not None:
            return Completion(**entry["completion"])
        self._refuse_live()
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
                   options: list[str], *, identity: dict[str, Any] | None = None
                   ) -> list[float] | None:
        key, shape = _scores_keys(provider, model, messages, options, identity)
        entry = self._take(key, shape)
        if entry is not None:
            return list(entry["scores"])
        self._refuse_live()
        inner = getattr(self.inner, "get_scores", None)
        hit = inner(provider, model, messages, options, identity=identity) if inner else None
        if hit is not None:
            self._append(key, shape, {"scores": list(hit)}, paid=False)
        return hit

    def put_scores(self, provider: str, model: str, messages: list[Message],
                   options: list[str], scores: list[float], *,
                   identity: dict[str, Any] | None = None) -> None:
        key, shape = _scores_keys(provider, model, messages, options, identity)
        self._append(key, shape, {"scores": [float(s) for s in scores]}, paid=True)
        if hasattr(self.inner, "put_scores"):
            self.inner.put_scores(provider, model, messages, options, scores, identity=identity)

    def note_failure(self, error: BaseException) -> None:
        """The call just asked for (``get`` or ``get_scores`` missed) failed with ``error``;
        ``transient``: a fault of the service (timeout, rate limit, connection), not of the
        request (``memlab.llm.remote.is_retryable``)."""
        from memlab.llm.remote import is_retryable

        text = f"{type(error).__name__}: {error}"
        transient = isinstance(error, LLMError) and is_retryable(error)
        self._writer.write({"n": self.recorded, "key": "", "shape": "", "step": self.step,
                            "ordinal": self._ordinal - 1, "paid": False, "error": text,
                            "transient": transient})
        self.recorded += 1
        self.failed += 1
        self.step_failures.append((text, transient))

    def _refuse_live(self) -> None:
        """In a replay (``replay_only``), a call the journal does not hold stops it."""
        if self.replay_only:
            raise LiveCallError(f"{self.path}: step {self.step or '-'} asks for a model call "
                                "this journal does not hold (a replay makes no model calls; "
                                "the records and this memlab disagree on a prompt)")

    def _take(self, key: str, shape: str) -> dict[str, Any] | None:
        slot = (self.step, self._ordinal)
        self._ordinal += 1
        entry = None if self.replay_only else self._by_slot.get(slot)
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


def _scores_keys(provider: str, model: str, messages: list[Message], options: list[str],
                 identity: dict[str, Any] | None) -> tuple[str, str]:
    """The journal key and shape of an option-scoring call (``identity`` only when given)."""
    extra = [identity] if identity else []
    return (call_key("scores", provider, model, messages, options, *extra),
            call_key("scores", provider, model, options, *extra))


def _check_entry(path: Path, number: int, entry: dict[str, Any]) -> None:
    """A journal entry has an int ``n``, a str ``key`` and a completion, scores or an error."""
    body = entry.get("completion", entry.get("scores", entry.get("error")))
    if not (isinstance(entry.get("n"), int) and isinstance(entry.get("key"), str)
            and isinstance(body, dict | list | str)):
        raise ConfigError(f"{path}: record {number} is not a model-call entry (needs n, key and "
                          f"completion, scores or error; has {sorted(entry)[:8]})")
