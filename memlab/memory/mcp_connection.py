"""The MCP client behind the mcp condition: one client session held open by a task on a
background event loop thread (the MCP SDK is async, a MemorySystem is not), every call within a
deadline, and a tool's reply read as data."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from typing import Any

from memlab.errors import MemlabError

Work = Callable[[Any], Awaitable[Any]]


class McpServerError(MemlabError):
    """The MCP memory server is unreachable, failed a call, or answered what memlab cannot
    read (an environment problem: the message names the server and the tool)."""


def tool_reply(result: Any) -> Any:
    """A CallToolResult's content as data: its structured content (unwrapped from the SDK's
    ``{"result": ...}``), else its text blocks read as JSON where they are JSON."""
    structured = result.structured_content
    if structured is not None:
        return structured["result"] if set(structured) == {"result"} else structured
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    values = []
    for text in texts:
        try:
            values.append(json.loads(text))
        except ValueError:
            values.append(text)
    return values[0] if len(values) == 1 else values



class McpConnection:
    """One MCP client session held open by a task on a background event loop thread; sync
    calls are handed to that task and waited for within the timeout.

    Attributes:
        tools: the server's tools: name -> the argument names its input schema declares
            (None: it declares none).
    """

    def __init__(self, config: Any, *, errlog: Any = None):
        self.config, self.timeout, self.errlog = config, config.timeout, errlog
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="memlab-mcp-client",
                                       daemon=True)
        self.thread.start()
        self.jobs: asyncio.Queue | None = None
        self.serving = False  # the task holds an open client and reads jobs
        ready: Future = Future()
        self.task = asyncio.run_coroutine_threadsafe(self._hold(ready), self.loop)
        try:
            self.tools: dict[str, list[str] | None] = self._wait(ready, "connect")
        except BaseException:
            self.close()
            raise

    async def _hold(self, ready: Future) -> None:
        """Open the client, serve jobs until ``None``, close the client (one task: the SDK's
        task groups must be left by the task that entered them)."""
        from mcp import Client

        self.jobs = asyncio.Queue()
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(
                    Client(transport, read_timeout_seconds=self.timeout, cache=None))
                listed = await client.list_tools()
                ready.set_result({tool.name: _argument_names(tool.input_schema)
                                  for tool in listed.tools})
                self.serving = True
                while (job := await self.jobs.get()) is not None:
                    work, done = job
                    try:
                        done.set_result(await work(client))
                    except Exception as exc:  # handed to the waiting caller
                        done.set_exception(exc)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if self.config.url is None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = self.config.command or []
            params = StdioServerParameters(command=command[0], args=command[1:],
                                           env=_environment())
            return stdio_client(params, errlog=self.errlog or sys.stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # no proxy from the environment: a loopback server is reached directly
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(self.timeout), trust_env=False))
        return streamable_http_client(self.config.url, http_client=http)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's reply as data (``tool_reply``); McpServerError when it fails."""

        async def work(client: Any) -> Any:
            return await client.call_tool(name, arguments)

        result = self._submit(work, f"tool {name!r}")
        if result.is_error:
            text = " ".join(getattr(b, "text", "") for b in result.content).strip()
            raise McpServerError(f"MCP memory at {self.config.where}: tool {name!r} failed: "
                                 f"{_one_line(text) or 'no message'}")
        return tool_reply(result)

    def _submit(self, work: Work, what: str) -> Any:
        if not self.serving or self.task.done():
            raise McpServerError(f"MCP memory at {self.config.where}: the connection is closed")
        done: Future = Future()
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, (work, done))
        return self._wait(done, what)

    def _wait(self, future: Future, what: str) -> Any:
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            raise McpServerError(f"MCP memory at {self.config.where}: {what} took longer than "
                                 f"{self.timeout:g} s (option timeout)") from None
        except MemlabError:
            raise
        except Exception as exc:
            raise McpServerError(f"MCP memory at {self.config.where}: {what} failed: "
                                 f"{_cause(exc)}") from None

    def close(self) -> None:
        """Close the client session (and a stdio server), then stop the loop's thread."""
        if not self.thread.is_alive():
            return
        if self.serving and not self.task.done():
            self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        else:  # still connecting: nothing to close politely
            self.task.cancel()
        try:
            self.task.result(timeout=self.timeout)
        except BaseException:  # noqa: BLE001 - closing: the server may already be gone
            self.task.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=self.timeout)
        if not self.thread.is_alive():
            self.loop.close()


def _argument_names(schema: Any) -> list[str] | None:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return list(properties) if isinstance(properties, dict) else None


def _environment() -> dict[str, str]:
    """A stdio server's environment: ours (its MEMLAB_* settings included)."""
    return dict(os.environ)


def _cause(exc: BaseException) -> str:
    """One line for what went wrong (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return _one_line(f"{type(exc).__name__}: {exc}")


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."
