"""``memlab replay``: a finished grid's committed records into its tables, with no model call;
``memlab claims``: whether the numbers a page cites are in those tables; ``memlab rebuild``: one
recorded cell run again from its journal, for its memory's store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlab.claims import DEFAULT_PAGES, ELSEWHERE
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

REBUILD_DESCRIPTION = """\
Run one recorded cell (records/<grid>/<run_id>/) again from its own journal, with no model call,
to get back what the records do not keep: its memory's store (graphiti's graph, mem0's
memories, the sleep system's schemas). The cell's turns and calls are copied into a fresh run
folder, <out>/<run_id>/, and the run resumes there: every recorded turn is executed again, each
model call answered by the journal by its exact request (a call it does not hold stops the
rebuild; none reaches a model, though the models' tokenizers are loaded). Each executed turn must
be the recorded one (timings aside), the journal unchanged and the store's size the recorded one,
or the rebuild exits 1 naming the difference. Records made with other prompts or models than this
memlab's are refused (exit 2), naming what differs. The store is then in <out>/<run_id>/store/;
benchmarks/graphiti_graph.py reads a graphiti cell's graph there.
"""

CLAIMS_DESCRIPTION = f"""\
Find every number the pages cite with its interval ("72.0 (63.6-80.3)", "+11.6 (6.2 to 17.0;
...)") and check that a committed table holds it: three cells side by side in a row of some
<records>/<grid>/tables/*.csv (a value, its low and its high) that print as the claim's numbers
at its decimals, as they are or as percentages. Those tables are what `memlab replay --check`
reproduces byte for byte, so a claim found there is checkable from the records. A number cited
from elsewhere on purpose is listed in <records>/{ELSEWHERE} ("page | claim | where it comes
from"). A count with its interval ("1/8 (2-47%)", "25/40, 62% (47-76)") passes when the interval
is the Wilson or exact 95% interval of k/n at its decimals. Exits 1 naming each claim in
neither (and each listed one no page cites any more)."""


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
    claims = commands.add_parser(
        "claims", help="check that the numbers pages cite with intervals are in committed tables",
        description=CLAIMS_DESCRIPTION, formatter_class=RAW,
        epilog="examples:\n  memlab claims                      # README.md and docs/**/*.md\n"
               "  memlab claims paper/draft.md --records records")
    claims.add_argument("pages", nargs="*", default=list(DEFAULT_PAGES),
                        help="markdown pages (globs allowed; default: README.md "
                             "docs/**/*.md)")
    claims.add_argument("--records", default="records",
                        help="the records folder whose <grid>/tables/*.csv hold the numbers "
                             "(default records)")
    rebuild = commands.add_parser(
        "rebuild", help="run one recorded cell again from its journal, no model call, to get "
                        "its memory's store back",
        description=REBUILD_DESCRIPTION, formatter_class=RAW,
        epilog="examples:\n  memlab rebuild records/peers/ltm-graphiti-1000-s0\n"
               "  memlab rebuild records/peers/persona-mem0-4000-s0 --out /tmp/rebuilt")
    rebuild.add_argument("cell", help="a recorded cell, e.g. records/peers/ltm-graphiti-1000-s0")
    rebuild.add_argument("--out", default="results/rebuild",
                         help="parent of the rebuilt run folder <out>/<run_id>/ (default "
                              "results/rebuild)")
    return {"replay": cmd_replay, "claims": cmd_claims, "rebuild": cmd_rebuild}


def cmd_rebuild(args: argparse.Namespace) -> int:
    from memlab.rebuild import rebuild

    print(rebuild(args.cell, args.out).summary())
    return 0


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


def cmd_claims(args: argparse.Namespace) -> int:
    from memlab.claims import check_claims, pages

    root = Path.cwd()
    done = check_claims(pages(args.pages, root), Path(args.records), root)
    listed = Path(args.records) / ELSEWHERE
    others = {id(c) for c in done.unsupported + done.elsewhere}
    counts = sum(1 for c in done.claims if c.count and id(c) not in others)
    tabled = len(done.claims) - len(others) - counts
    print(f"claims: {len(done.claims)} numbers with intervals in {len(set(c.page for c in done.claims))} "
          f"pages; {tabled} in a committed table, {counts} counts with their own interval, "
          f"{len(done.elsewhere)} listed as from elsewhere ({listed}), "
          f"{len(done.unsupported)} in neither")
    for claim in done.unsupported:
        why = (f"not the Wilson or exact 95% interval of {claim.count[0]}/{claim.count[1]}"
               if claim.count else f"in no table under {args.records}")
        print(f"  {claim.page}:{claim.line}: {claim.text}: {why}")
    for page, text in done.stale_elsewhere:
        print(f"  {listed}: {page} | {text}: no longer cited there; remove the line")
    return 1 if done.unsupported or done.stale_elsewhere else 0
