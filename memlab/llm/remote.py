"""Plumbing shared by remote providers: retries with bounded backoff inside an overall deadline,
error mapping, keys."""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, Field

from memlab.errors import (
    CallBudgetExceededError,
    LLMAuthError,
    LLMError,
    LLMRateLimitError,
    LLMTimeoutError,
)

T = TypeVar("T")

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class RetryPolicy(BaseModel):
    """How often and how patiently a remote call is retried.

    The n-th retry waits ``min(max_delay_s, base_delay_s * 2**n)`` plus up to ``jitter`` of
    that, so bursts of clients do not retry in lockstep.
    """

    max_retries: int = Field(4, ge=0)
    base_delay_s: float = Field(0.5, ge=0)
    max_delay_s: float = Field(8.0, ge=0)
    jitter: float = Field(0.25, ge=0, le=1)

    def delay(self, attempt: int) -> float:
        base = min(self.max_delay_s, self.base_delay_s * (2 ** attempt))
        return base + random.uniform(0, self.jitter * base)


def error_for_status(status: int, detail: str, where: str) -> LLMError:
    """The typed error for an HTTP status from a model provider."""
    text = f"{where}: HTTP {status}: {detail[:300]}"
    if status in (401, 403):
        error: LLMError = LLMAuthError(text + " (check the API key in the environment)")
    elif status in (429, 503):
        error = LLMRateLimitError(text)
    elif status in (408, 504):
        error = LLMTimeoutError(text)
    else:
        error = LLMError(text)
    error.status = status  # type: ignore[attr-defined]
    error.retryable = status in RETRYABLE_STATUS  # type: ignore[attr-defined]
    return error


def transport_error(exc: Exception, where: str, timeout_s: float) -> LLMError:
    """The typed error for a failure below HTTP (timeout, refused connection...)."""
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return LLMTimeoutError(f"{where}: no answer within {timeout_s:g} s ({type(exc).__name__})")
    error = LLMError(f"{where}: {type(exc).__name__}: {exc}")
    error.retryable = "Connect" in type(exc).__name__ or isinstance(exc, ConnectionError)  # type: ignore[attr-defined]
    return error


def is_retryable(error: LLMError) -> bool:
    if isinstance(error, LLMAuthError):
        return False
    return getattr(error, "retryable", isinstance(error, LLMRateLimitError | LLMTimeoutError))


def api_key_from_env(*names: str) -> str | None:
    """The first non-empty environment variable of ``names`` (keys live only in the environment)."""
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def approx_token_count(text: str) -> int:
    """About four characters per token: remote providers' tokenizers are not available offline.

    Exact counts of real calls come from each response's usage field.
    """
    return math.ceil(len(text) / 4) if text else 0


class Deadline:
    """The overall budget of one model call across its attempts and backoff waits.

    Args:
        budget_s: seconds from now (``call_budget_s`` / MEMLAB_CALL_BUDGET_S).
        where: the provider and URL, for the error message.
    """

    def __init__(self, budget_s: float, where: str, *,
                 clock: Callable[[], float] = time.monotonic):
        self.budget_s, self.where, self.clock = budget_s, where, clock
        self.end = clock() + budget_s

    def remaining(self) -> float:
        return self.end - self.clock()

    def cap(self, timeout_s: float) -> float:
        """One attempt's timeout: ``timeout_s``, cut to what is left of the budget."""
        return max(0.001, min(timeout_s, self.remaining()))

    def exceeded(self, attempts: int, last: Exception | None) -> CallBudgetExceededError:
        why = f"; last error: {last}" if last is not None else ""
        return CallBudgetExceededError(
            f"{self.where}: no answer within the call budget of {self.budget_s:g} s "
            f"(call_budget_s, MEMLAB_CALL_BUDGET_S) after {attempts} attempt(s){why}")


def call_with_retries(call: Callable[[], T], classify: Callable[[Exception], LLMError],
                      policy: RetryPolicy, *, deadline: Deadline | None = None,
                      sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``call``; on a retryable failure wait and try again, at most ``policy.max_retries``.

    Args:
        call: the remote call (it should cap its own timeout with ``deadline.cap``).
        classify: turns any other exception of the call into a typed ``LLMError``; rate
            limits, timeouts and errors marked ``retryable`` are retried.
        policy: retry count and backoff.
        deadline: the call's overall budget; no attempt starts, and no backoff is waited, past it.

    Raises:
        CallBudgetExceededError: the budget ran out before an attempt succeeded.
        LLMError: the typed error of the last attempt (auth errors at once, without retry).
    """
    for attempt in range(policy.max_retries + 1):
        try:
            return call()
        except Exception as exc:  # every failure becomes a typed LLMError below
            error = exc if isinstance(exc, LLMError) else classify(exc)
            error.attempts = attempt + 1  # type: ignore[attr-defined]
            if not is_retryable(error) or attempt == policy.max_retries:
                _raise_last(error, exc, deadline)
            retry_after = min(getattr(error, "retry_after", 0.0) or 0.0, policy.max_delay_s)
            wait = max(policy.delay(attempt), retry_after)
            if deadline is not None and wait >= deadline.remaining():
                raise deadline.exceeded(attempt + 1, error) from exc
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _raise_last(error: LLMError, exc: Exception, deadline: Deadline | None) -> None:
    """Raise the last attempt's error (as the budget's error when a timeout used it up)."""
    attempts = getattr(error, "attempts", 1)
    if deadline is not None and isinstance(error, LLMTimeoutError) and deadline.remaining() <= 0:
        raise deadline.exceeded(attempts, error) from exc
    if error is exc:
        raise error
    raise error from exc
