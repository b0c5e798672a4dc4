"""What the stores cost per turn, in CPU time: observe + recall with the hashing embedder.

bench_memory.py measures wall time with the real embedder, which on a shared machine is mostly
waiting for a core. This measures the process's CPU time per turn (all its threads, chroma's
included) with the hashing embedder, so the store layer's own cost shows and two versions of the
code can be compared on a busy machine: run it once per checkout
(``PYTHONPATH=<checkout> python <checkout>/benchmarks/bench_store_overhead.py``). Sleep and
summary cycles are not triggered (as in bench_memory.py).

Run: .venv/bin/python benchmarks/bench_store_overhead.py [--size 10000] [--turns 300]
Writes benchmarks/results/store_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_memory import TOPICS, WORDS, exchange, extractor_reply  # noqa: E402

from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.memory.base import MEMORIES, Scope  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CONFIGS = {"sleep": {"auto_sleep_episodes": 0}, "episodic_summary": {"summarize_every": 0}}


def measure(key: str, size: int, turns: int) -> dict:
    memory = MEMORIES.create(key, scope=Scope(user_id="bench"), config=CONFIGS.get(key),
                             llm=FakeLLM([extractor_reply], context_window=32_768),
                             embedder=HashingEmbedder(dim=384), workdir=Path(tempfile.mkdtemp()))
    rng = random.Random(size)
    start = time.perf_counter()
    for i in range(size):
        memory.observe(exchange(i, "fill", rng))
    fill_s = time.perf_counter() - start
    cpu, wall = [], []
    for j in range(turns):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        memory.observe(exchange(size + j, "timed", rng))
        memory.recall(f"Tell me again about {rng.choice(TOPICS)} and {rng.choice(WORDS)} "
                      f"(question {j})?")
        cpu.append(time.process_time() - cpu0)
        wall.append(time.perf_counter() - wall0)
    memory.close()
    row = {"condition": key, "stored_turns": size, "timed_turns": turns,
           "fill_s": round(fill_s, 1), "load_1m": os.getloadavg()[0]}
    for name, values in (("cpu", cpu), ("wall", wall)):
        ms = np.array(values) * 1000
        row.update({f"{name}_p50_ms": round(float(np.percentile(ms, 50)), 2),
                    f"{name}_p95_ms": round(float(np.percentile(ms, 95)), 2),
                    f"{name}_mean_ms": round(float(ms.mean()), 2)})
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="stored turns before timing")
    parser.add_argument("--turns", type=int, default=300, help="timed turns")
    parser.add_argument("--conditions", nargs="+",
                        default=["episodic", "episodic_summary", "sleep", "hybrid"])
    args = parser.parse_args(argv)
    rows = []
    for key in args.conditions:
        rows.append(measure(key, args.size, args.turns))
        print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"measured_at": datetime.now(UTC).isoformat(), "cpus": os.cpu_count(),
            "embedder": "hashing (384)", "note": "process CPU time per observe + recall"}
    (RESULTS / "store_overhead.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                            indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
