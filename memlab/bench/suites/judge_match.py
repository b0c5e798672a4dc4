"""A verdict without a model where the gold answer allows one: LoCoMo's absolute dates and
short facts.

The 1.5B judge rejects right dates ("21 June 2023" for gold "June 2023") and accepts wrong ones
(docs/suites.md, "Measuring the judges against hand labels"). Many LoCoMo gold answers can be
checked by rule, as a person labelling them does:

- an absolute date (a year, a month and year, a day and month): the answer's first date must
  agree at the gold's granularity: the same year where both give one, the same month where the
  gold gives one, the same day where the gold gives one ("27 May 2023" is right for "May, 2023",
  "28 August" wrong for "27 August 2023", "8 May 2023" wrong for "2022"); an answer with no
  date is wrong;
- a yes/no gold ("Likely no; since this one went badly", "Yes, she would"): an answer that
  starts with yes or no is right when it takes the gold's stance, wrong when it takes the
  other;
- any other gold: right when the answer holds every content word of it (stop words aside,
  numbers as digits, ordinals without their suffix, words compared by their stem: "run" holds
  "running"), unless it offers alternatives the gold does not ("walking or running" for
  "running": a right and a wrong alternative together are wrong); wrong when the gold lists
  several things (separated by commas, none of them an alternative: no "or") and the answer
  gives one of them whole and not a word of another ("nature" for "dinosaurs, nature": part of a list is wrong). A reason the gold
  adds after a semicolon ("A Nintendo Switch; since ...") is not part of the fact.

- a date a week, a weekend or a named day before an anchor ("the week before 9 June 2023",
  "two weekends before 17 July 2023"): a date in the two weeks before the anchor is right, the
  anchor itself wrong (the model copies the session date the gold counts back from);
- a day given only roughly ("around April 2, 2023") is judged as the day itself, and a range of
  days ("the night of October 30 to 31, 2022") takes any day in it;
- an answer that only restates the question ("Evan drives a car." for "What kind of car does
  Evan drive?", "She has made several recipes." for "What recipes has Nate made?"): every
  content word of it is the question's, or a vague one ("several", "various", "things"), so it
  states no fact and is wrong, unless it holds the gold's content words (a choice the question
  offers: "sunsets" for "Did she paint sunsets or portraits?").

Words compare by their stem, irregular forms by the verb they are of ("got" and "get",
"made" and "make"), and pronouns ("them", "your") are stop words like articles.

``match_verdict`` returns None where no rule decides: another relative date ("since 2016", "a
few years ago"), a yes/no gold the answer does not start with yes or no to, or a gold whose
words the answer does not all hold (a paraphrase, an inference, a wrong answer) and that is not
a list the answer gives only part of nor a restated question. The strict judge then decides
(``judges.matched_verdict``).
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTH_NAMES = ["january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december"]
MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
MONTHS |= {name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)} | {"sept": 9}
# words that make a date relative to another, or a period rather than a date: no rule decides
RELATIVE = re.compile(
    r"\b(before|after|since|ago|week|weeks|weekend|weekends|last|next|during|between|around|"
    r"about|early|late|mid|end|beginning|start|same|day|days|month|months|year|years|summer|"
    r"winter|spring|fall|autumn)\b")
STOP_WORDS = frozenset(
    "a an the of to in on at and or for with by from is was were be his her their my your its "
    "it he she they i you we that this as him them us me our hers theirs ours yours".split())
# words that say only that there is something, not what: an answer of these and the question's
# own words restates the question
VAGUE = frozenset(
    "several various many some different thing things kind kinds type types sort sorts lot lots "
    "stuff something few other others".split())
# rough words before a day that leave the day the fact ("around April 2, 2023")
ROUGH = frozenset({"around", "about"})
# irregular forms of common verbs, read as the verb itself ("got married" holds "get married")
IRREGULAR = {
    "got": "get", "gotten": "get", "went": "go", "gone": "go", "made": "make", "took": "take",
    "taken": "take", "saw": "see", "seen": "see", "gave": "give", "given": "give",
    "bought": "buy", "ran": "run", "met": "meet", "felt": "feel", "found": "find",
    "began": "begin", "begun": "begin", "wrote": "write", "written": "write", "ate": "eat",
    "eaten": "eat", "told": "tell", "said": "say", "left": "leave", "kept": "keep",
    "brought": "bring", "thought": "think", "taught": "teach", "won": "win", "lost": "lose",
    "built": "build", "sold": "sell", "drew": "draw", "drawn": "draw", "grew": "grow",
    "grown": "grow", "knew": "know", "known": "know", "became": "become", "came": "come",
    "did": "do", "done": "do", "had": "have", "has": "have", "sang": "sing", "sung": "sing",
    "spent": "spend", "sent": "send", "held": "hold", "caught": "catch",
    "chose": "choose", "chosen": "choose", "drove": "drive", "driven": "drive", "flew": "fly",
    "flown": "fly", "fell": "fall", "fallen": "fall", "swam": "swim", "wore": "wear",
    "worn": "wear", "rode": "ride", "ridden": "ride", "broke": "break", "broken": "break",
    "spoke": "speak", "spoken": "speak", "heard": "hear", "paid": "pay", "led": "lead"}
# "the week before 9 June 2023", "two weekends before", "the Friday before", "the sunday before"
_BEFORE = re.compile(r"\b(week|weekend|weekends|monday|tuesday|wednesday|thursday|friday|"
                     r"saturday|sunday|day)\s+before\b")
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)\b")
# "Yes", "No, she would not", "Likely no; since ...", "Most likely yes"
_STANCE = re.compile(r"^\W*(?:(?:most\s+)?likely|probably)?[\s,]*(yes|no)\b")
# an answer takes a stance with a bare yes or no ("No, she did not."), not "No information"
_SAID_STANCE = re.compile(r"^\W*(yes|no)\s*(?:[,.!;:]|$)")
_WORD = re.compile(r"[a-z]+|\d+")
# a range of days: "October 30 to 31", "30-31 October", "the 3rd to the 5th"
_DAY_RANGE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s*(?:-|–|to)\s*(?:the\s+)?(\d{1,2})"
                        r"(?:st|nd|rd|th)?\b")


def words(text: str) -> list[str]:
    """Lower-case words and numbers of ``text``, ordinals without their suffix ("7th" -> 7)."""
    return _WORD.findall(_ORDINAL.sub(r"\1", text.lower()))


def date_of(text: str) -> tuple[int | None, int | None, int | None] | None:
    """(day, month, year) of the first date in ``text``, each None when it is not given; None
    when the text names no month and no year."""
    tokens = words(text)
    day = month = year = None
    for i, token in enumerate(tokens):
        if token in MONTHS and month is None:
            month = MONTHS[token]
            for j in (i - 1, i + 1):  # "7 May" or "May 7"
                near = tokens[j] if 0 <= j < len(tokens) else ""
                if day is None and near.isdigit() and len(near) <= 2 and 1 <= int(near) <= 31:
                    day = int(near)
        elif year is None and token.isdigit() and len(token) == 4 and 1900 <= int(token) <= 2100:
            year = int(token)
    return None if month is None and year is None else (day, month, year)


def match_verdict(gold: str, answer: str, question: str | None = None) -> bool | None:
    """True or False where a rule decides (see the module docstring), else None; the
    ``question`` asked lets an answer that only restates it be told (without it, no such
    rule)."""
    gold_date = date_of(gold)
    if gold_date is not None:
        before = _BEFORE.search(gold.lower())
        if before:
            return _just_before(gold_date, date_of(answer))
        relative = set(RELATIVE.findall(gold.lower()))
        if relative and not (relative <= ROUGH and gold_date[0] is not None):
            return None
        return _same_date(gold_date, date_of(answer), _days(gold, gold_date[0]))
    stance = _STANCE.match(gold.lower())
    said = _SAID_STANCE.match(answer.lower())
    if stance:  # a yes/no gold: the stance decides, or the judge where none is taken
        return stance.group(1) == said.group(1) if said else None
    return _fact_verdict(gold, answer, question)


def stem(word: str) -> str:
    """A word without an inflection, so forms of one word compare equal ("running", "runs"
    -> "run"; "dance", "dancing" -> "danc"; "classes", "class" -> "class"; "got", "gets" ->
    "get": an irregular form is its verb's, ``IRREGULAR``)."""
    word = IRREGULAR.get(word, word)
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)]
            if suffix in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in "ls":
                word = word[:-1]  # "running" -> "run"
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _content(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOP_WORDS}


def _offers_alternative(content: set[str], said: list[str], reach: int = 3) -> bool:
    """Whether the answer puts one of the gold's words beside an "or" ("walking or running"),
    not an "or" elsewhere ("running, for her health or fitness")."""
    at = [i for i, w in enumerate(said) if w == "or"]
    return any(stem(w) in content for i in at
               for w in said[max(i - reach, 0):i + reach + 1] if w != "or")


def _fact_verdict(gold: str, answer: str, question: str | None) -> bool | None:
    """A gold that is not a date: its content words, its list, a restated question (see the
    module docstring); a reason the gold gives after a semicolon ("A Nintendo Switch; since the
    game is made for it") is not part of the fact."""
    gold = gold.split(";")[0]
    content, said = _content(gold), _content(answer)
    if content and content <= said:
        return "or" in words(gold) or not _offers_alternative(content, words(answer))
    if question is not None and said <= _content(question) | {stem(w) for w in VAGUE}:
        return False  # the question's own words: no fact stated
    items = [c for c in map(_content, gold.split(",")) if c]
    if "or" in words(gold):  # "running, reading, or playing the violin": one is enough
        return None
    if len(items) > 1 and any(i <= said for i in items) and any(not i & said for i in items):
        return False
    return None


def _days(gold: str, day: int | None) -> tuple[int, int] | None:
    """The gold's days as a range (first, last): a range it writes ("October 30 to 31") that
    starts on its day, else that day alone; None without a day."""
    if day is None:
        return None
    for match in _DAY_RANGE.finditer(gold.lower()):
        first, last = int(match.group(1)), int(match.group(2))
        if first == day and first < last <= 31:
            return first, last
    return day, day


def _just_before(anchor: tuple[int | None, int | None, int | None],
                 answer: tuple[int | None, int | None, int | None] | None) -> bool | None:
    """A gold "the week / weekend / Friday / two weekends before 9 June 2023": a date in the
    two weeks before the anchor day is right, the anchor itself or another date wrong; None
    when the anchor has no day."""
    day, month, year = anchor
    if day is None or month is None:
        return None
    if answer is None or answer[0] is None or answer[1] is None:
        return False
    try:
        end = date(year or 2000, month, day)
        said = date(answer[2] or end.year, answer[1], answer[0])
    except ValueError:
        return False
    return timedelta(days=1) <= end - said <= timedelta(days=14)


def _same_date(gold: tuple[int | None, int | None, int | None],
               answer: tuple[int | None, int | None, int | None] | None,
               days: tuple[int, int] | None) -> bool:
    """Whether ``answer`` gives the gold date at its granularity; ``days``: the gold's days
    (``_days``), any one of which is right."""
    if answer is None:
        return False
    (_, gold_month, gold_year), (day, month, year) = gold, answer
    if gold_year is not None and year is not None and year != gold_year:
        return False
    if gold_month is None:
        return year is not None  # a year asked: the answer must give one (the same, above)
    return month == gold_month and (days is None or (day is not None
                                                     and days[0] <= day <= days[1]))
