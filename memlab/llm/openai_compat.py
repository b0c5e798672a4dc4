"""OpenAICompatLLM: any OpenAI-compatible chat server (vLLM, llama-server, Ollama) over httpx."""

from __future__ import annotations

from typing import Any

import httpx

from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, LLMError
from memlab.llm.base import Completion, LLMClient, Message
from memlab.llm.remote import (
    Deadline,
    RetryPolicy,
    api_key_from_env,
    approx_token_count,
    call_with_retries,
    error_for_status,
    transport_error,
)

KEY_VARS = ("MEMLAB_OPENAI_API_KEY", "OPENAI_API_KEY")
MISSING_LOGPROB = -100.0  # an option whose first token is not among the top log-probabilities


def chat_url(base_url: str) -> str:
    """``…/v1/chat/completions`` from a base URL given with or without ``/v1``."""
    base = base_url.rstrip("/")
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


class OpenAICompatLLM(LLMClient):
    """A model behind ``POST /v1/chat/completions``.

    Args:
        model: the served model name; default ``settings.llm_model`` (required).
        base_url: server address; default ``settings.openai_base_url`` (MEMLAB_OPENAI_BASE_URL).
        context_window: the served model's window in tokens (the API does not report it).
        logprobs: the server returns ``top_logprobs``; enables ``score_options`` (scored by
            each option's first token).
        timeout_s, max_retries: default from settings; retry_base_delay_s: first backoff.
        call_budget_s: overall deadline of one call across its retries (default from settings);
            past it :class:`CallBudgetExceededError` names the URL and the budget.

    The optional API key is read from MEMLAB_OPENAI_API_KEY or OPENAI_API_KEY at call time.
    """

    provider = "openai"

    def __init__(self, model: str | None = None, base_url: str | None = None, *,
                 context_window: int = 8192, logprobs: bool = False,
                 timeout_s: float | None = None, max_retries: int | None = None,
                 retry_base_delay_s: float = 0.5, call_budget_s: float | None = None,
                 settings: Settings | None = None, **_: Any):
        super().__init__()
        settings = settings or get_settings()
        base_url = base_url or settings.openai_base_url
        if not base_url:
            raise ConfigError("openai_base_url: set MEMLAB_OPENAI_BASE_URL to the server address, "
                              "e.g. http://127.0.0.1:8000/v1")
        self.model = model or settings.llm_model or ""
        if not self.model:
            raise ConfigError("llm_model: set MEMLAB_LLM_MODEL to the model name the server serves")
        self.url = chat_url(base_url)
        self.context_window = context_window
        self.supports_logprobs = logprobs
        self.timeout_s = timeout_s or settings.request_timeout_s
        self.call_budget_s = call_budget_s or settings.call_budget_s
        self.policy = RetryPolicy(
            max_retries=settings.max_retries if max_retries is None else max_retries,
            base_delay_s=retry_base_delay_s)
        self._http = httpx.Client(timeout=self.timeout_s)

    def cache_identity(self, params: dict[str, Any]) -> dict[str, Any]:
        """Two servers may serve different weights under one model name: the URL is part of
        every call's cache key (and of a run's identity)."""
        return {"base_url": self.url}

    def _headers(self) -> dict[str, str]:
        key = api_key_from_env(*KEY_VARS)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        deadline = Deadline(self.call_budget_s, f"openai {self.url}")

        def call() -> dict[str, Any]:
            response = self._http.post(self.url, json=body, headers=self._headers(),
                                       timeout=deadline.cap(self.timeout_s))
            if response.status_code >= 400:
                error = error_for_status(response.status_code, response.text, f"openai {self.url}")
                error.retry_after = _retry_after(response)  # type: ignore[attr-defined]
                raise error
            try:
                return response.json()
            except ValueError as exc:
                raise LLMError(f"openai {self.url}: answer is not JSON: {response.text[:200]}") \
                    from exc

        return call_with_retries(
            call, lambda exc: transport_error(exc, f"openai {self.url}", self.timeout_s),
            self.policy, deadline=deadline)

    def _body(self, messages: list[Message], **params: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": [m.model_dump() for m in messages],
            "max_tokens": params["max_tokens"], "temperature": params["temperature"], "seed": 0}
        if params.get("stop"):
            body["stop"] = params["stop"]
        if params.get("json_schema") is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": params["json_schema"] or {"type": "object"}}}
        return body

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        data = self._post(self._body(messages, **params))
        try:
            text = data["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMError(f"openai {self.url}: unexpected answer shape: {str(data)[:200]}") \
                from exc
        text = self._field("choices[0].message.content", "" if text is None else text, str,
                           "text")
        usage = self._field("usage", data.get("usage") or {}, dict, "an object")
        model = self._field("model", data.get("model") or self.model, str, "a name")
        return Completion(
            text=text, model=model, provider=self.provider, latency_s=0.0,
            prompt_tokens=self._tokens(usage, "prompt_tokens",
                                       lambda: self.count_message_tokens(messages)),
            completion_tokens=self._tokens(usage, "completion_tokens",
                                           lambda: self.count_tokens(text)))

    def _field(self, field: str, value: Any, kind: type, rule: str) -> Any:
        """``value`` of the answer's ``field`` when it is a ``kind``; else an LLMError (the call
        failed, as for any other malformed answer: the run records it, never a traceback)."""
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self._malformed(field, value, rule)
        return value

    def _malformed(self, field: str, value: Any, rule: str) -> LLMError:
        return LLMError(f"openai {self.url}: unexpected answer shape: field {field!r} must be "
                        f"{rule}, got {type(value).__name__} {str(value)[:80]!r}")

    def _tokens(self, usage: dict[str, Any], key: str, estimate: Any) -> int:
        """A token count of ``usage`` (``estimate()`` when the server gives none)."""
        value = usage.get(key)
        if value is None:
            return estimate()
        if self._field(f"usage.{key}", value, int, "a whole number") < 0:
            raise self._malformed(f"usage.{key}", value, "a whole number of at least 0")
        return value

    def _score_options(self, messages: list[Message], options: list[str]) -> list[float]:
        """Log-probability of each option's first token among the server's top 20."""
        body = self._body(messages, max_tokens=1, temperature=0.0)
        body.update({"logprobs": True, "top_logprobs": 20})
        data = self._post(body)
        try:
            top = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"openai {self.url}: the server returned no logprobs") from exc
        try:
            return [_first_token_logprob(option, top) for option in options]
        except (KeyError, TypeError, AttributeError) as exc:
            raise LLMError(f"openai {self.url}: unexpected top_logprobs shape: "
                           f"{str(top)[:200]}") from exc

    def count_tokens(self, text: str) -> int:
        return approx_token_count(text)


def _first_token_logprob(option: str, top: list[dict[str, Any]]) -> float:
    target = option.strip()
    scores = [t["logprob"] for t in top
              if t.get("token", "").strip() and target.startswith(t["token"].strip())]
    return max(scores, default=MISSING_LOGPROB)


def _retry_after(response: httpx.Response) -> float:
    try:
        return float(response.headers.get("retry-after", 0))
    except ValueError:
        return 0.0
