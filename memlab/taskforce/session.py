"""One Taskforce session's bookkeeping: its plan, steps, State snapshots, and resuming them.

Each ReAct step is made durable in two writes. Before the action runs, the decision is saved in
the next State as ``inflight`` (write-ahead); after it, the ExecutionHistory row, the plan and
the next State (``inflight`` cleared) are committed in one transaction. A session killed at any
point resumes from its latest State: the same plan, the steps already recorded never run
again, and a decision left ``inflight`` is carried out from the State (no new model call).
Only a crash between an action and its commit can repeat that one action; every tool but
``ask_user`` is idempotent (the same arguments leave the same state), and ``ask_user`` asks
again.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any, Protocol

from memlab.errors import MemlabError
from memlab.llm.base import LLMClient
from memlab.models.taskforce import (
    Action,
    ActionType,
    ExecutionHistory,
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
from memlab.taskforce.lessons import extract_lessons
from memlab.taskforce.planner import Planner, execution_order
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.steps import StepDecision
from memlab.taskforce.tools import Toolbox

log = logging.getLogger(__name__)

Event = Thought | Action | Observation
OBSERVATION_CHARS = 500
ANSWER_STEP = ("Answer the mission: the value or text it asks for, taken from the results "
               "of the steps")
ANSWER_CRITERION = "the mission is done and its answer is given"


class StepAgent(Protocol):
    """What a session asks of the agent running it (``react.TaskforceAgent``): its parts and
    limits, and the model's decision for each step."""

    llm: LLMClient
    repo: TaskforceRepository
    planner: Planner
    toolbox: Toolbox
    max_steps_per_item: int
    max_replans: int
    check_results: bool

    def decide(self, run: SessionRun, position: int) -> StepDecision:
        """The Thought and Action for item ``position``'s next step."""

    def compose_answer(self, run: SessionRun) -> StepDecision:
        """The answer item's step: the mission's answer, then finish."""

    def step_done(self, run: SessionRun, position: int, result: Any) -> bool:
        """Whether ``result`` completes item ``position``."""


class SessionRun:
    """The mutable bookkeeping of one session (kept off the agent so sessions never mix).

    Args:
        agent: the agent running the session (see ``StepAgent``).
        state: the latest State of a session to resume (None: a new session).
    """

    def __init__(self, agent: StepAgent, session: Session, state: State | None = None):
        self.agent, self.session, self.repo = agent, session, agent.repo
        saved: dict[str, Any] = state.state_json if state else {}
        self.version = state.version if state else 0
        self.step_id: int = saved.get("step_id", 0)
        self.replans: int = saved.get("replans", 0)
        self.answers = {int(k): v for k, v in (saved.get("answers") or {}).items()}
        self.pending_question: str | None = saved.get("pending_question")
        self.current: int | None = saved.get("current_step")
        self.item_steps: list[str] = list(saved.get("item_steps") or [])
        self.last_success: str | None = saved.get("last_success")
        self.inflight: dict[str, Any] | None = saved.get("inflight")
        self.error: str | None = None
        self.todolist: TodoList | None = (self.repo.get_plan(saved["todolist_id"])
                                          if saved.get("todolist_id") else None)
        self.events: list[Event] = []
        self.lessons = self.repo.lessons_for(session.mission, user_id=session.user_id)
        self.learned: list[Lesson] = []

    # --- the session ---------------------------------------------------------------------------
    def execute(self) -> Generator[Event, None, None]:
        if self.session.status is SessionStatus.PENDING:
            self.session = self.repo.finish_session(self.session, SessionStatus.IN_PROGRESS)
            self.save_state()
        if self.todolist is None:
            self.plan()
        if self.inflight is not None:  # decided before a crash, maybe not carried out
            item = self.todolist.item(self.current)
            if item.status is TaskStatus.PENDING:
                item.status = TaskStatus.IN_PROGRESS
            yield from self.carry_out(StepDecision.model_validate(self.inflight), self.current)
        while True:
            position = self.next_item()
            if position is None:
                break
            outcome = yield from self.run_item(position)
            if outcome in ("completed", "replan"):
                continue
            if self.replans >= self.agent.max_replans:
                return self.fail(f"item {position} failed: {outcome}")
            self.replace_plan(f"step {position} ({self.todolist.item(position).description}) "
                              f"failed: {outcome}; its last observation: "
                              f"{(self.item_steps or ['none'])[-1]}")
        self.succeed()

    def next_item(self) -> int | None:
        """The item in progress (after a resume), else the first pending one in DAG order."""
        if self.current is not None and \
                self.todolist.item(self.current).status is TaskStatus.IN_PROGRESS:
            return self.current
        order = [p for p in execution_order(self.todolist)
                 if self.todolist.item(p).status is TaskStatus.PENDING]
        return order[0] if order else None

    def plan(self, progress: str = "") -> None:
        mission = self.session.mission + (f"\nProgress so far: {progress}" if progress else "")
        toolbox = self.agent.toolbox
        self.todolist = self.agent.planner.plan(
            self.session.session_id, mission, lessons=self.lessons,
            tools=toolbox.describe(exclude=toolbox.names(ActionType.ASK_USER, ActionType.COMPLETE)),
            tool_names=toolbox.names(ActionType.TOOL_CALL, ActionType.REPLAN))
        self.todolist.mission = self.session.mission
        self.todolist.items.append(TodoItem(
            position=max(i.position for i in self.todolist.items) + 1,
            description=ANSWER_STEP, acceptance_criteria=[ANSWER_CRITERION],
            dependencies=[i.position for i in self.todolist.items],
            chosen_tool=toolbox.names(ActionType.COMPLETE)[0]))
        self.repo.save_plan(self.todolist)
        self.save_state()

    def run_item(self, position: int) -> Generator[Event, None, str]:
        item = self.todolist.item(position)
        if item.status is TaskStatus.PENDING:
            item.status = TaskStatus.IN_PROGRESS
            self.current, self.item_steps, self.last_success = position, [], None
        if item is answer_item(self.todolist):
            return (yield from self.carry_out(self.agent.compose_answer(self), position))
        while len(self.item_steps) < self.agent.max_steps_per_item:
            decision = self.checked_finish(position) or self.agent.decide(self, position)
            outcome = yield from self.carry_out(decision, position)
            if outcome:
                return outcome
        item.status = TaskStatus.FAILED
        return f"no result after {self.agent.max_steps_per_item} steps"

    def carry_out(self, decision: StepDecision, position: int
                  ) -> Generator[Event, None, str | None]:
        """Emit the step's events, save it inflight, act, and commit the step."""
        yield from self.announce(decision)
        self.inflight = decision.model_dump(mode="json")
        self.save_state()
        outcome, observation = self.act(decision, position)
        yield self.emit(observation)
        self.item_steps.append(f"{decision.tool} {decision.arguments} -> "
                               f"{observed(observation)}")
        self.last_success = decision.tool if observation.success and \
            decision.action is ActionType.TOOL_CALL else None
        self.inflight = None
        self.commit(decision, observation)
        return outcome

    def announce(self, decision: StepDecision) -> Generator[Event, None, None]:
        """The step's Thought and Action events."""
        sid = self.session.session_id
        yield self.emit(Thought(session_id=sid, step_id=self.step_id, content=decision.thought))
        yield self.emit(Action(session_id=sid, step_id=self.step_id,
                               action_type=decision.action, action_data=decision.action_data()))

    def act(self, decision: StepDecision, position: int) -> tuple[str | None, Observation]:
        """Carry out the action; returns (outcome or None to keep going, observation)."""
        item = self.todolist.item(position)
        tool = self.agent.toolbox.get(decision.tool)
        if decision.action is ActionType.ASK_USER:
            self.pending_question = decision.arguments.get("question") or decision.thought
        result = tool.run(decision.arguments)
        if decision.action is ActionType.ASK_USER and result.success:
            self.pending_question = None
        if decision.action is ActionType.COMPLETE:
            self.answers[position] = result.output
            item.status = TaskStatus.COMPLETED
            return "completed", self.observation(result.output, True)
        if decision.action is ActionType.REPLAN:
            return self.replan()
        if decision.action is ActionType.TOOL_CALL:
            item.chosen_tool, item.execution_result = decision.tool, result
        return None, self.observation(result.output, result.success, result.error)

    def replan(self) -> tuple[str | None, Observation]:
        if self.replans >= self.agent.max_replans:
            return None, self.observation(None, False, "replan limit reached; finish this step")
        self.replace_plan("the agent asked for a new plan")
        return "replan", self.observation("new plan made", True)

    def replace_plan(self, why: str) -> None:
        """Abandon the plan and plan again (``max_replans`` times a session), told what the
        old plan achieved and ``why``; its positions start afresh, so its results move into
        the planner's prompt."""
        self.replans += 1
        done = "; ".join(f"{i.description} -> {self.answers[i.position]}"
                         for i in self.todolist.items if i.position in self.answers)
        self.todolist.status = PlanStatus.ABANDONED
        self.repo.save_plan(self.todolist)
        self.current, self.item_steps, self.last_success, self.answers = None, [], None, {}
        self.plan(progress=f"{why}. Done so far: {done or 'nothing'}")

    def checked_finish(self, position: int) -> StepDecision | None:
        """After a successful tool call, finish the item with its output: at once (a plan item
        is one tool call, as the seed's single ``chosen_tool`` has it), or, with the agent's
        ``check_results``, when the model judges that the output meets the criteria. Small
        models otherwise repeat the call instead of finishing."""
        item = self.todolist.item(position)
        result = item.execution_result
        if not self.last_success or result is None:
            return None
        if self.agent.check_results and not self.agent.step_done(self, position, result.output):
            return None
        how = "meets the acceptance criteria" if self.agent.check_results else "is its result"
        return StepDecision(thought=f"The output of {self.last_success} {how}.",
                            tool="finish", arguments={"answer": as_result(result.output)},
                            action=ActionType.COMPLETE)

    def repeat_guard(self) -> tuple[str, ...]:
        """Tools not offered at the next step: the one whose call just succeeded (see
        :mod:`memlab.taskforce.steps`); at an item's first step, every tool but the one its plan
        chose and finish (the step then fills in the arguments)."""
        toolbox, item = self.agent.toolbox, self.todolist.item(self.current)
        if self.last_success:
            return (self.last_success,)
        if self.item_steps or item.chosen_tool not in toolbox.names(ActionType.TOOL_CALL):
            return ()
        return tuple(n for n in toolbox.names(ActionType.TOOL_CALL, ActionType.ASK_USER)
                     if n != item.chosen_tool)

    # --- events, history, states ---------------------------------------------------------------
    def observation(self, result: Any, success: bool, error: str | None = None) -> Observation:
        return Observation(session_id=self.session.session_id, step_id=self.step_id,
                           result=result, success=success, error=error)

    def emit(self, event: Event) -> Event:
        self.events.append(event)
        return event

    def commit(self, decision: StepDecision, observation: Observation) -> None:
        """The step's history row, the plan and the next State, in one transaction."""
        action = decision.tool if decision.action is ActionType.TOOL_CALL \
            else decision.action.value
        entry = ExecutionHistory(session_id=self.session.session_id, step_id=self.step_id,
                                 thought=decision.thought, action=action,
                                 observation=observed(observation))
        self.step_id += 1
        state = self.repo.commit_step(entry, self.todolist, self.state_json(), self.version)
        self.version = state.version

    def save_state(self) -> None:
        """Commit the next State version; a stale base version raises VersionConflictError."""
        state = self.repo.commit_state(self.session.session_id, self.state_json(), self.version)
        self.version = state.version

    def state_json(self) -> dict[str, Any]:
        return {"mission": self.session.mission, "status": self.session.status.value,
                "answers": {str(k): jsonable(v) for k, v in self.answers.items()},
                "pending_question": self.pending_question,
                "todolist_id": self.todolist.todolist_id if self.todolist else None,
                "current_step": self.current, "step_id": self.step_id,
                "item_steps": self.item_steps, "last_success": self.last_success,
                "inflight": self.inflight,
                "replans": self.replans, "error": self.error}

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
                    item.status = TaskStatus.FAILED if item.position == self.current \
                        else TaskStatus.SKIPPED
            self.repo.save_plan(self.todolist)
        self.session = self.repo.finish_session(self.session, SessionStatus.FAILED)
        latest = self.repo.latest_state(self.session.session_id)
        self.version = latest.version if latest else 0  # record the failure on top of any writer
        self.save_state()


def answer_item(todolist: TodoList) -> TodoItem | None:
    """The plan's answer item (added after the planner's items), None in a plan without one."""
    last = max(todolist.items, key=lambda i: i.position)
    return last if last.description == ANSWER_STEP else None


def observed(observation: Observation) -> str:
    text = str(observation.result) if observation.success else f"error: {observation.error}"
    return text[:OBSERVATION_CHARS]


def as_result(value: Any) -> Any:
    """A tool's output as an item's result: a list (search hits) one entry a line."""
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value)
    return jsonable(value)


def jsonable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)
