"""Interleave GoodAI-style test scripts into one conversation, measured in the model's tokens.

Each script line waits until its share of the memory span has passed since the test's first
line (and, for time-based tests, until the simulated clock has moved on); when every running test
waits, generated filler is sent. At most one test of a type runs at a time, and a test only
starts while the running ones leave room in the span, so questions land on time.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memlab.bench.filler import filler_turn

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Default token count: the larger of whitespace words and characters / 4."""
    return max(len(text.split()), (len(text) + 3) // 4)


@dataclass
class ScriptTest:
    """One test to schedule: its lines, question flags and waits (``percentage_finished``,
    ``tokens``, ``time`` in seconds), plus what happens around the question."""

    test_id: str
    test_type: str
    script: list[str]
    is_question: list[bool]
    waits: list[dict[str, Any]]
    reset_message: str = ""
    replies_after: int = 0  # answered turns the test needs after its last question
    make_question: Callable[[list[datetime], datetime], str] | None = None  # temporal question


@dataclass
class Turn:
    """One scheduled user turn; ``tokens`` is the span position where it starts."""

    kind: str  # filler | needle | question
    text: str
    reply: str | None
    test_id: str | None
    test_type: str | None
    timestamp: datetime
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Running:
    test: ScriptTest
    order: int
    line: int = 0
    start_pos: int = 0
    due_pos: int = 0
    due_time: datetime | None = None
    line_times: list[datetime] = field(default_factory=list)
    line_pos: list[int] = field(default_factory=list)
    reply_from: int = 0
    spans: dict[str, Any] = field(default_factory=dict)
    phase: str = "script"  # script | replies | reset | done


@dataclass
class Schedule:
    turns: list[Turn]
    spans: dict[str, dict[str, Any]]  # test_id -> first_pos, question_pos, distance, line_pos


class Scheduler:
    """Builds one conversation from many tests.

    Args:
        span: the memory span in the model's tokens that waits are a share of.
        count_tokens: the model's token counter (default: ``estimate_tokens``).
        reply_tokens: tokens allowed for each answered turn's (unknown) reply.
        load: share of the span the running tests' remaining lines may occupy.
    """

    def __init__(self, span: int, *, count_tokens: TokenCounter | None = None,
                 seed: int = 0, start: datetime | None = None, reply_tokens: int = 16,
                 turn_seconds: int = 30, load: float = 0.5):
        self.span = span
        self.count = count_tokens or estimate_tokens
        self.rng = random.Random(seed)
        self.clock = start or datetime(2024, 1, 1, 9, 0, 0)
        self.reply_tokens, self.turn_seconds, self.load = reply_tokens, turn_seconds, load
        self.filler_size = min(max(self.span // 40, 25), 300)
        self.pos = 0
        self.turns: list[Turn] = []
        self._finished: list[_Running] = []

    def run(self, tests: list[ScriptTest]) -> Schedule:
        pending, running, order = list(tests), [], 0
        while pending or running:
            order = self._admit(pending, running, order)
            waiting = [r for r in running if r.phase != "replies"]
            for r in waiting:  # time is free: jump the clock as soon as a line waits only on it
                if r.due_pos <= self.pos and r.due_time is not None and r.due_time > self.clock:
                    self.clock = r.due_time
            ready = [r for r in waiting if r.due_pos <= self.pos
                     and (r.due_time is None or r.due_time <= self.clock)]
            if ready:
                self._step(min(ready, key=self._priority))
            else:
                gap = min((r.due_pos for r in waiting), default=self.pos) - self.pos
                self._filler(gap, running)
            self._check_replies(running)
            running = [r for r in running if r.phase != "done"]
        spans = {r.test.test_id: r.spans for r in self._finished}
        return Schedule(self.turns, spans)

    # ------------------------------------------------------------ internals

    def _admit(self, pending: list[ScriptTest], running: list[_Running], order: int) -> int:
        """Start pending tests in order while they fit (a type's examples never overtake)."""
        held: set[str] = set()
        for test in list(pending):
            if test.test_type not in held and self._admits(test, running):
                pending.remove(test)
                running.append(_Running(test, order, start_pos=self.pos, due_pos=self.pos,
                                        due_time=self.clock))
                order += 1
            held.add(test.test_type)
        return order

    def _admits(self, test: ScriptTest, running: list[_Running]) -> bool:
        if any(r.test.test_type == test.test_type for r in running):
            return False
        if not running:
            return True
        busy = sum(self._demand(r.test, r.line) for r in running)
        if busy + self._demand(test, 0) > self.load * self.span:
            return False
        # keep the new test's deadlines apart from the running tests' ones
        taken = [d for r in running for d in self._deadlines(r.test, r.line, r.start_pos)]
        sep = max(40, self.span // 30)
        return all(abs(d - t) >= sep for d in self._deadlines(test, 0, self.pos) for t in taken)

    def _deadlines(self, test: ScriptTest, line: int, start: int) -> list[int]:
        """Span positions at which the test's lines from ``line`` on fall due."""
        return [start + round(w["percentage_finished"] / 100 * self.span)
                for w in test.waits[max(line - 1, 0):len(test.script)]
                if w.get("percentage_finished") is not None]

    def _demand(self, test: ScriptTest, start: int) -> int:
        return sum(self.count(line) + self.reply_tokens for line in test.script[start:])

    @staticmethod
    def _priority(r: _Running) -> tuple:
        """Lines with a deadline (questions first) before first lines and reset messages."""
        flexible = r.phase == "reset" or (r.phase == "script" and r.line == 0)
        is_q = r.phase == "script" and r.line < len(r.test.is_question) and r.test.is_question[r.line]
        return (flexible, r.due_pos, not is_q, r.order)

    def _emit(self, kind: str, text: str, reply: str | None, test: ScriptTest | None,
              **metadata: Any) -> None:
        tokens = self.count(text) + (self.count(reply) if reply is not None else self.reply_tokens)
        self.turns.append(Turn(kind, text, reply, test.test_id if test else None,
                               test.test_type if test else None, self.clock, self.pos, metadata))
        self.pos += tokens
        self.clock += timedelta(seconds=self.turn_seconds)

    def _step(self, r: _Running) -> None:
        test = r.test
        if r.phase == "reset":
            self._emit("needle", test.reset_message, None, test, reset=True)
            return self._finish(r)
        if r.line == 0:
            r.start_pos = self.pos
        is_q = test.is_question[r.line]
        text = (test.make_question(r.line_times, self.clock)
                if r.line >= len(test.script) else test.script[r.line])
        r.line_times.append(self.clock)
        r.line_pos.append(self.pos)
        self._emit("question" if is_q else "needle", text, None, test, line=r.line)
        wait = test.waits[r.line] if r.line < len(test.waits) else {}
        r.line += 1
        if r.line < len(test.is_question):
            self._set_due(r, wait)
            return None
        r.reply_from = len(self.turns)
        r.phase = "replies" if test.replies_after else ("reset" if test.reset_message else "done")
        r.due_pos = self.pos
        if r.phase == "done":
            self._finish(r)
        return None

    def _set_due(self, r: _Running, wait: dict[str, Any]) -> None:
        if wait.get("percentage_finished") is not None:
            r.due_pos = r.start_pos + round(wait["percentage_finished"] / 100 * self.span)
        else:
            r.due_pos = self.pos + int(wait.get("tokens") or 0)
        r.due_time = self.clock + timedelta(seconds=float(wait.get("time") or 0))

    def _finish(self, r: _Running) -> None:
        r.phase = "done"
        questions = [p for p, q in zip(r.line_pos, r.test.is_question, strict=False) if q]
        r.spans = {"first_pos": r.start_pos, "question_pos": questions[-1],
                   "distance": questions[-1] - r.start_pos, "line_pos": list(r.line_pos)}
        self._finished.append(r)

    def _filler(self, gap: int, running: list[_Running]) -> None:
        size = max(10, min(self.filler_size, gap))
        text, reply = filler_turn(self.rng, size, self.count)
        if any(r.phase == "replies" for r in running):
            # a test is counting the agent's next replies: this filler is answered
            self._emit("needle", text, None, None, filler=True)
        else:
            self._emit("filler", text, reply, None)

    def _check_replies(self, running: list[_Running]) -> None:
        for r in running:
            if r.phase != "replies":
                continue
            answered = sum(t.kind != "filler" for t in self.turns[r.reply_from:])
            if answered >= r.test.replies_after:
                r.phase, r.due_pos = ("reset" if r.test.reset_message else "done"), self.pos
                if r.phase == "done":
                    self._finish(r)
