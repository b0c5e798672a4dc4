"""The Taskforce ReAct agent end to end on a scripted FakeLLM and a real SQLite store."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from pydantic import ValidationError

from memlab.embed.base import Embedder, normalise
from memlab.errors import VersionConflictError
from memlab.llm.fake import FakeLLM
from memlab.models.taskforce import (
    Action,
    Observation,
    PlanStatus,
    SessionStatus,
    TaskStatus,
    Thought,
    TodoItem,
    TodoList,
)
from memlab.stores.sql import SqlStore
from memlab.taskforce.lessons import EXTRACT_SYSTEM, LessonDraft
from memlab.taskforce.planner import PLANNER_SYSTEM, Planner, execution_order
from memlab.taskforce.react import ANSWER_SYSTEM, CHECK_SYSTEM, REACT_SYSTEM, TaskforceAgent
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.session import ANSWER_STEP
from memlab.taskforce.tools import Toolbox

MISSION = "Compute 12 * 3, add 6 to it, then divide the sum by 7."
PLAN = {"items": [
    {"position": 0, "description": "Multiply 12 by 3", "acceptance_criteria": ["a number"]},
    {"position": 1, "description": "Add 6 to the product", "acceptance_criteria": ["a number"],
     "dependencies": [0]},
    {"position": 2, "description": "Divide the sum by 7", "acceptance_criteria": ["a number"],
     "dependencies": [1]},
]}
LESSON_TEXT = "Chain calculator calls, feeding each result into the next expression."
LESSONS = {"lessons": [{
    "context": "Multi-step arithmetic missions: compute, add, divide.",
    "what_worked": "One calculator call per step", "lesson": LESSON_TEXT,
    "confidence": 0.9, "tool_name": "calculator"}]}


RESULT = r"step \d+ \(.*\):\n(.+)"  # one result in an answer or step prompt


class Script:
    """Routes on the system prompt; computes each step's expression from its dependencies."""

    def __init__(self, plan=PLAN, bad_plan_first=False, verdicts=()):
        self.plan, self.bad_plan_first = plan, bad_plan_first
        self.verdicts, self.checks = list(verdicts), []
        self.planner_prompts: list[str] = []
        self.step_prompts: list[str] = []
        self.answer_prompts: list[str] = []

    def __call__(self, messages):
        system, user = messages[0].content, messages[1].content
        if system == PLANNER_SYSTEM:
            self.planner_prompts.append(user)
            if self.bad_plan_first and len(messages) == 2:
                cyclic = json.loads(json.dumps(self.plan))
                cyclic["items"][0]["dependencies"] = [2]
                return json.dumps(cyclic)
            return json.dumps(self.plan)
        if system == EXTRACT_SYSTEM:
            return json.dumps(LESSONS)
        if system == CHECK_SYSTEM:
            self.checks.append(user)
            return self.verdicts.pop(0) if self.verdicts else "yes"
        if system == ANSWER_SYSTEM:  # the last result is the answer
            self.answer_prompts.append(user)
            return f"The answer is {re.findall(RESULT, user)[-1]}."
        assert system == REACT_SYSTEM
        self.step_prompts.append(user)
        return json.dumps(self.step(user))

    @staticmethod
    def step(prompt):
        position = int(re.search(r"Current step: (\d+)", prompt).group(1))
        seen = re.findall(r"-> (.+)", prompt.split("Observations so far:")[1])
        if seen:
            return {"thought": "The tool answered; the criteria are met.", "tool": "finish",
                    "arguments": {"answer": seen[-1]}}
        deps = re.search(r"Results this step works with:\nstep \d+ \(.*\):\n([\d.]+)",
                         prompt)
        expression = {0: "12 * 3", 1: f"{deps and deps.group(1)} + 6",
                      2: f"{deps and deps.group(1)} / 7"}[position]
        return {"thought": f"I will compute {expression}.", "tool": "calculator",
                "arguments": {"expression": expression}}


class TopicEmbedder(Embedder):
    """Unit tests only: one axis per topic word family, so similarity is by meaning, not by
    shared filler words ("a", "the", "and")."""

    name, dim = "topics", 3
    TOPICS = (("compute", "add", "divide", "multiply", "sum", "arithmetic", "calculator"),
              ("poem", "haiku", "write", "story"), ("robot", "humanoid", "balance"))

    def embed(self, texts):
        rows = [[sum(text.lower().count(w) for w in words) + 1e-3 for words in self.TOPICS]
                for text in texts]
        return normalise(np.array(rows, dtype=np.float32))


@pytest.fixture
def repo(tmp_path):
    repository = TaskforceRepository(SqlStore(path=tmp_path / "taskforce.sqlite"),
                                     TopicEmbedder(), min_similarity=0.8)
    yield repository
    repository.close()


def make_agent(repo, tmp_path, script):
    return TaskforceAgent(FakeLLM([script]), repo, Toolbox.default(tmp_path / "sandbox"))


def test_mission_planned_into_three_dependent_items_and_executed(repo, tmp_path):
    script = Script()
    events = []
    result = make_agent(repo, tmp_path, script).run(MISSION, on_event=events.append)
    assert result.succeeded, result.error
    assert result.answers == {0: "36", 1: "42", 2: "6.0", 3: "The answer is 6.0."}
    assert result.final_answer == "The answer is 6.0."  # the answer item's result
    plan = repo.get_plan(result.todolist.todolist_id)
    assert plan.status is PlanStatus.COMPLETED
    assert [i.dependencies for i in plan.items] == [[], [0], [1], [0, 1, 2]]
    assert all(i.status is TaskStatus.COMPLETED and i.chosen_tool == "calculator"
               for i in plan.items[:3])
    assert plan.items[3].description == ANSWER_STEP and plan.items[3].chosen_tool == "finish"
    assert plan.items[2].execution_result.output == 6.0
    assert repo.get_session(result.session.session_id).status is SessionStatus.COMPLETED
    assert events == result.events


def test_events_stream_in_thought_action_observation_order(repo, tmp_path):
    agent = make_agent(repo, tmp_path, Script())
    stream = agent.stream(MISSION)
    events = list(stream)
    kinds = [type(e) for e in events]
    assert kinds == [Thought, Action, Observation] * 7
    assert [e.step_id for e in events] == [s for s in range(7) for _ in range(3)]
    assert [e.action_type.value for e in events[1::3]] == ["tool_call", "complete"] * 3 + [
        "complete"]  # the mission's answer
    first = events[2]
    assert first.success and first.result == 36
    with pytest.raises(ValidationError, match="frozen"):  # immutable domain events
        first.result = 0


def test_state_versions_increase_and_history_rows_recorded(repo, tmp_path):
    result = make_agent(repo, tmp_path, Script()).run(MISSION)
    session_id = result.session.session_id
    versions = [s.version for s in repo.states(session_id)]
    # in progress, planned, 2 per step (decision saved before acting, step committed), done
    assert versions == list(range(1, len(versions) + 1)) and len(versions) == 2 + 2 * 7 + 1
    last = repo.latest_state(session_id).state_json
    assert last["status"] == "completed" and last["answers"] == {"0": "36", "1": "42",
                                                                 "2": "6.0",
                                                                 "3": "The answer is 6.0."}
    assert last["inflight"] is None
    history = repo.history(session_id)
    assert [h.step_id for h in history] == list(range(7))
    assert [h.action for h in history] == ["calculator", "complete"] * 3 + ["complete"]
    assert history[0].observation == "36" and history[0].thought.startswith("I will compute")


def test_stale_state_write_raises_and_changes_nothing(repo, tmp_path):
    result = make_agent(repo, tmp_path, Script()).run(MISSION)
    session_id = result.session.session_id
    before = repo.latest_state(session_id)
    with pytest.raises(VersionConflictError, match="stale"):
        repo.commit_state(session_id, {"mission": "overwritten"}, base_version=3)
    after = repo.latest_state(session_id)
    assert after.version == before.version and after.state_json == before.state_json


def test_concurrent_writer_makes_the_session_fail_with_the_conflict_recorded(repo, tmp_path):
    agent = make_agent(repo, tmp_path, Script())

    def intruder(event):
        if isinstance(event, Observation) and event.step_id == 0:
            latest = repo.latest_state(event.session_id)
            repo.commit_state(event.session_id, {"by": "another writer"}, latest.version)

    result = agent.run(MISSION, on_event=intruder)
    assert result.session.status is SessionStatus.FAILED
    assert "VersionConflictError" in result.error
    states = repo.states(result.session.session_id)
    assert states[-2].state_json == {"by": "another writer"}  # the other write survived
    assert states[-1].state_json["error"] == result.error


def test_lesson_from_session_one_appears_in_session_two_prompts(repo, tmp_path):
    first = make_agent(repo, tmp_path, Script()).run(MISSION)
    assert [lesson.lesson for lesson in first.lessons_learned] == [LESSON_TEXT]
    assert not first.lessons_used
    assert LESSON_TEXT not in "".join(Script().planner_prompts)
    script = Script()
    second = make_agent(repo, tmp_path, script).run("Compute 5 * 5 and then add 6, divide by 7")
    assert [lesson.lesson for lesson in second.lessons_used] == [LESSON_TEXT]
    assert LESSON_TEXT in script.planner_prompts[0]
    assert all(LESSON_TEXT in prompt for prompt in script.step_prompts)
    # the takeaway and its tool, not what worked (the earlier mission's own values: the 1.5B
    # planned later lookups as the earlier one's search)
    assert f"- {LESSON_TEXT} (tool: calculator)" in script.planner_prompts[0]
    assert "One calculator call per step" not in script.planner_prompts[0] + "".join(
        script.step_prompts)


def test_a_lesson_confidence_written_as_a_percentage_is_kept_as_a_fraction(repo, tmp_path):
    # the 0.5B wrote confidences like 90: every lesson of a successful session was lost
    script = Script()
    draft = dict(LESSONS["lessons"][0], confidence=90)
    llm = FakeLLM([lambda m: json.dumps({"lessons": [draft]})
                   if m[0].content == EXTRACT_SYSTEM else script(m)])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path / "sandbox")).run(MISSION)
    assert [lesson.confidence for lesson in result.lessons_learned] == [0.9]
    with pytest.raises(ValidationError, match="confidence"):
        LessonDraft.model_validate(dict(draft, confidence=900))


def test_lessons_are_scoped_per_user(repo, tmp_path):
    first = make_agent(repo, tmp_path, Script()).run(MISSION, user_id="alice")
    assert [lesson.lesson for lesson in first.lessons_learned] == [LESSON_TEXT]
    script = Script()
    other = make_agent(repo, tmp_path, script).run(MISSION, user_id="bob")
    assert not other.lessons_used
    assert LESSON_TEXT not in "".join(script.planner_prompts + script.step_prompts)
    assert not make_agent(repo, tmp_path, Script()).run(MISSION).lessons_used  # no user
    again = make_agent(repo, tmp_path, Script()).run(MISSION, user_id="alice")
    assert [lesson.lesson for lesson in again.lessons_used] == [LESSON_TEXT]
    alices = repo.lessons_for(MISSION, user_id="alice")
    assert [x.lesson for x in alices] == [LESSON_TEXT] * 2  # one per successful session
    assert not {x.memory_id for x in alices} & {
        x.memory_id for x in repo.lessons_for(MISSION, user_id="bob")}
    assert not repo.lessons_for(MISSION, user_id="carol")


def test_an_unrelated_mission_gets_no_lesson_though_it_shares_filler_words(repo, tmp_path):
    make_agent(repo, tmp_path, Script()).run(MISSION, user_id="alice")
    unrelated = "Write a haiku about the sea and a poem about the rain."
    assert not repo.lessons_for(unrelated, user_id="alice")
    assert [x.lesson for x in repo.lessons_for("Multiply 4 by 4 and add 1",
                                               user_id="alice")] == [LESSON_TEXT]


def test_cyclic_plan_is_re_asked_with_the_error(repo, tmp_path):
    script = Script(bad_plan_first=True)
    llm = FakeLLM([script])
    plan = Planner(llm).plan("s", MISSION)
    assert execution_order(plan) == [0, 1, 2]
    assert llm.calls == 2
    assert "cycle" in llm.history[1][-1].content


def test_execution_order_is_topological_not_positional():
    items = [TodoItem(position=0, description="last", acceptance_criteria=["x"],
                      dependencies=[1, 2]),
             TodoItem(position=1, description="middle", acceptance_criteria=["x"],
                      dependencies=[3]),
             TodoItem(position=2, description="free", acceptance_criteria=["x"]),
             TodoItem(position=3, description="first", acceptance_criteria=["x"])]
    order = execution_order(TodoList(session_id="s", mission="m", items=items))
    assert order == [2, 3, 1, 0]
    for item in items:
        assert all(order.index(d) < order.index(item.position) for d in item.dependencies)


def test_failing_tool_is_observed_and_the_agent_recovers(repo, tmp_path):
    class Flaky(Script):
        def step(self, prompt):
            if "Current step: 0" in prompt and "Observations so far:\nnone" in prompt:
                return {"thought": "Divide first.", "tool": "calculator",
                        "arguments": {"expression": "12 / 0"}}
            seen = prompt.split("Observations so far:")[1]
            if "Current step: 0" in prompt and seen.count("-> error:") == 1 \
                    and seen.count(" -> ") == 1:
                return {"thought": "Use the calculator.", "tool": "calculator",
                        "arguments": {"expression": "12 * 3"}}
            return Script.step(prompt)

    result = make_agent(repo, tmp_path, Flaky()).run(MISSION)
    assert result.succeeded and result.answers[0] == "36"
    failed = [e for e in result.events if isinstance(e, Observation) and not e.success]
    assert len(failed) == 1 and "ZeroDivisionError" in failed[0].error


def test_a_tool_name_off_the_schema_is_re_asked_with_the_error(repo, tmp_path):
    script = Script()
    wrong = {"left": 1}

    def reply(messages):
        if messages[0].content == REACT_SYSTEM and wrong["left"]:
            wrong["left"] -= 1
            return json.dumps({"thought": "x", "tool": "calculator(expression: 12 * 3)",
                               "arguments": {}})
        return script(messages)

    llm = FakeLLM([reply])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path)).run(MISSION)
    assert result.succeeded and result.reasks == 1
    quoted = [m.content for call in llm.history for m in call if "not valid" in m.content]
    assert quoted and "does not match any of the expected tags" in quoted[0]


def test_garbage_from_the_model_fails_the_session_cleanly(repo, tmp_path):
    def reply(messages):
        if messages[0].content == PLANNER_SYSTEM:
            return json.dumps(PLAN)
        return "I refuse to answer in JSON."

    result = TaskforceAgent(FakeLLM([reply]), repo, Toolbox.default(tmp_path)).run(MISSION)
    assert result.reasks == 0  # the session failed on its first step's three attempts
    assert result.session.status is SessionStatus.FAILED
    assert "StructuredOutputError" in result.error
    plan = repo.get_plan(result.todolist.todolist_id)
    assert [i.status for i in plan.items] == [TaskStatus.FAILED, TaskStatus.SKIPPED,
                                              TaskStatus.SKIPPED, TaskStatus.SKIPPED]
    assert not repo.lessons_for(MISSION)


def test_a_successful_call_finishes_its_item_without_asking_the_model(repo, tmp_path):
    script = Script()
    llm = FakeLLM([script])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path)).run(MISSION)
    assert result.succeeded and not script.checks and len(script.step_prompts) == 3
    assert len(script.answer_prompts) == 1
    assert llm.calls == 1 + 3 + 1 + 1  # plan, one decision per item, the answer, lessons
    finishes = [e for e in result.events if getattr(e, "action_type", None) == "complete"]
    assert [f.action_data["arguments"]["answer"] for f in finishes] == [
        36, 42, 6.0, "The answer is 6.0."]


def test_after_a_successful_call_the_model_judges_the_step_and_may_not_repeat_the_call(
        repo, tmp_path):
    script = Script(verdicts=["no"])  # item 0: the first result is judged not enough
    llm = FakeLLM([script])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path), check_results=True).run(MISSION)
    assert result.succeeded
    assert "Last result: 36" in script.checks[0] and "Acceptance criteria: a number" in \
        script.checks[0]
    assert [p["choices"] for p in llm.params if p["choices"]][0] == ["yes", "no"]
    guarded = script.step_prompts[1]  # the step after "no": calculator is not offered
    assert "calculator(" not in guarded and "finish(" in guarded
    schema = json.dumps(llm.params[len(script.planner_prompts) + 2]["json_schema"])
    assert '"const": "calculator"' not in schema and '"const": "finish"' in schema
    assert result.answers[0] == "36"  # the script finished with the observed result


def test_the_plan_names_each_steps_tool_and_its_first_step_is_held_to_it(repo, tmp_path):
    plan = json.loads(json.dumps(PLAN))
    for item in plan["items"]:
        item["tool"] = "calculator"
    script = Script(plan=plan)
    llm = FakeLLM([script])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path)).run(MISSION)
    assert result.succeeded
    planning = json.dumps(llm.params[0]["json_schema"])
    assert '"enum": ["calculator", "python", "file_read", "file_write", "text_search"]' in planning
    first_step = script.step_prompts[0]
    assert "calculator(" in first_step and "python(" not in first_step
    assert "finish(" in first_step and "ask_user(" not in first_step
    schema = json.dumps(llm.params[1]["json_schema"])
    assert '"const": "python"' not in schema and '"const": "calculator"' in schema


def test_a_failed_step_makes_one_new_plan_told_why(repo, tmp_path):
    one_step = {"items": [{"position": 0, "description": "Multiply 12 by 3",
                           "acceptance_criteria": ["a number"]}]}

    class Stubborn(Script):
        def __call__(self, messages):
            if messages[0].content == PLANNER_SYSTEM and "failed" in messages[1].content:
                self.planner_prompts.append(messages[1].content)
                return json.dumps(one_step)
            return super().__call__(messages)

        def step(self, prompt):
            if "Divide" in prompt.split("Current step:")[1].split("\n")[0] or len(
                    self.planner_prompts) == 1:
                return {"thought": "Divide.", "tool": "calculator",
                        "arguments": {"expression": "1 / 0"}}
            return Script.step(prompt)

    script = Stubborn()
    result = TaskforceAgent(FakeLLM([script]), repo, Toolbox.default(tmp_path)).run(MISSION)
    assert result.succeeded and result.answers == {0: "36", 1: "The answer is 36."}
    assert "step 0 (Multiply 12 by 3) failed: no result after 4 steps" in \
        script.planner_prompts[1]
    plans = repo.store.list_todolists(result.session.session_id)
    assert [p.status.value for p in plans] == ["abandoned", "completed"]
    assert repo.latest_state(result.session.session_id).state_json["replans"] == 1
