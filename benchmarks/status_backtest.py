"""How well ``memlab grid --status`` prices a cell from runs at other spans: a leave-span-out
backtest on a multi-span grid's complete cells (the ``scaling`` grid's).

Each complete cell whose turns measure seconds (``memlab.gridstatus.measures_seconds``; at
least ``MIN_SECONDS`` of them) is priced as if it had not run, from its condition's runs in the
folder at the other spans of its suite (and the other suite), two ways:
- per turn: the seconds a turn of any kind cost, times its turns (``--status`` before
  2026-12-04);
- by part: its question turns at the seconds a question turn cost, its stored turns at the
  seconds a stored character cost (``--status`` since).
Per cell the estimate over what it cost; overall the geometric mean of the factor between them
(2 = off by 2x either way) and the estimates' total over the cells' total. A span's own runs are
left out because ``--status`` uses them when they exist: this measures the harder case, a span
no run of the condition has reached.

Run: .venv/bin/python benchmarks/status_backtest.py --results DIR [--spec scaling]
     [--out benchmarks/results/status_backtest.json]
Nothing is written in DIR.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from seeds_common import RESULTS, write  # noqa: E402

from memlab.bench.spec import RunSpec  # noqa: E402
from memlab.cli.common import OneLineParser  # noqa: E402
from memlab.gridspec import load_spec  # noqa: E402
from memlab.gridstatus import Recorded, rate_for, read_runs, seconds_left  # noqa: E402

# a cell measured in less than this (an evidence-only cell, one the cache mostly served) says
# nothing about an estimate's error
MIN_SECONDS = 60.0
MIN_TURNS = 30  # as --status


def backtest(cells: list[RunSpec], runs: dict[str, Recorded], min_turns: int = MIN_TURNS
             ) -> list[dict]:
    """Per complete, measured cell: its seconds and its leave-span-out estimates."""
    rows = []
    for cell in cells:
        own = runs.get(cell.run_id)
        if own is None or own.manifest.get("status") != "complete" \
                or own.tally["turn"].seconds < MIN_SECONDS:
            continue
        others = [r for name, r in runs.items() if name != cell.run_id and not (
            r.manifest.get("suite") == cell.suite
            and (r.manifest.get("spec") or {}).get("span") == cell.span)]
        pools = (("grid", lambda others=others: others),)
        rate, _ = rate_for(cell, None, pools, min_turns, "turn")
        by_part, _, _ = seconds_left(cell, None, own.turns, own.shape, pools, min_turns)
        rows.append({"cell": cell.run_id, "seconds": round(own.tally["turn"].seconds, 1),
                     "per_turn": None if rate is None else round(rate * own.turns, 1),
                     "by_part": None if by_part is None else round(by_part, 1)})
    return rows


def summary(rows: list[dict], method: str) -> dict:
    """Cells priced, the geometric mean factor of the error and total estimate / total cost,
    over the cells both methods priced (the same cells for each)."""
    both = [r for r in rows if r["per_turn"] and r["by_part"]]
    logs = [abs(math.log(r[method] / r["seconds"])) for r in both]
    return {"cells": len(both),
            "typical_factor": round(math.exp(sum(logs) / len(logs)), 2) if logs else None,
            "total_ratio": round(sum(r[method] for r in both)
                                 / sum(r["seconds"] for r in both), 2) if both else None}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--spec", default="scaling")
    parser.add_argument("--out", type=Path, default=RESULTS / "status_backtest.json")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        parser.error(f"--results {str(args.results)!r}: no such folder")
    rows = backtest(load_spec(args.spec).cells(), read_runs(args.results))
    payload = {"results": str(args.results), "spec": args.spec,
               "per_turn": summary(rows, "per_turn"), "by_part": summary(rows, "by_part"),
               "cells": rows}
    print(json.dumps({k: payload[k] for k in ("per_turn", "by_part")}))
    if args.out.resolve().parent == RESULTS.resolve():
        write(args.out.stem, payload)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
