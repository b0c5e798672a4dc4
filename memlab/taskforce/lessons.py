"""Cross-session lessons (seed 004 ``Memory``): extracted by the LLM after a successful session.

Lessons are stored per user through the repository and retrieved for later missions by
embedding similarity (:meth:`TaskforceRepository.lessons_for`); the planner and the ReAct
prompts show their takeaway and tool (:func:`memlab.taskforce.planner.render_lessons`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json
from memlab.models.taskforce import ExecutionHistory, Lesson, TodoList

HISTORY_LINES = 20

EXTRACT_SYSTEM = (
    "Extract lessons learned from a finished task-agent session: generalisable takeaways that "
    "would help a future session on a similar mission. Be specific about what worked.")


class LessonDraft(BaseModel):
    context: str = Field(min_length=1, description="the kind of situation, 2-3 sentences")
    what_worked: str = Field(min_length=1)
    lesson: str = Field(min_length=1, description="the generalisable takeaway")
    confidence: float = Field(ge=0.0, le=1.0)
    what_failed: str | None = None
    tool_name: str | None = None

    @field_validator("confidence", mode="before")
    @classmethod
    def _percent(cls, value: Any) -> Any:
        """A confidence written as a percentage (the 0.5B wrote 90) is read as a fraction."""
        if isinstance(value, int | float) and 1 < value <= 100:
            return value / 100
        return value


class LessonDrafts(BaseModel):
    lessons: list[LessonDraft] = Field(max_length=3)


def session_summary(todolist: TodoList, history: list[ExecutionHistory]) -> str:
    """The plan's outcome and the last steps, as the extraction prompt shows them."""
    items = [f"{i.position}. {i.description} [{i.status.value}] tool={i.chosen_tool}"
             for i in todolist.items]
    steps = [f"step {h.step_id}: thought={h.thought!r} action={h.action} -> {h.observation}"
             for h in history[-HISTORY_LINES:]]
    return (f"Mission: {todolist.mission}\nPlan:\n" + "\n".join(items)
            + "\nSteps:\n" + "\n".join(steps))


def extract_lessons(llm: LLMClient, todolist: TodoList, history: list[ExecutionHistory], *,
                    max_tokens: int = 512) -> list[Lesson]:
    """Ask the LLM for up to three lessons of a successful session.

    Raises:
        StructuredOutputError: the model gave no valid lesson list.
    """
    messages = [Message(role="system", content=EXTRACT_SYSTEM),
                Message(role="user", content="Extract lessons.\n"
                        + session_summary(todolist, history))]
    drafts = complete_json(llm, messages, LessonDrafts, max_tokens=max_tokens)
    return [Lesson(**draft.model_dump()) for draft in drafts.lessons]
