"""Measure the local model(s) on this machine: load time, prompt and generation speed, memory.

Each configuration runs in a fresh process so load time and resident memory are its own.
Writes ``benchmarks/results/llm.json`` and prints a markdown table.

With ``--concurrent N`` each configuration runs as N processes at once (as ``memlab grid``'s
N workers do, one thread each on 2 cores), each row one process, so their rates are what one
worker gets while the others run; grid_floor.py prices a grid's tokens by them.

Usage:
    python benchmarks/bench_llm.py [--sizes 0.5b,135m] [--threads 2] [--flash-attn default|both]
        [--concurrent 1] [--out benchmarks/results/llm.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import time
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "llm.json"
PROMPT_TOKENS = 1000
GEN_TOKENS = 100
SENTENCES = [
    "On day {i} the lighthouse keeper logged {n} ships passing the northern reef.",
    "Her notebook from week {i} says the garden produced {n} kilograms of tomatoes.",
    "Meeting {i} moved the budget review to room {n} after the projector failed.",
    "In chapter {i} the detective counted {n} footprints leading to the old mill.",
]


def filler_prompt(count_tokens, target: int) -> str:
    """Deterministic prose of about ``target`` tokens in the model's tokenizer."""
    lines: list[str] = []
    i = 0
    while count_tokens(" ".join(lines)) < target:
        lines.append(SENTENCES[i % len(SENTENCES)].format(i=i + 1, n=(i * 37) % 101 + 3))
        i += 1
    return " ".join(lines)


def _rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(size: str, n_threads: int | None, flash_attn: bool | None, barrier=None) -> dict:
    """One configuration, in this (fresh) process; with ``barrier``, the call starts when every
    process running beside it has loaded its model."""
    import llama_cpp

    from memlab.config import get_settings
    from memlab.llm.local import LocalLLM

    settings = get_settings(llm_cache=False)
    start = time.perf_counter()
    llm = LocalLLM(size=size, n_threads=n_threads, flash_attn=flash_attn, settings=settings)
    setup_s = time.perf_counter() - start  # locate + verify (stamp) + load
    rss_loaded = _rss_mb()
    text = filler_prompt(llm.count_tokens, PROMPT_TOKENS)
    messages = [{"role": "user", "content": text + "\n\nRetell the notes above in detail."}]
    llm.llama.reset()
    llama_cpp.llama_perf_context_reset(llm.llama.ctx)
    if barrier is not None:
        barrier.wait()
    start = time.perf_counter()
    out = llm.complete(messages, max_tokens=GEN_TOKENS)
    wall_s = time.perf_counter() - start
    perf = llama_cpp.llama_perf_context(llm.llama.ctx)
    return {
        "model": llm.model, "size": size, "file_mb": round(llm.model_path.stat().st_size / 2**20),
        "n_ctx": llm.context_window, "n_threads": llm.llama.n_threads,
        "flash_attn": llm.flash_attn,
        "load_s": round(llm.load_s, 3), "setup_s": round(setup_s, 3),
        "prompt_tokens": perf.n_p_eval, "prompt_tok_s": round(perf.n_p_eval / perf.t_p_eval_ms * 1e3, 1),
        "gen_tokens": perf.n_eval, "gen_tok_s": round(perf.n_eval / perf.t_eval_ms * 1e3, 1),
        "call_wall_s": round(wall_s, 2), "usage_prompt_tokens": out.prompt_tokens,
        "rss_loaded_mb": round(rss_loaded), "rss_mb": round(_rss_mb()),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _child(queue, size, n_threads, flash_attn, barrier=None) -> None:
    try:
        queue.put(measure(size, n_threads, flash_attn, barrier))
    except Exception as exc:  # report, keep measuring the other configurations
        queue.put({"size": size, "error": f"{type(exc).__name__}: {exc}"})


def run_isolated(size: str, n_threads: int | None, flash_attn: bool | None,
                 concurrent: int = 1) -> list[dict]:
    """One configuration in ``concurrent`` fresh processes started together; a row each."""
    ctx = multiprocessing.get_context("spawn")
    queue, barrier = ctx.Queue(), ctx.Barrier(concurrent, timeout=600)
    procs = [ctx.Process(target=_child, args=(queue, size, n_threads, flash_attn, barrier))
             for _ in range(concurrent)]
    for proc in procs:
        proc.start()
    rows = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return [{**row, "concurrent": concurrent} for row in rows]


def machine() -> dict:
    def pkg(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(), "llama_cpp_python": pkg("llama-cpp-python"),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def markdown(rows: list[dict]) -> str:
    head = ("| model | threads | flash_attn | load s | prompt tok/s | gen tok/s | RSS MB |\n"
            "|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['size']} | - | - | - | - | - | {r['error']} |")
            continue
        lines.append(f"| {r['model']} | {r['n_threads']} | {r['flash_attn']} | {r['load_s']} | "
                     f"{r['prompt_tok_s']} | {r['gen_tok_s']} | {r['rss_mb']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5b,135m", help="comma-separated packaged tiers")
    parser.add_argument("--threads", default="default",
                        help="comma-separated thread counts, 'default' = memlab's default")
    parser.add_argument("--flash-attn", choices=["default", "both"], default="default")
    parser.add_argument("--concurrent", type=int, default=1,
                        help="processes run at once per configuration (a row each)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    threads = [None if t == "default" else int(t) for t in args.threads.split(",")]
    flash = [None] if args.flash_attn == "default" else [False, True]
    info = machine()
    rows = [row for size in args.sizes.split(",") for t in threads for f in flash
            for row in run_isolated(size, t, f, args.concurrent)]
    report = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "prompt_tokens_target": PROMPT_TOKENS, "gen_tokens_max": GEN_TOKENS,
              "machine": info, "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(rows))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
