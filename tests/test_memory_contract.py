"""memlab's own conditions pass the MemorySystem contract it ships (memlab.testing.contract),
and memories that break it fail with a message naming the rule."""

from __future__ import annotations

import importlib.util

import pytest

from memlab.memory.base import CONDITIONS, PEERS, Exchange, MemoryContext, MemoryItem, MemorySystem
from memlab.testing.contract import (
    CHECKS,
    ContractViolation,
    MemoryContract,
    NotApplicable,
    default_factory,
)

PEER_PACKAGES = {"mem0": "mem0", "langmem": "langmem", "graphiti": "graphiti_core"}
# vanilla stores nothing by design: recall and provenance do not apply to it
FORGETS = {"vanilla": ("recall", "provenance")}


def installed_peers() -> list[str]:
    return [p for p in PEERS if importlib.util.find_spec(PEER_PACKAGES[p]) is not None]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("condition", [*CONDITIONS, *installed_peers()])
def test_every_condition_keeps_the_contract(tmp_path, condition, check):
    if check in FORGETS.get(condition, ()):
        pytest.skip(f"{condition} remembers nothing by design")
    try:
        CHECKS[check](default_factory(condition), tmp_path)
    except NotApplicable as exc:
        pytest.skip(str(exc))


# --------------------------------------------------------------- memories that break the contract
class ListMemory(MemorySystem):
    """Keeps every exchange in a list; recalls those sharing a word of 3+ letters with the query,
    each naming its turn. ``_shelf`` is where the list lives (the broken ones below change it)."""

    key = "list"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turns = self._shelf()

    def _shelf(self) -> list[Exchange]:
        return []

    def observe(self, exchange: Exchange) -> None:
        self.turns.append(exchange)

    def recall(self, query: str) -> MemoryContext:
        words = {w.strip("?.,").lower() for w in query.split() if len(w) > 2}
        return MemoryContext(items=[
            MemoryItem(id=f"turn:{ex.turn_number}", kind="turn", text=ex.render(),
                       metadata={"turn_number": ex.turn_number}) for ex in self.turns
            if words & {w.strip("?.,").lower() for w in ex.user.split()}])


SHARED: dict[str, list[Exchange]] = {}
SEEN: set[tuple[str, int]] = set()


class LeakyMemory(ListMemory):
    """Keeps one list per namespace, forgetting the scope: two users of one run share it."""

    def _shelf(self) -> list[Exchange]:
        return SHARED.setdefault(self.namespace, [])


class ForgetfulMemory(ListMemory):
    """Skips an exchange whose turn it has seen in this process ("already stored"): a replay
    into a fresh memory loses every turn."""

    def observe(self, exchange: Exchange) -> None:
        if (self.scope.key, exchange.turn_number) not in SEEN:
            SEEN.add((self.scope.key, exchange.turn_number))
            super().observe(exchange)


class AnonymousMemory(ListMemory):
    """Recalls the right text but names no turn."""

    def recall(self, query: str) -> MemoryContext:
        items = super().recall(query).items
        return MemoryContext(items=[i.model_copy(update={"metadata": {}}) for i in items])


JOURNALS: list = []  # a module-level pool of open journals that close() never empties


class HoardingMemory(ListMemory):
    """Opens a journal file of its own in its folder, pools it, and never closes it."""

    def observe(self, exchange: Exchange) -> None:
        super().observe(exchange)
        if not hasattr(self, "journal"):
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.journal = open(self.workdir / f"journal-{id(self)}.txt", "a")  # noqa: SIM115
            JOURNALS.append(self.journal)


def factory(cls):
    return lambda scope, workdir, namespace: cls(scope, workdir=workdir, namespace=namespace)


def test_a_plain_list_memory_keeps_every_rule(tmp_path):
    for name, check in CHECKS.items():
        check(factory(ListMemory), tmp_path / name)


@pytest.mark.parametrize(("cls", "broken", "message"), [
    (LeakyMemory, ("scopes", "resume"), "scopes leak: the memory of "
                                        "Scope(user_id='alice', agent_id='agent') recalls WALNUT"),
    (ForgetfulMemory, ("resume",), "resume: the replayed memory lost turn 2"),
    (AnonymousMemory, ("provenance",), "names turns [], not turn 2 it holds"),
    (HoardingMemory, ("close",), "(round 1) the memory still holds 1 files open"),
])
def test_a_memory_that_breaks_a_rule_fails_that_check_with_a_message_naming_it(
        tmp_path, cls, broken, message):
    for name, check in CHECKS.items():
        SHARED.clear()
        SEEN.clear()
        if name not in broken:
            check(factory(cls), tmp_path / name)  # a rule it keeps
            continue
        with pytest.raises(ContractViolation) as failed:
            check(factory(cls), tmp_path / name)
        if name == broken[0]:
            assert message in str(failed.value)
    for journal in JOURNALS:
        journal.close()


class TestListMemoryContract(MemoryContract):
    """The pytest base class a plugin subclasses, on the list memory."""

    def make_memory(self, scope, workdir, namespace):
        return ListMemory(scope, workdir=workdir, namespace=namespace)


def test_the_base_class_fails_a_broken_memory_and_skips_what_does_not_apply(tmp_path):
    class Leaky(MemoryContract):
        def make_memory(self, scope, workdir, namespace):
            return LeakyMemory(scope, workdir=workdir, namespace=namespace)

    with pytest.raises(ContractViolation, match="scopes leak"):
        Leaky().test_scopes_do_not_see_each_other(tmp_path)

    class Vanilla(MemoryContract):
        condition = "vanilla"
        remembers = False

    with pytest.raises(pytest.skip.Exception, match="remembers nothing"):
        Vanilla().test_recalls_what_it_observed(tmp_path / "v")
    Vanilla().test_scopes_do_not_see_each_other(tmp_path / "v")
