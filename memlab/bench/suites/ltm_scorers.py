"""GoodAI LTM Benchmark v3 scoring rules, one function per test type, in two versions.

Every scorer takes the questions asked, the agent's replies to them and the test's
``expected_responses`` and returns a :class:`~memlab.bench.scoring.Judgement` (0..1).

- ``SCORERS`` (``current``, the default): GoodAI's scorers at commit 188e761 (2024-12):
  SallyAnne lower-cases the answer; Trigger Response strips punctuation and accepts ROUGE-L >
  0.75; Spy Meeting counts as a wrong recall any keyword of the current code lists (which added
  "lockpicks", "lockpicking", "slim jim") that the test did not expect.
- ``PUBLISHED_SCORERS`` (``published``): the 2024-05 scoring of the published v3 results, which
  memlab reproduces (``memlab goodai-rescore --goodai-scorers published``).
- ``STRICT_SCORERS`` (``strict``, what memlab's own LTM runs use, ``RUN_SCORERS``): the current
  set, but Colours credits the colour only as a whole word (GoodAI's substring test credits "red"
  inside "remembered" or "shared"). ``current`` and ``published`` keep GoodAI's behaviour: they
  are the conformance sets.

ChapterBreak is scored by GoodAI's rule in every set (the reply's numbers must be exactly the
right option's). Where GoodAI asks a GPT judge memlab uses a deterministic rule (jokes,
locations_directions, a Trigger Response reply the rule rejects) unless it is given an LLM judge
(``client=``), which restaurant always needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memlab.bench.scoring import Judgement, cites, llm_judge, normalise, parse_json_as_goodai
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
# GoodAI's current lists (188e761): the lock-picking code gained three keywords.
GOODAI_SPY_CODES_CURRENT = tuple(code + ("lockpicks", "lockpicking", "slim jim")
                                 if "pick" in code else code for code in GOODAI_SPY_CODES)
GOODAI_SPY_VOCABULARY_CURRENT = frozenset(k for code in GOODAI_SPY_CODES_CURRENT for k in code)
TRIGGER_ROUGE_THRESHOLD = 0.75  # GoodAI's TriggerResponseDataset.rouge_score_threshold


def goodai_spy_lists(expected: list[list[str]]) -> list[list[str]]:
    """Each stored keyword list widened to GoodAI v3.5's list for the same code."""
    return [next((list(c) for c in GOODAI_SPY_CODES if set(keys) <= set(c)), list(keys))
            for keys in expected]


def score_colours(questions: list[str], responses: list[str], expected: list[Any], *,
                  whole_word: bool = False, **_: Any):
    """The last colour given, as a case-insensitive substring of the last reply (GoodAI's rule;
    ``whole_word``: only as a word of its own, so "remembered" does not hold "red")."""
    colour, reply = str(expected[0]).lower(), responses[-1].lower()
    found = (re.search(rf"\b{re.escape(colour)}\b", reply) is not None if whole_word
             else colour in reply)
    where = " as a word" if whole_word else ""
    if found:
        return Judgement(score=1, reasoning=[f'"{colour}" is in the response{where}.'])
    return Judgement(score=0, reasoning=[f'"{colour}" is NOT in the response{where}.'])


def score_colours_strict(questions: list[str], responses: list[str], expected: list[Any],
                         **kwargs: Any):
    """memlab's Colours: the colour must be a whole word of the last reply."""
    return score_colours(questions, responses, expected, whole_word=True, **kwargs)


def score_chapterbreak(questions: list[str], responses: list[str], expected: list[Any],
                       **_: Any):
    """GoodAI's rule: the numbers in the reply must be exactly the right option's number
    ("3" or "Option 3." passes; "3, not 4" and "none" fail)."""
    right = str(expected[0]).strip()
    correct = set(re.findall(r"\d+", responses[0])) == {right}
    word = "" if correct else "not "
    return Judgement(score=int(correct),
                     reasoning=[f"The correct answer ({right}) was {word}found in the response."])


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


def score_sallyanne(questions: list[str], responses: list[str], expected: list[Any], *,
                    lower: bool = False, **_: Any):
    """The JSON answer must equal the expected (lower-case) word exactly (``lower``: after
    lower-casing the answer, as GoodAI does since 2024-06)."""
    try:
        answer = parse_json_as_goodai(responses[0])
    except ValueError as exc:
        return Judgement(score=0, reasoning=[f"Invalid answer. {exc}"])
    given = answer.get("answer", "") if isinstance(answer, dict) else None
    if isinstance(given, str) and (given.lower() if lower else given) == expected[0]:
        return Judgement(score=1, reasoning=[f"The agent answered with {given!r}."])
    return Judgement(score=0, reasoning=[f"Invalid answer: {answer}"])


def score_sallyanne_current(questions: list[str], responses: list[str], expected: list[Any],
                            **kwargs: Any):
    """GoodAI's current SallyAnne: the answer is lower-cased before the comparison."""
    return score_sallyanne(questions, responses, expected, lower=True, **kwargs)


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
    _need_triggers(expected)
    hits, notes = 0, []
    for reply, sentence in zip(responses, expected, strict=False):
        ok = str(sentence).lower() in reply.lower()
        hits += int(ok)
        notes.append(f"'{sentence}' is {'' if ok else 'not '}in the response.")
    return Judgement(score=hits / len(expected), reasoning=notes)


def _need_triggers(expected: list[Any]) -> None:
    if not expected:  # GoodAI's own score would be 0 out of 0
        raise ValueError("no expected_responses: a Trigger Response test without triggers "
                         "has nothing to score")


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F-measure with Porter stemming, as GoodAI computes it (rouge-score)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return scorer.score(reference, candidate)["rougeL"].fmeasure


def score_trigger_response_current(questions: list[str], responses: list[str],
                                   expected: list[Any], *, client: Any = None, **_: Any):
    """GoodAI's current rule per trigger: the sentence in the reply once both are lower-cased
    without punctuation, or ROUGE-L above 0.75; a reply the rule rejects goes to the LLM judge
    when ``client`` is given (GoodAI asks GPT), whose yes counts when the reply holds at least
    half the sentence's content words beyond the question's (``judged_reference``), else it
    scores 0."""
    _need_triggers(expected)
    hits, notes, asked = 0, [], False
    for question, reply, sentence in zip(questions, responses, expected, strict=False):
        want, got = normalise(str(sentence)), normalise(reply)
        ok = want in got or rouge_l(want, got) > TRIGGER_ROUGE_THRESHOLD
        if ok:
            notes.append(f"'{sentence}' is in the response.")
        elif client is None:
            notes.append(f"'{sentence}' is not in the response. (GoodAI would ask a GPT judge)")
        else:
            ok, reasons = judged_reference(client, question, reply, sentence, share=0.5)
            notes.append(f"'{sentence}' is not in the response. {' '.join(reasons)}")
            asked = True
        hits += int(ok)
    return Judgement(score=hits / len(expected), reasoning=notes,
                     judge="llm" if asked else "rule")


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


def score_spy_meeting_current(questions: list[str], responses: list[str], expected: list[Any],
                              *, vocabulary: frozenset[str] | set[str] | None = None, **_: Any):
    """GoodAI's current Spy Meeting: the test's own keyword lists, and any other keyword of the
    current code lists counts as a wrong recall."""
    return score_spy_meeting(questions, responses, expected,
                             vocabulary=vocabulary or GOODAI_SPY_VOCABULARY_CURRENT)


def score_spy_meeting_published(questions: list[str], responses: list[str],
                                expected: list[Any], **kwargs: Any):
    """The 2024-05 scoring: each stored keyword list widened to GoodAI v3.5's list."""
    return score_spy_meeting(questions, responses, goodai_spy_lists(expected), **kwargs)


JOKE_STOP = frozenset("a an and are as at be but by for from had has have he her his i in is "
                      "it its just me my of on or our she so that the their them then there "
                      "they this to too was we were what when which who will with you your "
                      "did do does not no now only up out".split())


def joke_words(text: str) -> set[str]:
    """The content words of ``text`` (lower-case, no punctuation, a plural 's' dropped)."""
    return {w.removesuffix("s") for w in normalise(text).split()
            if len(w) > 2 and w not in JOKE_STOP}


def judged_reference(client: Any, question: str, reply: str, expected: str, *,
                     share: float = 0.0) -> tuple[bool, list[str]]:
    """Whether ``reply`` makes reference to ``expected`` (GoodAI's GPT question, asked of
    memlab's LLM judge), and the reasons. A judge's yes counts only when the reply holds at
    least one, and at least ``share``, of the content words of ``expected`` that ``question``
    does not have: the 1.5B judge says yes to "I told you about the two hours and 32 minutes
    ago." for a joke about a ladder, to "Noted." for "Put on a warm jumper and make some cocoa",
    and to "I'm sorry to hear that it's raining again." for "Rainy days are perfect for
    reading"."""
    judged = llm_judge(client, [question], [reply], [expected])
    wanted = joke_words(expected) - joke_words(question)
    shared = wanted & joke_words(reply)
    if judged.score and not (shared and len(shared) >= share * len(wanted)):
        return False, [*judged.reasoning, f"Overruled: the reply holds {len(shared)} of the "
                       f"{len(wanted)} content words of the expected answer beyond the "
                       "question's."]
    return bool(judged.score), judged.reasoning


def score_jokes(questions: list[str], responses: list[str], expected: list[Any], *,
                client: Any = None, **_: Any):
    """The joke told at the asked time: recounted (case and punctuation ignored), or clearly
    referred to: at least half its content words in the reply (GoodAI asks a GPT judge whether
    the reply "makes reference to" the joke; with ``client`` memlab asks the LLM judge, and a
    judge's yes counts only when the reply shares a content word with the joke that the question
    does not have: the 1.5B judge said yes to "I told you about the two hours and 32 minutes
    ago." for a joke about a ladder)."""
    joke, reply = str(expected[0]), responses[0]
    if cites(joke, reply):
        return Judgement(score=1, reasoning=["The correct joke is recounted."])
    wanted = joke_words(joke)
    shared = wanted & joke_words(reply)
    if client is not None:
        ok, reasons = judged_reference(client, questions[0], reply, joke)
        return Judgement(score=int(ok), judge="llm", reasoning=reasons)
    if wanted and len(shared) >= len(wanted) / 2:
        return Judgement(score=1, reasoning=[f"The reply refers to the correct joke ({len(shared)}"
                                             f" of its {len(wanted)} content words)."])
    return Judgement(score=0, reasoning=[f"The expected joke is not recounted or referred to "
                                         f"({len(shared)} of its {len(wanted)} content words)."])


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
    """GoodAI's GPT checklist through memlab's LLM layer (restaurant)."""
    if client is None:
        raise ConfigError("field 'client': this test type needs an LLM judge (pass client=)")
    return llm_judge(client, questions, responses, expected)


SCORERS: dict[str, Scorer] = {  # GoodAI's current scoring (commit 188e761)
    "colours": score_colours,
    "shopping": score_shopping,
    "name_list": score_name_list,
    "locations_directions": score_locations_directions,
    "jokes": score_jokes,
    "sallyanne": score_sallyanne_current,
    "prospective_memory": score_prospective_memory,
    "trigger_response": score_trigger_response_current,
    "spy_meeting": score_spy_meeting_current,
    "restaurant": score_with_llm,
    "chapterbreak": score_chapterbreak,
}
PUBLISHED_SCORERS: dict[str, Scorer] = {  # the 2024-05 scoring of the published v3 results
    **SCORERS,
    "sallyanne": score_sallyanne,
    "trigger_response": score_trigger_response,
    "spy_meeting": score_spy_meeting_published,
}
STRICT_SCORERS: dict[str, Scorer] = {  # memlab's own runs: current, Colours by whole word
    **SCORERS,
    "colours": score_colours_strict,
}
SCORER_VERSIONS: dict[str, dict[str, Scorer]] = {"current": SCORERS,
                                                 "published": PUBLISHED_SCORERS,
                                                 "strict": STRICT_SCORERS}
# The set memlab's own LTM runs are scored with, as their manifests record it
# (``LTMSuite.describe()["scorers"]``). Bump the revision whenever a scorer of this set changes
# what it scores, so a manifest says which set scored its run. Scores are computed from the
# recorded turns when a run ends: a run not scored yet (killed before, or records copied without
# their scores) is scored by the current set, never refused for it (``runner.check_same_run``);
# a complete run keeps its scores, and committed records are scored anew by ``memlab replay``
# (``--update`` rewrites their tables). Revision 1: Colours by whole word, ChapterBreak by rule.
# A blank answer judged no without asking the judge (``scoring.llm_judge``, 2026-12-04) kept
# revision 1: every blank reply in the committed records and the scaling grid's cells (2,561)
# was a question of an unanswered test, which no table reads, and every table replayed the same.
# Revision 2 (2026-12-04): a judge's yes to a trigger reply the rule rejects counts only when the
# reply holds half the agreed sentence's content words beyond the question's (``judged_reference``).
RUN_SCORERS = "strict"
RUN_SCORERS_REVISION = 2


def run_scorers_id() -> str:
    """The scorers memlab's LTM runs are scored with, as a manifest records them."""
    return f"{RUN_SCORERS}-{RUN_SCORERS_REVISION}"


def scorers(version: str = "current") -> dict[str, Scorer]:
    """The scorer set ``version`` (``current``, ``published`` or ``strict``).

    Raises:
        ConfigError: an unknown version (the message lists the known ones).
    """
    if version not in SCORER_VERSIONS:
        raise ConfigError(f"goodai scorers {version!r}: unknown; known: "
                          f"{', '.join(SCORER_VERSIONS)}")
    return SCORER_VERSIONS[version]

# Types GoodAI v3 scored without a GPT judge: memlab must reproduce their published scores.
GOODAI_RULE_TYPES = frozenset({"colours", "shopping", "name_list", "sallyanne",
                               "prospective_memory", "trigger_response", "spy_meeting",
                               "chapterbreak"})
LLM_JUDGED_TYPES = frozenset({"restaurant"})
