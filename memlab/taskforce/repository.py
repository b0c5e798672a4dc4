"""Taskforce persistence: the agent's view of the SQL store (area 3's ``memlab.stores.sql``).

No tables are defined here. This adds the agent's vocabulary on top of :class:`SqlStore`:
starting and finishing sessions, committing the next State snapshot from a known base version
(optimistic locking), recording ReAct steps, and finding lessons for a new mission.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.config import Settings
from memlab.models.taskforce import (
    ExecutionHistory,
    Lesson,
    Session,
    SessionStatus,
    State,
    TodoList,
)
from memlab.stores.sql import SqlStore


class TaskforceRepository:
    """Sessions, versioned states, plans, execution history and lessons of the Taskforce agent.

    Args:
        store: the SQL store (SQLite file or PostgreSQL).
    """

    def __init__(self, store: SqlStore):
        self.store = store

    @classmethod
    def open(cls, workdir: str | Path, settings: Settings | None = None) -> TaskforceRepository:
        """PostgreSQL when ``MEMLAB_SQL_URL`` is set, else ``<workdir>/taskforce.sqlite``."""
        return cls(SqlStore.from_settings(workdir, settings))

    # sessions -------------------------------------------------------------------------------
    def start_session(self, mission: str, *, user_id: str | None = None,
                      profile: str = "dev") -> Session:
        session = Session(mission=mission, status=SessionStatus.IN_PROGRESS, user_id=user_id,
                          profile=profile)
        return self.store.save_session(session)

    def finish_session(self, session: Session, status: SessionStatus) -> Session:
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

    def history(self, session_id: str) -> list[ExecutionHistory]:
        return self.store.list_history(session_id)

    # lessons ----------------------------------------------------------------------------------
    def add_lesson(self, lesson: Lesson) -> str:
        return self.store.add_lesson(lesson)

    def lessons_for(self, mission: str, *, tool_names: list[str] | None = None,
                    k: int = 3, min_confidence: float = 0.3) -> list[Lesson]:
        """Lessons whose context shares words with ``mission``, best first; then, to fill
        ``k``, confident lessons about the session's tools."""
        found = self.store.search_lessons(context=mission, k=k, min_confidence=min_confidence)
        for tool in tool_names or []:
            if len(found) >= k:
                break
            for lesson in self.store.search_lessons(tool_name=tool, k=k,
                                                    min_confidence=min_confidence):
                if lesson.memory_id not in {f.memory_id for f in found} and len(found) < k:
                    found.append(lesson)
        return found

    def close(self) -> None:
        self.store.close()
