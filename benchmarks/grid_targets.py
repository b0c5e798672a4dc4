"""The size of each cell of a grid that has not run: what estimate_grid.py projects onto.

Suites are generated offline and deterministically, so a cell's stored turns, answered needles
and questions are counted on its suite (built with the token estimate, as ``gridspec.plan``
does). The answering prompt of a condition that recalls a few items does not grow with the span
and is taken as measured (``Rates.prompt_tokens_mean``); full_context's prompt is the history so
far, cut to the window, so it is computed by full_context itself, run over the suite with a
token count scaled to the answering model's tokenizer (``SuiteStats.history_scale``).
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grid_costs import condition_key, whole_history

from memlab.bench.base import SUITES, Suite, SuiteEvent
from memlab.bench.questions import SCRIPTED_ACK, QuestionPlan
from memlab.bench.schedule import estimate_tokens
from memlab.bench.spec import RunSpec
from memlab.lab import answering_window
from memlab.llm.fake import FakeLLM
from memlab.memory.base import Exchange, Scope
from memlab.memory.full_context import FullContextMemory
from memlab.stores.operating import OperatingMemory


@dataclass(frozen=True)
class Answer:
    """One projected answering call."""

    prompt_tokens: int
    completion_tokens: int
    reused: bool  # evaluates only the new message (the clock rule, ``grid_costs.reused_prefix``)
    evaluated: int  # the prompt tokens the model evaluates (the rest reused from its cache)


@dataclass
class Target:
    """One cell of the projected grid: what it stores and what the model answers."""

    cell: RunSpec
    key: str  # condition, "/probes" for a Table 2 cell
    window: int
    stored: int = 0
    questions: int = 0
    needles: int = 0
    answers: list[Answer] = field(default_factory=list)


class TokenCounter(FakeLLM):
    """A stand-in answering model that only counts: the suites' estimate times ``scale``."""

    def __init__(self, scale: float, context_window: int):
        super().__init__(context_window=context_window)
        self.scale = scale

    def count_tokens(self, text: str) -> int:
        return math.ceil(self.scale * estimate_tokens(text)) if text else 0


def build_suite(cell: RunSpec, cache: dict[str, Suite]) -> Suite:
    key = json.dumps([cell.suite, cell.span, cell.seed, cell.suite_options], sort_keys=True)
    if key not in cache:
        cache[key] = SUITES.resolve(cell.suite).build(span=cell.span, seed=cell.seed,
                                                      options=cell.suite_options)
    return cache[key]


def size_target(cell: RunSpec, suite: Suite, *, prompt_tokens: float, evaluated_tokens: float,
                completion_tokens: float, needle_tokens: int, history_scale: float,
                prompt_overhead: float) -> Target:
    """``cell``'s stored turns and answers.

    A whole-history answer evaluates what its prompt does not share with the previous answer's
    (the clock comes after the history, ``agent.PROMPT_LAYOUT``, and memlab parks a prompt
    family's state while other calls run, ``llm.prefix``): the history added since, and the
    overhead (system prompt and the message; an over-count by the system prompt, which is
    reused); all of it at the first answer and after a cut.

    Args:
        prompt_tokens: the condition's measured mean prompt (unused for whole-history ones).
        evaluated_tokens: the mean of those tokens its answers evaluated (likewise).
        completion_tokens: tokens of an answer to a question; ``needle_tokens`` of a reply
            to a needle (when the model writes those).
        history_scale, prompt_overhead: the calibration of full_context's history count and
            what its prompt holds besides the history (system prompt, question).
    """
    events = suite.events()
    plan = QuestionPlan(events, cell, Path(tempfile.gettempdir()))  # writes only when asked
    sent = [e.kind != "filler" and plan.answered(e) for e in events]
    stored = [(e.store if s else e.kind != "question") for e, s in zip(events, sent, strict=True)]
    replies = [completion_tokens if e.kind == "question" else needle_tokens for e in events]
    key = condition_key(cell.condition, cell.probes_sleep)
    target = Target(cell=cell, key=key, window=cell.window, stored=sum(stored))
    prompts = [(round(prompt_tokens), 0)] * len(events)
    evaluated = [round(evaluated_tokens)] * len(events)
    if whole_history(cell.condition):
        counter = TokenCounter(history_scale, cell.window)
        target.window = counter.context_window = answering_window(cell, suite, counter)
        histories = history_at_answers(events, sent, stored, replies, counter)
        prompts = [(history + round(prompt_overhead), cut) for history, cut in histories]
        evaluated = new_tokens(histories, sent, round(prompt_overhead))
    _add_answers(target, events, sent, stored, prompts, evaluated, replies)
    return target


def new_tokens(histories: list[tuple[int, int]], sent: list[bool], overhead: int) -> list[int]:
    """Per event, the tokens a whole-history answer evaluates (0 where none is sent): see
    ``size_target``."""
    out, previous = [], None
    for (history, cut), is_sent in zip(histories, sent, strict=True):
        out.append(0)
        if is_sent:
            fresh = previous is None or previous[1] != cut or history < previous[0]
            out[-1] = overhead + (history if fresh else history - previous[0])
            previous = (history, cut)
    return out


def _add_answers(target: Target, events: list[SuiteEvent], sent: list[bool],
                 stored: list[bool], prompts: list[tuple[int, int]], evaluated: list[int],
                 replies: list[float]) -> None:
    """The answers of ``target`` (a Table 2 cell asks its questions twice more)."""
    asked = []
    for event, is_sent, (prompt, _), new, reply in zip(events, sent, prompts, evaluated,
                                                       replies, strict=True):
        if is_sent:
            answer = Answer(prompt, round(reply), False, new)
            target.answers.append(answer)
            target.needles += event.kind == "needle"
            asked += [answer] if event.kind == "question" else []
    target.questions = len(asked)
    if target.cell.probes_sleep:  # before and after the forced sleep, never reusing a prompt
        target.answers += [Answer(a.prompt_tokens, a.completion_tokens, False, a.prompt_tokens)
                           for a in asked] * 2
        target.questions *= 3


def history_at_answers(events: list[SuiteEvent], sent: list[bool], stored: list[bool],
                       replies: list[float], counter: TokenCounter) -> list[tuple[int, int]]:
    """Per event: (history tokens, turns cut) full_context puts in the prompt when it answers
    (0, 0 for the others), from full_context itself with ``counter``'s tokens and window."""
    memory = FullContextMemory(Scope(user_id="estimate"), llm=counter,
                               operating=OperatingMemory.from_url(None))
    out, number = [], 0
    for event, is_sent, is_stored, reply in zip(events, sent, stored, replies, strict=True):
        out.append((0, 0))
        if is_sent:
            context = memory.recall(event.text)
            out[-1] = (context.metadata["history_tokens"], context.truncated_turns)
        if is_stored:
            number += 1
            assistant = (event.reply if event.kind == "filler" else
                         "word " * round(reply) if is_sent else SCRIPTED_ACK)
            extra = {"timestamp": event.timestamp} if event.timestamp else {}
            memory.observe(Exchange(user=event.text, assistant=assistant or "",
                                    turn_number=number, **extra))
    memory.close()
    return out
