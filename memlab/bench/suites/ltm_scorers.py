"""GoodAI LTM Benchmark v3 scoring rules, one function per test type.

Every scorer takes the questions asked, the agent's replies to them and the test's
``expected_responses`` and returns a :class:`~memlab.bench.scoring.Judgement` (0..1). The rules
follow the published GoodAI v3 scorers so that a published answer gets its published score;
where GoodAI asked a GPT judge, memlab uses a deterministic rule (jokes, locations_directions) or
the LLM judge (restaurant, chapterbreak).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memlab.bench.scoring import Judgement, cites, llm_judge, parse_json_as_goodai
from memlab.errors import ConfigError

Scorer = Callable[..., Judgement]

# GoodAI v3.5's keyword lists of the spy codes (time, place, thing). The published results were
# scored with these lists even where an older run stored shorter ones; any of these words in an
# answer that the test did not expect marks the agent as confused.
GOODAI_SPY_CODES: tuple[tuple[str, ...], ...] = (
    ("sunrise", "dawn", "rise", "morning"), ("noon", "midday"), ("sunset", "dusk", "sets"),
    ("night", "midnight", "nighttime"), ("shore", "beach", "coastline"),
    ("railway", "yard", "depot"), ("automobile", "factory", "manufacturing"), ("orchard",),
    ("port", "warehouse", "seaport", "docks"), ("boat", "bridge", "raft", "kayak"),
    ("pick", "picks", "key"), ("bribe", "credentials", "paperwork", "passport"),
    ("motorbike", "motorcycle", "car", "fast vehicle"),
)
GOODAI_SPY_VOCABULARY = frozenset(k for code in GOODAI_SPY_CODES for k in code)


def goodai_spy_lists(expected: list[list[str]]) -> list[list[str]]:
    """Each stored keyword list widened to GoodAI v3.5's list for the same code."""
    return [next((list(c) for c in GOODAI_SPY_CODES if set(keys) <= set(c)), list(keys))
            for keys in expected]


def score_colours(questions: list[str], responses: list[str], expected: list[Any], **_: Any):
    """The last colour given, as a case-insensitive substring of the last reply."""
    colour = str(expected[0]).lower()
    if colour in responses[-1].lower():
        return Judgement(score=1, reasoning=[f'"{colour}" is in the response.'])
    return Judgement(score=0, reasoning=[f'"{colour}" is NOT in the response.'])


def score_shopping(questions: list[str], responses: list[str], expected: list[Any], **_: Any):
    """Thirds: expected items present, their quantities right, nothing hallucinated."""
    wanted = {str(name): qty for name, qty in expected}
    try:
        items = parse_json_as_goodai(responses[0])
        assert isinstance(items, list)
        for item in items:
            assert isinstance(item["item"], str) and isinstance(item["quantity"], int)
    except (ValueError, KeyError, AssertionError, TypeError) as exc:
        return Judgement(score=0, reasoning=[f"Response not in correct format ({exc!r})."])
    found, right, extra, notes = [], 0, [], []
    for item in items:
        name = item["item"].lower()
        key = next((w for w in wanted if w in name), None)  # "leeks" matches "leek"
        if key is None:
            extra.append(name)
            continue
        found.append(name)
        if item["quantity"] == wanted[key]:
            right += 1
        else:
            notes.append(f"Wrong quantity for {name}: {item['quantity']} vs {wanted[key]}.")
    if len(found) < len(wanted):
        notes.append(f"{len(wanted) - len(found)} items were not found in the response.")
    if right == len(wanted):
        notes.append("All expected items' quantities match.")
    notes.append(f"{len(extra)} unexpected items were found." if extra
                 else "There are no unexpected items.")
    score = (len(found) / len(wanted) + right / len(wanted) + int(not extra)) / 3
    return Judgement(score=score, reasoning=["\n".join(notes)])


def score_name_list(questions: list[str], responses: list[str], expected: list[Any], **_: Any):
    """Names answered that were given, divided by max(given, answered)."""
    left = [str(n).lower() for n in expected]
    try:
        answered = [n.lower() for n in parse_json_as_goodai(responses[0])]
    except (TypeError, ValueError, AttributeError):
        return Judgement(score=0, reasoning=["Response not in correct format"])
    divisor = max(len(left), len(answered)) or 1
    correct, notes = 0, []
    for name in answered:
        if name in left:
            correct += 1
            left.remove(name)
        else:
            notes.append(f"Name: {name} not expected.")
    notes.append(f"Names: {', '.join(left)} were not in the response." if left
                 else "All expected names were found in the response.")
    return Judgement(score=correct / divisor, reasoning=notes)


def score_sallyanne(questions: list[str], responses: list[str], expected: list[Any], **_: Any):
    """The JSON answer must equal the expected (lower-case) word exactly."""
    try:
        answer = parse_json_as_goodai(responses[0])
    except ValueError as exc:
        return Judgement(score=0, reasoning=[f"Invalid answer. {exc}"])
    if isinstance(answer, dict) and answer.get("answer", "") == expected[0]:
        return Judgement(score=1, reasoning=[f"The agent answered with {answer['answer']!r}."])
    return Judgement(score=0, reasoning=[f"Invalid answer: {answer}"])


def score_prospective_memory(questions: list[str], responses: list[str], expected: list[Any],
                             **_: Any):
    """The quote in exactly the n-th reply, counting the reply to the request as the first.

    ``responses`` are the agent's replies from the request on.
    """
    quote, _author, nth = expected[0]
    target = int(nth) - 1
    if target >= len(responses):
        return Judgement(score=0, reasoning=[f"Only {len(responses)} replies; needed {nth}."])
    ok = cites(quote, responses[target])
    reason = ("The quote is recited in the correct place." if ok
              else "The agent did not recite the quote in the correct place.")
    if any(cites(quote, r) for i, r in enumerate(responses) if i != target):
        ok, reason = False, "The quote is recited somewhere other or additionally to the correct place."
    return Judgement(score=int(ok), reasoning=[reason])


def score_trigger_response(questions: list[str], responses: list[str], expected: list[Any],
                           **_: Any):
    """Each trigger's reply must contain the agreed sentence; score = hits / triggers."""
    hits, notes = 0, []
    for reply, sentence in zip(responses, expected, strict=False):
        ok = str(sentence).lower() in reply.lower()
        hits += int(ok)
        notes.append(f"'{sentence}' is {'' if ok else 'not '}in the response.")
    return Judgement(score=hits / len(expected), reasoning=notes)


def score_spy_meeting(questions: list[str], responses: list[str], expected: list[Any], *,
                      vocabulary: frozenset[str] | set[str] = GOODAI_SPY_VOCABULARY, **_: Any):
    """One third per decoded message (one of its keywords as a whole word), minus one third
    when the answer also holds a keyword of a code that was not sent."""
    answer, correct, notes = responses[0], 0, []
    for keywords in expected:
        if any(re.search(rf"\b{re.escape(k)}\b", answer) for k in keywords):
            correct += 1
            notes.append("Answer contains expected keyword(s)")
        else:
            notes.append(f"{list(keywords)} not found in answer.")
    wrong = set(vocabulary) - {k for keywords in expected for k in keywords}
    confused = sorted(w for w in wrong if re.search(rf"\b{re.escape(w)}\b", answer))
    if confused:
        notes.append(f"Answer also contains `{confused[0]}`, which indicates that the agent "
                     "has recalled something incorrect.")
    return Judgement(score=max((correct - int(bool(confused))) / 3, 0.0), reasoning=notes)


def score_jokes(questions: list[str], responses: list[str], expected: list[Any], **_: Any):
    """The joke told at the asked time, recounted (case and punctuation ignored)."""
    if cites(str(expected[0]), responses[0]):
        return Judgement(score=1, reasoning=["The correct joke is recounted."])
    return Judgement(score=0, reasoning=["The expected joke is not recounted."])


_STEP_RE = re.compile(r"(\d+)\s*(?:km|kilomet\w*)[\s,]*(?:to the |towards? |heading )?"
                      r"(north|south|east|west)|(north|south|east|west)\w*\s*(?:for\s*)?"
                      r"(\d+)\s*(?:km|kilomet)", re.IGNORECASE)
_AXES = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


def follow_directions(text: str) -> tuple[int, int]:
    """End position after every "<n> km <direction>" step written in ``text``."""
    x = y = 0
    for m in _STEP_RE.finditer(text):
        km = int(m.group(1) or m.group(4))
        dx, dy = _AXES[(m.group(2) or m.group(3)).lower()]
        x, y = x + dx * km, y + dy * km
    return x, y


def score_locations_directions(questions: list[str], responses: list[str], expected: list[Any],
                               **_: Any):
    """The directions in the reply must end where the expected route ends."""
    goal = follow_directions(str(expected[0]))
    ok = follow_directions(responses[0]) == goal
    verb = "lead" if ok else "do not lead"
    return Judgement(score=int(ok), reasoning=[f"The agent's directions {verb} to the expected destination."])


def score_with_llm(questions: list[str], responses: list[str], expected: list[Any], *,
                   client: Any = None, **_: Any):
    """GoodAI's GPT checklist through memlab's LLM layer (restaurant, chapterbreak)."""
    if client is None:
        raise ConfigError("field 'client': this test type needs an LLM judge (pass client=)")
    return llm_judge(client, questions, responses, expected)


SCORERS: dict[str, Scorer] = {
    "colours": score_colours,
    "shopping": score_shopping,
    "name_list": score_name_list,
    "locations_directions": score_locations_directions,
    "jokes": score_jokes,
    "sallyanne": score_sallyanne,
    "prospective_memory": score_prospective_memory,
    "trigger_response": score_trigger_response,
    "spy_meeting": score_spy_meeting,
    "restaurant": score_with_llm,
    "chapterbreak": score_with_llm,
}

# Types GoodAI v3 scored without a GPT judge: memlab must reproduce their published scores.
GOODAI_RULE_TYPES = frozenset({"colours", "shopping", "name_list", "sallyanne",
                               "prospective_memory", "trigger_response", "spy_meeting"})
LLM_JUDGED_TYPES = frozenset({"restaurant", "chapterbreak"})
