"""Memory overhead per turn (observe + recall, answering LLM excluded) per condition.

For each condition and each store size (default 1k and 10k turns), the memory is filled through
its own ``observe``, then ``--turns`` fresh exchanges are timed: one ``observe`` and one
``recall`` each. Real MiniLM embedder and the embedded stores (chromadb, SQLite, in-process
operating memory). Conditions whose memory calls a model (hybrid extraction; full_context
counts tokens) get a FakeLLM that answers instantly, so model time is excluded: hybrid's JSON
parsing and full_context's whitespace token count are what remains. Sleep / summary cycles are
not triggered here (the timed path is observe + recall only).

Target: p95 <= 20 ms at 10k stored turns for rag, episodic and hybrid.

Run: .venv/bin/python benchmarks/bench_memory.py [--sizes 1000 10000] [--turns 200]
Writes benchmarks/results/memory.json and memory.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memlab.embed.minilm import MiniLMEmbedder
from memlab.llm.fake import FakeLLM
from memlab.memory._backends import CachedEmbedder
from memlab.memory.base import CONDITIONS, MEMORIES, Exchange, Scope
from memlab.memory.hybrid_extract import EXTRACT_PROMPT, rule_based_candidates

RESULTS = Path(__file__).parent / "results"
TARGETS = {"rag", "episodic", "hybrid"}
TOPICS = ["the weather", "a football match", "pasta recipes", "train delays", "gardening",
          "a new film", "the stock market", "a hiking trail", "board games", "jazz music"]
FACTS = ["My {} is {}.", "I live in {} near {}.", "I like {} and {}."]
WORDS = ["Lisbon", "blue", "Ottilie", "tennis", "Marco", "green tea", "Bologna", "a Volvo"]
START = datetime(2025, 1, 1, tzinfo=UTC)


def exchange(i: int, tag: str, rng: random.Random) -> Exchange:
    """Turn ``i``: small talk, with a first-person fact one turn in ten."""
    if i % 10 == 0:
        user = rng.choice(FACTS).format(rng.choice(WORDS), rng.choice(WORDS))
    else:
        user = f"What do you think about {rng.choice(TOPICS)} ({tag} {i})?"
    return Exchange(user=user, assistant=f"Here is what I think about it, part {i}.",
                    turn_number=i + 1, timestamp=START + timedelta(minutes=10 * i))


def extractor_reply(messages) -> str:
    """FakeLLM reply: the extraction JSON a model would give (rule-based), else 'ok'."""
    if messages[0].content != EXTRACT_PROMPT:
        return "ok"
    user = messages[-1].content.split("\nAI: ")[0].removeprefix("User: ")
    found = rule_based_candidates(Exchange(user=user, assistant="", turn_number=0), 0.9)
    return json.dumps({"candidates": [c.model_dump(exclude={"extractor"}) for c in found]})


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000.0, q))


def measure(key: str, size: int, turns: int, embedder, folder: Path) -> dict:
    rng = random.Random(size)
    llm = FakeLLM([extractor_reply], context_window=32_768)
    config = {"auto_sleep_episodes": 0} if key == "sleep" else (
        {"summarize_every": 0} if key == "episodic_summary" else None)
    memory = MEMORIES.create(key, scope=Scope(user_id=f"bench-{size}"), llm=llm,
                             embedder=embedder, workdir=folder, config=config)
    start = time.perf_counter()
    for i in range(size):
        memory.observe(exchange(i, "fill", rng))
    fill_s = time.perf_counter() - start
    observe, recall, total = [], [], []
    for j in range(turns):
        ex = exchange(size + j, f"{key} timed", rng)
        t0 = time.perf_counter()
        memory.observe(ex)
        t1 = time.perf_counter()
        memory.recall(f"Tell me again about {rng.choice(TOPICS)} and {rng.choice(WORDS)} "
                      f"(question {key} {size} {j})?")  # unique: never a cached vector
        t2 = time.perf_counter()
        observe.append(t1 - t0)
        recall.append(t2 - t1)
        total.append(t2 - t0)
    memory.close()
    row = {"condition": key, "stored_turns": size, "timed_turns": turns,
           "fill_s": round(fill_s, 1), "llm_in_memory": "FakeLLM" if key in (
               "hybrid", "full_context") else "none"}
    for name, values in (("turn", total), ("observe", observe), ("recall", recall)):
        row[f"{name}_p50_ms"] = round(percentile(values, 50), 2)
        row[f"{name}_p95_ms"] = round(percentile(values, 95), 2)
    row["turn_p99_ms"] = round(percentile(total, 99), 2)
    row["turn_max_ms"] = round(max(total) * 1000, 2)
    if key in TARGETS and size >= 10_000:
        row["target_p95_ms"] = 20.0
        row["meets_target"] = row["turn_p95_ms"] <= 20.0
    return row


def markdown(rows: list[dict]) -> str:
    head = ("| condition | stored turns | p50 ms | p95 ms | p99 ms | max ms | observe p95 | "
            "recall p95 | target |\n|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        target = ("" if "meets_target" not in r else
                  ("p95 <= 20 ms: met" if r["meets_target"] else "p95 <= 20 ms: MISSED"))
        lines.append(f"| {r['condition']} | {r['stored_turns']:,} | {r['turn_p50_ms']} | "
                     f"{r['turn_p95_ms']} | {r['turn_p99_ms']} | {r['turn_max_ms']} | "
                     f"{r['observe_p95_ms']} | {r['recall_p95_ms']} | {target} |")
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS))
    args = parser.parse_args(argv)
    # Fill texts repeat across conditions: cache their vectors so filling is paid once. The
    # timed turns are new texts, embedded for real.
    embedder = CachedEmbedder(MiniLMEmbedder(), maxsize=200_000)
    rows = []
    for size in args.sizes:
        for key in args.conditions:
            folder = Path(tempfile.mkdtemp(prefix=f"bench-memory-{key}-"))
            try:
                row = measure(key, size, args.turns, embedder, folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            rows.append(row)
            print(json.dumps(row), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"measured_at": datetime.now(UTC).isoformat(), "python": sys.version.split()[0],
            "machine": platform.platform(), "load_avg_1m_at_end": os.getloadavg()[0],
            "cpus": os.cpu_count(), "embedder": "minilm (int8 ONNX)",
            "note": "observe + recall per turn, answering LLM excluded; hybrid's extractor and "
                    "full_context's token counter are a FakeLLM (instant)"}
    (RESULTS / "memory.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    (RESULTS / "memory.md").write_text(
        "# Memory overhead per turn (observe + recall, LLM excluded)\n\n" + markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
