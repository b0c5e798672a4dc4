"""The recency condition: BM25, the recency weighting, and memlab's MemorySystem contract."""

from __future__ import annotations

from memlab_recency import RecencyMemory
from memlab_recency.bm25 import BM25Index

from memlab.memory.base import Exchange, Scope
from memlab.testing.contract import MemoryContract


class TestRecencyContract(MemoryContract):
    """memlab's contract: recall, scopes, provenance, resume, close."""

    def make_memory(self, scope, workdir, namespace):
        return RecencyMemory(scope, workdir=workdir, namespace=namespace)


def test_bm25_ranks_the_turn_sharing_rare_words_first_and_skips_the_others():
    index = BM25Index()
    for text in ("we talked about the weather", "my dog is called Rex",
                 "the weather was fine and the weather was warm"):
        index.add(text)
    scores = index.scores("what is my dog called?")
    assert scores[1] > 0 and scores[0] == scores[2] == 0
    weather = index.scores("weather")
    assert weather[2] > weather[0] > 0  # two mentions beat one, damped by length


def memory(**config) -> RecencyMemory:
    return RecencyMemory(Scope(user_id="alice"), config={"recent_turns": 0, **config})


def test_of_two_equally_relevant_turns_the_newer_comes_first():
    recency = memory(half_life_turns=5)
    recency.observe(Exchange(user="My favourite drink is tea.", assistant="ok", turn_number=1))
    for n in range(2, 12):
        recency.observe(Exchange(user=f"Small talk {n}.", assistant="ok", turn_number=n))
    recency.observe(Exchange(user="My favourite drink is coffee.", assistant="ok",
                             turn_number=12))
    items = recency.recall("favourite drink").items
    assert [i.metadata["turn_number"] for i in items] == [12, 1]
    assert items[0].score > items[1].score


def test_an_old_turn_that_alone_matches_still_comes_back_and_history_is_not_repeated():
    recency = memory(recent_turns=2, top_k=3)
    recency.observe(Exchange(user="My sister lives in Oslo.", assistant="ok", turn_number=1))
    for n in range(2, 300):
        recency.observe(Exchange(user=f"Small talk {n}.", assistant="ok", turn_number=n))
    context = recency.recall("Where does my sister live?")
    assert [i.metadata["turn_number"] for i in context.items] == [1]
    assert [ex.turn_number for ex in context.history] == [298, 299]
    assert recency.recall("small talk 299").items[0].metadata["turn_number"] != 299
