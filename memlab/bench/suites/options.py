"""Checks of suite options (``suite_options``, ``memlab run -o KEY=VALUE``) shared by the suites.

A command-line option value is read as YAML, so ``-o examples=1.5`` arrives as a float and
``-o categories=5`` as an int: each is refused with the option and its rule, never a TypeError.
"""

from __future__ import annotations

from typing import Any

from memlab.errors import ConfigError


def is_count(value: Any) -> bool:
    """A whole number (a bool is not one, though Python says it is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def count_option(value: Any, option: str) -> Any:
    """``value`` when it is None or a whole number of at least 1.

    Raises:
        ConfigError: naming ``suite_options.<option>`` and the rule.
    """
    if value is not None and not (is_count(value) and value >= 1):
        raise ConfigError(f"field 'suite_options.{option}': {value!r} must be a whole number "
                          "of at least 1")
    return value


def list_option(value: Any, option: str, kind: type, example: str) -> list | None:
    """``value`` when it is None or a non-empty list of items of ``kind``.

    Raises:
        ConfigError: another type, an empty list or an item of another type, naming the option
            and showing ``example`` (``categories=5`` is refused: ``categories=[5]`` is a list).
    """
    if value is None:
        return None
    if not isinstance(value, list) or not value or any(
            not isinstance(item, kind) or isinstance(item, bool) for item in value):
        things = "whole numbers" if kind is int else "names"
        raise ConfigError(f"field 'suite_options.{option}': {value!r} must be a non-empty list "
                          f"of {things}, e.g. {option}={example}")
    return value


def bool_option(value: Any, option: str) -> bool:
    """``value`` when it is true or false.

    Raises:
        ConfigError: naming the option (``judge=maybe``, ``probes=5``).
    """
    if not isinstance(value, bool):
        raise ConfigError(f"field 'suite_options.{option}': {value!r} must be true or false")
    return value


def choice_option(value: Any, option: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``.

    Raises:
        ConfigError: naming the option and the choices (``chat=mixed``).
    """
    if value not in choices:
        raise ConfigError(f"field 'suite_options.{option}': {value!r} must be one of "
                          f"{', '.join(choices)}")
    return value
