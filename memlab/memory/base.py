"""The memory-condition contract: MemorySystem, what it observes and what it recalls.

Every condition (vanilla, full_context, rag, episodic, episodic_summary, sleep, hybrid) is a
MemorySystem. The Agent calls ``recall`` before answering and ``observe`` after, and never knows
which condition it runs.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from memlab.bench.schedule import estimate_tokens
from memlab.registry import Registry

if TYPE_CHECKING:
    from memlab.embed.base import Embedder
    from memlab.llm.base import LLMClient
    from memlab.models.sleep import CycleStats


class Scope(BaseModel):
    """Whose memory this is. No store call returns another scope's memory."""

    user_id: str = Field(min_length=1, description="the user / persona the memory is about")
    agent_id: str = Field("agent", min_length=1, description="the agent that holds it")

    @property
    def key(self) -> str:
        """``agent:user`` with ``%`` and ``:`` escaped in each part, so that distinct
        (agent_id, user_id) pairs never share a key (``a`` + ``b:c`` vs ``a:b`` + ``c``)."""
        return f"{_escape_part(self.agent_id)}:{_escape_part(self.user_id)}"


def _escape_part(text: str) -> str:
    """Percent-escape ``%`` and ``:`` (ids without them keep their stored keys)."""
    return text.replace("%", "%25").replace(":", "%3A")


class Exchange(BaseModel):
    """One user message and the assistant's reply, as stored by a memory."""

    user: str
    assistant: str
    turn_number: int = Field(ge=0)
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    session_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def render(self) -> str:
        return f"User: {self.user}\nAI: {self.assistant}"


class MemoryItem(BaseModel):
    """One memory put into the prompt, traceable to its store.

    Attributes:
        timestamp: when what it records happened (a stored turn's time), shown in the prompt
            when the conversation has a clock; None for abstractions (summaries, schemas).
    """

    id: str
    kind: str = Field(description="turn, episode, consolidated, schema, fact, scratchpad, summary")
    text: str
    score: float | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def source_turns(self) -> list[int]:
        """Turn numbers of the stored exchanges this item was taken or derived from (its
        provenance): ``turn_number`` (int) or ``turn_numbers`` / ``source_turns`` (lists) in
        ``metadata``, the keys conditions set."""
        meta = self.metadata
        turns = [meta["turn_number"]] if isinstance(meta.get("turn_number"), int) else []
        for key in ("turn_numbers", "source_turns"):
            turns += [t for t in meta.get(key) or [] if isinstance(t, int)]
        return turns


class MemoryContext(BaseModel):
    """What a condition recalls for one query.

    Attributes:
        items: memories rendered into the system prompt.
        history: exchanges the condition wants sent verbatim as chat turns (oldest first).
        truncated_turns: exchanges cut to fit the model's window (full_context).
    """

    items: list[MemoryItem] = Field(default_factory=list)
    history: list[Exchange] = Field(default_factory=list)
    truncated_turns: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.items] + [
            str(ex.metadata.get("id", f"turn:{ex.turn_number}")) for ex in self.history
        ]

    def render(self, show_time: bool = False,
               time_format: Callable[[datetime], str] | None = None) -> str:
        """The memory block of the system prompt ("" when there is nothing to show).

        Args:
            show_time: label each item that has one with its time (``[turn, Mon 08 Jan 2024
                19:00]``), so time-aware questions can be answered.
            time_format: how a time is written (default ``format_time``; a published suite
                writes its data set's own format, ``Suite.format_time``).
        """
        write = time_format or format_time
        lines = []
        for item in self.items:
            label = item.kind
            if show_time and item.timestamp is not None:
                label += f", {write(item.timestamp)}"
            lines.append(f"- [{label}] {item.text}")
        return "\n".join(lines)


def format_time(moment: datetime) -> str:
    """A timestamp as prompts show it: ``Mon 08 Jan 2024 19:00``."""
    return moment.strftime("%a %d %b %Y %H:%M")


class MemorySize(BaseModel):
    """How much a memory holds at one moment, measured the same way for every condition (the
    span-scaling report plots it against span).

    Attributes:
        items: the memories kept that recall could still put into a prompt: stored turns,
            episodes, summaries, schemas, current facts (not those retired for good: forgotten
            episodes, superseded or forgotten facts).
        tokens: the tokens of those items' texts, as recall would show them, by the suites'
            own estimate (``memlab.bench.schedule.estimate_tokens``: whitespace words or
            characters / 4, whichever is larger), not a model's tokenizer, so that every
            condition is counted alike and no model is loaded to count.
    """

    items: int = Field(ge=0)
    tokens: int = Field(ge=0)

    @classmethod
    def of(cls, texts: Iterable[str]) -> MemorySize:
        """The size of a memory holding one item per text."""
        texts = list(texts)
        return cls(items=len(texts), tokens=sum(estimate_tokens(text) for text in texts))


class NoConfig(BaseModel):
    """The config of a condition with nothing to configure."""


class MemorySystem(ABC):
    """One memory condition.

    Args:
        scope: whose memory this is.
        llm: the model, for conditions that compress or extract (None for the others).
        embedder: for conditions that search by similarity.
        workdir: folder for this run's embedded stores.
        config: the condition's own pydantic config (see ``Config`` on each subclass).
        namespace: the run this memory belongs to; everything it stores on a server carries it
            (``memlab.stores.base.run_namespace``). Default: derived from ``workdir``
            (a fresh one without a workdir), so an ad-hoc agent reopened on its folder finds
            its memory and two folders never share one.
    """

    key: ClassVar[str] = "base"
    Config: ClassVar[type[BaseModel]] = NoConfig
    # Whether prompt items record the turns they come from (``MemoryItem.source_turns``); a
    # memory without provenance is judged by the answer text alone in evidence recall.
    keeps_provenance: ClassVar[bool] = True
    # Whether the memory is told each question's evidence before recall (the oracle arm only).
    uses_evidence: ClassVar[bool] = False
    # The context window the memory's own model needs (None: the configured one will do).
    memory_context_window: ClassVar[int | None] = None
    # Whether the memory sizes what it recalls to the answering model's window and tokenizer
    # (full_context): it is then given the answering model, not the memory model.
    sized_to_answering_model: ClassVar[bool] = False
    # Whether the memory sends memlab's memory prompts (``versions.PROMPT_TEXTS["memory"]``:
    # hybrid's extractor, the compressor, schema induction) to its model; a run's identity
    # includes their version only then, so editing one leaves the runs of the others resumable.
    uses_memory_prompts: ClassVar[bool] = True

    def __init__(self, scope: Scope, *, llm: LLMClient | None = None,
                 embedder: Embedder | None = None, workdir: Path | None = None,
                 config: BaseModel | dict[str, Any] | None = None, namespace: str | None = None):
        self.scope = scope
        self.llm = llm
        self.embedder = embedder
        self.workdir = Path(workdir) if workdir else None
        self.namespace = namespace or default_namespace(self.workdir)
        if config is None or isinstance(config, dict):
            config = self.Config(**(config or {}))
        self.config = config

    @abstractmethod
    def observe(self, exchange: Exchange) -> None:
        """Store one exchange (no LLM call unless the condition's design needs one)."""

    @abstractmethod
    def recall(self, query: str) -> MemoryContext:
        """What to put in the prompt to answer ``query``."""

    def should_sleep(self) -> bool:
        """Auto-sleep check after an exchange is stored."""
        return False

    def set_evidence(self, turns: list[int]) -> None:  # noqa: B027 - optional hook
        """The turn numbers the next question needs (called only when ``uses_evidence``)."""

    def sleep(self) -> CycleStats | None:
        """Run a consolidation cycle; conditions without one return None."""
        return None

    def stats(self) -> dict[str, Any]:
        """The condition's own counters for the run manifest (model calls, failures...)."""
        return {}

    def size(self) -> MemorySize | None:
        """How much this memory holds now (the run manifest's ``memory_size``), read without a
        model call and without changing the store; None: it keeps nothing countable (the
        default, so a plugin that does not say is left out rather than counted as empty)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release stores and clients."""


def default_namespace(workdir: Path | None) -> str:
    """The namespace of a memory created without one: from its folder, else a fresh one."""
    from memlab.stores.base import run_namespace

    return run_namespace(workdir) if workdir else f"adhoc.{secrets.token_hex(6)}"


MEMORIES: Registry[MemorySystem] = Registry("memory condition", group="memlab.conditions",
                                              base=MemorySystem)
MEMORIES.register("vanilla", "memlab.memory.vanilla:VanillaMemory",
                  "no memory: system prompt + the current message")
MEMORIES.register("oracle", "memlab.memory.oracle:OracleMemory",
                  "upper bound: only the question's evidence turns, verbatim (suites name it)")
MEMORIES.register("full_context", "memlab.memory.full_context:FullContextMemory",
                  "the whole conversation in the prompt, oldest turns cut to fit the window")
MEMORIES.register("rag", "memlab.memory.rag:RagMemory",
                  "every exchange a document in chromadb; top-k by similarity + last 2 turns")
MEMORIES.register("episodic", "memlab.memory.episodic:EpisodicMemory",
                  "episodic store: 5 recent + the relevant episodes")
MEMORIES.register("episodic_summary", "memlab.memory.episodic_summary:EpisodicSummaryMemory",
                  "episodic + periodic LLM summaries of old episodes")
MEMORIES.register("sleep", "memlab.memory.sleep:SleepMemory",
                  "sleep cycle: replay, compression, schema induction, decay")
MEMORIES.register("hybrid", "memlab.memory.hybrid:HybridMemory",
                  "operating memory + distilled facts (newer supersedes older) + shared workspaces")
MEMORIES.register("mem0", "memlab.memory.peers.mem0_memory:Mem0Memory",
                  "peer: mem0 2.2.1 (mem0ai) add/search on memlab's model, embedder and chroma")
MEMORIES.register("langmem", "memlab.memory.peers.langmem_memory:LangMemMemory",
                  "peer: LangMem 0.0.30 memory store manager + LangGraph store search")
MEMORIES.register("graphiti", "memlab.memory.peers.graphiti_memory:GraphitiMemory",
                  "peer: graphiti 0.31.2 (Zep's engine) temporal graph on embedded Kuzu")
MEMORIES.register("mcp", "memlab.memory.mcp_client:McpMemory",
                  "any MCP memory server (-o url=... or -o command=...; tools and arguments "
                  "named by options, memlab mcp's by default)")
# peer libraries: opt-in conditions that need the peers extra (pip install -e ".[peers]"),
# graphiti the graphiti extra (pip install -e ".[graphiti]")
PEERS: tuple[str, ...] = ("mem0", "langmem", "graphiti")
# memories held elsewhere (a server the user names): never in a grid by default
BRIDGES: tuple[str, ...] = ("mcp",)
# the paper's conditions, in its order: built-ins only (a plugin joins a grid by name)
CONDITIONS: tuple[str, ...] = tuple(n for n in MEMORIES.builtins() if n not in PEERS + BRIDGES)
