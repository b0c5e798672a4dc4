"""MemlabChatModel: a LangChain chat model whose every call goes through memlab's LLM layer.

Peer memory libraries (mem0, LangMem) take a LangChain ``BaseChatModel``. This one turns their
messages into memlab ``Message``s and calls ``LLMClient.complete``, so each of their calls is
served by the response cache, recorded in the run's CallJournal (and replayed on resume) and runs
on the configured memory model. Tool calls are grammar-constrained JSON
(``{"tool_calls": [{"name": ..., "arguments": {...}}]}``); a reply that is not a valid tool call
is counted in ``stats.parse_failures`` and returned as plain text, never raised.

Needs ``langchain-core`` (the ``memlab[peers]`` extra).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ConfigDict, Field

from memlab.errors import MissingDependencyError
from memlab.llm.base import Completion, LLMClient, Message
from memlab.llm.chat_stats import ChatStats  # noqa: F401 - re-exported (it lived here)
from memlab.llm.repair import parse_json_lenient
from memlab.llm.structured import (
    MEMORY_MAX_CHARS,
    MEMORY_MAX_ITEMS,
    bound_schema,
    json_instruction,
    with_instruction,
)

try:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "the peer conditions need the peers extra; run: pip install -e \".[peers]\"") from None

ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "user"}
FORCED = {"any", "required"}  # tool_choice values that demand at least one call


class MemlabChatModel(BaseChatModel):
    """A LangChain chat model backed by a memlab ``LLMClient``.

    Attributes:
        llm: the memlab client every call goes through.
        max_tokens: reply length limit of one call.
        response_schema: constrain every reply without tools to JSON of this schema ({}: any
            JSON; None: free text). mem0 asks for JSON but its LangChain provider does not pass
            the request on, so its adapter sets this.
        schema_instruction: append the schema to the last user message (off when the caller's
            prompt already states the format: mem0's; the appended schema made the 1.5B model
            answer an empty list to every exchange).
        json_newlines: the constrained JSON may break lines (a prompt that shows indented JSON).
        max_tool_calls: most tool calls in one reply.
        stats: calls, tokens, seconds and parse failures so far (shared with the caller).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Any
    max_tokens: int = 512
    response_schema: dict[str, Any] | None = None
    schema_instruction: bool = True
    json_newlines: bool = False
    max_tool_calls: int = MEMORY_MAX_ITEMS
    stats: ChatStats = Field(default_factory=ChatStats)

    @property
    def _llm_type(self) -> str:
        return "memlab"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Bind tools (pydantic classes, functions or OpenAI tool dicts) for later calls."""
        specs = [convert_to_openai_tool(t)["function"] for t in tools]
        return self.bind(tools=specs, tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or []
        convo = to_memlab_messages(messages)
        if tools:
            message = self._call_tools(convo, tools, kwargs.get("tool_choice"), stop)
        else:
            message = AIMessage(content=self._call_text(convo, stop))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _complete(self, convo: list[Message], stop: list[str] | None,
                  schema: dict[str, Any] | None, *, stop_on_loop: bool = False) -> Completion:
        client: LLMClient = self.llm
        completion = client.complete(convo, max_tokens=self.max_tokens, stop=stop,
                                     json_schema=schema, json_newlines=self.json_newlines,
                                     stop_on_loop=stop_on_loop)
        self.stats.add(completion)
        if completion.completion_tokens >= self.max_tokens and not completion.looped:
            self.stats.cut_replies += 1
        return completion

    def _call_text(self, convo: list[Message], stop: list[str] | None) -> str:
        schema = self.response_schema
        if schema is None:
            return self._complete(convo, stop, None).text
        if schema and self.schema_instruction:
            convo = with_instruction(convo, json_instruction(schema))
        raw = self._complete(convo, stop, schema).text
        try:
            parse_json_lenient(raw)
        except Exception as exc:  # the caller parses it again; here it is only counted
            self.stats.fail(f"not JSON: {exc}")
        return raw

    def _call_tools(self, convo: list[Message], tools: list[dict[str, Any]], tool_choice: Any,
                    stop: list[str] | None) -> AIMessage:
        allowed = chosen_tools(tools, tool_choice)
        forced = tool_choice in FORCED or len(allowed) < len(tools) or (
            isinstance(tool_choice, str) and tool_choice not in {"auto", "none"})
        schema = tool_call_schema(allowed, minimum=1 if forced else 0,
                                  maximum=self.max_tool_calls)
        convo = with_tools(convo, tools_instruction(allowed, forced))
        completion = self._complete(convo, stop, schema, stop_on_loop=True)
        raw = completion.text
        calls, problem = parse_tool_calls(raw, {t["name"] for t in allowed})
        if completion.looped:  # its arguments end in the loop: no call is made of them
            calls = []
            problem = f"the reply looped and was cut after {completion.completion_tokens} tokens"
        if problem:
            self.stats.fail(problem)
        return AIMessage(content="" if calls else raw, tool_calls=calls)


def to_memlab_messages(messages: list[BaseMessage]) -> list[Message]:
    """LangChain messages as memlab chat messages (tool calls and results as text)."""
    out = []
    for message in messages:
        text = message.content if isinstance(message.content, str) else json.dumps(
            message.content, ensure_ascii=False)
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
            text = (text + "\n" if text else "") + json.dumps({"tool_calls": calls},
                                                              ensure_ascii=False)
        if isinstance(message, ToolMessage):
            text = f"Result of tool call {message.name or message.tool_call_id}: {text}"
        out.append(Message(role=ROLES.get(message.type, "user"), content=text))
    return out


def chosen_tools(tools: list[dict[str, Any]], tool_choice: Any) -> list[dict[str, Any]]:
    """The tools a ``tool_choice`` allows (a name or {"function": {"name": ...}} picks one)."""
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    picked = [t for t in tools if t["name"] == name]
    return picked or tools


def tool_call_schema(tools: list[dict[str, Any]], *, minimum: int, maximum: int) -> dict[str, Any]:
    """The JSON schema of a reply calling ``tools`` (``$defs`` of every tool hoisted to the root,
    where their ``#/$defs/...`` references point), every list and string in the arguments bounded
    as memlab's own memory calls are (``MEMORY_MAX_ITEMS``, ``MEMORY_MAX_CHARS``): unbounded, the
    1.5B model filled LangMem's PatchDoc with the same patch ("replace /content/5", "/content/6",
    ...) until the 512-token limit, at 100-260 s a stored turn. Within the bounds it still filled
    one string ("/content/0/0/0/..."), so tool calls are also made with ``stop_on_loop``."""
    defs: dict[str, Any] = {}
    options = []
    for tool in tools:
        params = dict(tool.get("parameters") or {"type": "object", "properties": {}})
        defs.update(params.pop("$defs", {}))
        params.pop("title", None)
        options.append({"type": "object", "properties": {"name": {"const": tool["name"]},
                                                         "arguments": params},
                        "required": ["name", "arguments"]})
    calls = {"type": "array", "items": options[0] if len(options) == 1 else {"anyOf": options},
             "minItems": minimum, "maxItems": max(maximum, minimum)}
    schema = {"type": "object", "properties": {"tool_calls": calls}, "required": ["tool_calls"]}
    if defs:
        schema["$defs"] = defs
    return bound_schema(schema, MEMORY_MAX_ITEMS, MEMORY_MAX_CHARS)


def tools_instruction(tools: list[dict[str, Any]], forced: bool) -> str:
    """What the model is told about the tools it may call and the reply format: each tool's
    name, description and parameters (JSON schema), as Qwen's chat template and OpenAI-style
    servers show them, and the reply's shape by example. The reply's own JSON schema is not
    shown (the grammar enforces it): shown a second copy of PatchDoc's schema, the 1.5B model
    filled its arguments with loops, and memlab's hybrid extractor kept nothing when shown its."""
    lines = ["You can call these tools:"]
    for tool in tools:
        params = json.dumps(tool.get("parameters") or {}, separators=(",", ":"))
        lines.append(f"- {tool['name']}: {tool.get('description') or ''}\n  parameters: {params}")
    need = "at least one tool" if forced else "the tools you need (an empty list if none)"
    lines.append(f"Call {need}. Reply with only a JSON object, no prose and no code fence: "
                 '{"tool_calls": [{"name": "<a tool name>", "arguments": {<its parameters>}}]}')
    return "\n".join(lines)


def with_tools(convo: list[Message], instruction: str) -> list[Message]:
    """``convo`` with the tools ``instruction`` first in its system message (a new one when it
    has none), where chat templates put tools: it then opens every prompt of a tool set, and
    the local model reuses its evaluation from one call to the next (LangMem's follows with the
    existing memories and the conversation, which change every turn)."""
    if convo and convo[0].role == "system":
        return [Message(role="system", content=f"{instruction}\n\n{convo[0].content}"),
                *convo[1:]]
    return [Message(role="system", content=instruction), *convo]


def parse_tool_calls(raw: str, names: set[str]) -> tuple[list[dict[str, Any]], str | None]:
    """``(tool calls, problem or None)`` from a reply; ids are stable hashes of the reply, so a
    replayed call yields the ids the recorded one did."""
    try:
        data = parse_json_lenient(raw)
    except Exception as exc:  # any failure of the repair is bad output
        return [], f"not JSON: {exc}"
    items = data.get("tool_calls") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], "no tool_calls list in the reply"
    digest = hashlib.sha256(raw.encode()).hexdigest()[:12]
    calls, problems = [], []
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        args = item.get("arguments") if isinstance(item, dict) else None
        if name not in names or not isinstance(args, dict):
            problems.append(f"call {i}: unknown tool {name!r} or arguments not an object")
            continue
        calls.append({"name": name, "args": args, "id": f"call_{digest}_{i}",
                      "type": "tool_call"})
    return calls, "; ".join(problems) or None
