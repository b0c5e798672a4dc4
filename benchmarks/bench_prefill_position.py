"""What a prompt token costs at each position of a long context (issue 45's plan).

A model reading a prompt pays, per token, the layers' fixed work plus attention over every
token before it: the cost grows with the position. ``docs/efficiency.md``'s 40 tokens a second
was measured on ~1,000-token prompts; full_context at the scaling grid's long spans reads 16k-32k
tokens, where attention dominates. This benchmark fills one context chunk by chunk (512 tokens,
llama.cpp's batch) with ``bench_llm.filler_prompt``'s prose and times each chunk, so one pass
gives the seconds per token at every position up to ``--tokens``, then fits
``seconds per token = a + b x position`` by least squares. ``memlab.gridcost`` prices a read of
positions s..e as ``a (e - s) + b (e^2 - s^2) / 2``.

Run with nothing else on the cores (a grid's kernels stopped with SIGSTOP):
    python benchmarks/bench_prefill_position.py [--size 1.5b] [--threads 2] [--tokens 8192]
        [--flash-attn default|both] [--out prefill_position]
Writes benchmarks/results/prefill_position.json (``--out NAME``: NAME.json). Two processes at
``--threads 1`` started together measure what each of two grid workers gets.
"""

from __future__ import annotations

import argparse
import time

from bench_llm import filler_prompt
from seeds_common import write

CHUNK = 512


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)`` of ys on xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
             / sum((x - mx) ** 2 for x in xs))
    return my - slope * mx, slope


def measure(size: str, threads: int, tokens: int, flash_attn: bool | None) -> dict:
    from memlab.config import get_settings
    from memlab.llm.local import LocalLLM

    llm = LocalLLM(size=size, n_ctx=max(tokens + CHUNK, 4096), n_threads=threads,
                   flash_attn=flash_attn, settings=get_settings(llm_cache=False))
    prompt = llm.llama.tokenize(filler_prompt(llm.count_tokens, tokens).encode())[:tokens]
    llm.llama.reset()
    chunks = []
    for start in range(0, len(prompt), CHUNK):
        piece = prompt[start:start + CHUNK]
        began = time.perf_counter()
        llm.llama.eval(piece)
        seconds = time.perf_counter() - began
        chunks.append({"start": start, "tokens": len(piece), "seconds": round(seconds, 4),
                       "tokens_per_s": round(len(piece) / seconds, 1)})
        print(f"  flash_attn={llm.flash_attn} positions {start}-{start + len(piece)}: "
              f"{len(piece) / seconds:.1f} tokens/s", flush=True)
    a, b = fit_line([c["start"] + c["tokens"] / 2 for c in chunks],
                    [c["seconds"] / c["tokens"] for c in chunks])
    read_s = {str(n): round(a * n + b * n * n / 2) for n in (1000, 8000, 16000, 32000)}
    return {"model": llm.model, "n_threads": threads, "flash_attn": llm.flash_attn,
            "n_ctx": llm.context_window, "chunks": chunks,
            "fit": {"seconds_per_token_at_0": round(a, 6),
                    "seconds_per_token_per_position": float(f"{b:.4g}")},
            "read_from_empty_s": read_s}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--flash-attn", choices=["default", "both"], default="default")
    parser.add_argument("--out", default="prefill_position", help="results/NAME.json")
    args = parser.parse_args(argv)
    modes = [None] if args.flash_attn == "default" else [False, True]
    runs = [measure(args.size, args.threads, args.tokens, mode) for mode in modes]
    for run in runs:
        fit = run["fit"]
        print(f"{run['model']} flash_attn={run['flash_attn']}: "
              f"{fit['seconds_per_token_at_0']:.4f} s + {fit['seconds_per_token_per_position']:.3g}"
              f" s x position a token; from empty: {run['read_from_empty_s']} s")
    write(args.out, {"chunk": CHUNK, "runs": runs})


if __name__ == "__main__":
    main()
