"""hybrid honours the user's requests to forget (memlab.memory.hybrid_forget)."""

from __future__ import annotations

import pytest
from memory_fakes import memory_llm, role_of

from memlab.bench.suites.ltm import RESETS
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.memory.hybrid_facts import DistilledFact, DistilledFactStore
from memlab.memory.hybrid_forget import choose_forgotten, is_forget_request, render_question


@pytest.mark.parametrize("message", [*RESETS.values(), "Please forget my old address.",
                                     "Can you delete what I said about my job?",
                                     "That's done. Clear my to-do list."])
def test_requests_to_forget_are_recognised(message):
    assert is_forget_request(message)


@pytest.mark.parametrize("message", [
    "I had to cancel my trip to Rome.", "Don't forget my birthday is on Tuesday.",
    "I cleared the garage last weekend.", "Forgetting names is normal, I think.",
    "What did you forget?", "My favourite colour is blue."])
def test_other_uses_of_the_words_are_not_requests(message):
    assert not is_forget_request(message)


def test_the_model_is_asked_of_each_fact_and_may_answer_only_yes_or_no():
    llm = FakeLLM(["no", "yes"])
    chosen, failure = choose_forgotten(llm, "Forget my car.", ["The user likes tea.",
                                                              "The user's car is red."])
    assert (chosen, failure) == ([1], None)
    assert [m[-1].content for m in llm.history] == [
        render_question("Forget my car.", "The user likes tea."),
        render_question("Forget my car.", "The user's car is red.")]
    assert all(p["choices"] == ["yes", "no"] for p in llm.params)


def test_an_unreadable_reply_forgets_nothing_and_says_why():
    chosen, failure = choose_forgotten(FakeLLM(["yes", "maybe"]), "Forget my car.", ["a", "b"])
    assert chosen == [] and "maybe" in failure
    assert choose_forgotten(None, "Forget my car.", ["a"]) == ([], "no llm")
    assert choose_forgotten(None, "Forget my car.", []) == ([], None)


def _hybrid(tmp_path, llm=None, **config):
    return MEMORIES.create("hybrid", scope=Scope(user_id="u"), llm=llm or memory_llm(),
                           embedder=HashingEmbedder(), workdir=tmp_path, config=config)


def _said(memory, turn: int, user: str) -> None:
    memory.observe(Exchange(user=user, assistant="Noted.", turn_number=turn))


def test_a_request_retires_the_facts_it_covers_and_nothing_else(tmp_path):
    memory = _hybrid(tmp_path)
    _said(memory, 1, "My name is Rowan.")
    _said(memory, 2, "My favourite colour is teal.")
    _said(memory, 3, "Forget my name, please.")
    name, colour = memory.facts.all()
    assert name.forgotten_turn == 3 and not name.current
    assert colour.forgotten_turn is None and colour.current
    recalled = " ".join(i.text for i in memory.recall("What is my name?").items)
    assert "Rowan" not in recalled and "teal" in recalled  # the note went with the fact
    assert memory.stats()["forget_requests"] == 1 and memory.stats()["facts_forgotten"] == 1
    # a later fact on the subject is current on its own: it supersedes nothing forgotten
    _said(memory, 4, "My name is Ash.")
    ash = memory.facts.all()[-1]
    assert ash.current and ash.supersedes == "" and memory.facts.current_id("name") == ash.id
    memory.close()


def test_forgetting_survives_a_reopened_store(tmp_path):
    store = DistilledFactStore(tmp_path, "u", HashingEmbedder(), subject_similarity=0.88)
    old = store.add_fact(DistilledFact(id="f1", subject="shopping list", confidence=0.9,
                                       content="The user needs two eggs."))
    assert store.forget([old.id, "missing"], turn=5) == [old.id]
    assert store.forget([old.id], turn=6) == []  # forgotten once
    store.close()
    again = DistilledFactStore(tmp_path, "u", HashingEmbedder(), subject_similarity=0.88)
    assert again.relevant("eggs", 5) == [] and again.current_id("shopping list") is None
    assert again.get("f1").forgotten_turn == 5
    new = again.add_fact(DistilledFact(id="f2", subject="shopping list", confidence=0.9,
                                       content="The user needs milk."))
    assert new.supersedes == "" and [f.id for f, _ in again.relevant("milk", 5)] == ["f2"]
    again.close()


def test_a_failed_forget_call_keeps_every_fact_and_is_counted(tmp_path):
    memory = _hybrid(tmp_path, llm=memory_llm(broken={"forget"}))
    _said(memory, 1, "My name is Rowan.")
    _said(memory, 2, "Forget my name.")
    assert [f.current for f in memory.facts.all()] == [True]
    stats = memory.stats()
    assert stats["failed_turns"] == 1 and "(forget)" in stats["failures"][0]
    memory.close()


def test_forgetting_can_be_turned_off(tmp_path):
    llm = memory_llm()
    memory = _hybrid(tmp_path, llm=llm, forget_requests=False)
    _said(memory, 1, "My name is Rowan.")
    _said(memory, 2, "Forget my name.")
    assert "forget" not in {role_of(m) for m in llm.history}
    assert memory.facts.all()[0].current
    memory.close()
