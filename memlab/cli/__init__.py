"""The ``memlab`` command: run a condition, a grid, the whole paper, JupyterLab, a server.

Each group of sub-commands is a module of this package with a ``register(commands)`` function
that adds its parsers and returns ``{command name: handler}``; a new command is one module plus
one line in ``COMMAND_MODULES``. Every sub-command has its own ``--help`` with an example. A
user error (unknown condition, a folder that does not exist, a missing optional package) prints
one line and exits with status 2; an environment failure exits with status 1. Ctrl-C (or SIGTERM
during a grid) stops the command with status 130; a stopped grid keeps its complete cells. A
reader that closes the pipe early (``memlab conditions | head -1``) ends the command quietly,
status 141 as if by SIGPIPE.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import select
import signal
import sys
from collections.abc import Callable

from memlab.cli.common import RAW, OneLineParser
from memlab.errors import ConfigError, MemlabError, MissingDependencyError
from memlab.memory.base import BRIDGES, MEMORIES

DESCRIPTION = f"""\
memlab compares {len(MEMORIES.builtins()) - len(BRIDGES)} long-term-memory architectures for LLM agents on the same
model, data and scorers, with accuracy next to what each costs in tokens and time. Offline by
default (a local model); MEMLAB_LLM=gemini with GEMINI_API_KEY set switches to Gemini.

Start here:
  memlab paper                     the quick paper: every condition x suite, then every figure
  memlab run -c sleep -s persona   one condition on one suite, printed summary
  memlab conditions / suites       what can be run, one line each
  memlab lab                       JupyterLab on the notebooks (tour.ipynb first)
  memlab docqa / decide / taskforce   the seed systems: document QA, the major debate, the
                                   ReAct task agent
"""
EPILOG = "Each command has its own help: memlab <command> --help"
# Modules of memlab.cli that add commands, in the order --help lists them.
COMMAND_MODULES = ("runs", "replay", "labels", "serving", "seeds", "goodai", "listings",
                   "suites_info", "namespaces")

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    """The ``memlab`` parser and the handler of every sub-command."""
    parser = OneLineParser(prog="memlab", description=DESCRIPTION, epilog=EPILOG,
                           formatter_class=RAW)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True,
                                     parser_class=OneLineParser)
    handlers: dict[str, Handler] = {}
    for name in COMMAND_MODULES:
        handlers.update(importlib.import_module(f"memlab.cli.{name}").register(commands))
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memlab`` command; returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        if not stdout_gone():
            raise
        # the reader left (`memlab conditions | head -1`): stop quietly, as Unix tools do, and
        # let nothing write to the closed pipe again (Python flushes stdout at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file behind sys.stdout
        return False


def _main(argv: list[str] | None) -> int:
    parser, handlers = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, which names its --help
        command_parser(parser, args.command).error(
            f"unrecognized arguments: {' '.join(extra)}")
    try:
        return handlers[args.command](args)
    except (ConfigError, MissingDependencyError, FileNotFoundError) as exc:
        print(f"memlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except MemlabError as exc:
        print(f"memlab {args.command}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the machine, not the command: a full disk, a device gone
        if isinstance(exc, BrokenPipeError) and stdout_gone():
            raise  # not a failure: main() ends quietly
        print(f"memlab {args.command}: failed: {os_error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # grid.GridInterrupted says what is kept
        print(f"memlab {args.command}: {exc or 'interrupted'}", file=sys.stderr)
        return 130


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one sub-command of ``parser``."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what, which file, and what to do."""
    where = f": {exc.filename}" if exc.filename else ""
    text = f"{exc.strerror or exc}{where}"
    if exc.errno == errno.ENOSPC:
        return text + " (the disk is full: free some space and run the command again; a run " \
                      "resumes where it stopped)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return text + " (choose a folder you can write to, or fix its permissions)"
    return text


if __name__ == "__main__":
    sys.exit(main())
