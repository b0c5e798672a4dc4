"""Taskforce recovery: a session stopped at any point resumes from its State, same plan, no
step run twice; guarded status transitions; the profile rule. FakeLLM + real SQLite."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from test_taskforce_agent import MISSION, Script, TopicEmbedder

from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.models._common import IllegalStatusTransition
from memlab.models.taskforce import Session, SessionStatus, TaskStatus
from memlab.stores.sql import SqlStore
from memlab.taskforce.react import ANSWER_SYSTEM, TaskforceAgent
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.tools import CalculatorTool, Toolbox


class Killed(BaseException):
    """Stands in for kill -9: nothing in memlab catches it, so nothing is cleaned up."""


class CountingCalculator(CalculatorTool):
    """The calculator, recording every expression it really evaluates; dies on cue."""

    def __init__(self, log: list[str], die_on: str | None = None):
        self.log, self.die_on = log, die_on

    def _run(self, expression: str):
        if expression == self.die_on:
            self.die_on = None
            raise Killed
        self.log.append(expression)
        return super()._run(expression)


def open_repo(path):
    return TaskforceRepository(SqlStore(path=path / "taskforce.sqlite"), TopicEmbedder())


def agent_with(repo, tmp_path, log, die_on=None, llm=None):
    box = Toolbox.default(tmp_path / "ws")
    box.tools["calculator"] = CountingCalculator(log, die_on)
    return TaskforceAgent(llm or FakeLLM([Script()]), repo, box)


def only_session(repo):
    (session,) = repo.store.list_sessions()
    return session


def test_killed_while_acting_resumes_the_same_plan_and_runs_each_step_once(tmp_path):
    log: list[str] = []
    repo = open_repo(tmp_path)
    with pytest.raises(Killed):
        agent_with(repo, tmp_path, log, die_on="36 + 6").run(MISSION)
    session = only_session(repo)
    state = repo.latest_state(session.session_id).state_json
    assert session.status is SessionStatus.IN_PROGRESS
    assert state["inflight"]["arguments"] == {"expression": "36 + 6"}  # saved before acting
    plan_before = state["todolist_id"]
    repo.close()

    repo = open_repo(tmp_path)  # a new process: nothing survives but the database
    llm = FakeLLM([Script()])
    result = agent_with(repo, tmp_path, log, llm=llm).resume(session.session_id)
    assert result.succeeded, result.error
    assert result.answers == {0: "36", 1: "42", 2: "6.0", 3: "The answer is 6.0."}
    assert log == ["12 * 3", "36 + 6", "42 / 7"]  # every expression evaluated exactly once
    history = repo.history(session.session_id)
    assert [h.step_id for h in history] == list(range(7))  # no step recorded twice
    assert result.todolist.todolist_id == plan_before and len(repo.store.list_todolists(
        session.session_id)) == 1
    # the decision of item 2, the mission's answer and the lessons: no re-plan, no repeat
    assert llm.calls == 1 + 1 + 1
    versions = [s.version for s in repo.states(session.session_id)]
    assert versions == list(range(1, len(versions) + 1))


def test_killed_while_the_model_decides_redecides_that_step(tmp_path):
    log: list[str] = []
    repo = open_repo(tmp_path)
    script, calls = Script(), {"n": 0}

    def dies_on_the_second_step_call(messages):
        if messages[0].content.startswith("You are a ReAct"):
            calls["n"] += 1
            if calls["n"] == 2:
                raise Killed
        return script(messages)

    with pytest.raises(Killed):
        agent_with(repo, tmp_path, log, llm=FakeLLM([dies_on_the_second_step_call])).run(MISSION)
    session = only_session(repo)
    assert repo.latest_state(session.session_id).state_json["inflight"] is None
    result = agent_with(repo, tmp_path, log).resume(session.session_id)
    assert result.succeeded and log == ["12 * 3", "36 + 6", "42 / 7"]
    assert [h.step_id for h in repo.history(session.session_id)] == list(range(7))


def test_killed_while_writing_the_missions_answer_resumes_with_only_the_answer(tmp_path):
    log: list[str] = []
    repo = open_repo(tmp_path)
    script = Script()

    def dies_writing_the_answer(messages):
        if messages[0].content == ANSWER_SYSTEM:
            raise Killed
        return script(messages)

    with pytest.raises(Killed):
        agent_with(repo, tmp_path, log, llm=FakeLLM([dies_writing_the_answer])).run(MISSION)
    session = only_session(repo)
    state = repo.latest_state(session.session_id).state_json
    assert "2" in state["answers"] and "3" not in state["answers"]
    llm = FakeLLM([Script()])
    result = agent_with(repo, tmp_path, log, llm=llm).resume(session.session_id)
    assert result.succeeded and result.final_answer == "The answer is 6.0."
    assert log == ["12 * 3", "36 + 6", "42 / 7"] and llm.calls == 1 + 1  # answer, lessons
    assert [h.action for h in repo.history(session.session_id)][-1] == "complete"


def test_killed_before_planning_resumes_by_planning(tmp_path):
    repo = open_repo(tmp_path)
    session = repo.start_session(MISSION)  # a run that died right after creating its session
    log: list[str] = []
    result = agent_with(repo, tmp_path, log).resume(session.session_id)
    assert result.succeeded and log == ["12 * 3", "36 + 6", "42 / 7"]


def test_a_finished_or_unknown_session_does_not_resume(tmp_path):
    repo = open_repo(tmp_path)
    done = agent_with(repo, tmp_path, []).run(MISSION)
    with pytest.raises(ConfigError, match="session_id: session .* is completed"):
        agent_with(repo, tmp_path, []).resume(done.session.session_id)
    with pytest.raises(ConfigError, match="session_id: no session 'nope'"):
        agent_with(repo, tmp_path, []).resume("nope")


@pytest.mark.parametrize("path, target", [
    (["in_progress", "completed"], "pending"), (["in_progress", "completed"], "in_progress"),
    (["failed"], "in_progress"), ([], "completed"), (["in_progress"], "pending"),
])
def test_session_status_moves_only_along_the_seed_lifecycle(path, target):
    session = Session(mission="m", status="pending")
    for status in path:
        session.status = status
    with pytest.raises(IllegalStatusTransition, match=f"status: illegal transition .* -> {target}"):
        session.status = target


def test_a_task_never_leaves_completed():
    from memlab.models.taskforce import TodoItem

    item = TodoItem(position=0, description="d", acceptance_criteria=["c"])
    item.transition_to(TaskStatus.IN_PROGRESS).transition_to(TaskStatus.COMPLETED)
    with pytest.raises(IllegalStatusTransition, match="completed -> pending"):
        item.status = TaskStatus.PENDING


def test_profile_is_dev_staging_or_prod(tmp_path):
    repo = open_repo(tmp_path)
    assert repo.start_session("m", profile="staging").profile == "staging"
    with pytest.raises(ValidationError, match="profile"):
        repo.start_session("m", profile="production-ish")
    with pytest.raises(ValidationError, match="mission"):
        repo.start_session("   ")
