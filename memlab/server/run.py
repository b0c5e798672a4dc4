"""Run the agent server under uvicorn: checks before binding, graceful shutdown on SIGTERM.

On SIGTERM or Ctrl-C uvicorn stops accepting connections and lets every request in flight
finish (up to the request deadline); then every session's journal and stores are closed.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from fastapi import APIRouter

from memlab.config import Settings, get_settings
from memlab.errors import ConfigError
from memlab.network import is_loopback
from memlab.server.app import create_app
from memlab.server.sessions import SessionManager


def extra_routers(*, llm: Any, embedder: Any, workdir: Path,
                  docs: str | Path | None = None) -> list[APIRouter]:
    """Routers mounted beside the session routes, behind the same token: one line each.

    Document QA (seed 001) answers from the chunks ``memlab docqa ingest`` stored in ``docs``
    (default ``<workdir>/docqa``).
    """
    from memlab.docqa import DocumentQA
    from memlab.docqa.http import docqa_router

    docs = Path(docs) if docs is not None else Path(workdir) / "docqa"
    return [docqa_router(DocumentQA.from_settings(llm, embedder, docs))]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (ConfigError naming the address when it is taken)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r}: not an address this machine has ({exc})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror}); "
                          "choose another port") from None
    sock.listen(128)
    return sock


def serve(*, condition: str, llm: Any, embedder: Any, workdir: str | Path,
          host: str = "127.0.0.1", port: int = 8765, settings: Settings | None = None,
          docs: str | Path | None = None) -> None:
    """Serve sessions of ``condition`` (the default) until SIGTERM or Ctrl-C.

    Raises:
        ConfigError: a host beyond loopback without ``MEMLAB_API_TOKEN``, or a port in use.
    """
    import uvicorn

    settings = settings or get_settings()
    if not is_loopback(host) and settings.api_token is None:
        raise ConfigError(f"--host {host}: serving beyond loopback needs a bearer token; set "
                          "MEMLAB_API_TOKEN (clients send Authorization: Bearer <token>)")
    workdir = Path(workdir)
    sock = bind(host, port)
    manager = SessionManager(workdir, condition=condition, llm=llm, embedder=embedder)
    app = create_app(manager, settings=settings,
                     routers=extra_routers(llm=llm, embedder=embedder, workdir=workdir,
                                           docs=docs))
    config = uvicorn.Config(app, log_level="warning", timeout_keep_alive=5,
                            timeout_graceful_shutdown=int(settings.server_deadline_s) + 5)
    url = f"http://{host}:{sock.getsockname()[1]}"
    print(f"memlab agent server ({condition}) at {url} (API docs: {url}/docs; sessions in "
          f"{manager.root}){'; bearer token required' if settings.api_token else ''}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
