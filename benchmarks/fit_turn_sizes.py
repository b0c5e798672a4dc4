"""Fit how a condition's cost grows with the size of a stored turn, from a multi-span grid's
complete cells (the ``scaling`` grid's LTM, whose filler grows from 17.7 tokens a turn at 1k to
252 at 32k): the constants ``memlab.gridcost`` prices LTM's longer turns with.

Per suite and condition, over its complete cells (one point a cell):
- the answering prompt's mean tokens = a + b x tokens a stored turn averages (``b`` is
  ``PROMPT_PER_TURN_TOKEN``);
- the memory's seconds a stored turn = a + b x tokens a stored turn averages, on the cells whose
  calls the cache did not mostly serve (``memlab.gridstatus.measures_seconds``); the share of the
  seconds at the reference size that grows with the turn, b t0 / (a + b t0), is
  ``TOKEN_SHARE``.
Tokens a stored turn averages: ``memlab.gridcost.mean_turn_tokens`` of the cell's events, the
plan's estimate. A fit needs cells at turn sizes 1.5x apart at least (persona's turns are one
size at every span: it has none).

Run: .venv/bin/python benchmarks/fit_turn_sizes.py --results DIR [--spec scaling]
     [--out benchmarks/results/turn_sizes.json]
Nothing is written in DIR.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from seeds_common import RESULTS, write  # noqa: E402

from memlab.bench.base import SUITES  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import is_complete  # noqa: E402
from memlab.cli.common import OneLineParser  # noqa: E402
from memlab.gridcost import RATE_TURN_TOKENS, mean_turn_tokens  # noqa: E402
from memlab.gridspec import load_spec  # noqa: E402
from memlab.gridstatus import measures_seconds  # noqa: E402
from memlab.report.peers import memory_seconds  # noqa: E402


def cell_points(results: Path, spec_name: str) -> tuple[dict, dict, dict]:
    """(prompt points, memory-seconds points, tokens a turn by (suite, span, seed)); points are
    keyed by (suite, condition), each a list of (tokens a stored turn, value)."""
    spec = load_spec(spec_name)
    sizes: dict[tuple[str, int, int], float] = {}
    prompts: dict[tuple[str, str], list] = defaultdict(list)
    seconds: dict[tuple[str, str], list] = defaultdict(list)
    for cell in spec.cells():
        run_dir = cell.run_dir(results)
        if not is_complete(run_dir, cell):
            continue
        key = (cell.suite, cell.span, cell.seed)
        if key not in sizes:
            built = SUITES.resolve(cell.suite).build(
                span=cell.span, seed=cell.seed, options=spec.suite_options.get(cell.suite, {}))
            sizes[key] = mean_turn_tokens(built, built.events())
        turns = read_jsonl(run_dir / "turns.jsonl")
        asked = [t["prompt_tokens"] for t in turns
                 if t["kind"] == "question" and t.get("prompt_tokens")]
        if asked:
            prompts[cell.suite, cell.condition].append((sizes[key], sum(asked) / len(asked)))
        if measures_seconds(read_jsonl(run_dir / "calls.jsonl")):
            seconds[cell.suite, cell.condition].append(
                (sizes[key], sum(memory_seconds(t) for t in turns) / len(turns)))
    return prompts, seconds, sizes


# turn sizes too close to fit a slope on (persona's: 20.1-20.8 tokens at every span)
MIN_SIZE_RATIO = 1.5


def line(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(a, b) of the least-squares a + b x, or None where the largest size is not
    ``MIN_SIZE_RATIO`` times the smallest."""
    sizes = [x for x, _ in points]
    if not sizes or max(sizes) < MIN_SIZE_RATIO * min(sizes):
        return None
    x, y = np.array(points).T
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--spec", default="scaling")
    parser.add_argument("--out", type=Path, default=RESULTS / "turn_sizes.json")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        parser.error(f"--results {str(args.results)!r}: no such folder")
    prompts, seconds, sizes = cell_points(args.results, args.spec)
    fits = {}
    for suite, condition in sorted(set(prompts) | set(seconds)):
        t0 = RATE_TURN_TOKENS.get(suite)
        row: dict = {"cells_prompt": len(prompts[suite, condition]),
                     "cells_seconds": len(seconds[suite, condition])}
        if (fit := line(prompts[suite, condition])) is not None:
            row["prompt"] = {"a": round(fit[0], 1), "per_turn_token": round(fit[1], 2)}
        if (fit := line(seconds[suite, condition])) is not None and t0:
            a, b = fit
            row["seconds_a_turn"] = {"a": round(a, 4), "b": round(b, 6),
                                     "token_share": round(b * t0 / (a + b * t0), 3)
                                     if a + b * t0 > 0 else None}
        fits[f"{suite}/{condition}"] = row
        print(suite, condition, row)
    payload = {"results": str(args.results), "spec": args.spec,
               "reference_turn_tokens": RATE_TURN_TOKENS,
               "turn_tokens": {f"{s}/{span}/s{seed}": round(v, 1)
                               for (s, span, seed), v in sorted(sizes.items())},
               "fits": fits}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.resolve().parent == RESULTS.resolve():
        write(args.out.stem, payload)
    else:
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
