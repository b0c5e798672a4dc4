"""get_llm: a provider by name, configured from settings, with the response cache attached."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from memlab.config import Settings, get_settings
from memlab.llm.base import LLMS, LLMClient
from memlab.llm.cache import ResponseCache

_CACHES: dict[str, ResponseCache] = {}
_CACHES_LOCK = threading.Lock()


def open_cache(path: str | Path) -> ResponseCache:
    """The process-wide ResponseCache for ``path``."""
    key = str(Path(path).resolve())
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = ResponseCache(path)
        return _CACHES[key]


def get_llm(name: str | None = None, *, settings: Settings | None = None,
            **kwargs: Any) -> LLMClient:
    """Create an LLM client.

    Args:
        name: a key of ``LLMS`` (``memlab llms``); default ``settings.llm`` (MEMLAB_LLM).
        settings: base settings; keyword arguments naming a Settings field override it
            (``local_size="135m"``, ``n_ctx=2048``, ``llm_cache=False``...).
        **kwargs: other keywords go to the provider class.

    Raises:
        UnknownBackendError: ``name`` is not a registered provider (the message lists them).

    Example:
        >>> llm = get_llm("fake", llm_cache=False)
        >>> llm.complete([{"role": "user", "content": "hi"}]).text
        'ok'
    """
    overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in Settings.model_fields}
    if settings is None:
        settings = get_settings(**overrides)
    elif overrides:
        settings = settings.model_copy(update=overrides)
    cls = LLMS.resolve(name or settings.llm)
    client = cls(settings=settings, **kwargs)
    if settings.llm_cache:
        client.cache = open_cache(Path(settings.cache_dir) / "llm_cache.sqlite")
    return client
