"""Seed 004: the Taskforce ReAct agent's sessions, states, plans, history, lessons and events.

The seed writes dataclasses; here they are pydantic models with the same fields and defaults.
Ids the seed describes as UUIDs default to a fresh UUID and timestamps to now (UTC). The seed's
``Memory`` is :class:`Lesson` (``Memory`` stays importable as an alias).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import Field, field_validator

from memlab.models._common import (
    FrozenSeedModel,
    NonBlankStr,
    SeedModel,
    StatusMachine,
    UtcDatetime,
    new_id,
    utc_now,
)

__all__ = [
    "Action",
    "ActionType",
    "ExecutionHistory",
    "ExecutionResult",
    "Lesson",
    "Memory",
    "Observation",
    "PLAN_TRANSITIONS",
    "PlanStatus",
    "Profile",
    "SESSION_TRANSITIONS",
    "Session",
    "SessionStatus",
    "State",
    "TASK_TRANSITIONS",
    "TaskStatus",
    "Thought",
    "TodoItem",
    "TodoList",
]


class SessionStatus(StrEnum):
    """Session execution status."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


class PlanStatus(StrEnum):
    """TodoList plan status."""

    ACTIVE = "active"
    COMPLETED = "completed"
    ABANDONED = "abandoned"


class TaskStatus(StrEnum):
    """Task execution status."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"


class Profile(StrEnum):
    """Configuration profile of a session."""

    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


_S, _P, _T = SessionStatus, PlanStatus, TaskStatus
SESSION_TRANSITIONS: dict[SessionStatus, frozenset[SessionStatus]] = {
    _S.PENDING: frozenset({_S.IN_PROGRESS, _S.FAILED}),
    _S.IN_PROGRESS: frozenset({_S.COMPLETED, _S.FAILED}),
    _S.COMPLETED: frozenset(),
    _S.FAILED: frozenset(),
}
PLAN_TRANSITIONS: dict[PlanStatus, frozenset[PlanStatus]] = {
    _P.ACTIVE: frozenset({_P.COMPLETED, _P.ABANDONED}),
    _P.COMPLETED: frozenset(),
    _P.ABANDONED: frozenset(),
}
TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    _T.PENDING: frozenset({_T.IN_PROGRESS, _T.SKIPPED, _T.FAILED}),
    _T.IN_PROGRESS: frozenset({_T.COMPLETED, _T.FAILED, _T.SKIPPED}),
    _T.COMPLETED: frozenset(),
    _T.FAILED: frozenset(),
    _T.SKIPPED: frozenset(),
}


class ActionType(StrEnum):
    """What an Action decides to do."""

    TOOL_CALL = "tool_call"
    ASK_USER = "ask_user"
    COMPLETE = "complete"
    REPLAN = "replan"


class Session(StatusMachine):
    """One agent execution session with a mission; ``status`` moves only along
    ``SESSION_TRANSITIONS`` (a finished session never runs again)."""

    TRANSITIONS: ClassVar[dict[Any, frozenset]] = SESSION_TRANSITIONS
    RULE: ClassVar[str] = "pending -> in_progress -> completed | failed; pending -> failed"

    session_id: NonBlankStr = Field(default_factory=new_id, description="UUID")
    mission: NonBlankStr = Field(max_length=4000)
    status: SessionStatus
    profile: Profile = Field(Profile.DEV, description="configuration profile: dev, staging, prod")
    user_id: str | None = None
    created_at: UtcDatetime = Field(default_factory=utc_now)
    updated_at: UtcDatetime = Field(default_factory=utc_now)

    def touch(self) -> Session:
        """Set ``updated_at`` to now; returns self."""
        self.updated_at = utc_now()
        return self


class State(SeedModel):
    """A versioned snapshot of a session's state (optimistic locking on ``version``)."""

    session_id: str
    state_json: dict[str, Any]
    version: int = Field(1, ge=1, description="state version for optimistic locking, >= 1")
    state_id: int | None = Field(None, description="assigned by the database")
    timestamp: UtcDatetime = Field(default_factory=utc_now)


class ExecutionResult(SeedModel):
    """Result of one tool execution."""

    success: bool
    output: Any | None = None
    error: str | None = None
    duration_ms: float | None = Field(None, ge=0.0)


class TodoItem(StatusMachine):
    """One executable step of a plan, with acceptance criteria and dependencies; ``status``
    moves only along ``TASK_TRANSITIONS``."""

    TRANSITIONS: ClassVar[dict[Any, frozenset]] = TASK_TRANSITIONS
    RULE: ClassVar[str] = ("pending -> in_progress -> completed | failed | skipped; "
                           "pending -> skipped | failed")

    position: int = Field(ge=0, description="0-indexed position in the plan")
    description: str
    acceptance_criteria: list[str]
    dependencies: list[int] = Field(default_factory=list, description="positions this depends on")
    status: TaskStatus = TaskStatus.PENDING
    chosen_tool: str | None = None
    execution_result: ExecutionResult | None = None


class TodoList(StatusMachine):
    """A plan for a mission: TodoItems whose dependencies form a DAG over their positions;
    ``status`` moves only along ``PLAN_TRANSITIONS``."""

    TRANSITIONS: ClassVar[dict[Any, frozenset]] = PLAN_TRANSITIONS
    RULE: ClassVar[str] = "active -> completed | abandoned"

    todolist_id: NonBlankStr = Field(default_factory=new_id, description="UUID")
    session_id: str
    mission: str
    items: list[TodoItem]
    status: PlanStatus = PlanStatus.ACTIVE
    created_at: UtcDatetime = Field(default_factory=utc_now)
    updated_at: UtcDatetime = Field(default_factory=utc_now)

    @field_validator("items")
    @classmethod
    def _dependencies_form_a_dag(cls, items: list[TodoItem]) -> list[TodoItem]:
        positions = [item.position for item in items]
        duplicates = sorted({p for p in positions if positions.count(p) > 1})
        if duplicates:
            raise ValueError(f"positions must be unique, duplicated: {duplicates}")
        known = set(positions)
        for item in items:
            missing = [d for d in item.dependencies if d not in known]
            if missing:
                raise ValueError(
                    f"dependencies must name existing positions: item {item.position} "
                    f"depends on unknown position(s) {missing}"
                )
        cycle = _find_cycle({item.position: item.dependencies for item in items})
        if cycle:
            path = " -> ".join(str(p) for p in cycle)
            raise ValueError(f"dependencies must form no cycle, found {path}")
        return items

    def touch(self) -> TodoList:
        """Set ``updated_at`` to now; returns self."""
        self.updated_at = utc_now()
        return self

    def item(self, position: int) -> TodoItem:
        """The item at ``position`` (KeyError if none)."""
        for item in self.items:
            if item.position == position:
                return item
        raise KeyError(f"no TodoItem at position {position}")

    def ready_items(self) -> list[TodoItem]:
        """Pending items whose dependencies are all completed or skipped."""
        done = {TaskStatus.COMPLETED, TaskStatus.SKIPPED}
        status = {item.position: item.status for item in self.items}
        return [
            item
            for item in self.items
            if item.status is TaskStatus.PENDING
            and all(status[d] in done for d in item.dependencies)
        ]


def _find_cycle(graph: dict[int, list[int]]) -> list[int] | None:
    """Return one dependency cycle as a closed path of positions, or None (iterative DFS)."""
    colour = dict.fromkeys(graph, 0)  # 0 unseen, 1 on the stack, 2 done
    for root in sorted(graph):
        if colour[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        colour[root] = 1
        while stack:
            node, index = stack[-1]
            deps = graph[node]
            if index == len(deps):
                colour[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, index + 1)
            nxt = deps[index]
            if colour[nxt] == 1:
                path = [n for n, _ in stack]
                return path[path.index(nxt) :] + [nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, 0))
    return None


class ExecutionHistory(SeedModel):
    """One ReAct step: thought, action and observation."""

    session_id: str
    step_id: int = Field(ge=0)
    thought: str | None = None
    action: str | None = Field(None, description="tool name, ask_user or complete")
    observation: str | None = None
    history_id: int | None = Field(None, description="assigned by the database")
    timestamp: UtcDatetime = Field(default_factory=utc_now)


class Lesson(SeedModel):
    """A cross-session lesson learned from a successful execution (the seed's ``Memory``)."""

    memory_id: NonBlankStr = Field(default_factory=new_id, description="UUID")
    context: str = Field(description="the kind of situation (2-3 sentences)")
    what_worked: str
    lesson: str = Field(description="generalisable takeaway")
    confidence: float = Field(ge=0.0, le=1.0, description="confidence 0.0-1.0")
    what_failed: str | None = None
    tool_name: str | None = None
    created_at: UtcDatetime = Field(default_factory=utc_now)


Memory = Lesson


class Thought(FrozenSeedModel):
    """LLM-generated reasoning event (immutable)."""

    session_id: str
    step_id: int = Field(ge=0)
    content: str
    timestamp: UtcDatetime = Field(default_factory=utc_now)


class Action(FrozenSeedModel):
    """Action decision event (immutable): tool_call, ask_user, complete or replan."""

    session_id: str
    step_id: int = Field(ge=0)
    action_type: ActionType
    action_data: dict[str, Any] = Field(default_factory=dict)
    timestamp: UtcDatetime = Field(default_factory=utc_now)


class Observation(FrozenSeedModel):
    """Action result event (immutable)."""

    session_id: str
    step_id: int = Field(ge=0)
    result: Any
    success: bool
    error: str | None = None
    timestamp: UtcDatetime = Field(default_factory=utc_now)
