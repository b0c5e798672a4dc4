"""The Taskforce ReAct agent (seed 004): plan, then Thought -> Action -> Observation per item.

A session plans the mission into a TodoList, runs its items in dependency order, and for each
item loops: the LLM thinks and picks an action (a tool call, asking the user, completing the
item, or replanning); a tool call's result is the observation. Every Thought, Action and
Observation is a frozen domain event, streamed as progress. After every step the session state
is saved as the next State version (optimistic locking) and the step goes into the execution
history. A successful session leaves lessons for later sessions, which see them in their prompts.

Example:
    >>> agent = TaskforceAgent(llm, repo, Toolbox.default("sandbox"))  # doctest: +SKIP
    >>> for event in agent.stream("Compute 12 * 3, then add 6"):  # doctest: +SKIP
    ...     print(type(event).__name__, event.step_id)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any

from pydantic import BaseModel, Field, model_validator

from memlab.errors import MemlabError
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json
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
    TaskStatus,
    Thought,
    TodoList,
)
from memlab.taskforce.lessons import extract_lessons
from memlab.taskforce.planner import Planner, execution_order, render_lessons
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.tools import Toolbox

log = logging.getLogger(__name__)

Event = Thought | Action | Observation
AskUser = Callable[[str], str]
OBSERVATION_CHARS = 500

REACT_SYSTEM = (
    "You are a ReAct task agent. Work on the current step only. Think, then choose one action: "
    "'tool_call' (give tool and arguments), 'complete' (the acceptance criteria are met; give "
    "the step's result), 'ask_user' (give the question in result) or 'replan'.")


class StepDecision(BaseModel):
    """The LLM's Thought and Action for one ReAct step."""

    thought: str = Field(min_length=1)
    action: ActionType
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = Field(None, description="the step's result (complete) or question")

    @model_validator(mode="after")
    def _tool_named(self) -> StepDecision:
        if self.action is ActionType.TOOL_CALL and not self.tool:
            raise ValueError("tool: a tool_call must name the tool")
        return self


class SessionResult(BaseModel):
    """How a session ended."""

    session: Session
    todolist: TodoList | None = None
    answers: dict[int, Any] = Field(default_factory=dict, description="result per position")
    events: list[Thought | Action | Observation] = Field(default_factory=list)
    lessons_used: list[Lesson] = Field(default_factory=list)
    lessons_learned: list[Lesson] = Field(default_factory=list)
    error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.session.status is SessionStatus.COMPLETED


class TaskforceAgent:
    """Runs missions as ReAct sessions.

    Args:
        llm: the model behind the planner, the steps and lesson extraction.
        repository: persistence (sessions, states, plans, history, lessons).
        toolbox: the tools the agent may call.
        max_steps_per_item: ReAct steps before an item counts as failed.
        max_replans: how often the agent may replace its plan in one session.
        ask_user: answers ``ask_user`` actions; without it they observe a failure.
    """

    def __init__(self, llm: LLMClient, repository: TaskforceRepository, toolbox: Toolbox, *,
                 max_steps_per_item: int = 4, max_replans: int = 1,
                 ask_user: AskUser | None = None, max_tokens: int = 384):
        self.llm, self.repo, self.toolbox = llm, repository, toolbox
        self.planner = Planner(llm)
        self.max_steps_per_item, self.max_replans = max_steps_per_item, max_replans
        self.ask_user, self.max_tokens = ask_user, max_tokens

    def run(self, mission: str, *, user_id: str | None = None,
            on_event: Callable[[Event], None] | None = None) -> SessionResult:
        """Run one session to the end; ``on_event`` gets every event as it happens."""
        stream = self.stream(mission, user_id=user_id)
        while True:
            try:
                event = next(stream)
            except StopIteration as stop:
                return stop.value
            if on_event is not None:
                on_event(event)

    def stream(self, mission: str, *, user_id: str | None = None
               ) -> Generator[Event, None, SessionResult]:
        """Yield the session's events; the generator returns the SessionResult."""
        run = _SessionRun(self, self.repo.start_session(mission, user_id=user_id))
        try:
            yield from run.execute()
        except MemlabError as exc:  # recorded as the session's failure, never lost
            log.warning("session %s failed: %s", run.session.session_id, exc)
            run.fail(f"{type(exc).__name__}: {exc}")
        return run.result()


class _SessionRun:
    """The mutable bookkeeping of one session (kept off the agent so sessions never mix)."""

    def __init__(self, agent: TaskforceAgent, session: Session):
        self.agent, self.session = agent, session
        self.repo = agent.repo
        self.version = 0
        self.step_id = 0
        self.replans = 0
        self.todolist: TodoList | None = None
        self.answers: dict[int, Any] = {}
        self.events: list[Event] = []
        self.pending_question: str | None = None
        self.current: int | None = None
        self.error: str | None = None
        self.lessons = self.repo.lessons_for(session.mission, user_id=session.user_id,
                                             tool_names=agent.toolbox.names())
        self.learned: list[Lesson] = []

    # --- the session ---------------------------------------------------------------------------
    def execute(self) -> Generator[Event, None, None]:
        self.save_state()
        self.plan()
        while True:
            order = [p for p in execution_order(self.todolist)
                     if self.todolist.item(p).status is TaskStatus.PENDING]
            if not order:
                break
            outcome = yield from self.run_item(order[0])
            if outcome == "replan":
                continue
            if outcome != "completed":
                return self.fail(f"item {order[0]} failed: {outcome}")
        self.succeed()

    def plan(self, progress: str = "") -> None:
        mission = self.session.mission + (f"\nProgress so far: {progress}" if progress else "")
        self.todolist = self.agent.planner.plan(
            self.session.session_id, mission, tools=self.agent.toolbox.describe(),
            lessons=self.lessons)
        self.todolist.mission = self.session.mission
        self.repo.save_plan(self.todolist)
        self.save_state()

    def run_item(self, position: int) -> Generator[Event, None, str]:
        item = self.todolist.item(position)
        item.status, self.current = TaskStatus.IN_PROGRESS, position
        scratch: list[str] = []
        for _ in range(self.agent.max_steps_per_item):
            decision = self.decide(position, scratch)
            yield self.emit(Thought(session_id=self.session.session_id, step_id=self.step_id,
                                    content=decision.thought))
            yield self.emit(Action(session_id=self.session.session_id, step_id=self.step_id,
                                   action_type=decision.action,
                                   action_data=decision.model_dump(exclude={"thought", "action"})))
            outcome, observation = self.act(decision, position)
            yield self.emit(observation)
            scratch.append(f"{decision.action.value} {decision.tool or ''} "
                           f"{decision.arguments or decision.result or ''} -> "
                           f"{_observed(observation)}")
            self.record(decision, observation)
            if outcome:
                return outcome
        item.status = TaskStatus.FAILED
        return f"no result after {self.agent.max_steps_per_item} steps"

    def act(self, decision: StepDecision, position: int) -> tuple[str | None, Observation]:
        """Carry out the action; returns (outcome or None to keep going, observation)."""
        item = self.todolist.item(position)
        kind = decision.action
        if kind is ActionType.TOOL_CALL:
            result = self.call_tool(decision)
            item.chosen_tool, item.execution_result = decision.tool, result
            return None, self.observation(result.output, result.success, result.error)
        if kind is ActionType.COMPLETE:
            last = item.execution_result
            self.answers[position] = decision.result if decision.result is not None else (
                last.output if last else None)
            item.status = TaskStatus.COMPLETED
            return "completed", self.observation(self.answers[position], True)
        if kind is ActionType.ASK_USER:
            return None, self.ask(decision.result or decision.thought)
        if self.replans >= self.agent.max_replans:
            return None, self.observation(None, False, "replan limit reached; finish this step")
        self.replans += 1
        self.todolist.status = PlanStatus.ABANDONED
        self.repo.save_plan(self.todolist)
        self.plan(progress=f"results so far {self.answers}")
        return "replan", self.observation("new plan made", True)

    def call_tool(self, decision: StepDecision) -> ExecutionResult:
        try:
            tool = self.agent.toolbox.get(decision.tool or "")
        except MemlabError as exc:
            return ExecutionResult(success=False, error=str(exc))
        return tool.run(decision.arguments)

    def ask(self, question: str) -> Observation:
        self.pending_question = question
        if self.agent.ask_user is None:
            return self.observation(None, False, "no user is available; decide without asking")
        answer = self.agent.ask_user(question)
        self.pending_question = None
        return self.observation(answer, True)

    # --- prompts -------------------------------------------------------------------------------
    def decide(self, position: int, scratch: list[str]) -> StepDecision:
        return complete_json(self.agent.llm, self.step_messages(position, scratch), StepDecision,
                             max_tokens=self.agent.max_tokens)

    def step_messages(self, position: int, scratch: list[str]) -> list[Message]:
        item = self.todolist.item(position)
        plan = "\n".join(f"{i.position}. {i.description} [{i.status.value}]"
                         for i in self.todolist.items)
        deps = {d: self.answers.get(d) for d in item.dependencies}
        parts = [f"Mission: {self.session.mission}", render_lessons(self.lessons),
                 f"Plan:\n{plan}",
                 f"Current step: {position}. {item.description}\nAcceptance criteria: "
                 + "; ".join(item.acceptance_criteria),
                 f"Results of dependencies: {deps}" if deps else "",
                 f"Tools:\n{self.agent.toolbox.describe()}",
                 "Observations so far:\n" + ("\n".join(scratch) if scratch else "none")]
        return [Message(role="system", content=REACT_SYSTEM),
                Message(role="user", content="\n\n".join(p for p in parts if p))]

    # --- events, history, states ---------------------------------------------------------------
    def observation(self, result: Any, success: bool, error: str | None = None) -> Observation:
        return Observation(session_id=self.session.session_id, step_id=self.step_id,
                           result=result, success=success, error=error)

    def emit(self, event: Event) -> Event:
        self.events.append(event)
        return event

    def record(self, decision: StepDecision, observation: Observation) -> None:
        action = decision.tool if decision.action is ActionType.TOOL_CALL else decision.action.value
        self.repo.record_step(ExecutionHistory(
            session_id=self.session.session_id, step_id=self.step_id, thought=decision.thought,
            action=action, observation=_observed(observation)))
        self.step_id += 1
        self.repo.save_plan(self.todolist)
        self.save_state()

    def save_state(self) -> None:
        """Commit the next State version; a stale base version raises VersionConflictError."""
        state = self.repo.commit_state(self.session.session_id, self.state_json(), self.version)
        self.version = state.version

    def state_json(self) -> dict[str, Any]:
        return {"mission": self.session.mission, "status": self.session.status.value,
                "answers": {str(k): _jsonable(v) for k, v in self.answers.items()},
                "pending_question": self.pending_question,
                "todolist_id": self.todolist.todolist_id if self.todolist else None,
                "current_step": self.current, "step_id": self.step_id, "error": self.error}

    # --- endings -------------------------------------------------------------------------------
    def succeed(self) -> None:
        self.todolist.status = PlanStatus.COMPLETED
        self.repo.save_plan(self.todolist)
        self.session = self.repo.finish_session(self.session, SessionStatus.COMPLETED)
        self.current = None
        self.save_state()
        history = self.repo.history(self.session.session_id)
        try:
            self.learned = extract_lessons(self.agent.llm, self.todolist, history)
        except MemlabError as exc:  # the mission succeeded; a lesson we cannot parse is lost
            log.warning("no lessons from session %s: %s", self.session.session_id, exc)
        for lesson in self.learned:
            self.repo.add_lesson(lesson, user_id=self.session.user_id)

    def fail(self, error: str) -> None:
        self.error = error
        if self.todolist is not None:
            for item in self.todolist.items:
                if item.status in (TaskStatus.PENDING, TaskStatus.IN_PROGRESS):
                    item.status = TaskStatus.SKIPPED if item.position != self.current \
                        else TaskStatus.FAILED
            self.repo.save_plan(self.todolist)
        self.session = self.repo.finish_session(self.session, SessionStatus.FAILED)
        latest = self.repo.latest_state(self.session.session_id)
        self.version = latest.version if latest else 0  # record the failure on top of any writer
        self.save_state()

    def result(self) -> SessionResult:
        return SessionResult(session=self.session, todolist=self.todolist, answers=self.answers,
                             events=self.events, lessons_used=self.lessons,
                             lessons_learned=self.learned, error=self.error)


def _observed(observation: Observation) -> str:
    text = str(observation.result) if observation.success else f"error: {observation.error}"
    return text[:OBSERVATION_CHARS]


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)
