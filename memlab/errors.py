"""Typed errors shared across memlab. Imports nothing of memlab."""

from __future__ import annotations

import os


class MemlabError(Exception):
    """Base class of every error memlab raises on purpose."""


class ConfigError(MemlabError, ValueError):
    """A user-supplied setting or input is invalid; the message names the field and the rule."""


class DamagedFileError(ConfigError):
    """A file memlab wrote is damaged inside, not just torn at its tail by a crash: the message
    names the file and the line. ``public`` says the same naming only ``public_name`` (default:
    the file's name), for an HTTP client that must not learn the server's paths.
    """

    def __init__(self, path: object, detail: str, *, public_name: str | None = None):
        super().__init__(f"{path}: {detail}")
        self.path, self.detail = str(path), detail
        self.public = f"{public_name or os.path.basename(str(path))}: {detail}"


class RunLockedError(ConfigError):
    """Another process holds a run folder's lock; the message names it (pid, host, start)."""


class UnknownBackendError(ConfigError, KeyError):
    """A registry was asked for a name it does not know."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0] if self.args else ""


class MissingDependencyError(MemlabError, ImportError):
    """An optional package (or a model-weights package) is not installed; says what to install."""


class LLMError(MemlabError):
    """A model call failed after its retries."""


class LLMTimeoutError(LLMError):
    """A model call did not answer within its timeout."""


class CallBudgetExceededError(LLMTimeoutError):
    """A model call did not succeed within its overall budget across retries (``call_budget_s``);
    the message names the URL and the budget."""


class LLMRateLimitError(LLMError):
    """The provider refused the call for rate or capacity (HTTP 429/503) after all retries."""


class LLMAuthError(LLMError):
    """The provider rejected the credentials, or none were given."""


class StructuredOutputError(LLMError):
    """The model's output could not be turned into the requested pydantic model.

    Attributes:
        raw_text: the last raw text the model produced.
        errors: one message per failed attempt.
    """

    def __init__(self, message: str, raw_text: str = "", errors: list[str] | None = None):
        super().__init__(message)
        self.raw_text = raw_text
        self.errors = list(errors or [])


class LiveCallError(MemlabError):
    """A replay (``CallJournal(replay_only=True)``) was asked for a model call its journal does
    not hold: answering it would need the model. The message names the journal and the step."""


class RunFailedError(MemlabError):
    """A run ended as ``failed``: more of its answering calls failed than ``max_failed_share``
    allows (the message gives the count and the first error; running it again retries them)."""


class StoreError(MemlabError):
    """A storage backend failed."""


class StoreUnavailableError(StoreError):
    """A storage server could not be reached within its timeout (the message names the URL)."""


class VersionConflictError(StoreError):
    """Optimistic locking: a write was based on a stale version; nothing was written."""


class IllegalTransitionError(MemlabError, ValueError):
    """A state machine was asked for a transition its specification does not allow."""


def fields_message(errors: list[dict], *, whole: str = "value") -> str:
    """One line for a pydantic ``ValidationError.errors()`` list: ``field 'span': <rule>; ...``.

    Args:
        whole: what to call an error that belongs to no field (``loc`` empty).
    """
    parts = []
    for error in errors:
        field = ".".join(str(p) for p in error.get("loc", ())) or whole
        parts.append(f"field {field!r}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
