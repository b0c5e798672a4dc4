"""MCP servers for the tests: ``memlab mcp`` in a subprocess, and a tiny independent memory
written here with the MCP SDK (other tool names, other arguments), served on loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

FAKES = ("--llm", "fake", "--embedder", "hashing")


@contextmanager
def memlab_mcp(workdir: Path, condition: str = "rag", timeout_s: float = 120):
    """``memlab mcp`` serving ``condition`` on a free loopback port; yields its URL."""
    env = {**os.environ, "MEMLAB_CACHE_DIR": str(workdir / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memlab.cli", "mcp", "-c", condition, "--port", "0",
         "--workdir", str(workdir / "served"), *FAKES],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()  # the banner, once it listens
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert found, f"no URL in {line!r}; stderr: {process.stderr.read()[:2000]}"
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(timeout=timeout_s)


def stdio_command(workdir: Path, condition: str = "rag") -> list[str]:
    """The command an MCP client starts to talk to ``memlab mcp`` over stdio."""
    return [sys.executable, "-m", "memlab.cli", "mcp", "--transport", "stdio", "-c", condition,
            "--workdir", str(workdir / "served-stdio"), *FAKES]


def foreign_server():
    """A memory that is not memlab's: ``remember(text, turn)``, ``search(q, k)`` returning
    objects with a ``memory`` text and a ``turn_number``, ``wipe()``, and ``garbage(q)``
    returning a number."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("foreign-memory", log_level="WARNING")
    notes: list[tuple[str, int]] = []

    @server.tool()
    def remember(text: str, turn: int) -> str:
        notes.append((text, turn))
        return "stored"

    @server.tool()
    def search(q: str, k: int = 3) -> list[dict]:
        words = set(q.lower().split())
        ranked = sorted(notes, key=lambda n: -len(words & set(n[0].lower().split())))
        return [{"memory": text, "turn_number": turn} for text, turn in ranked[:k]]

    @server.tool()
    def wipe() -> str:
        notes.clear()
        return "wiped"

    @server.tool()
    def garbage(q: str) -> int:
        return 42

    return server, notes


@contextmanager
def serve_foreign():
    """``foreign_server()`` over streamable HTTP on a free loopback port, in a thread; yields
    ``(url, notes)``."""
    import uvicorn

    from memlab.server.run import bind

    server, notes = foreign_server()
    sock = bind("127.0.0.1", 0)
    app = server.streamable_http_app(host="127.0.0.1")
    runner = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not runner.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", notes
    finally:
        runner.should_exit = True
        thread.join(timeout=30)
        sock.close()


# options mapping memlab's mcp condition onto the foreign server's tools
FOREIGN_OPTIONS = {"ingest_tool": "remember", "message_arg": "text", "reply_arg": "",
                   "timestamp_arg": "", "turn_arg": "turn", "search_tool": "search",
                   "query_arg": "q", "reset_tool": "wipe", "user_arg": "", "session_arg": ""}
