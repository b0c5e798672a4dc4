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

_TAGGED = re.compile(r"<final_answer>\s*\(?\s*([A-Za-z])\b", re.I)
_BARE = re.compile(r"^\W*\(?([A-Za-z])\)?\W*$")
_STATED = re.compile(r"\b(?i:answer|option|choice)\s*(?:is|:)?\s*\(?([A-Z])\b\)?")


def letters(n_options: int) -> str:
    if not 1 < n_options <= len(ascii_uppercase):
        raise ConfigError(f"options: need 2 to {len(ascii_uppercase)} options, got {n_options}")
    return ascii_uppercase[:n_options]


def parse_final_answer(text: str, n_options: int) -> int | None:
    """The 0-based option index a reply names, or None.

    Accepts ``<final_answer>B</final_answer>`` (also unclosed or ``(B)``), a bare letter
    ("B", "b.", "(B)"), and "the answer is B".

    Example:
        >>> parse_final_answer("I think <final_answer>C</final_answer>", 4)
        2
    """
    for pattern in (_TAGGED, _BARE, _STATED):
        match = pattern.search(text.strip())
        if match:
            index = ascii_uppercase.find(match.group(1).upper())
            return index if 0 <= index < n_options else None
    return None


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
