"""What the agent server checks before a route sees a request: the body's size and how long it
takes to arrive, and that a JSON body is read as JSON whatever content type the client sent.

A body over the limit gets 413 (from its Content-Length before any byte is read, else while it
streams); a Content-Length that is not a whole number gets 400; a body that does not arrive
within the read deadline (a client that announced more bytes than it sends) gets 408. A request
without Content-Length or chunked encoding has an empty body (HTTP/1.1), so a route that needs
one answers 422 naming ``body``. Every answer is ``{"error": "..."}``.
"""

from __future__ import annotations

import asyncio
import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FORM = b"application/x-www-form-urlencoded"  # what `curl -d` sends; this API takes only JSON
CLOSE = {"Connection": "close"}  # the rest of a refused body is never read


class BodyGuard:
    """ASGI middleware enforcing ``max_bytes`` and ``read_timeout_s`` on request bodies."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, read_timeout_s: float):
        self.app, self.max_bytes, self.read_timeout_s = app, max_bytes, read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        problem = self._length_problem(headers.get(b"content-length"))
        if problem is not None:
            await send_error(send, *problem)
            return
        if headers.get(b"content-type", FORM).split(b";")[0].strip() == FORM:
            headers[b"content-type"] = b"application/json"
            scope = {**scope, "headers": list(headers.items())}
        await self.app(scope, self._guarded(receive), send)

    def _length_problem(self, value: bytes | None) -> tuple[int, str] | None:
        if value is None:
            return None
        text = value.decode("latin-1").strip()
        if not text.isdigit():
            return 400, f"header 'Content-Length': must be a whole number of bytes, got {text!r}"
        if int(text) > self.max_bytes:
            return 413, (f"body of {int(text)} bytes exceeds the limit of {self.max_bytes} bytes "
                         "(MEMLAB_SERVER_MAX_BODY_BYTES)")
        return None

    def _guarded(self, receive: Receive) -> Receive:
        received, complete = 0, False

        async def guarded() -> Message:
            nonlocal received, complete
            if complete:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), timeout=self.read_timeout_s)
            except TimeoutError:
                raise HTTPException(408, f"the body did not arrive within {self.read_timeout_s:g}"
                                         " s (MEMLAB_SERVER_READ_TIMEOUT_S); nothing was done",
                                    headers=CLOSE) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if received > self.max_bytes:
                    raise HTTPException(413, f"body exceeds the limit of {self.max_bytes} bytes "
                                             "(MEMLAB_SERVER_MAX_BODY_BYTES)", headers=CLOSE)
            return message

        return guarded


async def send_error(send: Send, status: int, error: str) -> None:
    """Answer ``{"error": error}`` with ``status`` and close the connection."""
    body = json.dumps({"error": error}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
