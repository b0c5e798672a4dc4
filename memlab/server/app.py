"""The agent server's FastAPI application: session routes, the seed's ``POST /turn``, errors.

Every route but ``/health`` and the OpenAPI pages needs ``Authorization: Bearer <token>`` when
``MEMLAB_API_TOKEN`` is set. A request's work runs in a worker thread; the route waits for it
until the deadline (``MEMLAB_SERVER_DEADLINE_S``) or until the client disconnects, whichever
comes first. A request given up before its result was stored stores nothing (504, or 499 for a
client that left); once storing has begun the request is answered. A 200 is sent only after the
session's journal holds the step (fsync'ed), so an acknowledged turn survives a crash.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

import memlab
from memlab.agent import TurnTrace
from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, DamagedFileError, MemlabError, fields_message
from memlab.models.api import (
    SESSION_ID_PATTERN,
    ErrorReply,
    Health,
    MemoryView,
    ObserveReply,
    ObserveRequest,
    SeedTurnRequest,
    SessionCreate,
    SessionInfo,
    SleepReply,
    TurnRequest,
)
from memlab.server.guard import BodyGuard
from memlab.server.sessions import (
    ForeignFolderError,
    SessionManager,
    Ticket,
    UnknownSessionError,
)

log = logging.getLogger(__name__)
POLL_S = 0.05  # how often a waiting route checks its deadline and its client
WORKERS = 8
T = TypeVar("T")
SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN, description="from POST /sessions")]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorReply, "description": why} for code, why in {
        400: "the body is not JSON text (or a malformed request)",
        401: "missing or wrong bearer token", 404: "no such session",
        408: "the body did not arrive within MEMLAB_SERVER_READ_TIMEOUT_S",
        413: "body too large", 422: "a field breaks a rule (named in the error)",
        502: "the model call failed (nothing stored)",
        503: "a store is unavailable, a session's files are damaged or its folder holds files "
             "memlab did not create (the server log names them), or the server is shutting down",
        504: "no answer within the deadline (nothing stored)"}.items()}


class TurnReply(TurnTrace):
    """The reply and its TurnTrace (tokens split, latency, memory ids)."""

    session_id: str
    turn_number: int


class Server:
    """The routes' shared state: sessions, worker threads, deadline."""

    def __init__(self, manager: SessionManager, settings: Settings):
        self.manager, self.settings = manager, settings
        self.executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="memlab-session")

    async def run(self, request: Request, work: Callable[[Ticket], T]) -> T:
        """``work(ticket)`` in a worker thread, given up at the deadline or on disconnect."""
        loop, ticket = asyncio.get_running_loop(), Ticket()
        future = self.submit(work, ticket)
        future.add_done_callback(_consume)  # a given-up request's late error is not "unhandled"
        end = loop.time() + self.settings.server_deadline_s
        while True:
            done, _ = await asyncio.wait({future}, timeout=POLL_S)
            if done:
                return future.result()
            timed_out = loop.time() >= end
            if (timed_out or await request.is_disconnected()) and ticket.abandon():
                if timed_out:
                    raise HTTPException(504, f"no answer within {self.settings.server_deadline_s:g}"
                                             " s (MEMLAB_SERVER_DEADLINE_S); nothing was stored")
                raise HTTPException(499, "the client disconnected; nothing was stored")

    def submit(self, work: Callable[..., T], *args: Any) -> asyncio.Future:
        """``work(*args)`` in a worker thread (MemlabError, so 503, once shut down)."""
        try:
            return asyncio.get_running_loop().run_in_executor(self.executor, work, *args)
        except RuntimeError:  # the executor was shut down
            raise MemlabError("the server is shutting down") from None

    async def session(self, session_id: str):
        return await self.submit(self.manager.get, session_id)

    def close(self) -> None:
        opened = self.manager.close()
        self.executor.shutdown(wait=True)
        print(f"memlab agent server stopped: {opened} open sessions closed, every acknowledged "
              "step is in its journal", flush=True)


def create_app(manager: SessionManager, *, settings: Settings | None = None,
               routers: Sequence[APIRouter] = ()) -> FastAPI:
    """The ASGI app serving ``manager``'s sessions, with ``routers`` mounted behind the token."""
    settings = settings or get_settings()
    server = Server(manager, settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        server.close()  # after uvicorn has finished every request in flight

    app = FastAPI(title="memlab agent server", version=memlab.__version__, lifespan=lifespan,
                  strict_content_type=False, description=__doc__)
    app.state.server = server
    app.add_middleware(BodyGuard, max_bytes=settings.server_max_body_bytes,
                       read_timeout_s=settings.server_read_timeout_s)
    _add_error_handlers(app)
    guarded = [Depends(bearer_check(settings))]
    app.include_router(session_routes(server), dependencies=guarded, responses=ERRORS)
    for router in routers:
        app.include_router(router, dependencies=guarded, responses=ERRORS)

    @app.get("/health", response_model=Health, tags=["server"])
    def health() -> Health:
        return Health(condition=manager.condition, sessions=manager.count(),
                      auth=settings.api_token is not None)

    return app


def bearer_check(settings: Settings) -> Callable[..., None]:
    """A dependency requiring ``Authorization: Bearer <MEMLAB_API_TOKEN>`` when a token is set."""
    scheme = HTTPBearer(auto_error=False, description="MEMLAB_API_TOKEN, when the server has one")
    token = settings.api_token.get_secret_value().encode() if settings.api_token else None

    def check(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:
        if token is None:
            return
        given = credentials.credentials.encode() if credentials else b""
        if not hmac.compare_digest(given, token):
            raise HTTPException(401, "missing or wrong bearer token (Authorization: Bearer "
                                     "<MEMLAB_API_TOKEN>)", headers={"WWW-Authenticate": "Bearer"})

    return check


def session_routes(server: Server) -> APIRouter:
    """Sessions: create, get, delete (reset), memory view; then the conversation routes."""
    router, manager = APIRouter(tags=["sessions"]), server.manager

    @router.post("/sessions", status_code=201, response_model=SessionInfo)
    async def create_session(request: Request, body: SessionCreate) -> SessionInfo:
        return await server.run(request, lambda _ticket: manager.create(body))

    @router.get("/sessions/{session_id}", response_model=SessionInfo)
    async def get_session(session_id: SessionId) -> SessionInfo:
        return manager.info(await server.session(session_id))

    @router.delete("/sessions/{session_id}", status_code=204, response_class=Response)
    async def delete_session(request: Request, session_id: SessionId) -> Response:
        await server.run(request, lambda _ticket: manager.delete(session_id))
        return Response(status_code=204)

    @router.get("/sessions/{session_id}/memory", response_model=MemoryView)
    async def memory(request: Request, session_id: SessionId,
                     query: Annotated[str | None, Query(max_length=10_000)] = None,
                     limit: Annotated[int, Query(ge=0, le=100_000)] = 100) -> MemoryView:
        session = await server.session(session_id)
        return await server.run(request, lambda _t: manager.view(session, query, limit))

    add_conversation_routes(router, server)
    return router


def add_conversation_routes(router: APIRouter, server: Server) -> None:
    """turn, observe and sleep on a session, and the seed's plain ``POST /turn``."""
    manager = server.manager

    @router.post("/sessions/{session_id}/turn", response_model=TurnReply)
    async def turn(request: Request, session_id: SessionId, body: TurnRequest) -> Any:
        session = await server.session(session_id)
        return reply(session_id, await server.run(
            request, lambda t: manager.answer(session, body, t)))

    @router.post("/sessions/{session_id}/observe", response_model=ObserveReply)
    async def observe(request: Request, session_id: SessionId,
                      body: ObserveRequest) -> ObserveReply:
        session = await server.session(session_id)
        turn_number, stats = await server.run(request, lambda t: manager.observe(session, body, t))
        return ObserveReply(session_id=session_id, turn_number=turn_number,
                            slept=stats is not None, cycle_stats=_dump(stats))

    @router.post("/sessions/{session_id}/sleep", response_model=SleepReply)
    async def sleep(request: Request, session_id: SessionId) -> SleepReply:
        session = await server.session(session_id)
        stats = await server.run(request, lambda t: manager.sleep(session, t))
        return SleepReply(session_id=session_id, cycle_stats=_dump(stats))

    @router.post("/turn", response_model=TurnReply, tags=["seed"])
    async def seed_turn(request: Request, body: SeedTurnRequest) -> Any:
        """The seed's payload on the default session (``history`` is accepted, not used)."""
        session = await server.submit(manager.default)
        return reply(session.info.id, await server.run(
            request, lambda t: manager.answer(session, TurnRequest(message=body.message), t)))


def reply(session_id: str, result: tuple[TurnTrace, int]) -> Any:
    """200 with the TurnReply; 502 naming the model error (the turn was not stored)."""
    trace, turn_number = result
    if trace.error is not None:
        return JSONResponse({"error": f"the model call failed, nothing stored: {trace.error}"},
                            status_code=502)
    return TurnReply(**trace.model_dump(), session_id=session_id, turn_number=turn_number)


def _consume(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


def _dump(stats: Any) -> dict[str, Any] | None:
    return None if stats is None else stats.model_dump(mode="json")


def _add_error_handlers(app: FastAPI) -> None:
    """Every error is ``{"error": one line}``; user mistakes 4xx, environment trouble 503."""

    def error(status: int, text: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": text}, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, fields_message(list(exc.errors()), whole="body"))

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail), exc.headers)

    @app.exception_handler(UnknownSessionError)
    async def unknown(_request: Request, exc: UnknownSessionError) -> JSONResponse:
        return error(404, str(exc))

    @app.exception_handler(ConfigError)
    async def config(_request: Request, exc: ConfigError) -> JSONResponse:
        return error(422, str(exc))

    async def server_files(_request: Request,
                           exc: DamagedFileError | ForeignFolderError) -> JSONResponse:
        log.error("%s", exc)  # the path stays in the server's log, out of the reply
        return error(503, exc.public)

    app.add_exception_handler(DamagedFileError, server_files)
    app.add_exception_handler(ForeignFolderError, server_files)

    @app.exception_handler(MemlabError)
    async def unavailable(_request: Request, exc: MemlabError) -> JSONResponse:
        return error(503, f"{type(exc).__name__}: {exc}")
