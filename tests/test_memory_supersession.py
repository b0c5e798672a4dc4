"""Unit tests of hybrid supersession when the extractor writes long or noisy subjects."""

from __future__ import annotations

import json
import uuid

import pytest
from memory_fakes import memory_llm, role_of

from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.memory.hybrid_extract import PromotionCandidate, check_candidates, subject_key
from memlab.memory.hybrid_facts import DistilledFact, DistilledFactStore


@pytest.mark.parametrize(("raw", "key"), [
    ("Favorite Color", "favourite colour"),
    ("My favourite colour is now blue", "favourite colour"),
    ("Favourite colour is red.", "favourite colour"),
    ("User's daughter's name", "daughter name"),
    ("the user\u2019s home city", "home city"),
    ("blue is my favourite colour these days", "favourite colour these days"),
    ("is", "is"),  # nothing before the copula: keep the words
    ("opinion of city breaks", "city breaks"),  # an attitude's frame goes
    ("The user's feelings about jazz records", "jazz records"),
    ("opinion", "opinion"),
])
def test_subject_key_normalises_sentences_possessives_and_spelling(raw, key):
    assert subject_key(raw) == key


def fact(subject: str, content: str, turn: int) -> DistilledFact:
    return DistilledFact(id=str(uuid.uuid4()), subject=subject_key(subject), content=content,
                         confidence=0.9, turn_number=turn)


def test_similar_subjects_supersede_and_the_chain_keeps_one_key(tmp_path):
    store = DistilledFactStore(tmp_path, "a:u", HashingEmbedder(), subject_similarity=0.7)
    red = store.add_fact(fact("favourite colour", "The user's favourite colour is red.", 1))
    wife = store.add_fact(fact("wife name", "The user's wife is Ana.", 2))
    blue = store.add_fact(fact("favourite colour shade", "The user's favourite colour is blue.", 5))
    assert blue.supersedes == red.id and blue.subject == "favourite colour"
    assert store.get(red.id).superseded_by == blue.id
    husband = store.add_fact(fact("husband name", "The user's husband is Bo.", 6))
    assert husband.supersedes == "" and store.get(wife.id).superseded_by == ""
    assert store.current_id("favourite colour") == blue.id
    assert [f.content for f, _ in store.relevant("favourite colour", 5)
            if "colour" in f.content] == [blue.content]
    store.close()


def test_without_subject_similarity_only_identical_subjects_supersede(tmp_path):
    store = DistilledFactStore(tmp_path, "a:u", HashingEmbedder(), subject_similarity=None)
    red = store.add_fact(fact("favourite colour", "red", 1))
    blue = store.add_fact(fact("favourite colour shade", "blue", 2))
    assert blue.supersedes == "" and store.get(red.id).superseded_by == ""


def test_check_drops_ungrounded_candidates_and_prefers_the_users_words():
    exchange = Exchange(user="Actually my favourite colour is now blue.", assistant="Blue it is.",
                        turn_number=4)
    llm_found = [
        PromotionCandidate(subject="daughter's name", content="The user's son is called Felix.",
                           confidence=0.9),  # copied from the prompt: shares no word
        PromotionCandidate(subject="Favourite colour is now blue", content="Blue it is.",
                           confidence=1.0),  # the assistant's reply: one word of the user's
    ]
    kept = check_candidates(llm_found, exchange)
    assert len(kept) == 1 and kept[0].extractor == "rules"
    assert kept[0].content == "The user's favourite colour is now blue."


def test_check_ignores_words_of_the_users_questions():
    exchange = Exchange(user="Which planets have rings? My dog is Rex.", assistant="Saturn.",
                        turn_number=2)
    llm_found = [PromotionCandidate(subject="planets", content="Saturn and Jupiter have rings.",
                                    confidence=0.9)]
    assert [c.content for c in check_candidates(llm_found, exchange)] == [
        "The user's dog is Rex."]


def test_check_keeps_a_grounded_llm_candidate_on_a_tie_or_a_new_subject():
    exchange = Exchange(user="My cat's name is Tiger. I love jazz.", assistant="ok",
                        turn_number=1)
    llm_found = [PromotionCandidate(subject="cat's name", content="The user's cat's name is "
                                    "Tiger.", confidence=0.9, extractor="llm")]
    kept = check_candidates(llm_found, exchange)
    assert [(c.extractor, subject_key(c.subject)) for c in kept] == [
        ("llm", "cat name"), ("rules", "jazz")]


def persona_extractor(subject: str):
    """The 0.5B on persona's preferences, as the scaling grid's stores show it: the prompt
    example's subject "opinion of X" (persona 32k, seed 0) or the bare "X" (persona 4k, seed 0),
    for a liking and for its change of mind."""
    def reply(messages) -> str:
        if "changed my mind" in messages[-1].content:
            content = ("Since February 26 the user dislikes city breaks because it became too "
                       "expensive.")
        else:
            content = "The user really likes city breaks because it is easy on my budget."
        return json.dumps({"candidates": [{"subject": subject, "content": content,
                                           "confidence": 0.9}]})
    return reply


@pytest.mark.parametrize("subject", ["opinion of city breaks", "city breaks"])
def test_a_change_of_mind_supersedes_the_liking_the_rules_also_kept(tmp_path, subject):
    """Before 2026-12-04 the rule extractor kept "I really like city breaks because ..." under
    the subject "like city breaks because it", which the change of mind ("opinion of city
    breaks") never superseded: persona's recall then showed both preferences, and the 1.5B
    picked the older one (scaling grid, persona hybrid 32k seed 0: 23 of 30 memory blocks)."""
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="u"),
                             llm=FakeLLM([persona_extractor(subject)]),
                             embedder=HashingEmbedder(), workdir=tmp_path)
    memory.observe(Exchange(user="I really like city breaks because it is easy on my budget.",
                            assistant="Noted.", turn_number=1))
    memory.observe(Exchange(user="I've changed my mind about city breaks: since February 26 I "
                            "dislike it because it became too expensive.", assistant="Noted.",
                            turn_number=2))
    current = [f.content for f in memory.facts.all() if f.current]
    assert current == ["Since February 26 the user dislikes city breaks because it became too "
                       "expensive."]
    recalled = [i.text for i in memory.recall("What do I think of city breaks?").items
                if i.kind == "fact"]
    assert recalled and not any("really like" in text for text in recalled)
    memory.close()


def test_a_liking_of_a_pronoun_is_no_rule_fact():
    found = check_candidates([], Exchange(user="I love it when the trains run on time. I like "
                                          "to swim in the sea, since it is cold.",
                                          assistant="ok", turn_number=1))
    assert [(subject_key(c.subject), c.content) for c in found] == [
        ("swim in sea", "The user said: I like to swim in the sea, since it is cold.")]


def noisy_extractor(messages) -> str:
    """Answers like the 0.5B model did: sentence subjects, the assistant's reply as content,
    and a fact copied from nowhere on small talk."""
    if role_of(messages) != "extract":
        return "fine"
    text = messages[-1].content.split("\n\nReply with only a JSON")[0]
    if "favourite colour" in text:
        value = "blue" if "blue" in text else "red"
        cand = {"subject": f"favourite colour is {value}", "content": f"{value.title()}, noted.",
                "confidence": 1.0}
    else:
        cand = {"subject": "daughter's name", "content": "The user's son is called Felix.",
                "confidence": 0.9}
    return json.dumps({"candidates": [cand]})


def test_hybrid_supersedes_through_noisy_extraction(tmp_path):
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="u"), llm=FakeLLM([noisy_extractor]),
                             embedder=HashingEmbedder(), workdir=tmp_path)
    memory.observe(Exchange(user="My favourite colour is red.", assistant="Red, noted.",
                            turn_number=1))
    memory.observe(Exchange(user="Tell me about rivers.", assistant="The Nile is long.",
                            turn_number=2))
    memory.observe(Exchange(user="Actually my favourite colour is now blue.",
                            assistant="Blue it is.", turn_number=3))
    facts = memory.facts.all()
    assert len(facts) == 2  # the invented daughter fact never got in
    red, blue = facts
    assert "red" in red.content and red.superseded_by == blue.id
    assert "blue" in blue.content and not blue.superseded_by
    items = [i for i in memory.recall("favourite colour").items if i.kind == "fact"]
    assert [(i.id, i.metadata["turn_numbers"]) for i in items] == [(blue.id, [3])]
    memory.close()


def copying_extractor(messages) -> str:
    """The 0.5B on a standing instruction: the sentence right, the example's subject copied."""
    wanted = messages[-1].content.split("reply: ")[-1].split("\n")[0].strip("'")
    return json.dumps({"candidates": [{"subject": "reply when greeted", "content":
                                       f"When the user says so, the user wants the reply "
                                       f"'{wanted}'.", "confidence": 0.9}]})


def test_a_subject_copied_from_the_prompts_examples_supersedes_nothing(tmp_path):
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="u"),
                             llm=FakeLLM([copying_extractor]), embedder=HashingEmbedder(),
                             workdir=tmp_path)
    for turn, (when, say) in enumerate([("I am cold", "Put on a warm jumper"),
                                        ("I am bored", "Learn a new card trick")]):
        memory.observe(Exchange(user=f"Whenever I say that {when}, reply: '{say}'",
                                assistant="Noted.", turn_number=turn))
    facts = memory.facts.all()
    assert len(facts) == 2 and not any(f.superseded_by for f in facts)  # both triggers current
    assert "jumper" in facts[0].content and "card trick" in facts[1].content
    # a message that says the example's subject keeps it as its subject
    found = check_candidates([PromotionCandidate(
        subject="opinion of board games", content="The user dislikes board games.",
        confidence=0.9)], Exchange(user="I dislike board games.", assistant="ok", turn_number=1))
    assert [c.subject for c in found] == ["opinion of board games"]
    memory.close()


def test_unchecked_extraction_keeps_what_the_model_said(tmp_path):
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="u"), llm=FakeLLM([noisy_extractor]),
                             embedder=HashingEmbedder(), workdir=tmp_path,
                             config={"check_candidates": False, "extraction_gate": "every_turn"})
    memory.observe(Exchange(user="Tell me about rivers.", assistant="ok", turn_number=1))
    assert [f.content for f in memory.facts.all()] == ["The user's son is called Felix."]
    memory.close()


def test_scratchpad_and_facts_carry_their_turn_numbers(tmp_path):
    memory = MEMORIES.create("hybrid", scope=Scope(user_id="u"), llm=memory_llm(),
                             embedder=HashingEmbedder(), workdir=tmp_path)
    memory.observe(Exchange(user="My dog is called Rex.", assistant="ok", turn_number=7))
    memory.observe(Exchange(user="My car is a Volvo.", assistant="ok", turn_number=9))
    items = {i.kind: i for i in memory.recall("What is my dog called?").items}
    assert items["scratchpad"].metadata["turn_numbers"] == [7, 9]
    dog = next(i for i in memory.recall("dog called Rex").items if "Rex" in i.text
               and i.kind == "fact")
    assert dog.metadata["turn_numbers"] == [7]
    memory.close()


def test_a_reopened_store_still_finds_similar_subjects(tmp_path):
    store = DistilledFactStore(tmp_path, "a:u", HashingEmbedder(), subject_similarity=0.7)
    red = store.add_fact(fact("favourite colour", "red", 1))
    store.add_fact(fact("home city", "Oslo", 2))
    store.close()
    reopened = DistilledFactStore(tmp_path, "a:u", HashingEmbedder(), subject_similarity=0.7)
    blue = reopened.add_fact(fact("favourite colour shade", "blue", 3))
    assert blue.supersedes == red.id and reopened.get(red.id).superseded_by == blue.id
    assert [f.id for f in reopened.history(blue.id)] == [blue.id, red.id]
    reopened.close()
