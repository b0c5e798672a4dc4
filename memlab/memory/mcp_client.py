"""mcp: any MCP memory server as a memory condition, benchmarked on memlab's suites.

A memory written in another language joins memlab by serving MCP tools: one that stores an
exchange (``ingest_tool``) and one that searches (``search_tool``); ``reset_tool``, when the
server has one, empties the memory when a run opens it (a resumed run replays into an empty
memory). Tool and argument names are options; their defaults are the tools of ``memlab mcp``,
so ``memlab run -c mcp -o url=...`` against ``memlab mcp -c rag`` answers exactly as ``-c rag``.

Recall renders what the search tool returns: memlab's own shape (``items`` and ``history``, a
MemoryContext) as it is; otherwise a list of texts, or of objects with a ``text`` / ``memory``
/ ``content`` field, or plain text blocks, each a memory item. An object's ``turn_number`` /
``turn_numbers`` / ``source_turns`` is its provenance (evidence recall); the turn numbers the
run gives its exchanges reach the server when ``turn_arg`` names an argument for them.

The MCP SDK is async and a MemorySystem is not: the client (``mcp_connection``) lives in one
task of an event loop on a background thread, started at open and stopped by ``close()``;
every call has the ``timeout`` deadline.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from memlab.errors import ConfigError, MissingDependencyError
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem
from memlab.memory.mcp_connection import McpConnection, McpServerError

__all__ = ["McpConfig", "McpMemory", "McpServerError", "render_reply", "require_mcp"]

# fields a client of memlab's agent server may not set (the server would connect or spawn)
SERVER_ONLY = {"server_only": True}
TEXT_FIELDS = ("text", "memory", "content", "value")
LIST_FIELDS = ("items", "memories", "results")


def require_mcp() -> None:
    """MissingDependencyError saying what to install when the MCP SDK is missing."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise MissingDependencyError("the MCP SDK is not installed; run: pip install 'memlab[mcp]'")


class McpConfig(BaseModel):
    """Settings of the mcp condition: where the server is and how its tools are called."""

    url: str | None = Field(None, description="streamable HTTP endpoint (http://host:port/mcp)",
                            json_schema_extra=SERVER_ONLY)
    command: list[str] | None = Field(None, description="stdio: the command starting the server "
                                      "(a list, or one string split like a shell's)",
                                      json_schema_extra=SERVER_ONLY)
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds each MCP call may take")
    ingest_tool: str = Field("observe", min_length=1, description="tool storing an exchange")
    search_tool: str = Field("recall", min_length=1, description="tool searching memory")
    reset_tool: str = Field("reset", description="tool emptying the memory at open ('': none)")
    query_arg: str = Field("query", min_length=1, description="search tool's query argument")
    message_arg: str = Field("user_message", min_length=1,
                             description="ingest tool's argument for the user's message")
    reply_arg: str = Field("assistant_message", description="ingest tool's argument for the "
                           "reply ('': the whole exchange, rendered, goes into message_arg)")
    timestamp_arg: str = Field("timestamp", description="ingest argument for the exchange's "
                               "time, ISO 8601 ('': not sent)")
    turn_arg: str = Field("", description="ingest argument for the turn number ('': not sent)")
    user_arg: str = Field("user", description="argument naming the user on every tool ('': "
                          "not sent)")
    session_arg: str = Field("session", description="argument naming the memory on every "
                             "tool ('': not sent)")
    session: str | None = Field(None, min_length=1, description="the memory's name on the "
                                "server (default: the run's namespace, so runs never share one)")

    @field_validator("reset_tool", "reply_arg", "timestamp_arg", "turn_arg", "user_arg",
                     "session_arg", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value  # `-o reset_tool=` reads as YAML null

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return shlex.split(value) if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of a streamable HTTP endpoint")
        return value

    @model_validator(mode="after")
    def _one_server(self) -> McpConfig:
        if (self.url is None) == (not self.command):
            raise ValueError("give exactly one of url (streamable HTTP) and command (stdio), "
                             "e.g. -o url=http://127.0.0.1:8766/mcp")
        return self

    @property
    def where(self) -> str:
        return self.url or f"stdio command {shlex.join(self.command or [])!r}"


class McpMemory(MemorySystem):
    """A memory served by an MCP server: observe calls its ingest tool, recall its search tool."""

    key = "mcp"
    Config = McpConfig
    uses_memory_prompts = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        require_mcp()
        self.who = {}
        if self.config.user_arg:
            self.who[self.config.user_arg] = self.scope.user_id
        if self.config.session_arg:
            self.who[self.config.session_arg] = self.config.session or \
                f"{self.namespace}/{self.scope.key}"
        self.errlog = self._open_errlog()
        self.connection = McpConnection(self.config, errlog=self.errlog)
        try:
            self._check_tools()
            if self.config.reset_tool:
                self.connection.call_tool(self.config.reset_tool, dict(self.who))
        except BaseException:
            self.close()
            raise

    def _open_errlog(self):
        """Where a stdio server's standard error goes: the memory's folder, else ours."""
        if self.config.command and self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
            return open(self.workdir / "mcp-server.log", "a", encoding="utf-8")  # noqa: SIM115
        return None

    def _check_tools(self) -> None:
        """ConfigError naming the option when the server lacks a tool or an argument."""
        tools = self.connection.tools
        c = self.config
        wanted = {"ingest_tool": (c.ingest_tool, [c.message_arg, c.reply_arg, c.timestamp_arg,
                                                  c.turn_arg]),
                  "search_tool": (c.search_tool, [c.query_arg]),
                  "reset_tool": (c.reset_tool, [])}
        for option, (name, args) in wanted.items():
            if not name:
                continue
            if name not in tools:
                raise ConfigError(f"field 'options.{option}': the MCP server at {c.where} has no "
                                  f"tool {name!r}; its tools: {', '.join(sorted(tools)) or 'none'}")
            known = tools[name]
            for arg in [a for a in args + list(self.who) if a]:
                if known is not None and arg not in known:
                    field = _arg_option(c, arg)
                    raise ConfigError(f"field 'options.{field}': tool {name!r} of the MCP server "
                                      f"takes no argument {arg!r}; it takes: "
                                      f"{', '.join(sorted(known)) or 'none'}")

    def observe(self, exchange: Exchange) -> None:
        c = self.config
        arguments = dict(self.who)
        if c.reply_arg:
            arguments[c.message_arg], arguments[c.reply_arg] = exchange.user, exchange.assistant
        else:
            arguments[c.message_arg] = exchange.render()
        if c.timestamp_arg:
            arguments[c.timestamp_arg] = exchange.timestamp.isoformat()
        if c.turn_arg:
            arguments[c.turn_arg] = exchange.turn_number
        reply = self.connection.call_tool(c.ingest_tool, arguments)
        numbered = reply.get("turn_number") if isinstance(reply, dict) else None
        if isinstance(numbered, int) and numbered != exchange.turn_number:
            raise McpServerError(f"MCP memory at {c.where}: tool {c.ingest_tool!r} stored turn "
                                 f"{exchange.turn_number} as turn {numbered}: the memory holds "
                                 "turns this run did not give it (another client writes to it?)")

    def recall(self, query: str) -> MemoryContext:
        c = self.config
        reply = self.connection.call_tool(c.search_tool, {**self.who, c.query_arg: query})
        try:
            return render_reply(reply)
        except ValueError as exc:
            raise McpServerError(f"MCP memory at {c.where}: tool {c.search_tool!r} returned "
                                 f"what memlab cannot read as memories ({exc})") from None

    def close(self) -> None:
        connection = getattr(self, "connection", None)
        if connection is not None:
            connection.close()
        if getattr(self, "errlog", None) is not None:
            self.errlog.close()
            self.errlog = None


def _arg_option(config: McpConfig, arg: str) -> str:
    """The option that names argument ``arg``."""
    return next(name for name in ("message_arg", "reply_arg", "timestamp_arg", "turn_arg",
                                  "query_arg", "user_arg", "session_arg")
                if getattr(config, name) == arg)


# ---------------------------------------------------------------- what a search tool returns
def render_reply(reply: Any) -> MemoryContext:
    """The MemoryContext a search tool's reply stands for.

    Raises:
        ValueError: the reply is none of the shapes the module docstring lists.
    """
    if reply is None or reply == "" or reply == []:
        return MemoryContext()
    if isinstance(reply, dict) and ("items" in reply or "history" in reply):
        try:
            return MemoryContext.model_validate(reply)
        except ValidationError as exc:
            raise ValueError(f"a MemoryContext with a wrong field: {exc.errors()[0]['loc']}"
                             ) from None
    if isinstance(reply, dict):
        found = next((reply[k] for k in LIST_FIELDS if isinstance(reply.get(k), list)), None)
        if found is None and _text_of(reply) is None:
            raise ValueError(f"an object without {', '.join(LIST_FIELDS)} or a text: "
                             f"{_snippet(reply)}")
        reply = found if found is not None else [reply]
    if isinstance(reply, str):
        reply = [reply]
    if not isinstance(reply, list):
        raise ValueError(f"a {type(reply).__name__}: {_snippet(reply)}")
    return MemoryContext(items=[_item(entry, i) for i, entry in enumerate(reply)])


def _item(entry: Any, index: int) -> MemoryItem:
    if isinstance(entry, str):
        return MemoryItem(id=f"mcp:{index}", kind="memory", text=entry)
    text = _text_of(entry) if isinstance(entry, dict) else None
    if text is None:
        raise ValueError(f"entry {index} has no text: {_snippet(entry)}")
    score = entry.get("score")
    provenance = {k: entry[k] for k in ("turn_number", "turn_numbers", "source_turns")
                  if k in entry}
    return MemoryItem(id=str(entry.get("id", f"mcp:{index}")), kind=str(entry.get("kind",
                      "memory")), text=text, metadata=provenance,
                      score=float(score) if isinstance(score, int | float) else None)


def _text_of(entry: dict) -> str | None:
    return next((entry[k] for k in TEXT_FIELDS if isinstance(entry.get(k), str)), None)


def _snippet(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."
