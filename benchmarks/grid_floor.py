"""The least time a grid can take on this machine: the tokens its models must evaluate and write,
at the per-token seconds this machine measured (issue 41's time targets against that floor).

A grid's work is counted in tokens, cold (as a fresh clone runs it):

- a finished grid (``--records NAME=DIR``): every distinct call its cells recorded (by the
  response cache's key: a cold run pays a call once, and cells that send the same prompt, such
  as sleep's and episodic_summary's compressions of the same episodes, hit the cache after the
  first; a call the committed run took from the cache keeps the tokens its first run
  evaluated); per call the prompt tokens the model evaluated (sent less reused from llama.cpp's
  cache, as the call records it) and the tokens it wrote;
- a grid not run (``--estimate``, estimate_grid.py's file): the tokens it projects per cell.

The seconds per token are this machine's, idle, as ``memlab grid`` runs: two processes at
once, one llama.cpp thread each (``bench_llm.py --threads 1 --concurrent 2``, the file
``--rates``; per model the mean of its processes' prompt and generation tokens per second). The
floor prices the tokens at those rates and drops everything else: no per-call overhead, no
embedding or store time, no model loading, both workers busy to the end. Wall = model hours over
the two workers. It is a lower bound: a grid that runs as it is designed cannot finish sooner on
these cores unless its models read or write fewer tokens.

Per condition, the answering model's evaluated tokens say where a grid's reading goes.

Run: .venv/bin/python benchmarks/grid_floor.py [--records NAME=DIR ...] [--estimate FILE]
     [--rates benchmarks/results/llm_two_workers.json]
Writes benchmarks/results/grid_floor.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from seeds_common import RESULTS, write  # noqa: E402

from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import read_manifest  # noqa: E402
from memlab.cli.common import OneLineParser  # noqa: E402
from memlab.errors import ConfigError  # noqa: E402

TARGET_HOURS = {"quick": 0.5, "standard": 3.0, "full": 15.0}  # issue 41's wall-time targets
WORKERS = 2  # memlab grid's local pool on 2 cores: two cells, one thread each
ROLES = ("answering", "memory")


def _tally() -> dict:
    return {"calls": 0, "evaluated": 0, "completion": 0}


def measured_tokens(results: Path) -> dict:
    """Tokens per model role over the complete cells under ``results``, cold."""
    roles = {role: _tally() for role in ROLES}
    by_condition, cells, seen = defaultdict(int), 0, set()
    for run_dir in sorted(p for p in results.iterdir() if (p / "manifest.json").is_file()):
        try:
            manifest = read_manifest(run_dir)
        except (OSError, ConfigError):  # being written, or not a run's
            continue
        if manifest.get("status") != "complete":
            continue
        cells += 1
        answering = manifest["llm"]["model"]
        for record in read_jsonl(run_dir / "calls.jsonl"):
            if record["key"] in seen:
                continue
            seen.add(record["key"])
            done = record["completion"]
            tally = roles["answering" if done["model"] == answering else "memory"]
            reused = done.get("prompt_tokens_reused") or 0
            tally["calls"] += 1
            tally["evaluated"] += done["prompt_tokens"] - reused
            tally["completion"] += done["completion_tokens"]
            if done["model"] == answering:
                by_condition[manifest["spec"]["condition"]] += done["prompt_tokens"] - reused
    if not cells:
        raise ConfigError(f"{results}: no complete cell (a run folder with a complete manifest)")
    return {"source": str(results), "cells": cells, "roles": roles,
            "answering_evaluated_by_condition": dict(sorted(by_condition.items()))}


def projected_tokens(estimate: dict) -> dict:
    """Tokens per model role over the cells estimate_grid.py projected."""
    cells = estimate["cells_projected"]
    total = lambda key: round(sum(cell[key] for cell in cells))  # noqa: E731
    answers = sum(cell["answers"] for cell in cells)
    return {"source": f"estimate_grid.py (spec {estimate['spec']}, projected)",
            "cells": len(cells),
            "roles": {"answering": {"calls": answers,
                                    "evaluated": total("answer_evaluated_tokens"),
                                    "completion": total("answer_completion_tokens")},
                      "memory": {"calls": None, "evaluated": total("memory_prompt_tokens"),
                                 "completion": total("memory_completion_tokens")}},
            "needle_replies": sum(cell["needle_replies"] for cell in cells),
            "questions": sum(cell["questions"] for cell in cells)}


def slopes(estimate: dict, measured: dict) -> dict:
    """Seconds per evaluated and per written token, per role (its model as estimate_grid's fits
    name it), from bench_llm.py's rows of that model run beside another."""
    out = {}
    for model, fit in estimate["measured"]["latency_fits"].items():
        rows = [r for r in measured["results"] if r.get("model") == model
                and r.get("concurrent") == WORKERS and r.get("n_threads") == 1]
        if not rows:
            raise ConfigError(f"rates file: no row of {model} at 1 thread with "
                              f"--concurrent {WORKERS}")
        prompt = sum(r["prompt_tok_s"] for r in rows) / len(rows)
        written = sum(r["gen_tok_s"] for r in rows) / len(rows)
        out[fit["role"]] = {"model": model, "prompt_tok_s": round(prompt, 1),
                            "gen_tok_s": round(written, 1), "s_per_prompt_token": 1 / prompt,
                            "s_per_completion_token": 1 / written,
                            "measured_at": measured["measured_at"]}
    missing = set(ROLES) - set(out)
    if missing:
        raise ConfigError(f"estimate file: no latency fit naming the {sorted(missing)} model")
    return out


def floor(grid: str, tokens: dict, rates: dict) -> dict:
    """Model hours per role, the wall floor on the grid's workers, and the target beside it."""
    hours, model_h = {}, 0.0
    for role in ROLES:
        tally, rate = tokens["roles"][role], rates[role]
        prefill = tally["evaluated"] * rate["s_per_prompt_token"] / 3600
        decode = tally["completion"] * rate["s_per_completion_token"] / 3600
        hours[role] = {"prefill_h": round(prefill, 2), "decode_h": round(decode, 2)}
        model_h += prefill + decode
    target = TARGET_HOURS.get(grid)
    return {**tokens, "model_hours": hours, "model_hours_total": round(model_h, 2),
            "wall_floor_h": round(model_h / WORKERS, 2), "target_wall_h": target,
            "floor_over_target": round(model_h / WORKERS / target, 2) if target else None}


def _named_dir(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not Path(path).is_dir():
        raise argparse.ArgumentTypeError(f"must be NAME=DIR with DIR a folder, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="grid_floor.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=_named_dir, nargs="*",
                        default=[("quick", Path("records/quick")),
                                 ("standard", Path("records/standard"))],
                        help="finished grids, NAME=DIR (default: the committed quick and standard)")
    parser.add_argument("--estimate", type=Path, default=RESULTS / "grid_estimate.json",
                        help="estimate_grid.py's file: the projected grid, and which model is which")
    parser.add_argument("--rates", type=Path, default=RESULTS / "llm_two_workers.json",
                        help="bench_llm.py --threads 1 --concurrent 2's file")
    args = parser.parse_args(argv)
    try:
        estimate = json.loads(args.estimate.read_text(encoding="utf-8"))
        rates = slopes(estimate, json.loads(args.rates.read_text(encoding="utf-8")))
        grids = {name: floor(name, measured_tokens(path), rates) for name, path in args.records}
        grids[estimate["spec"]] = floor(estimate["spec"], projected_tokens(estimate), rates)
    except (OSError, ValueError, KeyError, ConfigError) as exc:
        print(f"grid_floor.py: {exc}", file=sys.stderr)
        return 2
    for name, row in grids.items():
        print(f"{name}: {row['model_hours_total']} model-h, wall floor {row['wall_floor_h']} h "
              f"on {WORKERS} workers (target {row['target_wall_h']} h)")
    write("grid_floor", {"question": "the least wall time each grid can take on this machine, "
                         "from the tokens its models evaluate and write",
                         "workers": WORKERS, "seconds_per_token": rates, "grids": grids})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
