"""What both peer adapters share: their config, the call accounting, reproducible ids and the
loopback-only network guard.

A peer's ``observe`` is the library's add call for the exchange and its ``recall`` the library's
search (``top_k`` as rag's) plus the last ``recent_turns`` exchanges verbatim, as rag sends them.
Peer memories record no source turns (``keeps_provenance = False``): evidence recall judges them
by the answer text in the prompt.
"""

from __future__ import annotations

import datetime as dt
import importlib
import time
import uuid
from abc import abstractmethod
from collections import deque
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

from memlab.errors import MemlabError
from memlab.memory._backends import RunFolder, resolve_embedder
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem
from memlab.models import new_id
from memlab.network import NetworkBlockedError, loopback_only

IN_PROCESS_PROVIDERS = frozenset({"local", "fake"})  # memory models that need no network


class PeerConfig(BaseModel):
    """Settings shared by the peer conditions."""

    top_k: int = Field(5, ge=1, description="memories recalled per query (rag's top_k)")
    recent_turns: int = Field(2, ge=0, description="last turns sent verbatim as history (rag's)")
    max_tokens: int = Field(512, ge=16, description="reply limit of one library call")
    network_guard: bool | None = Field(
        None, description="refuse every connection outside loopback while the library runs "
        "(None: on when the memory model runs in-process)")


# ---------------------------------------------------------------------------- reproducible ids
@contextmanager
def _replaced(attribute: str, value: Any, module_names: tuple[str, ...]) -> Iterator[None]:
    """Inside the block, ``attribute`` of each named module is ``value``; restored after."""
    modules = [importlib.import_module(name) for name in module_names]
    saved = [getattr(module, attribute) for module in modules]
    for module in modules:
        setattr(module, attribute, value)
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            setattr(module, attribute, original)


class _SeededUuid(ModuleType):
    """The ``uuid`` module with ``uuid4`` drawn from memlab's run-seeded ids (``new_id``)."""

    def __init__(self) -> None:
        super().__init__("uuid")

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    @staticmethod
    def uuid4() -> uuid.UUID:
        return uuid.UUID(new_id())


@contextmanager
def seeded_uuid4(*module_names: str) -> Iterator[None]:
    """Inside the block, the named library modules draw uuid4 from memlab's seeded ids, so a
    replayed run rebuilds the same memory ids (and the prompts that quote them)."""
    with _replaced("uuid", _SeededUuid(), module_names):
        yield


@contextmanager
def seeded_uuid4_function(*module_names: str) -> Iterator[None]:
    """Like ``seeded_uuid4`` for modules that import the function (``from uuid import uuid4``)."""
    with _replaced("uuid4", _SeededUuid.uuid4, module_names):
        yield


@contextmanager
def conversation_clock(when: dt.datetime | None, *module_names: str) -> Iterator[None]:
    """Inside the block, ``datetime.now()`` in the named library modules reads ``when`` (the
    stored turn's time on the conversation's clock): mem0 writes today's date into every
    extraction prompt, so without it a run's prompts changed with the day it ran on (a resume
    on another day missed the response cache), and the library saw the machine's date, not the
    conversation's. ``when`` None: the modules are left alone."""
    if when is None or not module_names:
        yield
        return
    moment = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)

    class _Clock(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:
            return moment.astimezone(tz) if tz is not None else moment.replace(tzinfo=None)

    with _replaced("datetime", _Clock, module_names):
        yield


# ---------------------------------------------------------------------------- the base class
class PeerMemory(MemorySystem):
    """A peer library behind the MemorySystem contract; subclasses implement ``_add`` (one
    exchange into the library) and ``_search`` (the library's hits for a query)."""

    keeps_provenance = False
    uses_memory_prompts = False
    Config = PeerConfig
    # a mem0 call sends ~8,000 prompt tokens of instructions: the memory model needs this window
    memory_context_window: ClassVar[int | None] = 12_288
    uuid_modules: ClassVar[tuple[str, ...]] = ()
    uuid4_modules: ClassVar[tuple[str, ...]] = ()  # ``from uuid import uuid4`` modules
    clock_modules: ClassVar[tuple[str, ...]] = ()  # whose datetime.now() is the turn's time

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.llm is None:
            raise MemlabError(f"the {self.key} condition needs a memory model (llm)")
        self.embedder = resolve_embedder(self.embedder)
        self.folder = RunFolder(self.workdir)
        self.chat = self._chat_model()
        self.recent: deque[Exchange] = deque(maxlen=max(self.config.recent_turns, 1))
        self.counts = {"stored_turns": 0, "failed_turns": 0, "memories_written": 0}
        self.failures: list[str] = []
        self.search_seconds: list[float] = []
        self.add_seconds = 0.0
        guard = self.config.network_guard
        self.guarded = guard if guard is not None else self.llm.provider in IN_PROCESS_PROVIDERS

    def _chat_model(self) -> Any:
        """The library's model over memlab's LLM layer (its ``stats`` are the call accounting):
        a LangChain chat model, with memlab's embedder as LangChain ``Embeddings`` beside it."""
        from memlab.embed.langchain_embeddings import MemlabEmbeddings
        from memlab.llm.langchain_chat import MemlabChatModel

        self.embeddings = MemlabEmbeddings(self.embedder)
        return MemlabChatModel(llm=self.llm, max_tokens=self.config.max_tokens)

    @contextmanager
    def _library(self, when: dt.datetime | None = None) -> Iterator[None]:
        with ExitStack() as stack:
            if self.guarded:
                stack.enter_context(loopback_only())
            stack.enter_context(seeded_uuid4(*self.uuid_modules))
            stack.enter_context(seeded_uuid4_function(*self.uuid4_modules))
            stack.enter_context(conversation_clock(when, *self.clock_modules))
            yield

    def observe(self, exchange: Exchange) -> None:
        start = time.perf_counter()
        try:
            with self._library(exchange.timestamp):
                self.counts["memories_written"] += self._add(exchange)
        except NetworkBlockedError:
            raise
        except Exception as exc:  # the library's failure is counted on the turn, never fatal
            self.counts["failed_turns"] += 1  # every one: the runner writes it on its turn
            self.failures.append(f"turn {exchange.turn_number}: {type(exc).__name__}: "
                                 f"{str(exc)[:200]}")
        self.counts["stored_turns"] += 1
        self.add_seconds += time.perf_counter() - start
        self.recent.append(exchange.model_copy(
            update={"metadata": {**exchange.metadata, "id": f"turn:{exchange.turn_number}"}}))

    def recall(self, query: str) -> MemoryContext:
        start = time.perf_counter()
        with self._library():
            items = self._search(query, self.config.top_k)
        self.search_seconds.append(time.perf_counter() - start)
        history = list(self.recent)[-self.config.recent_turns:] if self.config.recent_turns else []
        return MemoryContext(items=items[: self.config.top_k], history=history)

    @abstractmethod
    def _add(self, exchange: Exchange) -> int:
        """Store ``exchange`` through the library; the number of memories it wrote."""

    @abstractmethod
    def _search(self, query: str, k: int) -> list[MemoryItem]:
        """The library's ``k`` best memories for ``query``."""

    def stats(self) -> dict[str, Any]:
        """Calls, tokens and seconds of the library's model calls, parse failures, failed
        turns, search latency (p50/p95 seconds) and add wall time (this process's: a resumed
        run's manifest sums it over the run's processes, ``bench.runner.PROCESS_TOTALS``)."""
        calls = self.chat.stats.model_dump()
        return {**self.counts, "llm": calls, "failures": self.failures[:20],
                "add_seconds": round(self.add_seconds, 3),
                "search_seconds_p50": _quantile(self.search_seconds, 0.5),
                "search_seconds_p95": _quantile(self.search_seconds, 0.95),
                "searches": len(self.search_seconds)}

    def close(self) -> None:
        self.folder.cleanup()


def _quantile(values: list[float], q: float) -> float | None:
    return float(np.quantile(values, q)) if values else None
