"""Filler of our own: generated question/answer lines (arithmetic, units, words), no corpus.

Filler fills the conversation while every test waits. Each filler turn carries its scripted
assistant reply, so the runner can store it without a model call.
"""

from __future__ import annotations

import random
from collections.abc import Callable

WORDS = ("garden lantern pencil harbour meadow kettle blanket violin compass ladder pebble "
         "window basket candle feather marble saddle tunnel button shovel orchard cottage "
         "ribbon anchor barrel canyon glacier lizard magnet napkin quilt thimble walnut").split()
UNITS = (("minutes", "seconds", 60), ("hours", "minutes", 60), ("days", "hours", 24),
         ("weeks", "days", 7), ("metres", "centimetres", 100), ("kilograms", "grams", 1000))


def _sum(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    return f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}."


def _product(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(3, 19), rng.randint(3, 12)
    return f"How much is {a} times {b}?", f"{a} times {b} is {a * b}."


def _units(rng: random.Random) -> tuple[str, str]:
    big, small, factor = rng.choice(UNITS)
    n = rng.randint(2, 9)
    return f"How many {small} are there in {n} {big}?", f"There are {n * factor} {small} in {n} {big}."


def _letters(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(WORDS)
    return f"How many letters does the word '{word}' have?", f"'{word}' has {len(word)} letters."


def _reverse(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(WORDS)
    return f"Spell '{word}' backwards, please.", f"'{word}' backwards is '{word[::-1]}'."


def _order(rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(WORDS, 2)
    first = min(a, b)
    return f"Which comes first in the dictionary, '{a}' or '{b}'?", f"'{first}' comes first."


def _larger(rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(range(100, 999), 2)
    return f"Which number is larger, {a} or {b}?", f"{max(a, b)} is larger."


FILLERS: tuple[Callable[[random.Random], tuple[str, str]], ...] = (
    _sum, _product, _units, _letters, _reverse, _order, _larger)


def filler_pair(rng: random.Random) -> tuple[str, str]:
    """One generated (question, answer) pair."""
    return rng.choice(FILLERS)(rng)


def filler_turn(rng: random.Random, max_tokens: int, count_tokens: Callable[[str], int]
                ) -> tuple[str, str]:
    """A filler user message and its scripted reply, together at most ``max_tokens``
    (at least one pair is always given)."""
    questions, answers = [], []
    while True:
        q, a = filler_pair(rng)
        trial_q, trial_a = " ".join(questions + [q]), " ".join(answers + [a])
        if questions and count_tokens(trial_q) + count_tokens(trial_a) > max_tokens:
            break
        questions.append(q)
        answers.append(a)
        if count_tokens(trial_q) + count_tokens(trial_a) >= max_tokens:
            break
    return " ".join(questions), " ".join(answers)
