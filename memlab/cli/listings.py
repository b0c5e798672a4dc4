"""``memlab conditions`` / ``llms`` / ``embedders``: what is registered, a line each, with its
origin (memlab, or the plugin package that adds it: docs/plugins.md).

``memlab suites`` lists the suites the same way; it lives in ``suites_info`` because it also
has ``memlab suites info``.
"""

from __future__ import annotations

import argparse

from memlab.embed.base import EMBEDDERS
from memlab.llm.base import LLMS
from memlab.memory.base import MEMORIES
from memlab.registry import Registry

LISTINGS: dict[str, tuple[Registry, str]] = {
    "conditions": (MEMORIES, "memory conditions"), "llms": (LLMS, "LLM providers"),
    "embedders": (EMBEDDERS, "embedders")}


def register(commands) -> dict:
    for name, (registry, what) in LISTINGS.items():
        commands.add_parser(name, help=f"list the {what}, one line each",
                            description=f"Print every registered {registry.role} with what it is.")
    return {name: cmd_listing for name in LISTINGS}


def cmd_listing(args: argparse.Namespace) -> int:
    print_listing(LISTINGS[args.command][0])
    return 0


def print_listing(registry: Registry) -> None:
    """Every name of ``registry`` with where it comes from (``memlab``, or ``plugin: <package>
    <version>``) and its one-line description; a plugin that cannot be used was named on stderr
    when the registry loaded it."""
    rows = [(name, registry.origin(name), description) for name, description in
            registry.describe()]
    width = max(len(name) for name, _, _ in rows)
    origin_width = max(len(origin) for _, origin, _ in rows)
    for name, origin, description in rows:
        print(f"{name:<{width}}  {origin:<{origin_width}}  {description}")
