"""``memlab replay``: a finished grid's committed records into its tables, with no model call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlab.cli.common import RAW

DESCRIPTION = """\
Replay a finished grid's committed records (records/<grid>/: each cell's manifest.json,
turns.jsonl and calls.jsonl) into a fresh results folder: copy them into <out>/runs/, score
every cell from its recorded turns (a judged test's calls answered from the cell's own
calls.jsonl; a call it does not hold stops the replay: no model is ever called, though a local
model's tokenizer is loaded to rebuild the suites), then write the paper's tables and figures
into <out>/figures/ (tables in <out>/figures/tables/).

--check compares them byte for byte with the committed ones (records/<grid>/tables/, and the
copies in figures/ that records/<grid>/cited.json names) and exits 1 naming the first file and
line that differ. --update makes the replay's tables the committed ones (records/<grid>/tables/)
and refreshes the cited copies: run it once when a grid's records are committed, or when a
change to the scorers or the report is meant to change the tables, and commit the result.

Records of a change (some cells of a grid run again after a prompt or a memory changed) name the
grid they change in <records>/before.json, {"records": "../standard"}: the replay replays those
records too (into <out>/before) and writes tables/change: each condition after minus before on
the same questions (accuracy and evidence recall, paired, Holm per suite and measure).
"""


def register(commands) -> dict:
    replay = commands.add_parser(
        "replay", help="a finished grid's records into its tables and figures, no model call",
        description=DESCRIPTION, formatter_class=RAW,
        epilog="examples:\n  memlab replay records/peers --check\n"
               "  memlab replay records/peers-standard --out /tmp/ps --check\n"
               "  memlab replay records/peers --update   # then: git add records/peers figures")
    replay.add_argument("records", help="a grid's records folder, e.g. records/peers")
    replay.add_argument("--out", default=None,
                        help="new or empty folder for the copy and what it writes "
                             "(default results/replay-<grid>)")
    what = replay.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true",
                      help="exit 1 unless the replay's tables (and cited copies) are the "
                           "committed ones, byte for byte")
    what.add_argument("--update", action="store_true",
                      help="write the replay's tables into <records>/tables/ and its cited "
                           "files over their copies")
    return {"replay": cmd_replay}


def cmd_replay(args: argparse.Namespace) -> int:
    from memlab import records

    out = Path(args.out or f"results/replay-{Path(args.records).resolve().name}")
    done = records.replay(args.records, out)
    print(done.summary())
    if args.update:
        for path in records.update(done):
            print(f"replay: wrote {path}")
        return 0
    if args.check:
        difference = records.first_difference(done)
        if difference is not None:
            print(f"memlab replay: check failed: {difference}", file=sys.stderr)
            return 1
        print(f"replay: check passed: {len(records.compared(done))} files identical to the "
              "committed ones")
    return 0
