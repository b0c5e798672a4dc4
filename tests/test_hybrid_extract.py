"""hybrid's fact extractor: what the LLM is shown and what it may write (benchmarks/bench_extraction.py
measures what it keeps on real models)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memlab.bench.suites.ltm_generate import TRIGGERS
from memlab.llm.fake import FakeLLM
from memlab.memory.base import Exchange
from memlab.memory.hybrid_extract import extract_candidates

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_extraction  # noqa: E402

EXCHANGE = Exchange(user="I've changed my mind about jazz records: since March 20 I dislike it "
                         "because I never find time for it.", assistant="Noted.", turn_number=3)


def _reply(content: str, subject: str = "opinion of jazz records") -> str:
    return json.dumps({"candidates": [{"subject": subject, "content": content,
                                       "confidence": 0.9}]})


def test_the_llm_sees_no_schema_dump_and_its_grammar_has_no_internal_field():
    llm = FakeLLM([_reply("Since March 20 the user dislikes jazz records because they never "
                          "find time for them.")])
    extract_candidates(llm, EXCHANGE, check=True)
    shown = "\n".join(m.content for m in llm.history[0])
    # shown the schema (with its $defs and internal descriptions), the 1.5B model extracted
    # nothing from any message
    assert "$defs" not in shown and "ConsolidationAgent" not in shown
    assert "empty" not in shown and '{"candidates": []}' not in shown
    grammar = json.dumps(llm.params[0]["json_schema"])
    assert '"subject"' in grammar and '"extractor"' not in grammar


def test_llm_candidates_are_marked_as_the_llms_and_grounded_in_the_users_words():
    llm = FakeLLM([json.dumps({"candidates": [
        {"subject": "opinion of jazz records", "content": "Since March 20 the user dislikes "
         "jazz records because they never find time for them.", "confidence": 0.9},
        {"subject": "opinion of board games", "content": "The user dislikes board games.",
         "confidence": 0.9}]})])
    found, extractor, failure = extract_candidates(llm, EXCHANGE, check=True)
    assert (extractor, failure) == ("llm", None)
    assert [c.subject for c in found] == ["opinion of jazz records"]  # the example is not copied
    assert found[0].extractor == "llm"


def test_a_copy_of_the_prompts_example_is_not_grounded_by_its_frame_words():
    # read in bench_extraction's rows: the 0.5B answered this with the board games example,
    # and "because" and "too" made the copy look grounded
    llm = FakeLLM([_reply("Since May 02 the user dislikes board games because the rules take too "
                          "long.", "opinion of board games")])
    found, extractor, _ = extract_candidates(llm, Exchange(
        user="I can't stand jazz records because the venues are too loud.", assistant="Noted.",
        turn_number=1), check=True)
    assert extractor == "llm" and found == []


def test_a_standing_instruction_is_kept_with_its_sentence():
    llm = FakeLLM([_reply("When the user says that they are bored, the user wants the reply "
                          "'Time to learn a new card trick'.", "reply when bored")])
    found, _, _ = extract_candidates(llm, Exchange(
        user="Whenever I say that I am bored, reply: 'Time to learn a new card trick'",
        assistant="Noted.", turn_number=1), check=True)
    assert [c.subject for c in found] == ["reply when bored"]


def test_a_reply_that_is_never_json_falls_back_to_the_rules():
    llm = FakeLLM(["sure!"])
    found, extractor, failure = extract_candidates(
        llm, Exchange(user="My favourite colour is Teal.", assistant="Noted.", turn_number=1))
    assert extractor == "rules" and failure and "StructuredOutputError" in failure
    assert [c.content for c in found] == ["The user's favourite colour is Teal."]


def test_a_reply_that_repeats_its_candidates_ends_at_the_first_repeat_in_one_call():
    """The 0.5B on LoCoMo: once it repeats a candidate it repeats until max_tokens, and the
    unfinished JSON failed all three attempts and fell back to the rules; the reply now ends
    before the repeat, so the candidates it wrote are kept on the first call."""
    fact = {"subject": "research", "content": "The user is off to do some research.",
            "confidence": 0.9}
    other = {"subject": "relaxing", "content": "The user says relaxing is key.",
             "confidence": 0.9}
    looping = json.dumps({"candidates": [fact, other, fact, other]})[:-30]  # cut mid-element
    llm = FakeLLM([looping])
    found, extractor, failure = extract_candidates(llm, Exchange(
        user="Relaxing and expressing ourselves is key. I'm off to go do some research.",
        assistant="", turn_number=17), check=True)
    assert (extractor, failure, llm.calls) == ("llm", None, 1)
    assert [c.subject for c in found] == ["research", "relaxing"]
    assert llm.params[0]["json_repeats"] is True


def test_bench_statements_are_held_out_of_the_development_set():
    held_out = bench_extraction.statements(8, 1)
    used = bench_extraction.DEVELOPMENT
    assert len({s["text"] for s in held_out if not s.get("negative")}) == 48
    instructions = {s["sentence"] for s in held_out if s["kind"] == "instruction"}
    assert instructions >= {sentence for _, sentence, _ in TRIGGERS}  # the suite's own
    assert not instructions & {s for _, s in bench_extraction.DEV_INSTRUCTIONS}
    assert not {s.get("item") for s in held_out} & used["items"]
    assert not {s.get("fact") for s in held_out} & used["asides"]
    assert not {s.get("value") for s in held_out} & (used["colours"] | used["names"])
    development = bench_extraction.statements(4, 0)
    assert {s.get("value") for s in development if s["kind"] == "colour"} == used["colours"]


def test_bench_scores_a_statement_by_its_value():
    held_out = bench_extraction.statements(8, 1)
    change = next(s for s in held_out if s["kind"] == "change")
    item, reason = change["item"], change["reason"]
    assert bench_extraction.kept(change, [f"Since March the user dislikes {item} because "
                                          f"{reason}."])
    assert not bench_extraction.kept(change, [f"The user changed their mind about {item}."])
    colour = next(s for s in held_out if s["kind"] == "colour")
    assert bench_extraction.kept(colour, [f"The user's favourite colour is {colour['value']}."])
    assert not bench_extraction.kept(colour, ["The user likes best."])
    bored = {"kind": "instruction", "request": "say that I am bored",
             "sentence": "Time to learn a new card trick"}
    assert bench_extraction.kept(bored, ["When the user says they are bored, the user wants the "
                                         "reply 'Time to learn a new card trick'."])
    assert not bench_extraction.kept(bored, ["The user wants to learn a new card trick."])
    assert not bench_extraction.kept(bored, ["The user wants to be called Rowan."])


@pytest.mark.integration
def test_a_locomo_turn_the_0_5b_loops_on_is_extracted_in_one_call_on_the_real_model():
    """The locomo grid's hybrid cell, turn 17: the 0.5B repeats its candidates until its 192
    tokens end; before the cut that failed three attempts (88 s) and fell back to the rules."""
    from services import require_or_skip

    from memlab.config import Settings
    from memlab.errors import MissingDependencyError
    from memlab.llm.local import LocalLLM

    try:
        llm = LocalLLM("0.5b", settings=Settings(llm_cache=False))
    except MissingDependencyError as exc:
        require_or_skip(str(exc))
    found, extractor, failure = extract_candidates(llm, Exchange(
        user='Caroline said, "Totally agree, Mel. Relaxing and expressing ourselves is key. '
             'Well, I\'m off to go do some research."', assistant="", turn_number=17),
        check=True)
    assert (extractor, failure, llm.calls) == ("llm", None, 1)
    assert any("research" in c.content for c in found)
