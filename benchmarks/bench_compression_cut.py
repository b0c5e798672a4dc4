"""Compression replies ended after the summary and key concepts: the same memories, fewer tokens?

Runs sleep and episodic_summary on one persona history (``--span``, seed 0, evidence only: no
answering calls) with the memlab of ``--before`` (a temporary worktree first on PYTHONPATH) and
with this checkout, no response cache, one llama.cpp thread; then compares, per condition, the
consolidated memories (summary and key concepts, in order), the schemas sleep formed, and the
tokens the memory model wrote. With ``--runs BEFORE AFTER`` it compares two results folders that
hold those runs instead of running them.

Run: .venv/bin/python benchmarks/bench_compression_cut.py [--before REV] [--span 4000]
     [--runs BEFORE_DIR AFTER_DIR]
Writes benchmarks/results/compression_cut.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from seeds_common import write

from memlab.bench.runlog import read_jsonl
from memlab.report import views

ROOT = Path(__file__).resolve().parent.parent
CONDITIONS = ("episodic_summary", "sleep")
DEFAULT_BEFORE = "4018909"  # main before the cut (e8b48bc)


def run(condition: str, span: int, tree: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMLAB_LLM_CACHE": "0",
           "MEMLAB_N_THREADS": os.environ.get("MEMLAB_N_THREADS", "1")}
    subprocess.run([sys.executable, "-m", "memlab.cli", "run", "-c", condition, "-s", "persona",
                    "--span", str(span), "--seed", "0", "--answered", "0", "--out", str(out)],
                   env=env, cwd=out.parent, check=True, capture_output=True)


def side(run_dir: Path) -> dict:
    memories = views.consolidated_memories(run_dir)
    written = [c["completion"]["completion_tokens"] for c in read_jsonl(run_dir / "calls.jsonl")]
    schemas = views.schemas_formed(run_dir) if "sleep" in run_dir.name else None
    return {"memories": memories, "schemas": schemas, "calls": len(written),
            "tokens_written": sum(written)}


def compare(before: Path, after: Path, span: int) -> dict:
    rows = {}
    for condition in CONDITIONS:
        run_id = f"persona-{condition}-{span}-s0"
        a, b = side(before / run_id), side(after / run_id)
        pairs = list(zip(a["memories"].itertuples(), b["memories"].itertuples(), strict=False))
        rows[condition] = {
            "memories": [len(a["memories"]), len(b["memories"])],
            "same_summary": sum(x.summary == y.summary for x, y in pairs),
            "same_key_concepts": sum(x.key_concepts == y.key_concepts for x, y in pairs),
            "same_schemas": None if a["schemas"] is None else bool(a["schemas"].equals(b["schemas"])),
            "memory_model_calls": [a["calls"], b["calls"]],
            "tokens_written": [a["tokens_written"], b["tokens_written"]],
            "written_ratio": round(b["tokens_written"] / a["tokens_written"], 3)}
        print(condition, rows[condition])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE)
    parser.add_argument("--span", type=int, default=4000)
    parser.add_argument("--runs", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.runs:
        before, after = args.runs
        rows = compare(before, after, args.span)
    else:
        with tempfile.TemporaryDirectory(prefix="cut-") as tmp:
            tmp = Path(tmp)
            tree = tmp / "before-tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                            args.before], check=True, capture_output=True)
            try:
                before, after = tmp / "before", tmp / "after"
                for condition in CONDITIONS:
                    run(condition, args.span, tree, before)
                    run(condition, args.span, ROOT, after)
                rows = compare(before, after, args.span)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], capture_output=True)
    write("compression_cut", {"question": __doc__.splitlines()[0], "before": args.before,
                              "span": args.span, "suite": "persona", "seed": 0,
                              "conditions": rows})


if __name__ == "__main__":
    main()
