"""The Taskforce ReAct agent (seed 004): plan, then Thought -> Action -> Observation per item.

A session plans the mission into a TodoList, runs its items in dependency order, and for each
item loops: the LLM thinks and picks one tool with its arguments (the reply is constrained to
the toolbox's schema, :mod:`memlab.taskforce.steps`); ``finish`` completes the item,
``ask_user`` asks. Every Thought, Action and Observation is a frozen domain event, streamed as
progress. Each step is saved durably (:mod:`memlab.taskforce.session`), so a killed session
resumes with :meth:`TaskforceAgent.resume`. A successful session leaves lessons for the same
user's later sessions, which see the similar ones in their prompts.

Example:
    >>> agent = TaskforceAgent(llm, repo, Toolbox.default("workspace"))  # doctest: +SKIP
    >>> for event in agent.stream("Compute 12 * 3, then add 6"):  # doctest: +SKIP
    ...     print(type(event).__name__, event.step_id)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any

from pydantic import BaseModel, Field

from memlab.errors import ConfigError, MemlabError
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json_reply
from memlab.models.taskforce import (
    ActionType,
    Lesson,
    Profile,
    Session,
    SessionStatus,
    TodoList,
)
from memlab.taskforce.planner import Planner, render_lessons
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.session import Event, SessionRun, answer_item, as_result
from memlab.taskforce.steps import StepDecision, step_model, to_decision
from memlab.taskforce.tools import Toolbox

log = logging.getLogger(__name__)

REACT_SYSTEM = (
    "You are a ReAct task agent. Work on the current step only. Think in one sentence, then "
    "call one tool. When the step's acceptance criteria are met, call finish with the step's "
    "result.")
CHECK_SYSTEM = (
    "You check a task agent's work. Answer yes if the last result completes the current step "
    "(it meets the acceptance criteria), else no.")
ANSWER_SYSTEM = (
    "You give a task's final answer from the results of its steps. Reply with only the answer "
    "the mission asks for (a number, a name, a phrase, a file's text, or what a file write "
    "did), as the results give it, in at most one sentence. Do not describe the task.")
NEXT_STEP = ("If the last observation gives the current step's result, call finish with it; "
             "otherwise call the tool that gets it.")
STEP_INSTRUCTION = (
    'Reply with only a JSON object: {"thought": "<one sentence>", "tool": "<a tool name from '
    'the list>", "arguments": {<that tool\'s arguments by name>}}')
RESULT_CHARS = 1500
ANSWER_TOKENS = 96
PLAN_RESULT_CHARS = 80


class SessionResult(BaseModel):
    """How a session ended."""

    session: Session
    todolist: TodoList | None = None
    answers: dict[int, Any] = Field(default_factory=dict, description="result per position")
    events: list[Event] = Field(default_factory=list)
    lessons_used: list[Lesson] = Field(default_factory=list)
    lessons_learned: list[Lesson] = Field(default_factory=list)
    final_answer: Any = Field(None, description="the mission's answer: the result of the "
                              "plan's answer item (see memlab.taskforce.session)")
    reasks: int = Field(0, description="invalid plan and step replies re-asked in this run")
    error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.session.status is SessionStatus.COMPLETED


class TaskforceAgent:
    """Runs missions as ReAct sessions.

    Args:
        llm: the model behind the planner, the steps and lesson extraction.
        repository: persistence (sessions, states, plans, history, lessons).
        toolbox: the tools the agent may call (``Toolbox.default`` for the usual six).
        max_steps_per_item: ReAct steps before an item counts as failed.
        max_replans: how often a ``replan`` tool (when in the toolbox) may replace the plan.
        json_retries: re-asks of an invalid step reply before the session fails.
        check_results: after a successful tool call, ask the model (yes/no) whether the output
            meets the item's acceptance criteria before finishing the item; off, a successful
            call finishes its item (one tool call per plan item). Off by default: on the 0.5B
            model the yes/no judgement was wrong often enough to fail missions it had solved.
    """

    def __init__(self, llm: LLMClient, repository: TaskforceRepository, toolbox: Toolbox, *,
                 max_steps_per_item: int = 4, max_replans: int = 1, max_tokens: int = 384,
                 json_retries: int = 2, check_results: bool = False):
        self.llm, self.repo, self.toolbox = llm, repository, toolbox
        self.planner = Planner(llm)
        self.max_steps_per_item, self.max_replans = max_steps_per_item, max_replans
        self.max_tokens, self.json_retries = max_tokens, json_retries
        self.check_results = check_results
        self._step_models = {(): step_model(toolbox)}
        self.reasks = 0

    def run(self, mission: str, *, user_id: str | None = None,
            profile: Profile | str = Profile.DEV,
            on_event: Callable[[Event], None] | None = None) -> SessionResult:
        """Run one session to the end; ``on_event`` gets every event as it happens."""
        return _drain(self.stream(mission, user_id=user_id, profile=profile), on_event)

    def resume(self, session_id: str, *,
               on_event: Callable[[Event], None] | None = None) -> SessionResult:
        """Finish a session that stopped (killed, interrupted) from its latest State."""
        return _drain(self.stream_resume(session_id), on_event)

    def load(self, session_id: str) -> SessionResult:
        """A stored session as it stands (events are not stored: the list is empty).

        Raises:
            ConfigError: no such session.
        """
        session = self.repo.get_session(session_id)
        if session is None:
            raise ConfigError(f"session_id: no session {session_id!r} in {self.repo.store.url}")
        state = self.repo.latest_state(session_id)
        saved = state.state_json if state else {}
        plan = self.repo.get_plan(saved["todolist_id"]) if saved.get("todolist_id") else None
        answers = {int(k): v for k, v in (saved.get("answers") or {}).items()}
        return SessionResult(session=session, todolist=plan, error=saved.get("error"),
                             answers=answers, final_answer=final_answer(plan, answers))

    def stream(self, mission: str, *, user_id: str | None = None,
               profile: Profile | str = Profile.DEV) -> Generator[Event, None, SessionResult]:
        """Yield a new session's events; the generator returns the SessionResult."""
        session = self.repo.start_session(mission, user_id=user_id, profile=profile)
        return (yield from self._execute(SessionRun(self, session)))

    def stream_resume(self, session_id: str) -> Generator[Event, None, SessionResult]:
        """Yield the rest of a stopped session's events; returns the SessionResult.

        Raises:
            ConfigError: no such session, or it already finished (completed or failed).
        """
        session = self.repo.get_session(session_id)
        if session is None:
            raise ConfigError(f"session_id: no session {session_id!r} in {self.repo.store.url}")
        if session.status in (SessionStatus.COMPLETED, SessionStatus.FAILED):
            raise ConfigError(f"session_id: session {session_id} is {session.status.value}; "
                              "only a pending or in_progress session resumes")
        run = SessionRun(self, session, self.repo.latest_state(session_id))
        return (yield from self._execute(run))

    def _execute(self, run: SessionRun) -> Generator[Event, None, SessionResult]:
        self.reasks = self.planner.reasks = 0
        try:
            yield from run.execute()
        except MemlabError as exc:  # recorded as the session's failure, never lost
            log.warning("session %s failed: %s", run.session.session_id, exc)
            run.fail(f"{type(exc).__name__}: {exc}")
        return SessionResult(session=run.session, todolist=run.todolist, answers=run.answers,
                             final_answer=final_answer(run.todolist, run.answers),
                             events=run.events, lessons_used=run.lessons,
                             lessons_learned=run.learned, error=run.error,
                             reasks=self.reasks + self.planner.reasks)

    # --- one step ------------------------------------------------------------------------------
    def decide(self, run: SessionRun, position: int) -> StepDecision:
        """The model's Thought and Action for the current item (re-asked when invalid)."""
        reply = complete_json_reply(self.llm, self.step_messages(run, position),
                                    self.step_model(run.repeat_guard()),
                                    max_retries=self.json_retries, max_tokens=self.max_tokens,
                                    instruction=STEP_INSTRUCTION)
        self.reasks += reply.reasks
        return to_decision(reply.value, self.toolbox)

    def compose_answer(self, run: SessionRun) -> StepDecision:
        """The answer item's step: one plain-text call writes the mission's answer from the
        results of the planned items, and finish records it. (As a ReAct step the answer item
        called tools again and finished with what they returned or with its own description:
        on the 0.5B and the 1.5B it called python and file_read after the work was done.)"""
        results = render_results(run.todolist, run.answers)
        reply = self.llm.complete(
            [Message(role="system", content=ANSWER_SYSTEM),
             Message(role="user", content=f"Mission: {run.session.mission}\n\nResults of its "
                     f"steps:\n{results or 'none'}\n\nThe mission's answer:")],
            max_tokens=ANSWER_TOKENS)
        finish = self.toolbox.names(ActionType.COMPLETE)[0]
        limit = self.toolbox.get(finish).max_chars["answer"]
        last = run.answers[max(run.answers)] if run.answers else ""
        answer = (reply.text.strip() or str(as_result(last)).strip())[:limit]
        return StepDecision(thought="The mission's answer, from the results of its steps.",
                            tool=finish, arguments={"answer": answer},
                            action=ActionType.COMPLETE)

    def step_done(self, run: SessionRun, position: int, result: Any) -> bool:
        """Ask the model whether ``result`` (the last successful call's) completes the item:
        one constrained word, yes or no."""
        item = run.todolist.item(position)
        question = (f"Mission: {run.session.mission}\nCurrent step: {item.description}\n"
                    f"Acceptance criteria: {'; '.join(item.acceptance_criteria)}\n"
                    f"Work so far:\n" + "\n".join(run.item_steps)
                    + f"\nLast result: {str(result)[:500]}\nDoes the last result complete the "
                    "current step? Answer yes or no.")
        reply = self.llm.complete([Message(role="system", content=CHECK_SYSTEM),
                                   Message(role="user", content=question)],
                                  max_tokens=2, choices=["yes", "no"])
        return reply.text.strip().lower().startswith("y")

    def step_model(self, exclude: tuple[str, ...]) -> type:
        if exclude not in self._step_models:
            self._step_models[exclude] = step_model(self.toolbox, exclude)
        return self._step_models[exclude]

    def step_messages(self, run: SessionRun, position: int) -> list[Message]:
        """The step's prompt; the current step and its inputs come last, where a small model
        looks (before, the 0.5B recomputed the mission's first expression at every step)."""
        todolist = run.todolist
        item = todolist.item(position)
        plan = "\n".join(f"{i.position}. {i.description} [{i.status.value}]"
                         + (f" result: {_clip(run.answers[i.position], PLAN_RESULT_CHARS)}"
                            if i.position in run.answers else "") for i in todolist.items)
        needed = [d for d in item.dependencies if d in run.answers] or \
            [p for p in run.answers if p != position]
        inputs = ("Results this step works with:\n"
                  + render_results(todolist, run.answers, needed)) if needed else ""
        parts = [f"Mission: {run.session.mission}", render_lessons(run.lessons),
                 f"Plan:\n{plan}",
                 f"Tools:\n{self.toolbox.describe(exclude=run.repeat_guard())}",
                 f"Current step: {position}. {item.description}\nAcceptance criteria: "
                 + "; ".join(item.acceptance_criteria), inputs,
                 "Observations so far:\n" + ("\n".join(run.item_steps) or "none"),
                 NEXT_STEP if run.item_steps else ""]
        return [Message(role="system", content=REACT_SYSTEM),
                Message(role="user", content="\n\n".join(p for p in parts if p))]


def final_answer(todolist: TodoList | None, answers: dict[int, Any]) -> Any:
    """The result of ``todolist``'s answer item (None until it completed)."""
    item = answer_item(todolist) if todolist is not None else None
    return answers.get(item.position) if item is not None else None


def render_results(todolist: TodoList, answers: dict[int, Any],
                   positions: list[int] | None = None) -> str:
    """The results of ``positions`` (default: every answered item), one block per item with
    its text as is: a dict's repr escaped a file's newlines and quotes."""
    chosen = sorted(answers) if positions is None else positions
    return "\n".join(f"step {p} ({todolist.item(p).description}):\n"
                     f"{_clip(answers[p], RESULT_CHARS)}" for p in chosen)


def _clip(value: Any, limit: int) -> str:
    text = str(value).strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _drain(stream: Generator[Event, None, SessionResult],
           on_event: Callable[[Event], None] | None) -> SessionResult:
    while True:
        try:
            event = next(stream)
        except StopIteration as stop:
            return stop.value
        if on_event is not None:
            on_event(event)
