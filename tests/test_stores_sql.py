"""Relational store contract (seed 004): SQLite file and a real PostgreSQL, same tests."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from services import free_port
from sqlalchemy import inspect

from memlab.errors import StoreError, StoreUnavailableError, VersionConflictError
from memlab.models.taskforce import (
    ExecutionHistory,
    ExecutionResult,
    Lesson,
    Session,
    State,
    TaskStatus,
    TodoItem,
    TodoList,
)
from memlab.stores.sql import SqlStore

_db_ids = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path):
    """A SQLAlchemy URL of an empty database: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'taskforce.sqlite'}"
    import psycopg

    server = request.getfixturevalue("postgres_server")
    name = f"memlab_test_{next(_db_ids)}_{time.monotonic_ns()}"
    with psycopg.connect(
        f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", autocommit=True
    ) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def store(sql_url):
    store = SqlStore(sql_url)
    yield store
    store.close()


@pytest.fixture
def session(store):
    return store.save_session(
        Session(mission="Plan a trip to Lisbon", status="pending", user_id="u1")
    )


def test_session_roundtrip_update_and_listing(store, session):
    assert store.get_session(session.session_id) == session
    session.status = "in_progress"
    before = session.updated_at
    store.save_session(session)
    loaded = store.get_session(session.session_id)
    assert loaded.status == "in_progress" and loaded.updated_at >= before
    store.save_session(Session(mission="other", status="completed", user_id="u2"))
    assert [s.session_id for s in store.list_sessions(user_id="u1")] == [session.session_id]
    assert len(store.list_sessions(status="completed")) == 1
    assert store.get_session("missing") is None


def test_state_versions_and_stale_write_changes_nothing(store, session):
    sid = session.session_id
    first = store.save_state(State(session_id=sid, state_json={"step": 1}))
    assert first.state_id is not None and first.version == 1
    store.save_state(
        State(session_id=sid, state_json={"step": 2, "answers": {"a": [1]}}, version=2)
    )
    before = store.list_states(sid)
    for stale in (1, 2, 4):
        with pytest.raises(VersionConflictError, match="stale"):
            store.save_state(State(session_id=sid, state_json={"step": "lost"}, version=stale))
    assert store.list_states(sid) == before
    latest = store.latest_state(sid)
    assert latest.version == 2 and latest.state_json == {"step": 2, "answers": {"a": [1]}}


def test_state_for_unknown_session_is_refused(store):
    with pytest.raises(StoreError, match="does not exist"):
        store.save_state(State(session_id="no-such-session", state_json={}))


def test_racing_writers_never_share_a_version(store, session):
    sid = session.session_id
    store.save_state(State(session_id=sid, state_json={"count": 0}))
    conflicts = []

    def writer() -> None:
        for _ in range(10):
            while True:
                latest = store.latest_state(sid)
                bumped = {"count": latest.state_json["count"] + 1}
                try:
                    store.save_state(
                        State(session_id=sid, state_json=bumped, version=latest.version + 1)
                    )
                    break
                except VersionConflictError:
                    conflicts.append(1)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    versions = [s.version for s in store.list_states(sid)]
    assert versions == list(range(1, 42))
    assert store.latest_state(sid).state_json == {"count": 40}


def test_todolist_roundtrip_and_update(store, session):
    plan = TodoList(
        session_id=session.session_id,
        mission=session.mission,
        items=[
            TodoItem(position=0, description="Book flights", acceptance_criteria=["ticket id"]),
            TodoItem(
                position=1,
                description="Book hotel",
                acceptance_criteria=["confirmation"],
                dependencies=[0],
            ),
        ],
    )
    store.save_todolist(plan)
    plan.items[0].transition_to(TaskStatus.IN_PROGRESS).transition_to(TaskStatus.COMPLETED)
    plan.items[0].execution_result = ExecutionResult(
        success=True, output={"id": "T1"}, duration_ms=12.5
    )
    store.save_todolist(plan)
    loaded = store.get_todolist(plan.todolist_id)
    assert loaded.items == plan.items and loaded.status == "active"
    assert [t.todolist_id for t in store.list_todolists(session.session_id)] == [plan.todolist_id]
    assert store.get_todolist("missing") is None


def test_execution_history_in_step_order(store, session):
    sid = session.session_id
    for step in (1, 0, 2):
        entry = store.append_history(
            ExecutionHistory(session_id=sid, step_id=step, thought=f"t{step}", action="search")
        )
        assert entry.history_id is not None
    assert [h.step_id for h in store.list_history(sid)] == [0, 1, 2]
    assert store.list_history(sid)[1].thought == "t1"


def test_lessons_by_tool_and_confidence(store):
    store.add_lesson(
        Lesson(
            context="Reading CSV files with a broken encoding.",
            what_worked="detect the encoding first",
            lesson="sniff encodings",
            confidence=0.9,
            tool_name="python",
        )
    )
    store.add_lesson(
        Lesson(
            context="Searching the web for flight prices.",
            what_worked="use two sources",
            lesson="cross-check prices",
            confidence=0.6,
            tool_name="web_search",
            what_failed="one source",
        )
    )
    low = store.add_lesson(
        Lesson(
            context="CSV export from a spreadsheet.",
            what_worked="save as UTF-8",
            lesson="csv utf-8",
            confidence=0.2,
            tool_name="python",
        )
    )
    assert [x.tool_name for x in store.search_lessons(tool_name="web_search")] == ["web_search"]
    assert [x.confidence for x in store.search_lessons()] == [0.9, 0.6, 0.2]
    assert [x.confidence for x in store.search_lessons(k=1)] == [0.9]
    assert low not in [x.memory_id for x in store.search_lessons(min_confidence=0.5)]
    assert store.get_lesson(low).what_worked == "save as UTF-8"


def test_data_survives_a_new_engine(sql_url, store, session):
    store.save_state(State(session_id=session.session_id, state_json={"k": "v"}))
    reopened = SqlStore(sql_url)
    assert reopened.latest_state(session.session_id).state_json == {"k": "v"}
    reopened.close()


def test_json_columns_are_jsonb_on_postgres(store):
    types = {
        c["name"]: type(c["type"]).__name__ for c in inspect(store.engine).get_columns("states")
    }
    expected = "JSONB" if store.engine.dialect.name == "postgresql" else "JSON"
    assert types["state_json"] == expected


def test_unreachable_postgres_names_the_url():
    url = f"postgresql://postgres:pw@127.0.0.1:{free_port()}/memlab"
    began = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="127.0.0.1") as err:
        SqlStore(url)
    assert "pw" not in str(err.value) and time.monotonic() - began < 10


def test_from_settings_defaults_to_sqlite_in_the_workdir(tmp_path, postgres_server):
    from memlab.config import get_settings

    local = SqlStore.from_settings(tmp_path, get_settings())
    assert local.engine.dialect.name == "sqlite" and (tmp_path / "taskforce.sqlite").exists()
    remote = SqlStore.from_settings(tmp_path, get_settings(sql_url=postgres_server.url))
    assert remote.engine.dialect.name == "postgresql"
    local.close()
    remote.close()
