"""Operating memory key-value backends: in-process (the default) and Redis.

Both give the same semantics: string values, atomic read-modify-write (``update``) and atomic
append. Redis uses WATCH/MULTI with retries for ``update`` and a Lua script for ``append``;
every Redis call has connect and socket timeouts (``store_timeout_s``) and at most one quick
reconnect, so a dead or silent server raises :class:`StoreUnavailableError` naming the URL and
the deadline within about twice the timeout instead of hanging, and the next call after a
restart reconnects.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from memlab.config import get_settings
from memlab.errors import ConfigError, MissingDependencyError, StoreError, StoreUnavailableError
from memlab.stores.base import KeyValueStore, Updater

T = TypeVar("T")


class InProcessKV(KeyValueStore):
    """A dict behind one lock: the embedded default (not shared between processes)."""

    url = "memory://"

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.RLock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._data.get(key)

    def set(self, key: str, value: str) -> None:
        _check_value(value)
        with self._lock:
            self._data[key] = value

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._data.pop(key, None) is not None

    def keys(self, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self._data if k.startswith(prefix))

    def update(self, key: str, fn: Updater) -> str | None:
        with self._lock:
            new = fn(self._data.get(key))
            if new is None:
                self._data.pop(key, None)
            else:
                _check_value(new)
                self._data[key] = new
            return new

    def append(self, key: str, text: str, separator: str = "") -> None:
        with self._lock:
            old = self._data.get(key, "")
            self._data[key] = f"{old}{separator}{text}" if old else text

    def clear(self) -> int:
        with self._lock:
            count = len(self._data)
            self._data.clear()
            return count


# KEYS[1] = key, ARGV[1] = text, ARGV[2] = separator used only when the value is non-empty.
_APPEND_LUA = """
if redis.call('STRLEN', KEYS[1]) > 0 then
  return redis.call('APPEND', KEYS[1], ARGV[2] .. ARGV[1])
end
return redis.call('APPEND', KEYS[1], ARGV[1])
"""


class RedisKV(KeyValueStore):
    """Redis (single node) behind the operating-memory contract.

    Args:
        url: ``redis://host:port/db`` (``MEMLAB_REDIS_URL``).
        timeout_s: connect and socket timeout of every call (default ``store_timeout_s``,
            MEMLAB_STORE_TIMEOUT_S).
        max_retries: optimistic-lock retries of ``update`` before giving up.
        namespace: optional key prefix, so several runs can share one server.
    """

    def __init__(
        self, url: str, *, timeout_s: float | None = None, max_retries: int = 10_000,
        namespace: str = ""
    ):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise MissingDependencyError("RedisKV needs redis-py; run: pip install redis") from None
        self._redis = redis
        self.url = redact_url(url)
        self.timeout_s = timeout_s or get_settings().store_timeout_s
        self.max_retries, self.namespace = max_retries, namespace
        try:
            self.client = redis.Redis.from_url(
                url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                decode_responses=True,
                retry=Retry(NoBackoff(), 1),  # one reconnect (a restarted server), no more
                health_check_interval=30,
            )
        except ValueError as exc:
            raise ConfigError(f"redis_url: {self.url!r} is not a Redis URL ({exc})") from None
        self._append = self.client.register_script(_APPEND_LUA)

    def _k(self, key: str) -> str:
        return self.namespace + key

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._redis.TimeoutError as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url}: no answer within {self.timeout_s:g} s "
                f"(store_timeout_s, MEMLAB_STORE_TIMEOUT_S): {exc}") from exc
        except self._redis.ConnectionError as exc:
            raise StoreUnavailableError(f"Redis at {self.url} is unavailable: {exc}") from exc
        except self._redis.RedisError as exc:
            raise StoreError(f"Redis at {self.url}: {exc}") from exc

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        with self._errors():
            return fn(*args)

    def ping(self) -> bool:
        return bool(self._run(self.client.ping))

    def get(self, key: str) -> str | None:
        return self._run(self.client.get, self._k(key))

    def set(self, key: str, value: str) -> None:
        _check_value(value)
        self._run(self.client.set, self._k(key), value)

    def delete(self, key: str) -> bool:
        return bool(self._run(self.client.delete, self._k(key)))

    def keys(self, prefix: str = "") -> list[str]:
        with self._errors():
            found = self.client.scan_iter(match=_glob_escape(self._k(prefix)) + "*", count=500)
            return sorted(k[len(self.namespace) :] for k in found)

    def update(self, key: str, fn: Updater) -> str | None:
        full = self._k(key)
        with self._errors(), self.client.pipeline() as pipe:
            for attempt in range(self.max_retries):
                try:
                    pipe.watch(full)
                    new = fn(pipe.get(full))
                    pipe.multi()
                    if new is None:
                        pipe.delete(full)
                    else:
                        _check_value(new)
                        pipe.set(full, new)
                    pipe.execute()
                    return new
                except self._redis.WatchError:
                    pipe.reset()
                    time.sleep(random.uniform(0, 0.0005 * min(attempt + 1, 20)))
        raise StoreError(f"Redis at {self.url}: update of {key!r} lost {self.max_retries} races")

    def append(self, key: str, text: str, separator: str = "") -> None:
        self._run(self._append, [self._k(key)], [text, separator])

    def clear(self) -> int:
        """Delete every key under this store's namespace (refused without a namespace, which
        would mean the whole database)."""
        if not self.namespace:
            raise ConfigError(f"Redis at {self.url}: refusing to clear a database without a "
                              "namespace")
        deleted = 0
        with self._errors():
            batch: list[str] = []
            for key in self.client.scan_iter(match=_glob_escape(self.namespace) + "*", count=500):
                batch.append(key)
                if len(batch) == 500:
                    deleted += self.client.unlink(*batch)
                    batch = []
            if batch:
                deleted += self.client.unlink(*batch)
        return deleted

    def close(self) -> None:
        self.client.close()


def _check_value(value: object) -> None:
    if not isinstance(value, str):
        raise ConfigError(f"operating memory values must be str, got {type(value).__name__}")


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (safe for error messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))
