"""Loopback: which hosts stay on this machine, and a guard that refuses every other connection.

``loopback_only()`` is how a peer memory library (mem0, LangMem) is kept offline while it runs:
an audit hook (``sys.addaudithook``) refuses socket connects, sends and name lookups outside
loopback from any thread of the process inside the block.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memlab.errors import MemlabError

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkBlockedError(MemlabError):
    """Code inside ``loopback_only()`` tried to reach a host outside loopback."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback."""
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class _Guard:
    """Process-wide (a library may call from its own worker threads): how many guarded blocks
    are open and what they blocked."""

    depth = 0
    blocked: list[str] = []


_hook_installed = False
_hook_lock = threading.Lock()


def _host(value: Any) -> str | None:
    """The host of an audit event's address (None: not an internet address, e.g. AF_UNIX)."""
    if isinstance(value, tuple):
        value = value[0]
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value if isinstance(value, str) else None


def _audit(event: str, args: tuple) -> None:
    guard = _Guard  # None while the interpreter shuts down (the hook outlives the module)
    if guard is None or not guard.depth or event not in {"socket.connect", "socket.sendto",
                                         "socket.getaddrinfo"}:
        return
    target = args[0] if event == "socket.getaddrinfo" else args[1]
    if event != "socket.getaddrinfo" and not isinstance(target, tuple):
        return  # a Unix socket path
    host = _host(target)
    if host is None or is_loopback(host):
        return
    guard.blocked.append(f"{event} {target!r}")
    raise NetworkBlockedError(f"blocked {event} to {target!r}: only loopback is allowed here")


@contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Inside the block, connections and name lookups outside loopback (from any thread of the
    process) raise NetworkBlockedError; yields the list of what was blocked."""
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)  # audit hooks cannot be removed: it idles outside a block
            _hook_installed = True
        if not _Guard.depth:
            _Guard.blocked = []
        _Guard.depth += 1
    try:
        yield _Guard.blocked
    finally:
        with _hook_lock:
            _Guard.depth -= 1
