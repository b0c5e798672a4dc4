"""A condition's memory over MCP (Model Context Protocol), for harnesses that speak MCP.

Tools: ``observe`` (store one exchange), ``recall`` (what memory puts into the prompt for a
query), ``sleep`` (run the condition's cycle now), ``reset`` (empty a memory) and ``forget``
(remove it). Every tool names whose memory it means with ``user`` and ``session``; each pair is
one session of the agent server's ``SessionManager``, so MCP memories are as isolated as the
HTTP server's sessions (their own scope, stores and journal, rebuilt after a restart).

Transports: streamable HTTP on loopback (``http://127.0.0.1:<port>/mcp``) or stdio. A tool's
work runs in a worker thread within ``MEMLAB_SERVER_DEADLINE_S``; one given up before it
stored anything stores nothing.

Example:
    memlab mcp --condition rag --port 8766
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, ValidationError

from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, MemlabError, fields_message
from memlab.models.api import ObserveRequest, SessionCreate
from memlab.server.sessions import SessionManager, Ticket, UnknownSessionError

T = TypeVar("T")
WORKERS = 8
PATH = "/mcp"
TOOLS = ("observe", "recall", "sleep", "reset", "forget")
User = Annotated[str, Field(min_length=1, max_length=200, description="whose memory")]
SessionName = Annotated[str, Field(min_length=1, max_length=200,
                                   description="which of the user's memories (one per session)")]
# the HTTP body's field names, as a tool's arguments are called
ARGUMENTS = {"user": "user_message", "assistant": "assistant_message"}


def session_id(user: str, session: str) -> str:
    """The SessionManager id of ``user``'s memory ``session`` (distinct pairs, distinct ids)."""
    return "mcp-" + hashlib.sha256(f"{user}\0{session}".encode()).hexdigest()[:40]


class MemoryTools:
    """The tools' work on ``manager``'s sessions, each in a worker thread within the deadline."""

    def __init__(self, manager: SessionManager, settings: Settings):
        self.manager, self.deadline_s = manager, settings.server_deadline_s
        self.executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="memlab-mcp")

    async def run(self, work: Callable[[Ticket], T]) -> T:
        """``work(ticket)`` in a worker thread; past the deadline given up (nothing stored)
        unless storing has begun. A memlab error becomes the tool's one-line error."""
        from mcp.server.mcpserver.exceptions import ToolError

        ticket = Ticket()
        future = asyncio.get_running_loop().run_in_executor(self.executor, work, ticket)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.deadline_s)
        except TimeoutError:
            if not ticket.abandon():
                return await future
            raise ToolError(f"no answer within {self.deadline_s:g} s "
                            "(MEMLAB_SERVER_DEADLINE_S); nothing was stored") from None
        except ConfigError as exc:  # the caller's input, named
            raise ToolError(getattr(exc, "public", str(exc))) from None
        except MemlabError as exc:  # the server's trouble (a store gone, a damaged journal)
            raise ToolError(f"{type(exc).__name__}: {getattr(exc, 'public', exc)}") from None

    def session(self, user: str, session: str):
        return self.manager.get_or_create(session_id(user, session), SessionCreate(user_id=user))

    def observe(self, user: str, session: str, request: ObserveRequest,
                ticket: Ticket) -> dict[str, Any]:
        opened = self.session(user, session)
        done = self.manager.observe(opened, request, ticket)
        if done is None:
            raise MemlabError("given up before storing; nothing was stored")
        turn_number, stats = done
        return {"turn_number": turn_number, "slept": stats is not None}

    def forget(self, user: str, session: str) -> bool:
        try:
            self.manager.delete(session_id(user, session))
        except UnknownSessionError:
            return False
        return True

    def close(self) -> None:
        opened = self.manager.close()
        self.executor.shutdown(wait=True)
        print(f"memlab MCP server stopped: {opened} open memories closed, every acknowledged "
              "step is in its journal", file=sys.stderr, flush=True)


def observe_request(user_message: str, assistant_message: str,
                    timestamp: datetime | None) -> ObserveRequest:
    """The exchange as the HTTP server reads it (ConfigError naming the tool's argument)."""
    try:
        return ObserveRequest(user=user_message, assistant=assistant_message, timestamp=timestamp)
    except ValidationError as exc:
        errors = [{**e, "loc": tuple(ARGUMENTS.get(str(p), p) for p in e["loc"]),
                   "msg": e["msg"].removeprefix("Value error, ")} for e in exc.errors()]
        raise ConfigError(fields_message(errors)) from None


def create_mcp_server(manager: SessionManager, *, settings: Settings | None = None):
    """An ``MCPServer`` (the MCP SDK's) whose tools work on ``manager``'s sessions.

    Returns:
        ``(server, tools)``: ``tools.close()`` closes every memory once the server has stopped.
    """
    from mcp.server.mcpserver import MCPServer

    tools = MemoryTools(manager, settings or get_settings())
    server = MCPServer("memlab", instructions=__doc__, log_level="WARNING")

    @server.tool(description="Store one exchange in the memory of user/session; returns "
                             "the turn number memory gave it.")
    async def observe(user_message: str, assistant_message: str, user: User = "user",
                      session: SessionName = "default", timestamp: datetime | None = None
                      ) -> dict[str, Any]:
        return await tools.run(lambda t: tools.observe(
            user, session, observe_request(user_message, assistant_message, timestamp), t))

    @server.tool(description="What the memory of user/session puts into the prompt for "
                             "query: items (with their turn numbers) and verbatim history.")
    async def recall(query: str, user: User = "user",
                     session: SessionName = "default") -> dict[str, Any]:
        context = await tools.run(
            lambda _t: manager.recall(tools.session(user, session), query))
        return context.model_dump(mode="json")

    @server.tool(description="Run the condition's consolidation (sleep) cycle now; null when "
                             "it has none.")
    async def sleep(user: User = "user", session: SessionName = "default") -> dict[str, Any]:
        stats = await tools.run(lambda t: manager.sleep(tools.session(user, session), t))
        return {"cycle_stats": None if stats is None else stats.model_dump(mode="json")}

    @server.tool(description="Empty the memory of user/session (a fresh, empty one stays).")
    async def reset(user: User = "user", session: SessionName = "default") -> dict[str, Any]:
        def work(_ticket: Ticket) -> dict[str, Any]:
            tools.forget(user, session)
            return {"turns": manager.info(tools.session(user, session)).turns}

        return await tools.run(work)

    @server.tool(description="Remove the memory of user/session and its journal.")
    async def forget(user: User = "user", session: SessionName = "default") -> dict[str, Any]:
        return {"forgotten": await tools.run(lambda _t: tools.forget(user, session))}

    return server, tools


def serve_mcp(*, condition: str, llm: Any, embedder: Any, workdir: str | Path,
              transport: Literal["http", "stdio"] = "http", port: int = 8766,
              settings: Settings | None = None) -> None:
    """Serve ``condition``'s memory over MCP until SIGTERM, Ctrl-C or (stdio) end of input.

    Raises:
        ConfigError: the port is in use.
    """
    import anyio

    from memlab.server.run import bind

    settings = settings or get_settings()
    sock = bind("127.0.0.1", port) if transport == "http" else None
    manager = SessionManager(workdir, condition=condition, llm=llm, embedder=embedder)
    server, tools = create_mcp_server(manager, settings=settings)
    try:
        if sock is None:
            print(f"memlab MCP server ({condition}) on stdio; memories in {manager.root}",
                  file=sys.stderr, flush=True)
            anyio.run(server.run_stdio_async)
        else:
            _serve_http(server, sock, condition, manager, settings)
    finally:
        tools.close()


def _serve_http(server: Any, sock: Any, condition: str, manager: SessionManager,
                settings: Settings) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=PATH, host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", timeout_keep_alive=5,
                            timeout_graceful_shutdown=int(settings.server_deadline_s) + 5)
    print(f"memlab MCP server ({condition}) at http://127.0.0.1:{sock.getsockname()[1]}{PATH} "
          f"(tools: {', '.join(TOOLS)}; memories in {manager.root})", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
