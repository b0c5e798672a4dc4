"""GeminiLLM: Google's Gemini models through the google-genai SDK."""

from __future__ import annotations

from typing import Any

from memlab.config import Settings, get_settings
from memlab.errors import LLMAuthError, LLMError, MissingDependencyError
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

KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_MODEL = "gemini-2.5-flash"
DEFAULT_URL = "https://generativelanguage.googleapis.com"


def _genai():
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError:
        raise MissingDependencyError(
            "the gemini provider needs the google-genai SDK; run: pip install google-genai") from None
    return genai, types, errors


class GeminiLLM(LLMClient):
    """A Gemini model.

    Args:
        model: default ``settings.llm_model`` or ``gemini-2.5-flash``.
        base_url: API endpoint override (tests point it at a loopback server).
        thinking_budget: thinking tokens per call; 0 (default) keeps short answers cheap and
            inside ``max_tokens``; None leaves the model's default.
        context_window: the model's window in tokens.
        timeout_s, max_retries: default from settings; retry_base_delay_s: first backoff.
        call_budget_s: overall deadline of one call across its retries (default from settings).

    Raises:
        LLMAuthError: neither GEMINI_API_KEY nor GOOGLE_API_KEY is set.
    """

    provider = "gemini"

    def __init__(self, model: str | None = None, *, base_url: str | None = None,
                 thinking_budget: int | None = 0, context_window: int = 1_048_576,
                 timeout_s: float | None = None, max_retries: int | None = None,
                 retry_base_delay_s: float = 0.5, call_budget_s: float | None = None,
                 settings: Settings | None = None, **_: Any):
        super().__init__()
        settings = settings or get_settings()
        key = api_key_from_env(*KEY_VARS)
        if not key:
            raise LLMAuthError("gemini needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) "
                               "in the environment")
        genai, self._types, self._errors = _genai()
        self.model = model or settings.llm_model or DEFAULT_MODEL
        self.context_window = context_window
        self.thinking_budget = thinking_budget
        self.timeout_s = timeout_s or settings.request_timeout_s
        self.call_budget_s = call_budget_s or settings.call_budget_s
        self.where = f"gemini {self.model} at {base_url or DEFAULT_URL}"
        self.policy = RetryPolicy(
            max_retries=settings.max_retries if max_retries is None else max_retries,
            base_delay_s=retry_base_delay_s)
        http_options = self._types.HttpOptions(
            base_url=base_url, timeout=int(self.timeout_s * 1000),
            retry_options=self._types.HttpRetryOptions(attempts=1))  # memlab owns retries
        self._client = genai.Client(api_key=key, http_options=http_options)

    def _config(self, system: str | None, **params: Any) -> Any:
        t = self._types
        config: dict[str, Any] = {"temperature": params["temperature"], "seed": 0,
                                  "max_output_tokens": params["max_tokens"],
                                  "system_instruction": system}
        if params.get("stop"):
            config["stop_sequences"] = params["stop"]
        if params.get("choices"):
            config["response_mime_type"] = "text/x.enum"
            config["response_schema"] = {"type": "STRING", "enum": params["choices"]}
        elif params.get("json_schema") is not None:
            config["response_mime_type"] = "application/json"
            if params["json_schema"]:
                config["response_json_schema"] = params["json_schema"]
        if self.thinking_budget is not None:
            config["thinking_config"] = t.ThinkingConfig(thinking_budget=self.thinking_budget)
        return t.GenerateContentConfig(**config)

    def _contents(self, messages: list[Message]) -> tuple[str | None, list[Any]]:
        t = self._types
        system = "\n\n".join(m.content for m in messages if m.role == "system") or None
        contents = [t.Content(role="model" if m.role == "assistant" else "user",
                              parts=[t.Part(text=m.content)])
                    for m in messages if m.role != "system"]
        return system, contents

    def _classify(self, exc: Exception) -> LLMError:
        if isinstance(exc, self._errors.APIError):
            return error_for_status(exc.code or 0, str(exc.message or exc), self.where)
        return transport_error(exc, self.where, self.timeout_s)

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        system, contents = self._contents(messages)
        config = self._config(system, **params)
        deadline = Deadline(self.call_budget_s, self.where)

        def call() -> Any:
            timeout_ms = max(1, int(deadline.cap(self.timeout_s) * 1000))
            attempt = config.model_copy(update={
                "http_options": self._types.HttpOptions(timeout=timeout_ms)})
            return self._client.models.generate_content(
                model=self.model, contents=contents, config=attempt)

        response = call_with_retries(call, self._classify, self.policy, deadline=deadline)
        text = response.text or ""
        usage = response.usage_metadata
        prompt_tokens = getattr(usage, "prompt_token_count", None)
        output = (getattr(usage, "candidates_token_count", None) or 0) + \
            (getattr(usage, "thoughts_token_count", None) or 0)  # thinking is billed output
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens if prompt_tokens is not None
            else self.count_message_tokens(messages),
            completion_tokens=output if usage is not None else self.count_tokens(text),
            latency_s=0.0, model=self.model, provider=self.provider)

    def count_tokens(self, text: str) -> int:
        return approx_token_count(text)
