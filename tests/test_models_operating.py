"""DD-01 operating-memory models: storage keys, auto-set timestamps, status values, JSON."""

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models.operating import EventStatus, PersonalMemoryState, SharedWorkspaceState


def reject(model: type[BaseModel], data: dict, *fragments: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


SAMPLES = {
    "PersonalMemoryState": PersonalMemoryState(
        agent_id="planner_agent_001",
        current_task_id="goodai_test_case_42",
        scratchpad={"status": "retrieving", "query": "..."},
        promotion_candidates={"insight_1": {"content": "Port of Hamburg", "confidence": 0.95}},
    ),
    "SharedWorkspaceState": SharedWorkspaceState(
        status="active",
        shared_data={"alert": "Vessel V-123 delayed", "port_congestion": 0.91},
        participating_agents=["vessel_agent_123", "port_agent_007"],
    ),
}


def test_timestamps_are_auto_set_iso_utc():
    state = SharedWorkspaceState(status="active")
    assert state.created_at.tzinfo is not None and state.created_at.utcoffset() == timedelta(0)
    dumped = state.model_dump(mode="json")
    assert dumped["last_updated"].endswith("Z")
    assert datetime.fromisoformat(dumped["created_at"]) == state.created_at


def test_seed_example_timestamp_is_accepted():
    state = PersonalMemoryState(agent_id="a", last_updated="2025-09-14T18:30:00.123Z")
    assert state.last_updated == datetime(2025, 9, 14, 18, 30, 0, 123000, tzinfo=UTC)


def test_touch_refreshes_last_updated():
    old = datetime(2020, 1, 1, tzinfo=UTC)
    personal = PersonalMemoryState(agent_id="a", last_updated=old)
    shared = SharedWorkspaceState(status="active", last_updated=old)
    assert personal.touch().last_updated > old
    assert shared.touch().last_updated > old
    assert shared.created_at > old  # created_at is never touched by touch()


def test_storage_keys():
    assert PersonalMemoryState(agent_id="planner_agent_001").storage_key == (
        "personal_state:planner_agent_001"
    )
    shared = SharedWorkspaceState(event_id="evt_a1b2c3d4e5", status="resolved")
    assert shared.storage_key == "shared_state:evt_a1b2c3d4e5"


def test_event_id_auto_set_unique():
    a, b = SharedWorkspaceState(status="active"), SharedWorkspaceState(status="active")
    assert a.event_id and a.event_id != b.event_id


def test_defaults_are_empty_and_independent():
    a, b = PersonalMemoryState(agent_id="a"), PersonalMemoryState(agent_id="b")
    a.scratchpad["x"] = 1
    assert b.scratchpad == {} and b.promotion_candidates == {} and b.current_task_id is None


def test_agent_id_required_and_not_blank():
    reject(PersonalMemoryState, {}, "agent_id", "Field required")
    reject(PersonalMemoryState, {"agent_id": "  "}, "agent_id", "whitespace")


@pytest.mark.parametrize("status", ["active", "resolved", "cancelled"])
def test_status_accepts_seed_values(status):
    assert SharedWorkspaceState(status=status).status == EventStatus(status)


def test_status_rejects_other_values_and_is_required():
    reject(
        SharedWorkspaceState, {"status": "done"}, "status", "'active', 'resolved' or 'cancelled'"
    )
    reject(SharedWorkspaceState, {}, "status", "Field required")


def test_status_assignment_is_validated():
    state = SharedWorkspaceState(status="active")
    with pytest.raises(ValidationError, match="status"):
        state.status = "finished"


def test_terminal_status_and_participants():
    state = SharedWorkspaceState(status="active")
    assert not state.is_terminal
    state.status = "cancelled"
    assert state.is_terminal
    state.add_participant("x")
    state.add_participant("x")
    assert state.participating_agents == ["x"]


def test_unknown_field_rejected():
    reject(PersonalMemoryState, {"agent_id": "a", "scratch": {}}, "scratch", "Extra inputs")


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (
        PersonalMemoryState,
        '{"agent_id": "a", "scratchpad": []}',
        ("scratchpad", "should be an object"),
    ),
    (
        PersonalMemoryState,
        '{"agent_id": "a", "last_updated": "yesterday"}',
        ("last_updated", "datetime"),
    ),
    (
        SharedWorkspaceState,
        '{"status": "active", "participating_agents": "x"}',
        ("participating_agents", "list"),
    ),
    (SharedWorkspaceState, '{"status": "active",', ("Invalid JSON",)),
]
