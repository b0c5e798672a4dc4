"""The SQL layer on SQLAlchemy 2, and the relational store of the taskforce agent (seed 004).

SQLite file by default; PostgreSQL (JSONB columns, psycopg 3) when a ``postgresql://`` URL is
given (``MEMLAB_SQL_URL``). :func:`make_engine` and :func:`transaction` are shared with the
memory record stores (:mod:`memlab.stores.records`). Tables: sessions, states, todolists,
execution_history, lessons (the seed's Memory). States are versioned snapshots with optimistic
locking: a State is saved only if its version is exactly one more than the stored latest;
otherwise :class:`VersionConflictError` is raised and nothing is written (a unique
(session_id, version) key settles races).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, StoreError, StoreUnavailableError, VersionConflictError
from memlab.models.taskforce import ExecutionHistory, Lesson, Session, State, TodoList

JSONType = JSON().with_variant(JSONB(), "postgresql")
TIME = DateTime(timezone=True)
metadata = MetaData()

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("user_id", String(255), index=True),
    Column("mission", Text, nullable=False),
    Column("status", String(32), nullable=False),
    Column("profile", String(32), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
)
states = Table(
    "states",
    metadata,
    Column("state_id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(64), ForeignKey("sessions.session_id"), nullable=False),
    Column("state_json", JSONType, nullable=False),
    Column("version", Integer, nullable=False),
    Column("timestamp", TIME, nullable=False),
    UniqueConstraint("session_id", "version", name="uq_state_version"),
)
todolists = Table(
    "todolists",
    metadata,
    Column("todolist_id", String(64), primary_key=True),
    Column("session_id", String(64), ForeignKey("sessions.session_id"), nullable=False, index=True),
    Column("mission", Text, nullable=False),
    Column("items", JSONType, nullable=False),
    Column("status", String(32), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
)
execution_history = Table(
    "execution_history",
    metadata,
    Column("history_id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(64), ForeignKey("sessions.session_id"), nullable=False, index=True),
    Column("step_id", Integer, nullable=False),
    Column("thought", Text),
    Column("action", Text),
    Column("observation", Text),
    Column("timestamp", TIME, nullable=False),
)
lessons = Table(
    "lessons",
    metadata,
    Column("memory_id", String(64), primary_key=True),
    Column("context", Text, nullable=False),
    Column("what_failed", Text),
    Column("what_worked", Text, nullable=False),
    Column("lesson", Text, nullable=False),
    Column("tool_name", String(255), index=True),
    Column("confidence", Float, nullable=False),
    Column("created_at", TIME, nullable=False),
)

def make_engine(url: str | None = None, path: str | Path | None = None, *,
                durable: bool = True) -> Engine:
    """Engine for ``url`` (PostgreSQL via psycopg 3, or any SQLAlchemy URL), else SQLite ``path``.

    Args:
        durable: SQLite only: sync every commit to disk (``synchronous=FULL``). False keeps
            WAL's ``synchronous=NORMAL``: never corrupt, but the last commits may be lost on a
            power cut (fine for data a run rebuilds from its journal), for a fraction of the
            per-commit cost.
    """
    if not url:
        if path is None:
            raise ConfigError("sql store: give a SQLite file path or a URL (MEMLAB_SQL_URL)")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{Path(path)}"
    if url.startswith(("postgres://", "postgresql://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("postgresql"):
        kwargs["connect_args"] = {"connect_timeout": 5}
    elif url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": 30}
    try:
        engine = create_engine(url, **kwargs)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise ConfigError(f"sql_url: cannot use {url.split('@')[-1]!r}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        if not durable:
            event.listen(engine, "connect", _sqlite_normal_sync)
    return engine


def shown_url(engine: Engine) -> str:
    """The engine's URL without its password (for messages)."""
    return engine.url.render_as_string(hide_password=True)


@contextmanager
def transaction(engine: Engine, where: str) -> Iterator[Connection]:
    """A transaction on ``engine``; database errors become StoreError naming ``where``.

    Raises:
        StoreUnavailableError: the server cannot be reached.
        StoreError: any other operational or integrity error.
    """
    try:
        with engine.begin() as conn:
            yield conn
    except OperationalError as exc:
        raise operational_error(exc, where) from exc
    except IntegrityError as exc:
        raise StoreError(f"database at {where}: integrity: {exc.orig}") from exc


def operational_error(exc: OperationalError, where: str) -> StoreError:
    """StoreUnavailableError for a connection failure, else StoreError, naming ``where``."""
    if "connect" in str(exc).lower():
        return StoreUnavailableError(f"database at {where} is unavailable: {exc}")
    return StoreError(f"database at {where}: {exc}")


def _sqlite_normal_sync(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


class SqlStore:
    """Repository for sessions, versioned states, todo lists, execution history and lessons.

    Args:
        url: SQLAlchemy URL (``MEMLAB_SQL_URL``); PostgreSQL uses JSONB columns.
        path: SQLite file used when no URL is given.
    """

    def __init__(self, url: str | None = None, *, path: str | Path | None = None):
        self.engine = make_engine(url, path)
        self.url = shown_url(self.engine)
        with self._tx() as conn:
            metadata.create_all(conn)

    @classmethod
    def from_settings(cls, workdir: str | Path, settings: Settings | None = None) -> SqlStore:
        """PostgreSQL when ``MEMLAB_SQL_URL`` is set, else ``<workdir>/taskforce.sqlite``."""
        url = (settings or get_settings()).sql_url
        return cls(url, path=Path(workdir) / "taskforce.sqlite")

    def _tx(self):
        return transaction(self.engine, self.url)

    def close(self) -> None:
        self.engine.dispose()

    # --- sessions ------------------------------------------------------------------------------
    def save_session(self, session: Session) -> Session:
        """Insert or update a session (sets ``updated_at``)."""
        row = session.touch().model_dump(mode="python")
        with self._tx() as conn:
            exists = conn.execute(
                select(sessions.c.session_id).where(sessions.c.session_id == session.session_id)
            ).first()
            if exists:
                conn.execute(
                    update(sessions)
                    .where(sessions.c.session_id == session.session_id)
                    .values(**row)
                )
            else:
                conn.execute(insert(sessions).values(**row))
        return session

    def get_session(self, session_id: str) -> Session | None:
        with self._tx() as conn:
            row = conn.execute(select(sessions).where(sessions.c.session_id == session_id)).first()
        return None if row is None else Session.model_validate(row._asdict())

    def list_sessions(self, user_id: str | None = None, status: str | None = None) -> list[Session]:
        query = select(sessions).order_by(sessions.c.created_at)
        if user_id is not None:
            query = query.where(sessions.c.user_id == user_id)
        if status is not None:
            query = query.where(sessions.c.status == str(status))
        with self._tx() as conn:
            return [Session.model_validate(r._asdict()) for r in conn.execute(query)]

    # --- states (optimistic locking) -----------------------------------------------------------
    def save_state(self, state: State) -> State:
        """Store a new snapshot whose ``version`` is the stored latest + 1 (1 for the first).

        Raises:
            VersionConflictError: the version is stale (or taken concurrently); nothing written.
            StoreError: the session does not exist.
        """
        with self._versioned_tx(state) as conn:
            state_id = self._insert_state(conn, state)
        return state.model_copy(update={"state_id": state_id})

    def save_step(self, entry: ExecutionHistory, todolist: TodoList | None,
                  state: State) -> tuple[ExecutionHistory, State]:
        """Record one ReAct step, the plan and the next State in one transaction: after a
        crash either all three are stored or none is.

        Raises:
            VersionConflictError: ``state.version`` is stale; nothing is written.
        """
        with self._versioned_tx(state) as conn:
            state_id = self._insert_state(conn, state)
            history_id = self._insert_history(conn, entry)
            if todolist is not None:
                self._upsert_todolist(conn, todolist)
        return (entry.model_copy(update={"history_id": history_id}),
                state.model_copy(update={"state_id": state_id}))

    @contextmanager
    def _versioned_tx(self, state: State) -> Iterator[Connection]:
        """A transaction that maps a lost version race to VersionConflictError."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except IntegrityError as exc:
            if self.get_session(state.session_id) is None:
                raise StoreError(f"state: session {state.session_id!r} does not exist") from exc
            raise VersionConflictError(
                f"state of session {state.session_id!r}: version {state.version} was written "
                "concurrently by another writer"
            ) from exc
        except OperationalError as exc:
            if "locked" in str(exc).lower():  # SQLite: another writer committed first
                raise VersionConflictError(
                    f"state of session {state.session_id!r}: version {state.version} raced "
                    "another writer"
                ) from exc
            raise operational_error(exc, self.url) from exc

    def _insert_state(self, conn: Connection, state: State) -> int:
        current = self._latest_version(conn, state.session_id)
        if state.version != current + 1:
            raise VersionConflictError(
                f"state of session {state.session_id!r}: version {state.version} is "
                f"stale; stored version is {current}, so the next must be {current + 1}"
            )
        row = state.model_dump(mode="json", exclude={"state_id"})
        row["timestamp"] = state.timestamp
        return conn.execute(insert(states).values(**row)).inserted_primary_key[0]

    @staticmethod
    def _latest_version(conn: Connection, session_id: str) -> int:
        query = select(func.max(states.c.version)).where(states.c.session_id == session_id)
        return conn.execute(query).scalar() or 0

    def latest_state(self, session_id: str) -> State | None:
        query = (
            select(states)
            .where(states.c.session_id == session_id)
            .order_by(states.c.version.desc())
            .limit(1)
        )
        with self._tx() as conn:
            row = conn.execute(query).first()
        return None if row is None else State.model_validate(row._asdict())

    def list_states(self, session_id: str) -> list[State]:
        query = select(states).where(states.c.session_id == session_id).order_by(states.c.version)
        with self._tx() as conn:
            return [State.model_validate(r._asdict()) for r in conn.execute(query)]

    # --- todo lists ----------------------------------------------------------------------------
    def save_todolist(self, todolist: TodoList) -> TodoList:
        """Insert or update a plan (items stored as JSON; sets ``updated_at``)."""
        with self._tx() as conn:
            self._upsert_todolist(conn, todolist)
        return todolist

    @staticmethod
    def _upsert_todolist(conn: Connection, todolist: TodoList) -> None:
        row = todolist.touch().model_dump(mode="json")
        row["created_at"], row["updated_at"] = todolist.created_at, todolist.updated_at
        key = todolists.c.todolist_id == todolist.todolist_id
        if conn.execute(select(todolists.c.todolist_id).where(key)).first():
            conn.execute(update(todolists).where(key).values(**row))
        else:
            conn.execute(insert(todolists).values(**row))

    def get_todolist(self, todolist_id: str) -> TodoList | None:
        with self._tx() as conn:
            row = conn.execute(
                select(todolists).where(todolists.c.todolist_id == todolist_id)
            ).first()
        return None if row is None else TodoList.model_validate(row._asdict())

    def list_todolists(self, session_id: str) -> list[TodoList]:
        query = (
            select(todolists)
            .where(todolists.c.session_id == session_id)
            .order_by(todolists.c.created_at)
        )
        with self._tx() as conn:
            return [TodoList.model_validate(r._asdict()) for r in conn.execute(query)]

    # --- execution history ---------------------------------------------------------------------
    def append_history(self, entry: ExecutionHistory) -> ExecutionHistory:
        """Append one ReAct step; returns it with its ``history_id``."""
        with self._tx() as conn:
            new_id = self._insert_history(conn, entry)
        return entry.model_copy(update={"history_id": new_id})

    @staticmethod
    def _insert_history(conn: Connection, entry: ExecutionHistory) -> int:
        row = entry.model_dump(exclude={"history_id"})
        return conn.execute(insert(execution_history).values(**row)).inserted_primary_key[0]

    def list_history(self, session_id: str) -> list[ExecutionHistory]:
        query = (
            select(execution_history)
            .where(execution_history.c.session_id == session_id)
            .order_by(execution_history.c.step_id, execution_history.c.history_id)
        )
        with self._tx() as conn:
            return [ExecutionHistory.model_validate(r._asdict()) for r in conn.execute(query)]

    # --- lessons -------------------------------------------------------------------------------
    def add_lesson(self, lesson: Lesson) -> str:
        with self._tx() as conn:
            conn.execute(insert(lessons).values(**lesson.model_dump()))
        return lesson.memory_id

    def get_lesson(self, memory_id: str) -> Lesson | None:
        with self._tx() as conn:
            row = conn.execute(select(lessons).where(lessons.c.memory_id == memory_id)).first()
        return None if row is None else Lesson.model_validate(row._asdict())

    def search_lessons(self, tool_name: str | None = None, k: int | None = None,
                       min_confidence: float = 0.0) -> list[Lesson]:
        """Lessons at or above ``min_confidence`` (for ``tool_name`` when given), most
        confident first. Similarity to a mission is the repository's job (embeddings)."""
        query = select(lessons).where(lessons.c.confidence >= min_confidence)
        if tool_name is not None:
            query = query.where(lessons.c.tool_name == tool_name)
        query = query.order_by(lessons.c.confidence.desc(), lessons.c.created_at)
        if k is not None:
            query = query.limit(k)
        with self._tx() as conn:
            return [Lesson.model_validate(r._asdict()) for r in conn.execute(query)]
