"""Parts every ``memlab`` command module shares: the one-line parser, argument types, options."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from memlab.embed.base import EMBEDDERS
from memlab.errors import ConfigError
from memlab.llm.base import LLMS
from memlab.registry import Registry

RAW = argparse.RawDescriptionHelpFormatter


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is in --help), exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def names(registry: Registry) -> str:
    return ", ".join(registry.names())


def registered(registry: Registry) -> Callable[[str], str]:
    """An argument type taking a name of ``registry``, plugins included; an unknown or broken
    name is one line saying which and why (``memlab run -c <plugin that fails to import>``)."""

    def name(text: str) -> str:
        try:
            return registry.check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return name


def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm", type=registered(LLMS), default=None,
                        help="answering model provider (default: MEMLAB_LLM or local; "
                             "memlab llms lists them)")
    parser.add_argument("--llm-model", default=None,
                        help="answering model within the provider: a local tier (0.5b, 1.5b, "
                             "135m; default MEMLAB_LOCAL_SIZE or 1.5b) or a GGUF path, or the "
                             "remote provider's model name")
    parser.add_argument("--memory-llm", type=registered(LLMS), default=None,
                        help="provider of the memory's own calls (extraction, compression, "
                             "schemas; default: MEMLAB_MEMORY_LLM or the answering provider)")
    parser.add_argument("--memory-llm-model", default=None,
                        help="model of the memory's own calls (default: MEMLAB_MEMORY_LLM_MODEL,"
                             " else the 0.5b tier when local)")
    parser.add_argument("--embedder", type=registered(EMBEDDERS), default=None,
                        help="embedder (default: MEMLAB_EMBEDDER or minilm)")


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def port(text: str) -> int:
    """A TCP port, 0..65535."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port, 0..65535, got {text}")
    return value


def split(text: str | None, cast=str, option: str = "list") -> list | None:
    """A comma-separated command-line list (None when not given); an item ``cast`` rejects
    is an error naming ``option`` (``--seeds``) and the item."""
    if not text:
        return None
    out = []
    for part in (p.strip() for p in text.split(",")):
        try:
            out += [cast(part)] if part else []
        except ValueError:
            kind = "a whole number" if cast is int else "valid"
            raise ConfigError(f"argument {option}: {part!r} in {text!r} is not {kind}") from None
    return out


def chosen(value: str | None, field: str) -> str | None:
    """``value`` given on the command line, else the setting when the environment sets it
    (``MEMLAB_LLM``...), else None (a grid spec's own choice stands)."""
    from memlab.config import get_settings

    settings = get_settings()
    return value or (getattr(settings, field) if field in settings.model_fields_set else None)
