"""The agent server's sessions: one Agent each, with its own scoped memory and journal.

A session lives in ``<workdir>/sessions/<id>/``: ``session.json`` (what it is),
``journal.jsonl`` (every acknowledged step, appended and fsync'ed before the server answers),
``stores/<incarnation>/`` (the condition's embedded stores) and ``.memlab-owned`` (memlab made the
folder; one already there holding anything else is refused, as memlab deletes only what it
created). Its memory scope carries the session id and an incarnation number, so two sessions
never share a key even on a shared Redis or chroma server.

A session not in memory (the server restarted) is rebuilt on first use: ``stores/`` is emptied
and the journal is replayed through the same Agent calls (a turn's recall, then its store; a
filler exchange; a sleep; a memory view's recall), with the model calls of conditions that
compress or extract served by the response cache. A torn journal tail (a crash mid-append) is
cut; a damaged ``session.json`` or journal record raises ``DamagedFileError`` naming the line
(the client's copy of the message names no server path) before anything is changed.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from memlab.agent import Agent, TurnTrace
from memlab.bench.runlog import JsonlWriter, read_numbered, write_json_atomic
from memlab.errors import ConfigError, DamagedFileError, MemlabError, fields_message
from memlab.memory._backends import purge_namespace
from memlab.memory.base import MEMORIES, MemoryContext, Scope
from memlab.models import utc_now
from memlab.models.api import (
    SESSION_ID_PATTERN,
    MemoryView,
    ObserveRequest,
    RecalledItem,
    SessionCreate,
    SessionInfo,
    StoredTurn,
    TurnRequest,
)
from memlab.stores.base import run_namespace
from memlab.userfiles import OWNED_MARK, claim_folder

META, JOURNAL, STORES = "session.json", "journal.jsonl", "stores"
DEFAULT_SESSION = "default"


class UnknownSessionError(MemlabError):
    """No session has this id (never created, or deleted)."""


class ForeignFolderError(MemlabError):
    """A session's folder holds files memlab did not create, so memlab may not make the
    session there: the message names the folder (for the server's log), ``public`` only the
    session (for a client that must not learn the server's paths)."""

    def __init__(self, folder: Path, session_id: str):
        rule = ("holds files memlab did not create, and memlab deletes only what it created; "
                "move them out of the server's sessions folder")
        super().__init__(f"session folder {str(folder)!r}: {rule}")
        self.public = f"session {session_id!r}: its folder {rule} (the server's log names it)"


class Ticket:
    """A request's claim on storing its result: the client may give up (deadline, disconnect)
    until the worker starts storing; after that the request is answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state = "open"

    def abandon(self) -> bool:
        """Give up; False when storing has already begun (the caller must wait for it)."""
        return self._move("abandoned")

    def begin_commit(self) -> bool:
        """Start storing; False when the client gave up (nothing may be stored)."""
        return self._move("committing")

    def _move(self, state: str) -> bool:
        with self._lock:
            if self.state != "open":
                return False
            self.state = state
            return True


@dataclass
class Session:
    info: SessionInfo
    folder: Path
    agent: Agent
    journal: JsonlWriter
    namespace: str = ""  # where its memory lives on Redis / chroma / SQL servers
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


def check_options(condition: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` validated by the condition's Config; server URLs may not be set by a client.

    Raises:
        ConfigError: naming ``options.<field>`` and the rule.
    """
    config = MEMORIES.resolve(condition).Config
    allowed = sorted(n for n, f in config.model_fields.items() if not _server_only(n, f))
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"field 'options.{unknown[0]}': not a setting of condition "
                          f"{condition!r} a client may set; known: {', '.join(allowed) or 'none'}")
    try:
        config(**options)
    except ValidationError as exc:
        errors = [{**e, "loc": ("options", *e["loc"])} for e in exc.errors()]
        raise ConfigError(fields_message(errors)) from None
    return dict(options)


def _server_only(name: str, field: Any) -> bool:
    """A setting that would make the server connect somewhere or start a program: server URLs
    (``*_url``) and fields marked ``server_only`` (the mcp condition's url and command)."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return name.endswith("_url") or bool(extra.get("server_only"))


class SessionManager:
    """Every session of one server: create, find (rebuilding from disk), delete, close.

    Args:
        workdir: the server's folder; sessions live under ``workdir/sessions``.
        condition: the default condition (``POST /sessions`` without one, ``POST /turn``).
        llm, embedder: shared by every session's Agent and memory.
    """

    def __init__(self, workdir: str | Path, *, condition: str, llm: Any, embedder: Any):
        MEMORIES.resolve(condition)
        self.root = Path(workdir) / "sessions"
        self.root.mkdir(parents=True, exist_ok=True)
        self.condition, self.llm, self.embedder = condition, llm, embedder
        self._sessions: dict[str, Session] = {}
        self._lock = threading.RLock()
        self.closed = False

    # ----------------------------------------------------------------- lifecycle
    def create(self, request: SessionCreate, session_id: str | None = None) -> SessionInfo:
        """A new session with empty memory (``ConfigError`` for a bad condition or option)."""
        condition = request.condition or self.condition
        if condition not in MEMORIES:
            raise ConfigError(f"field 'condition': {MEMORIES.unknown_message(condition)}")
        info = SessionInfo(id=session_id or uuid.uuid4().hex, condition=condition,
                           user_id=request.user_id, agent_id=request.agent_id or condition,
                           options=check_options(condition, request.options),
                           max_tokens=request.max_tokens, created_at=utc_now())
        with self._lock:
            self._check_running()
            folder = self._new_folder(info.id)
            write_json_atomic(folder / META, {**info.model_dump(mode="json"), "incarnation": 0})
            self._sessions[info.id] = self._open(info, folder, incarnation=0)
        return info

    def get_or_create(self, session_id: str, request: SessionCreate) -> Session:
        """The session ``session_id``, created from ``request`` when there is none yet."""
        with self._lock:
            self._check_running()
            if not (self.root / session_id / META).is_file():
                self.create(request, session_id=session_id)
            return self.get(session_id)

    def get(self, session_id: str) -> Session:
        """The session, rebuilt from its journal when this process has not opened it yet."""
        with self._lock:
            self._check_running()
            session = self._sessions.get(session_id)
            if session is None:
                session = self._restore(session_id)
                self._sessions[session_id] = session
            return session

    def default(self) -> Session:
        """The session behind the seed's plain ``POST /turn`` (created on first use)."""
        with self._lock:
            if not (self.root / DEFAULT_SESSION / META).exists():
                self.create(SessionCreate(), session_id=DEFAULT_SESSION)
            return self.get(DEFAULT_SESSION)

    def delete(self, session_id: str) -> None:
        """Close the session and remove its folder (memory and journal)."""
        with self._lock:
            session = self.get(session_id)
            del self._sessions[session_id]
            (session.folder / META).unlink()  # from now on no request can find or rebuild it
        with session.lock:  # waits for the session's work in progress
            self._close(session)
            purge_namespace(session.namespace)
            shutil.rmtree(session.folder, ignore_errors=True)

    def count(self) -> int:
        return sum(1 for p in self.root.glob(f"*/{META}"))

    def close(self) -> int:
        """Wait for every session's work in progress, then close journals and stores.

        Returns:
            How many sessions were open.
        """
        with self._lock:
            self.closed = True
            for session in self._sessions.values():
                with session.lock:
                    self._close(session)
            opened = len(self._sessions)
            self._sessions.clear()
            return opened

    # ----------------------------------------------------------------- work (worker threads)
    def answer(self, session: Session, request: TurnRequest,
               ticket: Ticket) -> tuple[TurnTrace, int] | None:
        """Answer a turn; store it only if the client still waits. None: abandoned, not stored."""
        with session.lock:
            self._check_open(session)
            if ticket.state != "open":  # given up while waiting for the session
                return None
            stamp = request.timestamp or utc_now()
            trace = session.agent.interact(
                request.message, store=False, timestamp=stamp, session_id=session.info.id,
                max_tokens=request.max_tokens or session.info.max_tokens)
            if trace.error is not None:
                return trace, session.agent.turn_number
            if not ticket.begin_commit():
                return None
            session.agent.commit(request.message, trace, timestamp=stamp,
                                 session_id=session.info.id)
            self._journal(session, "turn", stamp, request.message, trace.reply)
            return trace, session.agent.turn_number

    def observe(self, session: Session, request: ObserveRequest,
                ticket: Ticket) -> tuple[int, Any] | None:
        """Store an exchange without generating; None: abandoned before storing."""
        with session.lock:
            self._check_open(session)
            if not ticket.begin_commit():
                return None
            stamp = request.timestamp or utc_now()
            stats = session.agent.observe(request.user, request.assistant, timestamp=stamp,
                                          session_id=session.info.id)
            self._journal(session, "observe", stamp, request.user, request.assistant)
            return session.agent.turn_number, stats

    def sleep(self, session: Session, ticket: Ticket) -> Any:
        """Run the condition's sleep cycle now (its CycleStats, or None without one)."""
        with session.lock:
            self._check_open(session)
            if not ticket.begin_commit():
                return None
            stats = session.agent.sleep()
            self._journal(session, "sleep", utc_now())
            return stats

    def view(self, session: Session, query: str | None, limit: int) -> MemoryView:
        """The stored exchanges (newest ``limit``) and what memory recalls for ``query``."""
        with session.lock:
            self._check_open(session)
            stored = [StoredTurn.model_validate(r.model_dump())
                      for r in read_journal(session.folder, session.info.id) if r.kind != "recall"]
            recalled = []
            if query:
                context = self._recall(session, query)
                recalled = [RecalledItem(kind=i.kind, id=i.id, text=i.text, score=i.score)
                            for i in context.items]
                recalled += [RecalledItem(kind="history turn", id=f"turn:{ex.turn_number}",
                                          text=ex.render()) for ex in context.history]
            info = session.info.model_copy(update={"turns": session.agent.turn_number})
            return MemoryView(session=info, stored=stored[-limit:] if limit else [],
                              query=query, recalled=recalled)

    def recall(self, session: Session, query: str) -> MemoryContext:
        """What the session's memory puts into the prompt for ``query`` (journaled, so a
        restored session's memory sees the same recalls)."""
        with session.lock:
            self._check_open(session)
            return self._recall(session, query)

    def _recall(self, session: Session, query: str) -> MemoryContext:
        context = session.agent.memory.recall(query)
        self._journal(session, "recall", utc_now(), query)
        return context

    def info(self, session: Session) -> SessionInfo:
        return session.info.model_copy(update={"turns": session.agent.turn_number})

    # ----------------------------------------------------------------- parts
    def _new_folder(self, session_id: str) -> Path:
        """The session's folder, new and marked as memlab's: a folder memlab made and a crash
        left without ``session.json`` is emptied; anything else already there is refused.

        Raises:
            ForeignFolderError: the folder (``default``'s, say) holds files memlab did not create.
        """
        folder = self.root / session_id
        if (folder / OWNED_MARK).is_file():
            shutil.rmtree(folder)
        elif folder.exists() and not (folder.is_dir() and not any(folder.iterdir())):
            raise ForeignFolderError(folder, session_id)
        return claim_folder(folder, "session folder")

    def _open(self, info: SessionInfo, folder: Path, *, incarnation: int) -> Session:
        scope = Scope(user_id=info.user_id, agent_id=f"{info.agent_id}/{info.id}/{incarnation}")
        workdir = folder / STORES / str(incarnation)
        namespace = run_namespace(workdir)
        memory = MEMORIES.create(info.condition, scope=scope, llm=self.llm,
                                 embedder=self.embedder, config=info.options,
                                 workdir=workdir, namespace=namespace)
        agent = Agent(memory, self.llm)
        return Session(info=info, folder=folder, agent=agent, namespace=namespace,
                       journal=JsonlWriter(folder / JOURNAL))

    def _restore(self, session_id: str) -> Session:
        folder = self.root / session_id
        if not re.match(SESSION_ID_PATTERN, session_id) or not (folder / META).is_file():
            raise UnknownSessionError(f"no session {session_id!r} (POST /sessions creates one)")
        info, meta = read_meta(folder, session_id)
        records = read_journal(folder, session_id, repair=True)  # both checked before any change
        incarnation = meta.get("incarnation", 0) + 1
        write_json_atomic(folder / META, {**meta, "incarnation": incarnation})
        # the previous process's memory is rebuilt from the journal: its server-side copy goes
        purge_namespace(run_namespace(folder / STORES / str(incarnation - 1)))
        shutil.rmtree(folder / STORES, ignore_errors=True)
        session = self._open(info, folder, incarnation=incarnation)
        for record in records:
            _replay(session, record)
        return session

    def _journal(self, session: Session, kind: str, stamp: datetime, user: str = "",
                 assistant: str = "") -> None:
        session.journal.write({"kind": kind, "turn_number": session.agent.turn_number,
                               "user": user, "assistant": assistant,
                               "timestamp": stamp.isoformat()})

    def _check_running(self) -> None:
        if self.closed:
            raise MemlabError("the server is shutting down")

    @staticmethod
    def _check_open(session: Session) -> None:
        if session.closed:
            raise UnknownSessionError(f"session {session.info.id!r} was deleted or closed")

    @staticmethod
    def _close(session: Session) -> None:
        if not session.closed:
            session.closed = True
            session.journal.close()
            session.agent.memory.close()


class JournalRecord(BaseModel):
    """One line of a session's journal: an acknowledged step, or a memory view's recall."""

    kind: Literal["turn", "observe", "sleep", "recall"]
    turn_number: int
    user: str = ""
    assistant: str = ""
    timestamp: datetime


def read_meta(folder: Path, session_id: str) -> tuple[SessionInfo, dict[str, Any]]:
    """The session's ``session.json``: what it is, and the file's content as it is (with its
    ``incarnation``, a count, when the session has been restored before).

    Raises:
        DamagedFileError: not a JSON object of a session (``public`` names no server path).
    """
    path = folder / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError(f"not a JSON object (a {type(meta).__name__})")
        incarnation = meta.get("incarnation", 0)
        if not isinstance(incarnation, int) or isinstance(incarnation, bool) or incarnation < 0:
            raise ValueError(f"field 'incarnation': {incarnation!r} is not a count")
        return SessionInfo.model_validate(meta), meta
    except ValidationError as exc:
        problem = fields_message(exc.errors())
    except (UnicodeDecodeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        problem = str(exc)
    raise _damaged(path, session_id, f"{problem}; the session cannot be restored until the file "
                                     "is repaired or its folder removed")


def read_journal(folder: Path, session_id: str, *, repair: bool = False) -> list[JournalRecord]:
    """The session's journal records (``repair``: a torn tail is cut first).

    Raises:
        DamagedFileError: a line inside is not JSON, or a record lacks a field or holds a wrong
            one (``public`` names the session and the line, no server path).
    """
    path = folder / JOURNAL
    try:
        lines = read_numbered(path, repair=repair)
    except DamagedFileError as exc:
        raise _damaged(path, session_id, exc.detail) from None
    records = []
    for line, record in lines:
        try:
            records.append(JournalRecord.model_validate(record))
        except ValidationError as exc:
            raise _damaged(path, session_id, f"line {line}: {fields_message(exc.errors())}; "
                                             f"fix or remove line {line}") from None
    return records


def _damaged(path: Path, session_id: str, detail: str) -> DamagedFileError:
    """The error naming ``path`` (for the server's log) and, in ``public``, only the session
    and the file's name (for the client)."""
    return DamagedFileError(path, detail, public_name=f"session {session_id!r}: {path.name}")


def _replay(session: Session, record: JournalRecord) -> None:
    """Apply one journal record to a freshly opened session (see the module docstring)."""
    agent, kind = session.agent, record.kind
    if kind in ("turn", "recall"):
        agent.memory.recall(record.user)
    if kind in ("turn", "observe"):
        agent.observe(record.user, record.assistant, timestamp=record.timestamp,
                      session_id=session.info.id)
    elif kind == "sleep":
        agent.sleep()
