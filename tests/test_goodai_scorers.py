"""GoodAI's scoring in both versions on hand-made replies for every rule-scored type: current
(188e761, the default) and published (2024-05), including the disagreements of issue 17."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.bench.goodai import goodai_rescore
from memlab.bench.suites.ltm_scorers import PUBLISHED_SCORERS, SCORERS, scorers
from memlab.errors import ConfigError

PUBLISHED_1K = Path(__file__).resolve().parents[2] / "shared" / "data" / "goodai-ltm-v3-1k"
SHOP = [["leek", 2], ["milk", 1]]
SPY = [["night", "midnight"], ["railway", "yard", "depot"], ["pick", "key"]]
QUOTE = ["Small lanterns outlast the loudest fireworks.", "Teodor Vasquez-Lind", 2]
JOKE = "I told my plant a joke, but it just stayed rooted to the spot."

# (type, replies, expected, published score, current score)
CASES = {
    "colours right": ("colours", ["Your favourite colour is Teal."], ["teal"], 1, 1),
    "colours wrong": ("colours", ["It is blue."], ["teal"], 0, 0),
    "shopping prose and fence": (
        "shopping", ['Here you go:\n```json\n[{"item": "Leeks", "quantity": 2}, '
                     '{"item": "Milk", "quantity": 3}, {"item": "Bread", "quantity": 1},]\n```'],
        SHOP, 0.5, 0.5),  # both found, one quantity right, one extra item: (1 + 1/2 + 0) / 3
    "shopping css fence and comment": (
        "shopping", ['List:\n```css\n[\n {"item": "leek", "quantity": 2}, // two\n'
                     ' {"item": "milk", "quantity": 1}\n]\n```'], SHOP, 1, 1),
    "shopping ellipsis": ("shopping", ['[{"item": "leek", "quantity": 2}, ...]'], SHOP,
                          (0.5 + 0.5 + 1) / 3, (0.5 + 0.5 + 1) / 3),
    "shopping quantity as text": ("shopping", ['[{"item": "leek", "quantity": "2"}]'], SHOP, 0, 0),
    "name list": ("name_list", ['Sure: ["Anna", "bob", "Carl"]'], ["Anna", "Bob"], 2 / 3, 2 / 3),
    "sallyanne capitalised (issue 17)": ("sallyanne", ['{"answer": "Pantry"}'], ["pantry"], 0, 1),
    "sallyanne exact": ("sallyanne", ['{"answer": "pantry"}'], ["pantry"], 1, 1),
    "sallyanne not a word": ("sallyanne", ['{"answer": {"room": "pantry"}}'], ["pantry"], 0, 0),
    "prospective memory in place": (
        "prospective_memory", ["Sure.", f"Done. {QUOTE[0]}", "Fine."], [QUOTE], 1, 1),
    "prospective memory too early": (
        "prospective_memory", [f"Sure. {QUOTE[0]}", "Done.", "Fine."], [QUOTE], 0, 0),
    "trigger response paraphrase (issue 17)": (
        "trigger_response", ["You should resist the temptation and stick to your diet."],
        ["resist temptation and stick to your diet"], 0, 1),  # ROUGE-L 0.93
    "trigger response punctuation": (
        "trigger_response", ["Resist temptation, and stick to your diet!"],
        ["resist temptation and stick to your diet"], 0, 1),
    "trigger response exact": ("trigger_response", ["It's Party time!"], ["It's Party time!"],
                               1, 1),
    "trigger response absent": ("trigger_response", ["What a nice day."], ["It's Party time!"],
                                0, 0),
    "spy meeting lockpicks": (
        "spy_meeting", ["We meet at night at the rail yard; bring lockpicks or a key."], SPY,
        1, 2 / 3),  # "lockpicks" is another code's keyword only in the current lists
    "spy meeting confused": ("spy_meeting", ["At noon at the depot, bring a key."], SPY,
                             1 / 3, 1 / 3),  # right place and thing, wrong time: (2 - 1) / 3
    "jokes verbatim": ("jokes", [f"You told me: {JOKE}"], [JOKE], 1, 1),
    "jokes referred to": ("jokes", ["The one about the plant that stayed rooted to the spot."],
                          [JOKE], 1, 1),
    "jokes another joke": ("jokes", ["The calendar said my days were numbered."], [JOKE], 0, 0),
    "locations directions": (
        "locations_directions", ["Go 2 km North, then 3 km East."],
        ["2 km North, 1 km East, 2 km East"], 1, 1),
}


@pytest.mark.parametrize("case", CASES)
def test_both_versions_score_hand_made_replies(case):
    test_type, replies, expected, published, current = CASES[case]
    questions = [""] * len(replies)
    assert PUBLISHED_SCORERS[test_type](questions, replies, expected).score == pytest.approx(
        published)
    assert SCORERS[test_type](questions, replies, expected).score == pytest.approx(current)


def test_current_is_the_default_and_an_unknown_version_is_named():
    assert scorers() is SCORERS and scorers("published") is PUBLISHED_SCORERS
    with pytest.raises(ConfigError, match="'2023'.*current, published"):
        scorers("2023")


def test_a_trigger_reply_the_rule_rejects_goes_to_the_judge_when_given():
    from memlab.llm.fake import FakeLLM

    judge = FakeLLM(["yes", "yes"])
    judged = SCORERS["trigger_response"](["Achoo!"], ["Bless you, take a tissue."],
                                         ["Here is a tissue for you"], client=judge)
    assert judged.score == 1 and len(judge.history) == 1
    # the agreed sentence's words are the evidence a small judge's yes must rest on
    overruled = SCORERS["trigger_response"](["Achoo!"], ["Bless you, take a handkerchief."],
                                            ["Here is a tissue for you"], client=judge)
    assert overruled.score == 0 and len(judge.history) == 2


@pytest.mark.skipif(not PUBLISHED_1K.is_dir(), reason="published GoodAI 1k results not found")
def test_current_scorers_differ_from_the_published_scores_only_on_three_spy_meetings():
    current = goodai_rescore(PUBLISHED_1K / "results")
    misses = {i.file for i in current.items if not i.agrees and i.test_type == "spy_meeting"}
    assert current.conformance() == (270, 273) and len(misses) == 3  # the lockpicks/docks cases


def test_a_judge_yes_for_a_reply_without_the_jokes_words_is_overruled():
    from memlab.llm.fake import FakeLLM

    question = ["Which joke did I tell you about 2 hours 32 minutes ago?"]
    unrelated = SCORERS["jokes"](question, ["The joke was two hours and 32 minutes ago."],
                                 [JOKE], client=FakeLLM(["yes"]))
    assert unrelated.score == 0 and "Overruled" in unrelated.reasoning[-1]
    referred = SCORERS["jokes"](question, ["The joke about your plant."], [JOKE],
                                client=FakeLLM(["yes"]))
    assert referred.score == 1 and referred.judge == "llm"
    refused = SCORERS["jokes"](question, ["The joke about your plant."], [JOKE],
                               client=FakeLLM(["no"]))
    assert refused.score == 0
