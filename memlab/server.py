"""A small HTTP wrapper around one Agent (seed 000's "Agent Wrapper"), standard library only.

``POST /turn`` takes a BenchmarkTurnPayload (``{"history": "...", "message": "..."}``) and
answers ``{"reply": ..., <TurnTrace fields>}``; ``GET /health`` says which condition serves.
A body that is not a valid payload gets HTTP 400 naming the field and the rule. The memory
condition keeps its own memory, so ``history`` is accepted (the seed requires it) but the
answer is built from the agent's memory, exactly as in a benchmark run.

Example:
    memlab serve --condition rag --port 8765
    curl -s localhost:8765/turn -d '{"history": "", "message": "Hi, I am Ana."}'
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from memlab.errors import fields_message
from memlab.models.turns import BenchmarkTurnPayload

MAX_BODY = 10 * 1024 * 1024


def validation_message(exc: ValidationError) -> str:
    """One line per error: ``field 'message': Field required``."""
    return fields_message(exc.errors(), whole="body")


class AgentHandler(BaseHTTPRequestHandler):
    """Routes /turn and /health to the server's agent (one turn at a time)."""

    server: AgentServer

    def _send(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body, ensure_ascii=False, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") == "/health":
            self._send(200, {"status": "ok", "condition": self.server.condition,
                             "turns": self.server.agent.turn_number})
        else:
            self._send(404, {"error": f"no route GET {self.path}; use POST /turn"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") not in ("/turn", ""):
            self._send(404, {"error": f"no route POST {self.path}; use POST /turn"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": f"body of {length} bytes exceeds {MAX_BODY}"})
            return
        try:
            payload = BenchmarkTurnPayload.model_validate_json(self.rfile.read(length) or b"")
        except ValidationError as exc:
            self._send(400, {"error": validation_message(exc)})
            return
        with self.server.lock:
            trace = self.server.agent.interact(payload.message)
        status = 200 if trace.error is None else 502
        self._send(status, trace.model_dump(mode="json"))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.verbose:
            super().log_message(format, *args)


class AgentServer(ThreadingHTTPServer):
    """An HTTP server holding one agent; requests are answered one at a time."""

    daemon_threads = True

    def __init__(self, agent: Any, host: str = "127.0.0.1", port: int = 8765, *,
                 condition: str = "", verbose: bool = False):
        super().__init__((host, port), AgentHandler)
        self.agent, self.condition, self.verbose = agent, condition, verbose
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def serve(agent: Any, host: str = "127.0.0.1", port: int = 8765, *, condition: str = "") -> None:
    """Serve ``agent`` until interrupted (Ctrl-C)."""
    server = AgentServer(agent, host, port, condition=condition, verbose=True)
    print(f"memlab agent ({condition or 'agent'}) at {server.url}/turn", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        agent.memory.close()
