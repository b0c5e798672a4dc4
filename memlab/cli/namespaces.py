"""``memlab namespaces``: the run namespaces left on Redis, and removing those of finished runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from memlab.cli.common import RAW
from memlab.errors import ConfigError

DESCRIPTION = """\
With MEMLAB_REDIS_URL set, every run keeps its operating memory on Redis under its own
namespace, and nothing removes it when the run ends. This lists each namespace on the server
with how many keys it holds and the run folder it belongs to (searched under --results), and
removes them on request: --remove-finished those of runs no process is writing (complete,
failed or stopped: a resume rebuilds a run's memory from its journals), --remove NAME one by
name (a namespace of no run found, a server session's for one). A running run's is never removed.
"""


def register(commands) -> dict:
    names = commands.add_parser(
        "namespaces", help="list the runs' Redis namespaces (keys each), remove finished ones",
        description=DESCRIPTION, formatter_class=RAW,
        epilog="examples:\n  memlab namespaces\n  memlab namespaces --results results/quick "
               "--remove-finished")
    names.add_argument("--results", action="append", default=None, metavar="DIR",
                       help="folder searched for run folders, any depth; repeatable "
                            "(default: MEMLAB_RESULTS_DIR, results)")
    names.add_argument("--remove-finished", action="store_true",
                       help="remove the namespaces of runs no process is writing")
    names.add_argument("--remove", action="append", default=[], metavar="NAME",
                       help="remove this namespace; repeatable")
    return {"namespaces": cmd_namespaces}


def cmd_namespaces(args: argparse.Namespace) -> int:
    from memlab.bench.namespaces import find_namespaces, remove_namespace
    from memlab.config import get_settings
    from memlab.stores.kv import redact_url

    settings = get_settings()
    if not settings.redis_url:
        raise ConfigError("MEMLAB_REDIS_URL is not set: runs keep no namespace on Redis without "
                          "it; set it to the server the runs used")
    results = [Path(r) for r in args.results or [settings.results_dir]]
    found = find_namespaces(settings.redis_url, results)
    chosen = pick(found, args.remove, finished=args.remove_finished)  # all checked first
    width = max([len(n.name) for n in found] + [9])
    print(f"{'namespace':<{width}}  {'keys':>7}  run")
    for n in found:
        run = f"{n.run} ({n.status})" if n.run else "- (no run folder under " \
            f"{', '.join(map(str, results))})"
        print(f"{n.name:<{width}}  {n.keys:>7}  {run}")
    print(f"{len(found)} namespace(s), {sum(n.keys for n in found)} keys on "
          f"{redact_url(settings.redis_url)}")
    for n in chosen:
        remove_namespace(n)
        print(f"removed {n.name} ({n.keys} keys)")
    finished = [n for n in found if n.finished and n not in chosen]
    if finished and not chosen:
        print(f"{len(finished)} of them belong to finished runs: --remove-finished removes them")
    return 0


def pick(found: list, names: list[str], *, finished: bool) -> list:
    """The namespaces to remove: ``names`` and, with ``finished``, every finished run's.

    Raises:
        ConfigError: a name is not on the server, or its run is running.
    """
    by_name = {n.name: n for n in found}
    for name in names:
        if name not in by_name:
            raise ConfigError(f"--remove {name!r}: no such namespace on the server (memlab "
                              "namespaces lists them)")
        if by_name[name].status == "running":
            raise ConfigError(f"--remove {name!r}: its run {by_name[name].run} is running; "
                              "a running run's namespace is never removed")
    return [n for n in found if n.name in names or (finished and n.finished)]
