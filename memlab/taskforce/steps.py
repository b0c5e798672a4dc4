"""One ReAct step's Thought and Action, as a schema built from the session's toolbox.

The model answers ``{"thought": ..., "tool": <a tool's name>, "arguments": {...}}``; the schema
is a union with one branch per tool, whose ``tool`` is that name and whose ``arguments`` are
exactly that tool's parameters. A local model's grammar can therefore only name a real tool
with its real arguments (it once wrote ``"calculator(expression: ...)"`` as a tool name), and a
remote model that strays fails validation and is re-asked with the error.

A successful tool call is not offered again at the very next step of the same item: a small
model otherwise repeats its last call instead of finishing (the 0.5B model called the
calculator with ``12 * 3 + 6`` four times, its thought saying "call finish"). Calling it again
after another tool, or after a failed call, stays possible.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from memlab.models.taskforce import ActionType
from memlab.taskforce.tools import Toolbox

THOUGHT_CHARS = 240


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepDecision(BaseModel):
    """The LLM's Thought and Action for one ReAct step."""

    thought: str = Field(min_length=1)
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    action: ActionType = ActionType.TOOL_CALL

    def action_data(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments}


def step_model(toolbox: Toolbox, exclude: tuple[str, ...] = ()) -> type[RootModel]:
    """The reply model of one step: a union of one ``{thought, tool, arguments}`` per tool
    (but the ``exclude``d ones)."""
    branches = []
    for name in toolbox.names():
        if name in exclude:
            continue
        tool = toolbox.get(name)
        arguments = create_model(
            f"{_camel(name)}Arguments", __base__=_Strict,
            **{p: (str, Field(description=d, max_length=tool.max_chars.get(p)))
               for p, d in tool.parameters.items()})
        branches.append(create_model(
            f"Use{_camel(name)}", __base__=_Strict,
            thought=(str, Field(min_length=1, max_length=THOUGHT_CHARS)),
            tool=(Literal[name], ...), arguments=(arguments, ...)))
    if len(branches) == 1:  # only finish is offered
        return RootModel[branches[0]]  # type: ignore[valid-type]
    union = Annotated[Union[tuple(branches)], Field(discriminator="tool")]  # noqa: UP007
    return RootModel[union]  # type: ignore[valid-type]


def to_decision(reply: RootModel, toolbox: Toolbox) -> StepDecision:
    """The validated reply as a StepDecision carrying its seed Action type."""
    value = reply.root
    return StepDecision(thought=value.thought.strip() or "(no thought)", tool=value.tool,
                        arguments=value.arguments.model_dump(),
                        action=toolbox.get(value.tool).action)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
