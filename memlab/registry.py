"""String-keyed registries with lazy imports (one per swappable role)."""

from __future__ import annotations

import importlib
from typing import Any, Generic, TypeVar

from memlab.errors import UnknownBackendError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps a name to a class given as ``"module.path:ClassName"`` (imported on first use).

    Example:
        >>> r = Registry("greeter")
        >>> r.register("dict", "builtins:dict")
        >>> r.create("dict", a=1)
        {'a': 1}
    """

    def __init__(self, role: str):
        self.role = role
        self._targets: dict[str, str | type] = {}

    def register(self, name: str, target: str | type) -> None:
        self._targets[name] = target

    def names(self) -> list[str]:
        return sorted(self._targets)

    def resolve(self, name: str) -> type[T]:
        if name not in self._targets:
            known = ", ".join(self.names())
            raise UnknownBackendError(f"unknown {self.role} {name!r}; known: {known}")
        target = self._targets[name]
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]

    def create(self, name: str, **kwargs: Any) -> T:
        return self.resolve(name)(**kwargs)
