"""The Taskforce planner (seed 004): a mission becomes a TodoList with a dependency DAG.

The LLM drafts the items through ``complete_json``, constrained by :func:`plan_schema`: 1 to
``MAX_PLAN_STEPS`` items numbered from 0, each naming the tool it will call and depending only
on earlier ones (the 0.5B model otherwise wrote ``"dependencies": [1, 2, ..., 12]`` for a
one-step plan). A draft that still
names unknown positions or forms a cycle (a remote model without the grammar) fails validation
and is re-asked with the error. Items run in :func:`execution_order` (a topological order,
lowest position first among ready items).
"""

from __future__ import annotations

import heapq

from pydantic import BaseModel, Field, model_validator

from memlab.errors import ConfigError
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json_reply
from memlab.models.taskforce import Lesson, TodoItem, TodoList

MAX_ITEMS = 12
MAX_PLAN_STEPS = 3
PLAN_INSTRUCTION = (
    f'Reply with only a JSON object: {{"steps_needed": <1 to {MAX_PLAN_STEPS}>, "items": '
    '[{"position": 0, "description": "<the step>", "tool": "<the tool it calls>", '
    '"acceptance_criteria": ["<how to check it>"], "dependencies": [<positions of earlier '
    'steps it needs>]}, ...]} with steps_needed steps numbered from 0.')

PLANNER_SYSTEM = (
    "You are the planner of a task agent. First say how many steps the mission needs, then "
    "write them: each step is one tool call with checkable acceptance criteria. Most missions "
    "need one step (a whole calculation, one file write, one document search); two when a "
    "step needs another's result (read a file, then compute with or write its text). Pick "
    "each step's tool by what the tool list says it is for. A step lists the positions of "
    "the steps whose results it needs in 'dependencies' (only earlier steps). Add no step the "
    "mission does not ask for.")


class PlannedItem(BaseModel):
    position: int = Field(ge=0)
    description: str = Field(min_length=1)
    tool: str | None = Field(None, description="the tool the step will call (its chosen_tool)")
    acceptance_criteria: list[str] = Field(min_length=1, description="how to check it is done")
    dependencies: list[int] = Field(default_factory=list)


class PlanDraft(BaseModel):
    """What the LLM returns; validated as a TodoList (unique positions, a DAG) of the length
    it announced."""

    steps_needed: int | None = Field(None, ge=1, le=MAX_ITEMS,
                                     description="how many items follow (said first)")
    items: list[PlannedItem] = Field(min_length=1, max_length=MAX_ITEMS)

    @model_validator(mode="after")
    def _is_a_dag(self) -> PlanDraft:
        if self.steps_needed is not None and self.steps_needed != len(self.items):
            raise ValueError(f"items: steps_needed is {self.steps_needed} but there are "
                             f"{len(self.items)} items")
        TodoList(session_id="draft", mission="draft", items=self.todo_items())
        return self

    def todo_items(self) -> list[TodoItem]:
        return [TodoItem(**item.model_dump(exclude={"tool"}), chosen_tool=item.tool)
                for item in self.items]


def plan_schema(tools: list[str], max_steps: int = MAX_PLAN_STEPS) -> dict:
    """The JSON schema of a plan of 1 to ``max_steps`` items, item k depending only on
    items 0..k-1, each naming one of ``tools``. The plan says its length (``steps_needed``)
    before its items and holds to it (one branch per length): once the 0.5B had written an
    item it wrote more, up to the limit (a file write in an arithmetic mission, a document
    search after reading a file)."""
    def item(k: int) -> dict:
        earlier = {"type": "integer", "enum": list(range(k))} if k else {"type": "integer"}
        return {"type": "object", "additionalProperties": False,
                "required": ["position", "description", "tool", "acceptance_criteria",
                             "dependencies"],
                "properties": {
                    "position": {"const": k},
                    "description": {"type": "string", "minLength": 1, "maxLength": 160},
                    "tool": {"enum": tools},
                    "acceptance_criteria": {"type": "array", "minItems": 1, "maxItems": 2,
                                            "items": {"type": "string", "minLength": 1,
                                                      "maxLength": 120}},
                    "dependencies": {"type": "array", "items": earlier, "maxItems": k}}}

    return {"anyOf": [
        {"type": "object", "additionalProperties": False,
         "required": ["steps_needed", "items"],
         "properties": {"steps_needed": {"const": n},
                        "items": {"type": "array", "prefixItems": [item(k) for k in range(n)],
                                  "minItems": n, "maxItems": n}}}
        for n in range(1, max_steps + 1)]}


def execution_order(todolist: TodoList) -> list[int]:
    """Positions in a topological order of the dependency DAG (Kahn; lowest position first).

    Example:
        >>> items = [TodoItem(position=0, description="b", acceptance_criteria=["x"],
        ...                   dependencies=[1]),
        ...          TodoItem(position=1, description="a", acceptance_criteria=["x"])]
        >>> execution_order(TodoList(session_id="s", mission="m", items=items))
        [1, 0]
    """
    waiting = {item.position: set(item.dependencies) for item in todolist.items}
    dependants: dict[int, list[int]] = {p: [] for p in waiting}
    for position, deps in waiting.items():
        for dep in deps:
            dependants[dep].append(position)
    ready = [p for p, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        position = heapq.heappop(ready)
        order.append(position)
        for child in dependants[position]:
            waiting[child].discard(position)
            if not waiting[child]:
                heapq.heappush(ready, child)
    if len(order) != len(waiting):  # TodoList validation makes this unreachable
        raise ConfigError("items: dependencies must form no cycle")
    return order


def render_lessons(lessons: list[Lesson]) -> str:
    """Lessons from earlier sessions, as the prompt shows them: the generalisable takeaway
    and its tool. (What worked names the earlier mission's own values: shown it, the 1.5B
    planned two later lookups as the earlier one's search.)"""
    if not lessons:
        return ""
    lines = [f"- {lesson.lesson}" + (f" (tool: {lesson.tool_name})" if lesson.tool_name else "")
             for lesson in lessons]
    return "Lessons from earlier sessions:\n" + "\n".join(lines)


class Planner:
    """Turns a mission into a TodoList.

    Args:
        llm: the model that drafts the plan.
        max_retries: re-asks when the draft is invalid.
    """

    def __init__(self, llm: LLMClient, *, max_retries: int = 2, max_tokens: int = 768):
        self.llm, self.max_retries, self.max_tokens = llm, max_retries, max_tokens
        self.reasks = 0

    def messages(self, mission: str, tools: str, lessons: list[Lesson]) -> list[Message]:
        parts = [f"Tools available:\n{tools}", render_lessons(lessons), f"Mission: {mission}",
                 "Plan the mission's steps, numbered from position 0."]
        return [Message(role="system", content=PLANNER_SYSTEM),
                Message(role="user", content="\n\n".join(p for p in parts if p))]

    def plan(self, session_id: str, mission: str, *, tools: str = "",
             tool_names: list[str] | None = None,
             lessons: list[Lesson] | None = None) -> TodoList:
        """Draft and validate the plan for ``mission``; each step names the tool it will call
        (one of ``tool_names``; any name when None), kept as its ``chosen_tool``.

        Raises:
            StructuredOutputError: no valid plan after the retries.
        """
        reply = complete_json_reply(self.llm, self.messages(mission, tools, lessons or []),
                                    PlanDraft, max_retries=self.max_retries,
                                    max_tokens=self.max_tokens,
                                    schema=plan_schema(tool_names) if tool_names else None,
                                    instruction=PLAN_INSTRUCTION)
        self.reasks += reply.reasks
        return TodoList(session_id=session_id, mission=mission,
                        items=reply.value.todo_items())
