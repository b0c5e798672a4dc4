"""String-keyed registries with lazy imports (one per role a user picks by name).

Every role a user chooses by name (memory conditions, suites, LLM providers, embedders) has one
registry; CLI choices, validation messages and ``memlab conditions`` / ``memlab suites`` are
generated from it, so adding a backend is one module plus one ``register`` line.
"""

from __future__ import annotations

import importlib
from typing import Any, Generic, TypeVar

from memlab.errors import UnknownBackendError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps a name to a class given as ``"module.path:ClassName"`` (imported on first use).

    Names keep their registration order (the paper's order for conditions).

    Example:
        >>> r = Registry("greeter")
        >>> r.register("dict", "builtins:dict", "a plain dict")
        >>> r.create("dict", a=1)
        {'a': 1}
        >>> r.describe()
        [('dict', 'a plain dict')]
    """

    def __init__(self, role: str):
        self.role = role
        self._targets: dict[str, str | type] = {}
        self._descriptions: dict[str, str] = {}

    def register(self, name: str, target: str | type, description: str = "") -> None:
        self._targets[name] = target
        self._descriptions[name] = description

    def names(self) -> list[str]:
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def describe(self) -> list[tuple[str, str]]:
        """``(name, one-line description)`` of every registered name, in order."""
        return [(name, self._descriptions[name]) for name in self._targets]

    def unknown_message(self, name: object) -> str:
        return f"unknown {self.role} {name!r}; known: {', '.join(self.names())}"

    def check(self, name: object) -> str:
        """``name`` when registered; else ValueError listing the known names."""
        if name not in self._targets:
            raise ValueError(self.unknown_message(name))
        return str(name)

    def resolve(self, name: str) -> type[T]:
        if name not in self._targets:
            raise UnknownBackendError(self.unknown_message(name))
        target = self._targets[name]
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]

    def create(self, name: str, **kwargs: Any) -> T:
        return self.resolve(name)(**kwargs)
