"""Seed 004 models: sessions, versioned state, plans with a dependency DAG, lessons, frozen events."""

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models import Memory
from memlab.models.taskforce import (
    Action,
    ActionType,
    ExecutionHistory,
    ExecutionResult,
    Lesson,
    Observation,
    PlanStatus,
    Session,
    SessionStatus,
    State,
    TaskStatus,
    Thought,
    TodoItem,
    TodoList,
)

T0 = datetime(2025, 9, 14, 18, 30, tzinfo=UTC)


def reject(model: type[BaseModel], data: dict, *fragments: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


def item(position: int, deps: list[int] | None = None, **kw) -> dict:
    return {
        "position": position,
        "description": f"step {position}",
        "acceptance_criteria": ["done"],
        "dependencies": deps or [],
        **kw,
    }


def plan(*items: dict) -> dict:
    return {"session_id": "s1", "mission": "m", "items": list(items)}


SAMPLES = {
    "Session": Session(mission="write a report", status="in_progress", user_id="u1"),
    "State": State(session_id="s1", state_json={"mission": "m", "answers": {}}, version=3),
    "ExecutionResult": ExecutionResult(success=True, output={"rows": [1, 2]}, duration_ms=12.5),
    "TodoItem": TodoItem.model_validate(
        item(
            1,
            [0],
            status="completed",
            chosen_tool="python",
            execution_result={"success": False, "error": "boom"},
        )
    ),
    "TodoList": TodoList.model_validate(plan(item(0), item(1, [0]), item(2, [0, 1]))),
    "ExecutionHistory": ExecutionHistory(session_id="s1", step_id=2, thought="t", action="python"),
    "Lesson": Lesson(context="c", what_worked="w", lesson="l", confidence=0.8, tool_name="python"),
    "Thought": Thought(session_id="s1", step_id=1, content="think", timestamp=T0),
    "Action": Action(
        session_id="s1",
        step_id=1,
        action_type="tool_call",
        action_data={"tool": "python", "args": {"x": 1}},
    ),
    "Observation": Observation(session_id="s1", step_id=1, result=[1, "a", None], success=True),
}


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        (SessionStatus, ["pending", "in_progress", "completed", "failed"]),
        (PlanStatus, ["active", "completed", "abandoned"]),
        (TaskStatus, ["pending", "in_progress", "completed", "failed", "skipped"]),
        (ActionType, ["tool_call", "ask_user", "complete", "replan"]),
    ],
)
def test_status_enums_are_str_enums_with_seed_values(enum, values):
    assert [e.value for e in enum] == values
    assert all(isinstance(e, str) for e in enum)


def test_session_defaults_and_status_rule():
    s = Session(mission="m", status="pending")
    assert s.profile == "dev" and s.user_id is None and s.session_id
    reject(Session, {"mission": "m", "status": "paused"}, "status", "'pending'")
    reject(Session, {"mission": "m"}, "status", "Field required")
    old = s.updated_at
    assert s.touch().updated_at >= old


def test_naive_datetimes_are_read_as_utc():
    s = Session(mission="m", status="pending", created_at=datetime(2025, 1, 1, 12))
    assert s.created_at == datetime(2025, 1, 1, 12, tzinfo=UTC)


def test_state_version_at_least_one():
    assert State(session_id="s", state_json={}).version == 1
    reject(
        State,
        {"session_id": "s", "state_json": {}, "version": 0},
        "version",
        "greater than or equal to 1",
    )


def test_todo_item_defaults_and_position_rule():
    it = TodoItem.model_validate(item(0))
    assert it.status is TaskStatus.PENDING and it.dependencies == [] and it.chosen_tool is None
    reject(TodoItem, item(-1), "position", "greater than or equal to 0")
    reject(TodoItem, item(0, status="blocked"), "status", "'pending'")


def test_todolist_default_status_active():
    assert TodoList.model_validate(plan(item(0))).status is PlanStatus.ACTIVE


def test_todolist_dependencies_must_name_existing_positions():
    reject(TodoList, plan(item(0), item(1, [5])), "items", "existing positions", "[5]")


def test_todolist_dependencies_form_no_cycle():
    reject(TodoList, plan(item(0, [2]), item(1, [0]), item(2, [1])), "items", "no cycle")
    reject(TodoList, plan(item(0, [0])), "items", "no cycle", "0 -> 0")


def test_todolist_positions_unique():
    reject(TodoList, plan(item(0), item(0)), "items", "unique")


def test_todolist_ready_items_follow_dependencies():
    todo = TodoList.model_validate(plan(item(0), item(1, [0]), item(2, [1])))
    assert [i.position for i in todo.ready_items()] == [0]
    todo.item(0).transition_to(TaskStatus.IN_PROGRESS).transition_to(TaskStatus.COMPLETED)
    assert [i.position for i in todo.ready_items()] == [1]
    with pytest.raises(KeyError):
        todo.item(9)


def test_execution_result_duration_non_negative():
    reject(ExecutionResult, {"success": True, "duration_ms": -1}, "duration_ms", "greater")
    reject(ExecutionResult, {"output": 1}, "success", "Field required")


def test_lesson_is_the_seeds_memory_and_confidence_in_range():
    assert Memory is Lesson
    data = {"context": "c", "what_worked": "w", "lesson": "l"}
    assert Lesson(**data, confidence=0.0).confidence == 0.0
    reject(Lesson, {**data, "confidence": 1.01}, "confidence", "less than or equal to 1")
    reject(Lesson, {**data, "confidence": -0.5}, "confidence", "greater than or equal to 0")
    reject(Lesson, data, "confidence", "Field required")


@pytest.mark.parametrize("name", ["Thought", "Action", "Observation"])
def test_domain_events_are_frozen(name):
    with pytest.raises(ValidationError, match="frozen"):
        SAMPLES[name].step_id = 99


def test_action_type_rule():
    base = {"session_id": "s", "step_id": 1, "action_data": {}}
    for value in ["tool_call", "ask_user", "complete", "replan"]:
        assert Action(**base, action_type=value).action_type == value
    reject(Action, {**base, "action_type": "sleep"}, "action_type", "'tool_call'")


def test_observation_requires_success_and_result():
    reject(Observation, {"session_id": "s", "step_id": 1, "result": 1}, "success", "required")
    reject(Observation, {"session_id": "s", "step_id": 1, "success": True}, "result", "required")


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (Session, '{"mission": "m", "status": "pending", "created_at": 5.5e99}', ("created_at",)),
    (
        State,
        '{"session_id": "s", "state_json": [], "version": 1}',
        ("state_json", "should be an object"),
    ),
    (
        TodoList,
        '{"session_id": "s", "mission": "m", "items": [{"position": "x"}]}',
        ("items.0.position", "integer"),
    ),
    (ExecutionHistory, '{"session_id": "s", "step_id": "two"}', ("step_id", "integer")),
    (
        Lesson,
        '{"context": "c", "what_worked": "w", "lesson": "l", "confidence": "high"}',
        ("confidence", "valid number"),
    ),
    (Thought, '{"session_id": "s", "step_id": 1}', ("content", "Field required")),
    (Action, '{"session_id": "s", "step_id": 1, "action_type": 3}', ("action_type",)),
    (Observation, '{"session_id": "s"', ("Invalid JSON",)),
]
