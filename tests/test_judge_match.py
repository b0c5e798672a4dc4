"""The rule verdict on LoCoMo answers (``judge_match``): dates at the gold's granularity, short
facts by their content words, and no verdict where no rule decides."""

from __future__ import annotations

import pytest

from memlab.bench.suites.judge_match import date_of, match_verdict


@pytest.mark.parametrize(("gold", "answer", "verdict"), [
    ("May, 2023", "27 May 2023", True),            # inside the gold's month
    ("June 2023", "19 June", True),                # the year is the conversation's
    ("January, 2023", "20 January 2023", True),
    ("27 August 2023", "28 August", False),        # another day
    ("24 April, 2023", "25 April 2023", False),
    ("13 August", "August 14, 2023", False),
    ("2022", "8 May 2023", False),                 # another year
    ("2022", "in May", False),                     # a year asked, none given
    ("May, 2023", "23 July", False),               # another month
    ("7 May 2023", "May 7th", True),               # another format
    ("7 May 2023", "I don't know", False),         # no date at all
])
def test_absolute_dates_are_judged_at_the_golds_granularity(gold, answer, verdict):
    assert match_verdict(gold, answer) is verdict


@pytest.mark.parametrize(("gold", "answer"), [
    ("Since 2016", "Seven years"),
    ("A few years ago", "8 February 2023"),
])
def test_relative_dates_are_left_to_the_judge(gold, answer):
    assert match_verdict(gold, answer) is None


@pytest.mark.parametrize(("gold", "answer", "verdict"), [
    ("The week before 9 June 2023", "9 June 2023", False),     # the anchor itself
    ("The week before 9 June 2023", "3 June 2023", True),
    ("two weekends before 17 July 2023", "July 17", False),
    ("two weekends before 17 July 2023", "8 July", True),
    ("The Friday before 14 August 2023", "August 15", False),  # after the anchor
    ("The sunday before 25 May 2023", "in May", False),        # no day
])
def test_a_date_just_before_an_anchor_is_right_and_the_anchor_wrong(gold, answer, verdict):
    assert match_verdict(gold, answer) is verdict


def test_a_fact_is_right_when_the_answer_holds_every_content_word_else_undecided():
    assert match_verdict("Paris, Rome", "Rome and Paris") is True
    assert match_verdict("for his business", "He closed it for the business.") is True
    assert match_verdict("Running", "To run.") is True                 # one word, two forms
    assert match_verdict("pottery classes", "She took a pottery class.") is True
    assert match_verdict("guinea pig", "Oscar") is None
    assert match_verdict("3", "Two") is None
    assert match_verdict("Freedom and expressing herself", "Freedom") is None  # no list
    # the reason after the semicolon is the gold's, not part of the fact asked
    assert match_verdict('A Nintendo Switch; since the game "Xenoblade 2" is made for it',
                         "Nintendo Switch") is True


def test_a_right_and_a_wrong_alternative_together_are_wrong():
    assert match_verdict("Running", "She got them for walking or running.") is False
    assert match_verdict("tea or coffee", "Tea or coffee, she said.") is True
    # an "or" away from the gold's words offers no alternative to them
    assert match_verdict("Running", "Running, which she does for her health or fun.") is True


def test_part_of_a_list_is_wrong():
    assert match_verdict("dinosaurs, nature", "The kids love nature.") is False
    assert match_verdict('"Nothing is Impossible", "Charlotte\'s Web"', "Charlotte's Web") is False
    # a list of alternatives ("or"): one of them may be the answer, the judge decides
    assert match_verdict("activities like running, reading, or playing the violin",
                         "Reading") is None
    # every item touched: a paraphrase of the rest may be there, the judge decides
    assert match_verdict("build trust, stay positive", "Stay positive and trusting.") is None


@pytest.mark.parametrize(("gold", "answer", "verdict"), [
    ("Likely no; since this one went badly", "No, Melanie did not go on another roadtrip.", True),
    ("Likely no", "Yes, she would.", False),
    ("Yes, since she collects classic children's books", "Yes, she likely would.", True),
    ("Most likely yes", "No.", False),
    ("Likely no", "Melanie might go again.", None),     # no stance taken: the judge decides
    ("No", "No information about it.", None),           # an abstention, not a stance
])
def test_a_yes_no_gold_is_judged_by_the_stance_the_answer_takes(gold, answer, verdict):
    assert match_verdict(gold, answer) is verdict


def test_date_of_reads_day_month_year_in_either_order():
    assert date_of("1:56 pm on 8 May, 2023") == (8, 5, 2023)
    assert date_of("Sept 3rd") == (3, 9, None)
    assert date_of("2021") == (None, None, 2021)
    assert date_of("seven dogs") is None


@pytest.mark.parametrize(("gold", "answer", "verdict"), [
    ("around April 2, 2023", "2 April", True),            # a rough day is the day
    ("around April 2, 2023", "3 April", False),
    ("On the night of October 30 to 31, 2022", "31 October 2022", True),  # any day in a range
    ("On the night of October 30 to 31, 2022", "30 October", True),
    ("On the night of October 30 to 31, 2022", "1 November 2022", False),
    ("30-31 October 2022", "29 October", False),
])
def test_a_rough_day_and_a_range_of_days_are_judged_by_their_days(gold, answer, verdict):
    assert match_verdict(gold, answer) is verdict


def test_irregular_forms_and_pronouns_do_not_hide_the_gold_fact():
    assert match_verdict("his partner gets pregnant and they get married",
                         "Evan's partner is pregnant and they got married last week.") is True
    assert match_verdict("put a GPS sensor on them", "Put a GPS sensor on your keys.") is True
    assert match_verdict("made a vase", "She makes a vase.") is True


def test_an_answer_that_only_restates_the_question_is_wrong():
    question = "What kind of car does Evan drive?"
    assert match_verdict("Prius", "Evan drives a car.", question) is False
    assert match_verdict("Prius", "Evan drives a car.") is None   # no question, no such rule
    assert match_verdict("coconut milk icecream, chocolate and vanilla swirl",
                         "Nate has made several recipes.", "What recipes has Nate made?") is False
    # an answer with a word of its own is left to the judge, a right one to the content rule
    assert match_verdict("Prius", "Evan drives a blue Toyota.", question) is None
    assert match_verdict("sunsets", "She painted sunsets.",
                         "Did Melanie paint sunsets or portraits?") is True
    assert match_verdict("sunsets", "She painted portraits.",
                         "Did Melanie paint sunsets or portraits?") is False
