"""Prefill: what every condition's model calls read, before and after prefix reuse (issue 41).

Runs cells (condition x suite x span) on the real models twice in one invocation, on the same
machine: with the memlab of git revision ``--before`` (checked out into a temporary worktree and
put first on PYTHONPATH) and with this checkout. A probe on llama.cpp's ``Llama.eval``
(benchmarks/prefill_probe) counts the tokens each model evaluated, so both versions are measured
by the same instrument, not by the accounting this change adds. Per version and cell it writes:

- conversation tokens (the stored turns' text in the answering model's tokenizer);
- per model: prompt tokens sent (paid calls), prompt tokens evaluated (the probe's count less
  the generated tokens; a call's last generated token is never evaluated, so this errs by at
  most one token a call toward more), and reused (sent less evaluated);
- seconds per answer (p50/p95 of the answering call), seconds per stored turn (the memory's
  own work, ``report.peers.stored_turn_seconds``), and the cell's wall time.

No response cache (``MEMLAB_LLM_CACHE=0``): every call is paid. Cells run one at a time with
every core; the load average at the end says what else shared the machine.

Run: .venv/bin/python benchmarks/bench_prefill.py [--before REV] [--cells SPEC ...]
     [--examples 1] [--ltm-types colours,name_list,shopping] [--versions before after]
A cell is ``condition:suite:span[:answered]`` (e.g. ``full_context:ltm:8000``; answered: tests
answered, default all; 0 measures the memory's own calls alone). Writes
benchmarks/results/prefill.json (replacing it, or merging with ``--merge``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seeds_common import RESULTS, machine

from memlab.bench.runlog import read_jsonl
from memlab.report.peers import stored_turn_seconds

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "prefill_probe"
OUT = RESULTS / "prefill.json"
DEFAULT_BEFORE = "e604ff5"  # main before issue 41
DEFAULT_CELLS = (
    [f"full_context:ltm:{span}" for span in (1000, 4000, 8000)] + ["full_context:persona:4000:8"]
    + [f"{c}:ltm:1000:0" for c in ("episodic_summary", "sleep", "hybrid")]
    + [f"{c}:persona:4000:8" for c in ("vanilla", "oracle", "rag", "episodic", "hybrid")])


def run_cell(cell: str, version: str, pythonpath: Path, out: Path, args) -> dict:
    condition, suite, span, *answered = cell.split(":")
    probe = out / f"{version}-{cell.replace(':', '-')}.probe.json"
    folder = out / version / cell.replace(":", "-")
    command = [sys.executable, "-m", "memlab.cli", "run", "-c", condition, "-s", suite,
               "--span", span, "--out", str(folder),
               "--llm-model", args.llm_model, "--memory-llm-model", args.memory_llm_model]
    command += ["--answered", answered[0]] if answered else []
    if suite == "ltm":
        command += ["--scripted-needles", "-o", f"examples={args.examples}",
                    "-o", f"types=[{args.ltm_types}]"]
    env = {**os.environ, "MEMLAB_LLM_CACHE": "0", "MEMLAB_PREFILL_PROBE": str(probe),
           "PYTHONPATH": os.pathsep.join([str(PROBE), str(pythonpath)])}
    start = time.perf_counter()
    # cwd outside both trees: ``python -m`` puts the cwd first on sys.path, before PYTHONPATH
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=out)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{version} {cell} failed ({done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    run_dir = next(p for p in folder.iterdir() if p.is_dir())
    counts = json.loads(probe.read_text())
    imported = Path(counts.pop("memlab")).resolve()
    if not imported.is_relative_to(pythonpath.resolve()):
        raise SystemExit(f"{version} {cell} ran the memlab at {imported}, not {pythonpath}")
    return measure(run_dir, counts, wall)


def measure(run_dir: Path, probe: dict, wall: float) -> dict:
    turns = read_jsonl(run_dir / "turns.jsonl")
    calls = read_jsonl(run_dir / "calls.jsonl")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    models: dict[str, dict] = {}
    for call in calls:
        completion = call.get("completion") or {}
        if not call.get("paid") or not completion:
            continue
        row = models.setdefault(completion["model"], {"calls": 0, "prompt_tokens": 0,
                                                      "completion_tokens": 0})
        row["calls"] += 1
        row["prompt_tokens"] += completion["prompt_tokens"]
        row["completion_tokens"] += completion["completion_tokens"]
    for name, counted in probe.items():
        row = models.get(name.removesuffix(".gguf")) or models.setdefault(name, {
            "calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        row["evaluated"] = counted["tokens"] - row["completion_tokens"]
        row["reused"] = row["prompt_tokens"] - row["evaluated"]
    answers = [t["llm_latency_s"] for t in turns
               if t.get("kind") == "question" and t.get("answered", True) and not t.get("error")]
    stored = stored_turn_seconds(turns, calls)
    per_turn = stored[0] if stored else []
    return {"run_id": run_dir.name, "wall_s": round(wall, 1),
            "conversation_tokens": conversation_tokens(turns),
            "answers": len(answers), "answer_s_p50": _q(answers, 0.5),
            "answer_s_p95": _q(answers, 0.95), "stored_turns": len(per_turn),
            "stored_turn_s": round(statistics.fmean(per_turn), 3) if per_turn else None,
            "models": models,
            # memlab's own accounting (runs since issue 41): what the probe checks
            "manifest_prompt_tokens": manifest.get("prompt_tokens")}


def conversation_tokens(turns: list[dict]) -> int:
    """Tokens of the stored conversation (user text and reply) in the 1.5B model's tokenizer."""
    import llama_cpp

    from memlab.llm.weights import ensure_model_file, packaged_model

    global _VOCAB
    if _VOCAB is None:
        from memlab.config import get_settings

        path = ensure_model_file(packaged_model("1.5b"), get_settings().cache_dir)
        _VOCAB = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    text = "".join(f"{t.get('text') or ''}\n{t.get('reply') or ''}\n"
                   for t in turns if t.get("phase") == "main" and t.get("store"))
    return len(_VOCAB.tokenize(text.encode("utf-8"), add_bos=False))


_VOCAB = None


def _q(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def worktree(rev: str, parent: Path) -> Path:
    path = parent / f"memlab-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
                   check=True, capture_output=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE)
    parser.add_argument("--cells", nargs="+", default=DEFAULT_CELLS)
    parser.add_argument("--versions", nargs="+", default=["before", "after"],
                        choices=["before", "after"])
    parser.add_argument("--examples", type=int, default=1)
    parser.add_argument("--ltm-types", default="colours,name_list,shopping")
    parser.add_argument("--llm-model", default="1.5b")
    parser.add_argument("--memory-llm-model", default="0.5b")
    parser.add_argument("--merge", action="store_true", help="keep the file's other cells")
    parser.add_argument("--table", action="store_true",
                        help="print the results file as a markdown table and stop")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(OUT.read_text())))
        return
    results = json.loads(OUT.read_text()) if args.merge and OUT.exists() else {}
    cells = results.setdefault("cells", {})
    with tempfile.TemporaryDirectory(prefix="prefill-") as tmp:
        tmp = Path(tmp)
        trees = {"after": ROOT}
        if "before" in args.versions:
            trees["before"] = worktree(args.before, tmp)
        try:
            for cell in args.cells:
                for version in args.versions:
                    row = run_cell(cell, version, trees[version], tmp, args)
                    # per row, what ran and beside what: a merged file mixes invocations
                    row |= {"revision": args.before if version == "before" else _head(),
                            "machine": machine()}
                    cells.setdefault(cell, {})[version] = row
                    print(f"{cell} {version}: {json.dumps(row)}", flush=True)
                    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        finally:
            if "before" in trees:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(trees["before"])], capture_output=True)
    results.update(before=args.before, after=_head(), examples=args.examples,
                   ltm_types=args.ltm_types, llm_model=args.llm_model,
                   memory_llm_model=args.memory_llm_model, machine=machine())
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


def table(results: dict) -> str:
    """The results as the docs show them: per cell, before and after."""
    lines = ["| cell | conversation tokens | tokens evaluated (before / after) | evaluated per "
             "conversation token (after) | s per answer p50 (before / after) | s per stored turn "
             "(before / after) | cell wall s (before / after) |",
             "|---|---|---|---|---|---|---|"]
    for cell, row in results.get("cells", {}).items():
        before, after = row.get("before", {}), row.get("after", {})
        evaluated = [sum(m.get("evaluated", 0) for m in r.get("models", {}).values())
                     for r in (before, after)]
        conversation = after.get("conversation_tokens") or 0
        # the history is the prompt only for full_context (a memory's model reads its own text)
        ratio = (f"{evaluated[1] / conversation:.2f}"
                 if conversation and cell.startswith("full_context") else "--")
        lines.append(f"| `{cell}` | {conversation:,} | {evaluated[0]:,} / {evaluated[1]:,} | "
                     f"{ratio} | {_pair(before, after, 'answer_s_p50')} | "
                     f"{_pair(before, after, 'stored_turn_s')} | {_pair(before, after, 'wall_s')} |")
    return "\n".join(lines)


def _pair(before: dict, after: dict, key: str) -> str:
    return " / ".join("--" if r.get(key) in (None, 0.0) else f"{r[key]:g}" for r in (before, after))


def _head() -> str:
    """The checkout's commit, ``-dirty`` when its files differ from it (what ran is then not
    that commit)."""
    return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
