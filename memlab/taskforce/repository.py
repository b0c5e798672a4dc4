"""Taskforce persistence: the agent's view of the SQL store (area 3's ``memlab.stores.sql``).

This adds the agent's vocabulary on top of :class:`SqlStore`: starting and finishing sessions,
committing the next State snapshot from a known base version (optimistic locking), recording
a ReAct step together with its plan and State in one transaction, and finding lessons for a
new mission.

Lessons are scoped per user: a lesson learned in one user's session is never shown to another
user's session. The owner of each lesson is kept in one small table of its own,
``lesson_owners`` (memory_id, user_id), written before the lesson, so a lesson never exists
without its owner. Lessons without an owner row (stores written before the table existed) and
sessions without a user share one anonymous scope. Within a scope, a lesson is retrieved for a
mission when the embedding of its context and lesson is at least ``min_similarity`` (cosine)
from the mission's: shared filler words ("a", "the") no longer count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Column, MetaData, String, Table, insert, select

from memlab.config import Settings
from memlab.embed.base import Embedder
from memlab.models.taskforce import (
    ExecutionHistory,
    Lesson,
    Profile,
    Session,
    SessionStatus,
    State,
    TodoList,
)
from memlab.stores.sql import SqlStore

ANONYMOUS = ""
"""The owner recorded for lessons of sessions without a user."""

_owners_metadata = MetaData()
lesson_owners = Table(
    "lesson_owners",
    _owners_metadata,
    Column("memory_id", String(64), primary_key=True),
    Column("user_id", String(255), nullable=False, index=True),
)


class TaskforceRepository:
    """Sessions, versioned states, plans, execution history and lessons of the Taskforce agent.

    Args:
        store: the SQL store (SQLite file or PostgreSQL).
        embedder: embeds missions and lessons for retrieval; without one no lesson is found.
        min_similarity: the cosine a lesson needs to be shown for a mission.
    """

    def __init__(self, store: SqlStore, embedder: Embedder | None = None, *,
                 min_similarity: float = 0.3):
        self.store, self.embedder, self.min_similarity = store, embedder, min_similarity
        with self.store._tx() as conn:
            _owners_metadata.create_all(conn)

    @classmethod
    def open(cls, workdir: str | Path, settings: Settings | None = None,
             embedder: Embedder | None = None, **kwargs: Any) -> TaskforceRepository:
        """PostgreSQL when ``MEMLAB_SQL_URL`` is set, else ``<workdir>/taskforce.sqlite``."""
        return cls(SqlStore.from_settings(workdir, settings), embedder, **kwargs)

    # sessions -------------------------------------------------------------------------------
    def start_session(self, mission: str, *, user_id: str | None = None,
                      profile: Profile | str = Profile.DEV) -> Session:
        """A new PENDING session.

        Raises:
            pydantic.ValidationError: ``mission`` is blank or ``profile`` is not dev, staging
                or prod (the field is named).
        """
        session = Session(mission=mission, status=SessionStatus.PENDING, user_id=user_id,
                          profile=profile)
        return self.store.save_session(session)

    def finish_session(self, session: Session, status: SessionStatus) -> Session:
        """Move ``session`` to ``status`` (guarded: IllegalStatusTransition) and save it."""
        session.status = status
        return self.store.save_session(session)

    def get_session(self, session_id: str) -> Session | None:
        return self.store.get_session(session_id)

    # states -----------------------------------------------------------------------------------
    def commit_state(self, session_id: str, state_json: dict[str, Any], base_version: int) -> State:
        """Save ``state_json`` as version ``base_version + 1``.

        Raises:
            VersionConflictError: another writer saved a newer version since ``base_version``;
                nothing is written.
        """
        state = State(session_id=session_id, state_json=state_json, version=base_version + 1)
        return self.store.save_state(state)

    def latest_state(self, session_id: str) -> State | None:
        return self.store.latest_state(session_id)

    def states(self, session_id: str) -> list[State]:
        return self.store.list_states(session_id)

    # plans and history ------------------------------------------------------------------------
    def save_plan(self, todolist: TodoList) -> TodoList:
        return self.store.save_todolist(todolist)

    def get_plan(self, todolist_id: str) -> TodoList | None:
        return self.store.get_todolist(todolist_id)

    def record_step(self, entry: ExecutionHistory) -> ExecutionHistory:
        return self.store.append_history(entry)

    def commit_step(self, entry: ExecutionHistory, todolist: TodoList | None,
                    state_json: dict[str, Any], base_version: int) -> State:
        """Record a step, save the plan and State ``base_version + 1`` atomically.

        Raises:
            VersionConflictError: another writer saved a newer version; nothing is written.
        """
        state = State(session_id=entry.session_id, state_json=state_json,
                      version=base_version + 1)
        return self.store.save_step(entry, todolist, state)[1]

    def history(self, session_id: str) -> list[ExecutionHistory]:
        return self.store.list_history(session_id)

    # lessons ----------------------------------------------------------------------------------
    def add_lesson(self, lesson: Lesson, *, user_id: str | None = None) -> str:
        """Store a lesson owned by ``user_id`` (None: the anonymous scope)."""
        with self.store._tx() as conn:
            conn.execute(insert(lesson_owners).values(memory_id=lesson.memory_id,
                                                      user_id=user_id or ANONYMOUS))
        return self.store.add_lesson(lesson)

    def lessons_for(self, mission: str, *, user_id: str | None = None, k: int = 3,
                    min_confidence: float = 0.3) -> list[Lesson]:
        """``user_id``'s lessons most similar to ``mission`` (cosine of their embeddings at or
        above ``min_similarity``), best first; none without an embedder."""
        owned = self._owned_by(user_id)
        candidates = [lesson for lesson in self.store.search_lessons(min_confidence=min_confidence)
                      if owned(lesson.memory_id)]
        if not candidates or self.embedder is None or not mission.strip():
            return []
        scored = sorted(zip(self.similarities(mission, candidates), candidates, strict=True),
                        key=lambda pair: (-pair[0], -pair[1].confidence))
        return [lesson for score, lesson in scored if score >= self.min_similarity][:k]

    def similarities(self, mission: str, lessons: list[Lesson]) -> list[float]:
        """Cosine of ``mission`` to each lesson's context and lesson text."""
        vectors = self.embedder.embed([mission] + [f"{x.context} {x.lesson}" for x in lessons])
        return [float(v) for v in np.asarray(vectors[1:]) @ np.asarray(vectors[0])]

    def _owned_by(self, user_id: str | None):
        """A predicate: is this lesson id in ``user_id``'s scope?"""
        with self.store._tx() as conn:
            rows = conn.execute(select(lesson_owners.c.memory_id, lesson_owners.c.user_id))
            owners = {memory_id: owner for memory_id, owner in rows}
        wanted = user_id or ANONYMOUS
        return lambda memory_id: owners.get(memory_id, ANONYMOUS) == wanted

    def close(self) -> None:
        self.store.close()
