"""String-keyed registries with lazy imports (one per role a user picks by name).

Every role a user chooses by name (memory conditions, suites, LLM providers, embedders) has one
registry; CLI choices, validation messages and ``memlab conditions`` / ``memlab suites`` are
generated from it, so adding a backend is one module plus one ``register`` line.

A registry with an entry-point ``group`` (``memlab.conditions``, ``memlab.suites``,
``memlab.llms``, ``memlab.embedders``) also offers the names other installed packages declare
there (``name = "module:Class"``), loaded in whatever process first asks for its names (a grid's
kernels included), so a plugin runs wherever a built-in does (docs/plugins.md). A plugin that
cannot be used (it fails to import, is not a subclass of the role's base class, or its name is
taken or malformed) is named in one warning line on stderr and left out; asking for it by name
gives that reason.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from importlib import metadata
from typing import Any, Generic, TypeVar

from memlab.errors import UnknownBackendError

T = TypeVar("T")
log = logging.getLogger(__name__)
# run folders, journals and figure labels carry the name: keep it path- and CSV-safe
PLUGIN_NAME = re.compile(r"[a-z][a-z0-9_]*")
BUILT_IN = "memlab"


class Registry(Generic[T]):
    """Maps a name to a class given as ``"module.path:ClassName"`` (imported on first use).

    Names keep their registration order (the paper's order for conditions); plugins from the
    entry-point ``group`` follow the built-ins, sorted by name.

    Args:
        role: what a name stands for, in messages ("memory condition").
        group: the entry-point group plugins declare names in (None: built-ins only).
        base: the class every plugin must subclass (None: any).

    Example:
        >>> r = Registry("greeter")
        >>> r.register("dict", "builtins:dict", "a plain dict")
        >>> r.create("dict", a=1)
        {'a': 1}
        >>> r.describe()
        [('dict', 'a plain dict')]
    """

    def __init__(self, role: str, group: str | None = None, base: type | None = None):
        self.role, self.group, self.base = role, group, base
        self._targets: dict[str, str | type] = {}
        self._descriptions: dict[str, str] = {}
        self._origins: dict[str, str] = {}
        self._broken: dict[str, str] = {}  # plugin name -> why it cannot be used
        self._builtins: list[str] = []
        self._plugins_loaded = group is None
        self._lock = threading.Lock()

    def register(self, name: str, target: str | type, description: str = "") -> None:
        self._targets[name] = target
        self._descriptions[name] = description
        self._origins[name] = BUILT_IN
        self._builtins.append(name)

    def builtins(self) -> list[str]:
        """The names memlab registers itself, in order (no plugin is loaded)."""
        return list(self._builtins)

    def names(self) -> list[str]:
        self.load_plugins()
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return name in self._targets

    def origin(self, name: str) -> str:
        """``memlab`` for a built-in, ``plugin: <distribution> <version>`` for a plugin."""
        self.load_plugins()
        return self._origins[name]

    def broken(self) -> dict[str, str]:
        """Plugins declared in the group that cannot be used: name -> the one-line reason."""
        self.load_plugins()
        return dict(self._broken)

    def describe(self) -> list[tuple[str, str]]:
        """``(name, one-line description)`` of every registered name, in order."""
        return [(name, self._descriptions[name]) for name in self.names()]

    def unknown_message(self, name: object) -> str:
        if name in self.broken():
            return f"{self.role} {name!r} cannot be used: {self._broken[name]}"
        return f"unknown {self.role} {name!r}; known: {', '.join(self.names())}"

    def check(self, name: object) -> str:
        """``name`` when registered; else ValueError listing the known names."""
        if name not in self:
            raise ValueError(self.unknown_message(name))
        return str(name)

    def resolve(self, name: str) -> type[T]:
        if name not in self:
            raise UnknownBackendError(self.unknown_message(name))
        target = self._targets[name]
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]

    def create(self, name: str, **kwargs: Any) -> T:
        return self.resolve(name)(**kwargs)

    def load_plugins(self) -> None:
        """Add the entry points of ``group`` (once per process; later calls return at once)."""
        if self._plugins_loaded:
            return
        with self._lock:
            if self._plugins_loaded:
                return
            found = sorted(metadata.entry_points(group=self.group), key=lambda ep: ep.name)
            for entry in found:
                self._add_plugin(entry)
            self._plugins_loaded = True

    def _add_plugin(self, entry: metadata.EntryPoint) -> None:
        dist = getattr(entry, "dist", None)
        origin = f"plugin: {dist.name} {dist.version}" if dist else "plugin: (unknown package)"
        try:
            cls = self._plugin_class(entry)
        except Exception as exc:  # noqa: BLE001 - any failure of a plugin is its own, named
            reason = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
            reason = " ".join(reason.split())  # one line, whatever the exception says
            self._broken.setdefault(entry.name, f"{origin} (entry point {entry.name} = "
                                                f"{entry.value}): {reason}")
            log.warning("memlab: warning: %s plugin %r skipped: %s", self.role, entry.name,
                        self._broken[entry.name])
            return
        self._targets[entry.name] = cls
        self._descriptions[entry.name] = _summary(cls)
        self._origins[entry.name] = origin

    def _plugin_class(self, entry: metadata.EntryPoint) -> type:
        """The class ``entry`` names, or PluginError saying why it cannot be used."""
        if not PLUGIN_NAME.fullmatch(entry.name):
            raise PluginError("the name must be lower-case letters, digits and _ (it names "
                              "run folders)")
        if entry.name in self._targets:
            taken = self._origins[entry.name]
            owner = "a built-in" if taken == BUILT_IN else taken
            raise PluginError(f"the name is taken by {owner}")
        cls = entry.load()
        if not isinstance(cls, type) or (self.base and not issubclass(cls, self.base)):
            want = f"a subclass of {self.base.__module__}.{self.base.__name__}" if self.base \
                else "a class"
            raise PluginError(f"{entry.value} is not {want}")
        return cls


class PluginError(Exception):
    """Why a declared plugin cannot be used (its message is the reason shown)."""


def _summary(cls: type) -> str:
    """The first line of a plugin class's docstring (its listing description)."""
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""
