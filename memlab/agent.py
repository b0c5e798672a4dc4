"""The Agent: the one interaction loop every memory condition shares (seed 002 sequence diagram).

recall from memory -> build the system prompt from the memory context (+ persona) -> call the
LLM with the history the context carries + the clock and the user message -> store the exchange
-> auto-sleep check. The Agent never knows which condition it runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from memlab.errors import LLMError
from memlab.llm.base import Completion, LLMClient, Message
from memlab.llm.options import letters, parse_letter
from memlab.memory.base import Exchange, MemoryContext, MemorySystem, format_time

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a long-term memory of your conversations with this user. "
    "Use what you remember when it is relevant. Answer concisely."
)
MEMORY_HEADER = "What you remember about this user and your past conversations:"
TIME_MARK_GAP = timedelta(minutes=30)  # history shows a time when it moved this much
# Where each part of an answer prompt goes (part of the prompt version: a run made with the
# earlier layout, the clock in the system prompt before the history, is not resumed with this
# one). The clock changes with every question, so it comes after the history: full_context's
# long history is then a prefix the model reuses from one answer to the next instead of
# re-reading it each time. The memory block stays in the system prompt (seed 002's
# _build_system_prompt(memory_context, persona)): the conditions that have one send only the
# last few turns as history, which change from one question to the next anyway.
PROMPT_LAYOUT = "system: instructions, persona, memory | history | user: clock, message"


class TurnTrace(BaseModel):
    """What one ``interact`` call did and cost (one line of a run's turns.jsonl).

    Attributes:
        prompt_tokens: the whole prompt as the LLM counted it.
        prompt_tokens_system: instructions + persona (+ per-message overhead of the system message).
        prompt_tokens_memory: the memory block of the system prompt.
        prompt_tokens_history: the past exchanges sent as chat turns.
        prompt_tokens_user: the current user message.
        prompt_tokens_reused: prompt tokens the model did not evaluate again (a prefix it had
            evaluated for an earlier call); None when the backend does not say.
        llm_latency_s: the answering LLM call.
        memory_latency_s: recall + store (includes the condition's own model calls, e.g. hybrid
            extraction; excludes a sleep cycle, whose statistics are in ``cycle_stats``).
        recall_latency_s: the recall alone (the memory search a question waits for).
        memory_ids / memory_kinds: the memories put into the prompt (items, then history turns).
        truncated_turns: exchanges the condition cut to fit the window (full_context).
        slept: an auto-sleep cycle ran after this turn; ``cycle_stats`` holds its CycleStats.
        error: the LLM call failed (typed LLMError name + message); ``reply`` is then "".
        choice: for a multiple-choice question, the 0-based option the reply names (None: none).
        answered: False when the turn was recalled and its prompt built but not sent to the
            model (an evidence-only run); ``prompt_tokens`` is then the prompt's own count.
        context: the MemoryContext recalled for this turn (not written to turns.jsonl; the
            runner reads evidence and provenance from it).
        messages: the prompt as sent (not written to turns.jsonl; the runner stores it by hash).
    """

    reply: str = ""
    prompt_tokens: int = 0
    prompt_tokens_system: int = 0
    prompt_tokens_memory: int = 0
    prompt_tokens_history: int = 0
    prompt_tokens_user: int = 0
    completion_tokens: int = 0
    prompt_tokens_reused: int | None = None
    llm_latency_s: float = 0.0
    memory_latency_s: float = 0.0
    recall_latency_s: float = 0.0
    memory_ids: list[str] = Field(default_factory=list)
    memory_kinds: list[str] = Field(default_factory=list)
    truncated_turns: int = 0
    cached: bool = False
    slept: bool = False
    cycle_stats: dict[str, Any] | None = None
    error: str | None = None
    choice: int | None = None
    answered: bool = True
    context: MemoryContext | None = Field(None, exclude=True, repr=False)
    messages: list[Message] = Field(default_factory=list, exclude=True, repr=False)


def render_options(text: str, options: list[str]) -> str:
    """A multiple-choice question: the question, its lettered options, the answer instruction."""
    lines = [f"{letter}. {option}" for letter, option in zip(letters(len(options)), options,
                                                             strict=True)]
    return (f"{text}\n\nOptions:\n" + "\n".join(lines)
            + "\n\nAnswer with the letter of the correct option only.")


class Agent:
    """One agent of one condition, talking with one user.

    Args:
        memory: the condition (already scoped to the user and agent).
        llm: the answering model.
        persona: description of the user, added to the system prompt when given.
        history_turns: most past exchanges sent as chat turns (a context that marks its history
            ``metadata["uncapped_history"]``, i.e. full_context, is exempt: its cut is its own).
        max_tokens: reply length limit.
        system_prompt: instructions replacing ``DEFAULT_SYSTEM_PROMPT``.
        auto_sleep: run the memory's consolidation when it asks for it after a stored turn
            (Table 2's protocol turns it off and sleeps once, by hand).
        time_format: how the prompt writes a time: the clock, remembered items, history
            (default ``format_time``, ``Mon 08 Jan 2024 19:00``; the runner sets the suite's
            own, ``Suite.format_time``: LoCoMo writes ``1:56 pm on 8 May, 2023``).
        show_clock: start the message with the clock line ("It is now ...") when it has a time;
            False keeps the times on remembered items and history but states no present (the
            runner sets the suite's ``Suite.states_clock``: LoCoMo's protocol states none).
    """

    def __init__(self, memory: MemorySystem, llm: LLMClient, *, persona: str | None = None,
                 history_turns: int = 5, max_tokens: int = 128,
                 system_prompt: str | None = None, auto_sleep: bool = True,
                 time_format: Callable[[datetime], str] | None = None,
                 show_clock: bool = True):
        self.memory = memory
        self.llm = llm
        self.persona = persona
        self.history_turns = history_turns
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.auto_sleep = auto_sleep
        self.time_format = time_format or format_time
        self.show_clock = show_clock
        self.turn_number = 0
        self.cycles: list[Any] = []  # CycleStats of every sleep cycle this agent ran
        self.last_messages: list[Message] = []  # the prompt of the last interact (option scoring)

    # ----------------------------------------------------------------- the loop
    def interact(self, text: str, *, store: bool = True, timestamp: datetime | None = None,
                 session_id: str | None = None, options: list[str] | None = None,
                 answer: bool = True, max_tokens: int | None = None,
                 prompt: str | None = None) -> TurnTrace:
        """Answer ``text`` with memory; never raises for a failing model call (see ``error``).

        Args:
            store: store the exchange (``commit``) once answered; False leaves that to the
                caller (the server stores a turn only if its client is still waiting).
            prompt: the user message the model sees instead of ``text`` (an answer instruction
                around a question); memory is still queried with ``text``, and ``text`` is
                what gets stored.
            timestamp: the conversation's clock now; when given, the prompt states it and
                shows when remembered turns happened, and it is stored with the exchange.
            options: answer options of a multiple-choice question: the reply is one option
                letter (constrained to one where the backend can) and ``choice`` its index.
            answer: False builds the prompt without calling the model and stores nothing.
            max_tokens: reply limit of this turn (default ``self.max_tokens``).
        """
        trace = TurnTrace()
        start = time.perf_counter()
        context = self.memory.recall(text)
        trace.context = context
        trace.memory_latency_s = trace.recall_latency_s = time.perf_counter() - start
        shown = prompt or text
        user_text = render_options(shown, options) if options else shown
        messages = self._build_messages(context, user_text, trace, now=timestamp)
        self.last_messages = trace.messages = messages
        if not answer:
            trace.answered = False
            trace.prompt_tokens = self.llm.count_message_tokens(messages)
            return trace
        try:
            completion = self._answer(messages, options, max_tokens)
        except LLMError as exc:
            trace.error = f"{type(exc).__name__}: {exc}"
            return trace
        self._record_completion(trace, completion)
        if options:
            trace.choice = parse_letter(completion.text, len(options))
        if store:
            self.commit(text, trace, timestamp=timestamp, session_id=session_id)
        return trace

    def commit(self, text: str, trace: TurnTrace, *, timestamp: datetime | None = None,
               session_id: str | None = None) -> TurnTrace:
        """Store an answered turn (``text`` and ``trace.reply``), then the auto-sleep check."""
        start = time.perf_counter()
        self._store(text, trace.reply, timestamp, session_id)
        trace.memory_latency_s += time.perf_counter() - start
        self._auto_sleep(trace)
        return trace

    def _answer(self, messages: list[Message], options: list[str] | None,
                max_tokens: int | None = None) -> Completion:
        if not options:
            return self.llm.complete(messages, max_tokens=max_tokens or self.max_tokens)
        return self.llm.complete(messages, max_tokens=8, choices=list(letters(len(options))))

    def observe(self, user: str, assistant: str, *, timestamp: datetime | None = None,
                session_id: str | None = None) -> Any:
        """Store an exchange without calling the answering model (filler); may auto-sleep.

        Returns:
            The statistics of the sleep cycle this exchange triggered, else None.
        """
        self._store(user, assistant, timestamp, session_id)
        return self._auto_sleep(None)

    def sleep(self) -> Any:
        """Run the condition's consolidation cycle now (None when it has none)."""
        stats = self.memory.sleep()
        if stats is not None:
            self.cycles.append(stats)
        return stats

    # ----------------------------------------------------------------- parts
    def build_system_prompt(self, context: MemoryContext,
                            now: datetime | None = None) -> tuple[str, str]:
        """The system prompt's instruction part (+ persona) and its memory block ("" if none;
        its items carry their times when ``now`` is given). The clock is not here: it goes
        with the message (``render_clock``), after the history."""
        base = self.system_prompt
        if self.persona:
            base += f"\n\nAbout the user: {self.persona}"
        rendered = context.render(show_time=now is not None, time_format=self.time_format)
        memory = f"\n\n{MEMORY_HEADER}\n{rendered}" if rendered else ""
        return base, memory

    def render_clock(self, now: datetime | None) -> str:
        """The clock line that starts the last user message ("" without a clock, or when the
        agent states none: ``show_clock``)."""
        if now is None or not self.show_clock:
            return ""
        return f"It is now {self.time_format(now)}.\n\n"

    def _history(self, context: MemoryContext) -> list[Exchange]:
        if context.metadata.get("uncapped_history") or self.history_turns is None:
            return list(context.history)
        return list(context.history[-self.history_turns:]) if self.history_turns > 0 else []

    def _build_messages(self, context: MemoryContext, user_text: str, trace: TurnTrace,
                        now: datetime | None = None) -> list[Message]:
        """The system prompt (instructions, persona, memory block), the history, then the
        clock and the message (``PROMPT_LAYOUT``)."""
        count = self.llm.count_tokens
        base, memory = self.build_system_prompt(context, now)
        messages = [Message(role="system", content=base + memory)]
        trace.prompt_tokens_system = count(base) + 4
        trace.prompt_tokens_memory = count(memory) if memory else 0
        history = self._history(context)
        for exchange, user in zip(history, history_texts(history, now is not None,
                                                                 self.time_format), strict=True):
            messages.append(Message(role="user", content=user))
            messages.append(Message(role="assistant", content=exchange.assistant))
            trace.prompt_tokens_history += count(user) + count(exchange.assistant) + 8
        asked = self.render_clock(now) + user_text
        messages.append(Message(role="user", content=asked))
        trace.prompt_tokens_user = count(asked) + 4
        trace.memory_ids = [item.id for item in context.items] + [
            str(ex.metadata.get("id", f"turn:{ex.turn_number}")) for ex in history]
        trace.memory_kinds = [item.kind for item in context.items] + ["turn"] * len(history)
        trace.truncated_turns = context.truncated_turns
        return messages

    @staticmethod
    def _record_completion(trace: TurnTrace, completion: Completion) -> None:
        trace.reply = completion.text
        trace.prompt_tokens = completion.prompt_tokens
        trace.completion_tokens = completion.completion_tokens
        trace.prompt_tokens_reused = completion.prompt_tokens_reused
        trace.llm_latency_s = completion.latency_s
        trace.cached = completion.cached

    def _store(self, user: str, assistant: str, timestamp: datetime | None,
               session_id: str | None) -> None:
        self.turn_number += 1
        fields: dict[str, Any] = {"user": user, "assistant": assistant,
                                  "turn_number": self.turn_number, "session_id": session_id}
        if timestamp is not None:
            fields["timestamp"] = timestamp
        self.memory.observe(Exchange(**fields))

    def _auto_sleep(self, trace: TurnTrace | None) -> Any:
        if not self.auto_sleep or not self.memory.should_sleep():
            return None
        stats = self.sleep()
        if trace is not None and stats is not None:
            trace.slept = True
            trace.cycle_stats = stats.model_dump(mode="json")
        return stats


def history_texts(history: list[Exchange], show_time: bool,
                  time_format: Callable[[datetime], str] = format_time) -> list[str]:
    """The user messages of ``history`` as sent; with ``show_time``, a message whose time moved
    at least ``TIME_MARK_GAP`` from the last time shown starts with its time (``[Mon 08 Jan
    2024 19:00] ...``): the first one always, then only where the clock jumped."""
    texts, shown = [], None
    for exchange in history:
        moment = exchange.timestamp
        if show_time and (shown is None or abs(moment - shown) >= TIME_MARK_GAP):
            texts.append(f"[{time_format(moment)}] {exchange.user}")
            shown = moment
        else:
            texts.append(exchange.user)
    return texts
