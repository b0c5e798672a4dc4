"""The MemorySystem contract as tests any memory can run (docs/plugins.md).

Five checks, each a function of a factory ``make(scope, workdir, namespace) -> MemorySystem`` and
an empty folder to work in, raising :class:`ContractViolation` with what went wrong:

- ``check_recall``: an observed fact comes back in the recall for a question about it, also
  after a sleep cycle.
- ``check_scopes``: two memories sharing a folder and a namespace never recall each other's
  turns (two users; ids that collide when joined naively).
- ``check_provenance``: recalled items name the turns they came from (``source_turns``), so
  evidence recall can credit them; no item names a turn that was never observed.
- ``check_resume``: a memory rebuilt by replaying the same exchanges into a fresh folder (how a
  killed run resumes) recalls the same items and loses no stored turn.
- ``check_close``: ``close`` releases what the memory opened: opening and closing it again and
  again holds no more files and threads.

The conversation is driven as the Agent drives it (``observe``, then ``sleep`` when
``should_sleep``; ``set_evidence`` before ``recall`` for a memory that ``uses_evidence``). Offline
and in seconds with :func:`default_factory` (a FakeLLM playing memlab's memory roles and the
hashing embedder). Plugin authors subclass :class:`MemoryContract` in a pytest module.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar, NamedTuple

from memlab.memory.base import Exchange, MemoryContext, MemorySystem, Scope
from memlab.models import seed_ids

Factory = Callable[[Scope, Path, str], MemorySystem]
START = datetime(2025, 3, 3, 9, tzinfo=UTC)
NAMESPACE = "contract"
TOPICS = ("the weather", "football", "cooking pasta", "train timetables", "gardening", "films")


class Fact(NamedTuple):
    """A turn the memory must keep: what the user said, a question about it, the word the
    recall must bring back."""

    turn: int
    said: str
    question: str
    word: str


FACTS = (Fact(2, "My sister is called Quenby and she lives in Tromso.",
              "What is my sister called?", "Quenby"),
         Fact(5, "My car is a green Volvo estate from 2011.", "What car do I drive?", "Volvo"))
TURNS = 12
SECRETS = ("PINEAPPLE", "WALNUT")
SCOPE_PAIRS = ((Scope(user_id="alice"), Scope(user_id="bob")),
               # "a" + "b:c" and "a:b" + "c" are both "a:b:c" when joined naively
               (Scope(agent_id="a", user_id="b:c"), Scope(agent_id="a:b", user_id="c")))


class ContractViolation(AssertionError):
    """A memory broke the MemorySystem contract; the message says which rule and how."""


class NotApplicable(Exception):  # noqa: N818 - a verdict, not a failure
    """The check does not apply to this memory (the message says why)."""


def default_factory(condition: str) -> Factory:
    """A factory of the registered ``condition`` on a FakeLLM that plays memlab's and the peers'
    memory roles (``memlab.testing.fakes``) and the hashing embedder."""
    from memlab.embed.hashing import HashingEmbedder
    from memlab.memory.base import MEMORIES
    from memlab.testing.fakes import memory_llm, peer_reply

    def make(scope: Scope, workdir: Path, namespace: str) -> MemorySystem:
        return MEMORIES.create(condition, scope=scope, llm=memory_llm(peer_reply),
                               embedder=HashingEmbedder(), workdir=workdir, namespace=namespace)

    return make


def conversation(secret: str | None = None) -> list[Exchange]:
    """Filler turns about everyday topics with the FACTS (or, with ``secret``, one secret code
    word at turn 2) among them; an hour apart, numbered from 1 as the Agent numbers turns."""
    said = {fact.turn: fact.said for fact in FACTS} if secret is None else {
        2: f"My secret code word is {secret}."}
    return [Exchange(user=said.get(t, f"Let's chat about {TOPICS[t % len(TOPICS)]}, part {t}."),
                     assistant="Noted." if t in said else "Sure, happy to.", turn_number=t,
                     timestamp=START + timedelta(hours=t)) for t in range(1, TURNS + 1)]


def feed(memory: MemorySystem, exchanges: list[Exchange]) -> None:
    """Observe each exchange and sleep when the memory asks to, as the Agent does."""
    for exchange in exchanges:
        memory.observe(exchange)
        if memory.should_sleep():
            memory.sleep()


def recall(memory: MemorySystem, question: str, evidence: list[int]) -> MemoryContext:
    """``memory.recall(question)``, told the evidence first when it ``uses_evidence``."""
    if memory.uses_evidence:
        memory.set_evidence(evidence)
    return memory.recall(question)


def recalled_text(context: MemoryContext) -> str:
    """Everything a recall puts into the prompt: its items and its history."""
    return "\n".join([context.render(), *(ex.render() for ex in context.history)])


def check_recall(make: Factory, folder: Path) -> None:
    """Each fact observed among filler comes back for a question about it, before and after a
    sleep cycle."""
    memory = make(Scope(user_id="alice"), folder, NAMESPACE)
    try:
        feed(memory, conversation())
        for moment in ("after observing", "after sleep"):
            for fact in FACTS:
                text = recalled_text(recall(memory, fact.question, [fact.turn]))
                _require(fact.word in text, f"recall {moment}: turn {fact.turn} ({fact.said!r}) "
                         f"does not come back for {fact.question!r}; recalled:\n"
                         f"{text.strip() or '(nothing)'}")
            memory.sleep()
    finally:
        memory.close()


def check_scopes(make: Factory, folder: Path) -> None:
    """Two memories in one folder and namespace, fed in turn like two users of one server,
    recall their own secret and never the other's (also after each sleeps)."""
    for pair in SCOPE_PAIRS:
        memories = [make(scope, folder, NAMESPACE) for scope in pair]
        try:
            talks = [conversation(secret) for secret in SECRETS]
            for turn in range(TURNS):
                for memory, talk in zip(memories, talks, strict=True):
                    feed(memory, [talk[turn]])
            for memory in memories:
                memory.sleep()
            for memory, scope, other in zip(memories, pair, SECRETS[::-1], strict=True):
                text = recalled_text(recall(memory, "What is my secret code word?", [2]))
                _require(other not in text, f"scopes leak: the memory of {scope!r} recalls "
                         f"{other}, a turn observed only by the memory of another scope")
        finally:
            for memory in memories:
                memory.close()


def check_provenance(make: Factory, folder: Path) -> None:
    """The fact's turn is among the turns a recall names (history turn numbers and every item's
    ``source_turns``); an item holding the fact names its turn; no named turn is invented."""
    from memlab.bench.runner import context_turns

    memory = make(Scope(user_id="alice"), folder, NAMESPACE)
    try:
        if not memory.keeps_provenance:
            raise NotApplicable("provenance: the memory keeps none (keeps_provenance = False): "
                                "evidence recall judges it by the answer text alone")
        feed(memory, conversation())
        for moment in ("after observing", "after sleep"):
            for fact in FACTS:
                context = recall(memory, fact.question, [fact.turn])
                named = context_turns(context)
                _require(fact.turn in named, f"provenance {moment}: the recall for "
                         f"{fact.question!r} names turns {sorted(named)}, not turn {fact.turn} "
                         "it holds (set metadata turn_number or turn_numbers on each item)")
                for item in context.items:
                    _require(fact.word not in item.text or fact.turn in item.source_turns,
                             f"provenance {moment}: item {item.id!r} holds turn {fact.turn}'s "
                             f"{fact.word!r} but names turns {item.source_turns}")
                invented = sorted(named - set(range(1, TURNS + 1)))
                _require(not invented, f"provenance {moment}: the recall names turns {invented}"
                         f" that were never observed (turns 1-{TURNS} were)")
            memory.sleep()
    finally:
        memory.close()


def check_resume(make: Factory, folder: Path) -> None:
    """A memory rebuilt by replaying the same exchanges into a fresh folder (a resumed run)
    recalls the same items, in the same order, and keeps every fact the first one recalled."""
    first, second = (_replayed(make, folder / name) for name in ("first", "replayed"))
    for fact, before, after in zip(FACTS, first, second, strict=True):
        _require(not (fact.word in "\n".join(before) and fact.word not in "\n".join(after)),
                 f"resume: the replayed memory lost turn {fact.turn} ({fact.said!r}): the "
                 f"first recalled it for {fact.question!r}, the replayed one did not")
        _require(before == after, f"resume: the replayed memory recalls other items for "
                 f"{fact.question!r}:\n  first:    {before}\n  replayed: {after}")


def _replayed(make: Factory, workdir: Path) -> list[list[str]]:
    """Per fact, what a memory fed the conversation in ``workdir`` recalls (text and turns)."""
    seed_ids(NAMESPACE)  # ids drawn as a run draws them: the same in a replay
    memory = make(Scope(user_id="alice"), workdir, NAMESPACE)
    try:
        feed(memory, conversation())
        contexts = [recall(memory, fact.question, [fact.turn]) for fact in FACTS]
        return [[f"{item.text} {item.source_turns}" for item in ctx.items] +
                [f"{ex.render()} [{ex.turn_number}]" for ex in ctx.history] for ctx in contexts]
    finally:
        memory.close()
        seed_ids(None)


def check_close(make: Factory, folder: Path) -> None:
    """Opening, feeding and closing a memory on one folder again and again leaves no file under
    the folder open (Linux) and no more threads running each time: ``close`` releases what the
    memory opened (chromadb's per-folder system included: it stops with its last client)."""
    threads = []
    for round_ in range(1, 4):
        memory = make(Scope(user_id="alice"), folder, NAMESPACE)
        feed(memory, conversation()[:4])
        memory.close()
        gc.collect()  # a store may let its files go with its last reference
        held = open_files_under(folder)
        _require(not held, f"close: after close (round {round_}) the memory still holds "
                 f"{len(held)} files open under its folder, e.g. {', '.join(held[:3])}")
        threads.append(threading.active_count())
    _require(threads[2] <= threads[1], "close: each memory opened and closed leaves more "
             f"threads running ({', '.join(map(str, threads))})")


def open_files_under(folder: Path) -> list[str]:
    """Paths under ``folder`` this process holds open (empty where /proc is missing)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return []
    root, held = str(Path(folder).resolve()) + os.sep, []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed while listing
            continue
        if target.startswith(root):
            held.append(target)
    return sorted(held)


CHECKS: dict[str, Callable[[Factory, Path], None]] = {
    "recall": check_recall, "scopes": check_scopes, "provenance": check_provenance,
    "resume": check_resume, "close": check_close}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


class MemoryContract:
    """Pytest base class: subclass it as ``Test<YourMemory>`` and give ``condition`` (a
    registered name) or override ``make_memory``; each check is then one test.

    Attributes:
        condition: the registered name made by the default ``make_memory``.
        remembers: False for a memory that stores nothing on purpose (recall and provenance are
            then skipped; scopes, resume and close still run).

    Example::

        class TestRecency(MemoryContract):
            def make_memory(self, scope, workdir, namespace):
                return RecencyMemory(scope, workdir=workdir, namespace=namespace)
    """

    condition: ClassVar[str | None] = None
    remembers: ClassVar[bool] = True

    def make_memory(self, scope: Scope, workdir: Path, namespace: str) -> MemorySystem:
        if self.condition is None:
            raise NotImplementedError("set condition or override make_memory")
        return default_factory(self.condition)(scope, workdir, namespace)

    def test_recalls_what_it_observed(self, tmp_path: Path) -> None:
        self._run("recall", tmp_path)

    def test_scopes_do_not_see_each_other(self, tmp_path: Path) -> None:
        self._run("scopes", tmp_path)

    def test_recalled_items_name_their_turns(self, tmp_path: Path) -> None:
        self._run("provenance", tmp_path)

    def test_a_replay_recalls_the_same(self, tmp_path: Path) -> None:
        self._run("resume", tmp_path)

    def test_close_releases_the_folder(self, tmp_path: Path) -> None:
        self._run("close", tmp_path)

    def _run(self, check: str, folder: Path) -> None:
        import pytest

        if check in ("recall", "provenance") and not self.remembers:
            pytest.skip(f"{check}: the memory remembers nothing by design")
        try:
            CHECKS[check](self.make_memory, folder)
        except NotApplicable as exc:
            pytest.skip(str(exc))
