"""Multiple choice: pick an option by log-probability or by a generated ``<final_answer>``."""

from __future__ import annotations

import re
from string import ascii_uppercase
from typing import Literal

from pydantic import BaseModel

from memlab.errors import ConfigError
from memlab.llm.base import Completion, LLMClient, Message, as_messages
from memlab.llm.structured import with_instruction

Method = Literal["logprob", "generate"]

# A tag holding only a letter: "<final_answer>B</final_answer>", "(b)", "B." (also unclosed).
_TAGGED = re.compile(r"<final_answer>\s*(?:\(([A-Za-z])\)|([A-Za-z])\s*(?:[.):]|</final_answer>|$))",
                     re.I)
_LEADING = re.compile(r"^\W*\(([A-Za-z])\)\s")  # "(b) You have always ..."
_BARE = re.compile(r"^\W*\(?([A-Za-z])\)?\W*$")
_STATED = re.compile(r"\b(?i:answer|option|choice)\s*(?:is|:)?\s*(?:\(([A-Za-z])\)|([A-Z])\b)")
_CONTENT = re.compile(r"<final_answer>(.*?)(?:</final_answer>|$)", re.I | re.S)
_TOKEN = re.compile(r"[a-z0-9']+")
QUOTE_MIN_F1, QUOTE_MIN_MARGIN = 0.7, 0.1


def letters(n_options: int) -> str:
    if not 1 < n_options <= len(ascii_uppercase):
        raise ConfigError(f"options: need 2 to {len(ascii_uppercase)} options, got {n_options}")
    return ascii_uppercase[:n_options]


def parse_letter(text: str, n_options: int) -> int | None:
    """The 0-based index of the option letter a reply names, or None.

    Accepts ``<final_answer>B</final_answer>`` (also unclosed, ``(b)`` or ``B.``), a reply
    opening with ``(b)``, a bare letter ("B", "b.", "(B)"), and "the answer is B".
    """
    text = (text or "").strip()
    for pattern in (_TAGGED, _LEADING, _BARE, _STATED):
        match = pattern.search(text)
        if match:
            letter = next(g for g in match.groups() if g)
            index = ascii_uppercase.find(letter.upper())
            return index if 0 <= index < n_options else None
    return None


def answer_text(text: str) -> str:
    """What a reply answers: the ``<final_answer>`` content when tagged, else the whole reply."""
    match = _CONTENT.search(text or "")
    return (match.group(1) if match else text or "").strip()


def _f1(answer: set[str], option: set[str]) -> float:
    common = len(answer & option)
    return 0.0 if not common else 2 * common / (len(answer) + len(option))


def match_option(text: str, options: list[str]) -> int | None:
    """The option a reply quotes instead of naming its letter, or None.

    The answer's words are compared with each option's (F1 of the word sets); the best option
    counts when its F1 is at least ``QUOTE_MIN_F1`` and beats the runner-up by
    ``QUOTE_MIN_MARGIN``, so a loose paraphrase or a mix of two options picks nothing.
    """
    answer = set(_TOKEN.findall(answer_text(text).lower()))
    if not answer or len(options) < 2:
        return None
    scores = [_f1(answer, set(_TOKEN.findall(option.lower()))) for option in options]
    ranked = sorted(range(len(options)), key=lambda i: scores[i], reverse=True)
    best, second = scores[ranked[0]], scores[ranked[1]]
    return ranked[0] if best >= QUOTE_MIN_F1 and best - second >= QUOTE_MIN_MARGIN else None


def parse_final_answer(text: str, n_options: int, options: list[str] | None = None) -> int | None:
    """The 0-based option index a reply picks, or None.

    The option letter it names (see ``parse_letter``); with ``options`` given, a reply naming no
    letter may instead quote one option's text (see ``match_option``; small models often copy
    the option into ``<final_answer>`` instead of its letter).

    Example:
        >>> parse_final_answer("I think <final_answer>C</final_answer>", 4)
        2
        >>> parse_final_answer("<final_answer>Try cruises.</final_answer>", 2, ["Try cruises.", "Stay home."])
        0
    """
    index = parse_letter(text, n_options)
    if index is None and options is not None and not _names_a_letter(text):
        index = match_option(text, options)
    return index


def _names_a_letter(text: str) -> bool:
    """Whether the reply names some letter (possibly out of range: then it picked nothing)."""
    stripped = (text or "").strip()
    return any(p.search(stripped) for p in (_TAGGED, _LEADING, _BARE, _STATED))


class OptionChoice(BaseModel):
    """What ``choose_option`` decided and how."""

    index: int | None
    method: Method
    scores: list[float] | None = None
    completion: Completion | None = None


def render_options(options: list[str], *, labelled: bool) -> str:
    if labelled:
        return "\n".join(f"{letter}. {o}" for letter, o in zip(letters(len(options)), options,
                                                                  strict=False))
    return "\n".join(f"- {o}" for o in options)


def choose_option_traced(client: LLMClient, messages: list[Message] | list[dict[str, str]],
                         options: list[str], *, method: Method | None = None,
                         max_tokens: int = 16) -> OptionChoice:
    """Pick one of ``options`` as the answer to ``messages`` (which hold the question).

    The options are appended to the last user message. With log-probabilities (default when
    ``client.supports_logprobs``) each option's text is scored as the reply and the best
    length-normalised log-probability wins; otherwise the model names a letter inside
    ``<final_answer>`` (constrained to one where the backend can).
    """
    letters(len(options))
    msgs = as_messages(messages)
    method = method or ("logprob" if client.supports_logprobs else "generate")
    if method == "logprob":
        prompt = with_instruction(msgs, "Options:\n" + render_options(options, labelled=False)
                                  + "\nReply with the correct option, copied exactly.")
        scores = client.score_options(prompt, options)
        best = max(range(len(options)), key=lambda i: scores[i])
        return OptionChoice(index=best, method="logprob", scores=scores)
    prompt = with_instruction(msgs, "Options:\n" + render_options(options, labelled=True)
                              + "\nAnswer with the letter of the correct option inside "
                              "<final_answer></final_answer>, e.g. <final_answer>A</final_answer>.")
    tags = [f"<final_answer>{letter}</final_answer>" for letter in letters(len(options))]
    completion = client.complete(prompt, max_tokens=max_tokens, choices=tags)
    return OptionChoice(index=parse_final_answer(completion.text, len(options)),
                        method="generate", completion=completion)


def choose_option(client: LLMClient, messages: list[Message] | list[dict[str, str]],
                  options: list[str], *, method: Method | None = None) -> tuple[int | None, str]:
    """``(index, method)`` of the chosen option; index is None when a reply names none.

    See ``choose_option_traced`` for the details and the token costs.
    """
    choice = choose_option_traced(client, messages, options, method=method)
    return choice.index, choice.method
