"""``memlab suites`` (list the suites) and ``memlab suites info SUITE --data PATH``.

``info`` reads a published data file (LoCoMo's ``locomo10.json``, LongMemEval's JSON) and prints
its counts: samples, sessions, turns, tokens (estimated: words or characters / 4, no model is
loaded), questions by category or type, questions with evidence. A malformed file is refused
with the file, the sample and the field named (exit status 2).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memlab.bench.base import SUITES
from memlab.cli.common import RAW, names, registered
from memlab.cli.listings import print_listing

PER_SAMPLE_SHOWN = 20  # the table lists this many samples (--json has them all)


def register(commands) -> dict:
    suites = commands.add_parser(
        "suites", help="list the benchmark suites; 'suites info' describes a data file",
        formatter_class=RAW,
        description="Print every registered benchmark suite with what it is. 'memlab suites "
                    "info SUITE --data PATH' prints the counts of a published data file.",
        epilog="examples:\n  memlab suites\n  memlab suites info locomo --data "
               "locomo10.json\n  memlab suites info longmemeval --data longmemeval_s.json --json")
    sub = suites.add_subparsers(dest="suites_command", metavar="<command>")
    info = sub.add_parser("info", help="counts of a published data file", formatter_class=RAW,
                          description=__doc__.split("\n\n")[1])
    info.add_argument("suite", type=registered(SUITES), metavar="SUITE",
                      help=f"one of: {names(SUITES)} (info needs a file-backed one)")
    info.add_argument("--data", required=True, help="path of the published JSON file")
    info.add_argument("--json", action="store_true", help="print the counts as JSON")
    return {"suites": cmd_suites}


def cmd_suites(args: argparse.Namespace) -> int:
    if getattr(args, "suites_command", None) != "info":
        print_listing(SUITES)
        return 0
    counts = SUITES.resolve(args.suite).info(args.data)
    print(json.dumps(counts, indent=2) if args.json else format_counts(args.suite, counts))
    return 0


def format_counts(suite: str, counts: dict[str, Any]) -> str:
    """The counts as an aligned table (nested counts indented, per-sample rows last)."""
    lines = [f"{suite}: {counts['file']}", f"  sha256 {counts['sha256']}"]
    rows = [(k, v) for k, v in counts.items() if k not in ("file", "sha256", "per_sample")]
    for key, value in rows:
        label = key.replace("_", " ")
        if isinstance(value, dict):
            lines.append(f"  {label}")
            lines += [f"    {k:<30}{v:>10,}" for k, v in value.items()]
        else:
            lines.append(f"  {label:<32}{value:>10,}")
    per_sample = counts.get("per_sample") or {}
    if per_sample:
        lines.append(f"  {'sample':<16}{'sessions':>10}{'turns':>10}{'questions':>11}")
        for sample, row in list(per_sample.items())[:PER_SAMPLE_SHOWN]:
            lines.append(f"  {sample:<16}{row['sessions']:>10}{row['turns']:>10}"
                         f"{row['questions']:>11}")
        if len(per_sample) > PER_SAMPLE_SHOWN:
            lines.append(f"  ... {len(per_sample) - PER_SAMPLE_SHOWN} more (--json lists all)")
    return "\n".join(lines)
