"""Scoring primitives shared by the suites: lenient JSON, option parsing and the LLM judge.

``parse_json_as_goodai`` repairs the JSON a chat model writes the way the GoodAI LTM benchmark
does (code fences, leading prose, trailing text, comments, ellipses, missing commas), so memlab's
rule scorers read a published answer exactly as GoodAI's did.
"""

from __future__ import annotations

import json
import math
import re
import string
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from memlab.errors import ConfigError

_PUNCTUATION = str.maketrans("", "", string.punctuation)


class Judgement(BaseModel):
    """What one scorer decided about one test: GoodAI's ``(score, max_score, reasoning)``."""

    score: float = Field(ge=0)
    max_score: float = Field(1.0, gt=0)
    reasoning: list[str] = Field(default_factory=list)
    judge: Literal["rule", "llm"] = "rule"


def normalise(text: str) -> str:
    """Lower-case ``text`` without punctuation (GoodAI's quote comparison)."""
    return text.lower().translate(_PUNCTUATION)


def cites(expected: str, message: str) -> bool:
    """True when ``expected`` occurs in ``message``, ignoring case and punctuation."""
    return normalise(expected) in normalise(message)


# ---------------------------------------------------------------- lenient JSON

def parse_json_as_goodai(text: str) -> Any:
    """Parse the JSON in a model's answer the way GoodAI's scorers do (their repair loop).

    Deliberately not ``memlab.llm.repair.parse_json_lenient``: which answers a GoodAI scorer
    can read decides its score, so conformance with published results needs GoodAI's own
    repairs, one fix per JSON error within a step budget.

    Raises:
        ValueError: no JSON could be recovered (``json.JSONDecodeError`` is a ValueError).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    inner = _fenced_block(text)
    return _repair(inner, budget=max(5, len(inner) // 50))


def _fenced_block(text: str) -> str:
    """The text between the last pair of code fences (a javascript fence wins), else ``text``."""
    fences = [m.start() for m in re.finditer("```", text)]
    if len(fences) < 2:
        return text
    last = fences[-1]
    js = text.rfind("```javascript", 0, last)
    if js != -1:
        return text[js + len("```javascript"):last]
    start = fences[-2] + 3
    if text.startswith("json", start):
        start += 4
    return text[start:last]


def _repair(content: str, budget: int) -> Any:
    """Apply one repair per JSON error until the text parses or the budget runs out."""
    while True:
        if budget <= 0:
            raise ValueError(f"could not repair JSON within its step budget: {content[:200]}")
        content = content.strip()
        try:
            return json.loads(content)
        except json.JSONDecodeError as error:
            content = _fix(content, error)
            budget -= 1


def _fix(content: str, error: json.JSONDecodeError) -> str:
    msg, pos = error.msg, error.pos
    rest = content[pos:].lstrip()
    if msg.startswith("Extra data"):
        return content[:pos]
    if msg.startswith("Expecting value"):
        if pos == 0:
            return _drop_leading_prose(content)
        return _fix_token(content, pos, rest, error, closer="]", default='"')
    if msg.startswith("Expecting property name enclosed in double quotes"):
        return _fix_token(content, pos, rest, error, closer="}", default=None)
    if msg.startswith("Expecting ',' delimiter"):
        return content[:pos] + "," + content[pos:]
    if msg.startswith("Expecting ':' delimiter") and rest[:1] in ("}", ","):
        return content[:pos] + ": null" + content[pos:]
    if msg.startswith("Invalid control character at") and content[pos] == "\n":
        return content[:pos] + content[pos + 1:]
    raise error


def _fix_token(content: str, pos: int, rest: str, error: Exception, closer: str,
               default: str | None) -> str:
    """Repair at ``pos``: drop a comment, an ellipsis or a trailing comma, or insert ``default``."""
    if rest.startswith("//"):
        start = content.find("//", pos)
        end = content.find("\n", start)
        if end == -1:
            raise ValueError(f"line comment without line break at {start}")
        return content[:start] + content[end + 1:]
    if rest.startswith("..."):
        start = content.find("...", pos)
        return content[:start] + content[start + 3:]
    if rest.startswith(closer):
        comma = content.rfind(",", 0, pos + 1)
        if comma == -1:
            raise ValueError(f"cannot resolve JSON error at position {pos}")
        return content[:comma] + content[comma + 1:]
    if default is None:
        raise error
    return content[:pos] + default + content[pos:]


def _drop_leading_prose(content: str) -> str:
    starts = [i for i in (content.find("{"), content.find("[")) if i != -1]
    if not starts:
        raise ValueError("the answer holds no JSON")
    return content[min(starts):]


# ---------------------------------------------------------------- options

def option_letter(index: int) -> str:
    """``0 -> "(a)"``: PersonaMem's option label."""
    return f"({chr(ord('a') + index)})"


# ---------------------------------------------------------------- LLM judge

JUDGE_PROMPT = """You grade one answer of a memory test.
Question: {question}
Expected answer: {expected}
Answer given: {answer}
Does the answer given make reference to the expected answer (and, if the expected answer is
a number or quantity, does it match)? Reply with exactly one word: yes or no."""


def llm_judge(client: Any, questions: list[str], responses: list[str],
              expected: list[Any]) -> Judgement:
    """GoodAI's checklist judge, asked per question through ``client.complete``.

    Args:
        client: a memlab ``LLMClient``.
    """
    score, reasons = 0, []
    for question, answer, exp in zip(questions, responses, expected, strict=False):
        if not answer.strip():  # nothing said refers to nothing (the 1.5B judge says yes)
            reasons.append(f"No answer for expected {exp!r}.")
            continue
        prompt = JUDGE_PROMPT.format(question=question, expected=exp, answer=answer)
        reply = client.complete([{"role": "user", "content": prompt}], max_tokens=4,
                                choices=["yes", "no"]).text
        ok = reply.strip().lower().startswith("yes")
        score += int(ok)
        reasons.append(f"LLM judge: {'yes' if ok else 'no'} for expected {exp!r}.")
    return Judgement(score=score / max(len(expected), 1), reasoning=reasons, judge="llm")


def check_scores(path: Path, rows: list[dict[str, Any]]) -> None:
    """Every score is a finite number in 0..max_score (a NaN would silently shrink an n).

    Raises:
        ConfigError: naming the file, the line and the test.
    """
    for number, row in enumerate(rows, start=1):
        score, top = row.get("score"), row.get("max_score")
        if not (_finite(score) and _finite(top) and 0 <= score <= top and top > 0):
            raise ConfigError(f"{path}: line {number} (test {row.get('test_id')!r}): score "
                              f"{score!r} of max_score {top!r} is not a number in 0..max_score; "
                              "run the run again or fix the line")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)
