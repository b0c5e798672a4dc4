"""The LLM contract: Message, Completion, LLMClient and the provider registry."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, Field

from memlab.errors import LLMError
from memlab.llm.jsoncut import cut_after_fields, cut_repeats
from memlab.registry import Registry

Role = Literal["system", "user", "assistant"]

# A reply ``stop_on_loop`` cuts: its last LOOP_TOKENS tokens repeat one cycle of at most
# LOOP_PERIOD tokens (6 rounds of an 8-token cycle, 48 of a 1-token one).
LOOP_TOKENS = 48
LOOP_PERIOD = 8


def ends_in_loop(tokens: Sequence[int]) -> bool:
    """Whether the last ``LOOP_TOKENS`` of ``tokens`` repeat one cycle of ``LOOP_PERIOD`` or
    fewer tokens."""
    if len(tokens) < LOOP_TOKENS:
        return False
    tail = list(tokens[-LOOP_TOKENS:])
    return any(all(tail[i] == tail[i - period] for i in range(period, LOOP_TOKENS))
               for period in range(1, LOOP_PERIOD + 1))


class Message(BaseModel):
    role: Role
    content: str


class Completion(BaseModel):
    """One model answer with what it cost."""

    text: str
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    latency_s: float = Field(ge=0)
    cached: bool = False
    model: str
    provider: str = ""
    looped: bool = False  # cut by ``stop_on_loop``
    # prompt tokens the model did not evaluate again (a prefix it had evaluated before);
    # None: the backend does not say
    prompt_tokens_reused: int | None = Field(None, ge=0)


def as_messages(messages: list[Message] | list[dict[str, str]]) -> list[Message]:
    return [m if isinstance(m, Message) else Message(**m) for m in messages]


class LLMClient(ABC):
    """A chat model. Subclasses implement ``_complete``; ``complete`` adds timing and caching.

    Attributes:
        provider: registry key of the provider (``LLMS``).
        model: model name as reported in manifests.
        context_window: the model's window in tokens (prompt + completion).
        supports_logprobs: whether ``score_options`` is available.
    """

    provider: str = "base"
    model: str = "unknown"
    context_window: int = 4096
    supports_logprobs: bool = False

    def __init__(self) -> None:
        self.calls = 0  # model calls actually made (cache hits excluded)
        self.cache = None  # set by get_llm when a response cache is in use

    def complete(
        self,
        messages: list[Message] | list[dict[str, str]],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        json_schema: dict[str, Any] | None = None,
        choices: list[str] | None = None,
        json_newlines: bool = False,
        stop_on_loop: bool = False,
        json_fields: int | None = None,
        json_repeats: bool = False,
    ) -> Completion:
        """Answer ``messages``.

        Args:
            json_schema: constrain the output to JSON of this schema where the backend can.
            choices: constrain the output to exactly one of these strings where the backend can.
            json_newlines: the constrained JSON may break lines and indent (for a prompt that
                shows indented JSON; a local grammar otherwise allows one space at most).
            stop_on_loop: end the reply once it repeats a short cycle of tokens (``LOOP_TOKENS``
                tokens of a cycle of at most ``LOOP_PERIOD``) where the backend can (the local
                model): the 1.5B model otherwise fills a tool argument with "/0/0/0..." up to
                ``max_tokens``. The reply is cut where the loop was seen.
            json_fields: the reply (a JSON object) ends after its first ``json_fields`` values
                (``memlab.llm.jsoncut``): the local model stops generating there; every
                backend's text is cut after that value and the object closed.
            json_repeats: the reply (a JSON object) ends before the first element of one of
                its lists that repeats an earlier element word for word
                (``memlab.llm.jsoncut.cut_repeats``): the local model stops once that element
                is written; every backend's text is cut before it and the object closed.
        """
        msgs = as_messages(messages)
        params = {"max_tokens": max_tokens, "temperature": temperature, "stop": stop,
                  "json_schema": json_schema, "choices": choices}
        if json_newlines:  # only when set: every other call keeps its cache key
            params["json_newlines"] = True
        if stop_on_loop:  # likewise
            params["stop_on_loop"] = True
        if json_fields:  # likewise
            params["json_fields"] = json_fields
        if json_repeats:  # likewise
            params["json_repeats"] = True
        key = params | self.cache_identity(params)
        if self.cache is not None:
            hit = self.cache.get(self.provider, self.model, msgs, key)
            if hit is not None:
                return hit
        start = time.perf_counter()
        try:
            result = self._complete(msgs, **params)
        except LLMError as exc:
            self._note_failure(exc)
            raise
        self.calls += 1
        if json_fields:
            result = result.model_copy(update={"text": cut_after_fields(result.text,
                                                                        json_fields)})
        if json_repeats:
            result = result.model_copy(update={"text": cut_repeats(result.text)})
        if not result.latency_s:
            result.latency_s = time.perf_counter() - start
        if self.cache is not None:
            self.cache.put(self.provider, self.model, msgs, key, result)
        return result

    def cache_identity(self, params: dict[str, Any]) -> dict[str, Any]:
        """What, besides provider, model, messages and ``params``, selects this call's answer:
        added to its cache key (and to a run's identity). Subclasses add e.g. the server URL;
        an empty dict leaves the key as it was."""
        return {}

    def _note_failure(self, error: LLMError) -> None:
        """Tell a cache that records failures (a run's CallJournal) that the call failed."""
        note = getattr(self.cache, "note_failure", None)
        if note is not None:
            note(error)

    @contextmanager
    def using_cache(self, cache: Any) -> Iterator[Any]:
        """Serve and record calls through ``cache`` (e.g. a run's CallJournal) inside the block.

        The cache in place before (the shared response cache) is restored on exit.
        """
        saved, self.cache = self.cache, cache
        try:
            yield cache
        finally:
            self.cache = saved

    @abstractmethod
    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        """Make one real model call."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's own tokenizer."""

    def count_message_tokens(self, messages: list[Message]) -> int:
        return sum(self.count_tokens(m.content) + 4 for m in as_messages(messages))

    def score_options(self, messages: list[Message], options: list[str]) -> list[float]:
        """Length-normalised log-probability of each option as the answer to ``messages``.

        Served from the response cache when one is attached; subclasses implement
        ``_score_options``.

        Raises:
            NotImplementedError: the backend exposes no log-probabilities
                (check ``supports_logprobs`` first).
        """
        msgs, options = as_messages(messages), list(options)
        cache = self.cache if hasattr(self.cache, "get_scores") else None
        identity = self.cache_identity({}) or None
        if cache is not None:
            hit = cache.get_scores(self.provider, self.model, msgs, options, identity=identity)
            if hit is not None:
                return hit
        try:
            scores = self._score_options(msgs, options)
        except LLMError as exc:
            self._note_failure(exc)
            raise
        self.calls += 1
        if cache is not None:
            cache.put_scores(self.provider, self.model, msgs, options, scores, identity=identity)
        return scores

    def _score_options(self, messages: list[Message], options: list[str]) -> list[float]:
        """Make one real scoring call (backends with log-probabilities override this)."""
        raise NotImplementedError(f"{self.provider} exposes no log-probabilities")


LLMS: Registry[LLMClient] = Registry("LLM provider", group="memlab.llms", base=LLMClient)
LLMS.register("local", "memlab.llm.local:LocalLLM",
              "GGUF model in-process (llama.cpp): packaged Qwen2.5 0.5B/1.5B or MEMLAB_LOCAL_MODEL")
LLMS.register("gemini", "memlab.llm.gemini:GeminiLLM", "Google Gemini (GEMINI_API_KEY)")
LLMS.register("openai", "memlab.llm.openai_compat:OpenAICompatLLM",
              "any OpenAI-compatible server (MEMLAB_OPENAI_BASE_URL): vLLM, llama-server, Ollama")
LLMS.register("fake", "memlab.llm.fake:FakeLLM", "scripted replies, for unit tests only")
