"""Store benchmarks on this machine (not a test).

Measures:
  * embedding throughput of the offline MiniLM embedder (sentences/s, batches of 32);
  * top-5 query latency p50/p95 at 1k, 10k and 100k stored documents, *including the query's
    own embedding*, for the chromadb vector store (embedded; optionally a ``chroma run`` server)
    and for the episodic store (records in SQLite, vectors in chroma, searched in an in-process
    matrix rebuilt at open: ``reopen_s``);
  * operating-memory update throughput (atomic ``update_workspace``) and history appends, on the
    in-process KV and on Redis (a throwaway redis-server when the binary is on PATH).

The corpus is synthetic (template sentences) but embedded with the real model, once, and cached
in ``benchmarks/results/.cache``. Writes ``benchmarks/results/stores.json`` and ``stores.md``.

    .venv/bin/python benchmarks/bench_stores.py [--sizes 1000 10000 100000] [--server]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from memlab.embed.base import Embedder  # noqa: E402
from memlab.embed.minilm import MiniLMEmbedder  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SUBJECTS = [
    "My sister",
    "Our neighbour",
    "The new manager",
    "My grandfather",
    "A colleague",
    "The landlord",
    "My best friend",
    "The dentist",
    "Our daughter",
    "The coach",
]
VERBS = [
    "recommended",
    "complained about",
    "bought",
    "forgot",
    "talked about",
    "painted",
    "repaired",
    "planned",
    "cancelled",
    "photographed",
]
OBJECTS = [
    "a red bicycle",
    "the quarterly budget",
    "a trip to Lisbon",
    "a vegan cake",
    "the broken heater",
    "a jazz concert",
    "an old sailing boat",
    "the garden fence",
    "a chess tournament",
    "a language course",
    "the wedding menu",
    "a used piano",
]
PLACES = [
    "in Hamburg",
    "at the office",
    "near the lake",
    "downtown",
    "at school",
    "in the mountains",
    "at the market",
    "online",
    "in Kyoto",
    "at the hospital",
]
WHEN = [
    "last Monday",
    "in spring",
    "yesterday",
    "two years ago",
    "this morning",
    "on her birthday",
    "after lunch",
    "at midnight",
    "during the holidays",
    "in 2019",
]


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    parts = [SUBJECTS, VERBS, OBJECTS, PLACES, WHEN]
    picks = [rng.integers(0, len(p), n) for p in parts]
    nums = rng.integers(1, 10_000, n)
    return [
        f"{SUBJECTS[a]} {VERBS[b]} {OBJECTS[c]} {PLACES[d]} {WHEN[e]} (note {k})."
        for a, b, c, d, e, k in zip(*picks, nums, strict=True)
    ]


def questions(n: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        f"Who {VERBS[rng.integers(10)]} {OBJECTS[rng.integers(12)]} {WHEN[rng.integers(10)]}?"
        for _ in range(n)
    ]


class CachedEmbedder(Embedder):
    """Serves precomputed corpus vectors; embeds anything else (queries) with the real model."""

    def __init__(self, model: MiniLMEmbedder, texts: list[str], vectors: np.ndarray):
        self.model, self.name, self.dim = model, model.name, model.dim
        self.cache = dict(zip(texts, vectors, strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        if all(t in self.cache for t in texts):
            return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim))
        return self.model.embed(texts)


def corpus_vectors(model: MiniLMEmbedder, texts: list[str]) -> np.ndarray:
    cache = RESULTS / ".cache" / f"corpus_{len(texts)}_{model.name}.npy"
    if cache.exists():
        return np.load(cache)
    print(f"embedding {len(texts)} corpus sentences (cached afterwards)...", flush=True)
    vectors = model.embed(texts)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.array(samples) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "mean_ms": round(float(ms.mean()), 2),
        "n_queries": len(samples),
    }


def time_queries(fn, queries: list[str]) -> dict[str, float]:
    for q in queries[:5]:
        fn(q)  # warm-up
    samples = []
    for q in queries:
        began = time.perf_counter()
        fn(q)
        samples.append(time.perf_counter() - began)
    return percentiles(samples)


def bench_embedding(model: MiniLMEmbedder) -> dict[str, float]:
    texts = corpus(2048, seed=99)
    began = time.perf_counter()
    model.embed(texts)
    batch = len(texts) / (time.perf_counter() - began)
    single = time_queries(lambda q: model.embed([q]), questions(200))
    spinning = MiniLMEmbedder(spinning=True)
    began = time.perf_counter()
    spinning.embed(texts)
    batch_spin = len(texts) / (time.perf_counter() - began)
    return {
        "sentences_per_s_batch32": round(batch, 1),
        "sentences_per_s_batch32_spinning": round(batch_spin, 1),
        "query_embed": single,
    }


def bench_vector_store(kind: str, texts, vectors, sizes, queries, model, url=None) -> dict:
    from memlab.stores.vector import ChromaVectorStore

    embedder = CachedEmbedder(model, texts, vectors)
    with tempfile.TemporaryDirectory() as folder:
        store = ChromaVectorStore(
            "bench-user", embedder, path=folder, url=url, namespace=f"bench{time.monotonic_ns()}"
        )
        batch = min(4000, store.client.get_max_batch_size())
        out, stored = {}, 0
        for size in sizes:
            began = time.perf_counter()
            for start in range(stored, size, batch):
                end = min(size, start + batch)
                store.add(
                    [f"d{i}" for i in range(start, end)],
                    texts[start:end],
                    [{"n": i} for i in range(start, end)],
                )
            insert_s = time.perf_counter() - began
            stored = size
            out[str(size)] = {
                **time_queries(lambda q: store.query(q, k=5), queries),
                "insert_docs_per_s": round(_rate(size, sizes, insert_s), 1),
            }
            print(f"  {kind} {size}: {out[str(size)]}", flush=True)
        return out


def _rate(size: int, sizes: list[int], seconds: float) -> float:
    previous = max([s for s in sizes if s < size], default=0)
    return (size - previous) / max(seconds, 1e-9)


def bench_episodic(texts, vectors, sizes, queries, model) -> dict:
    from memlab.models.sleep import Episode
    from memlab.stores.episodic import EpisodicMemoryStore

    embedder = CachedEmbedder(model, texts, vectors)
    out, stored = {}, 0
    with tempfile.TemporaryDirectory() as folder:
        store = EpisodicMemoryStore(folder, "bench-user", embedder)
        for size in sizes:
            began = time.perf_counter()
            for start in range(stored, size, 5000):
                chunk = texts[start : min(size, start + 5000)]
                store._insert([Episode(content=t) for t in chunk])
            insert_s = time.perf_counter() - began
            stored = size
            out[str(size)] = {
                **time_queries(lambda q: store.get_relevant(q, k=5), queries),
                "insert_docs_per_s": round(_rate(size, sizes, insert_s), 1),
            }
            began = time.perf_counter()
            EpisodicMemoryStore(folder, "bench-user", embedder).close()
            out[str(size)]["reopen_s"] = round(time.perf_counter() - began, 3)
            print(f"  episodic {size}: {out[str(size)]}", flush=True)
    return out


def bench_operating(kv, n: int) -> dict[str, float]:
    from memlab.models.operating import SharedWorkspaceState
    from memlab.stores.operating import OperatingMemory

    memory = OperatingMemory(kv)
    ws = memory.save_workspace(SharedWorkspaceState(status="active", shared_data={"count": 0}))

    def bump(w):
        w.shared_data = {**w.shared_data, "count": w.shared_data["count"] + 1}

    began = time.perf_counter()
    for _ in range(n):
        memory.update_workspace(ws.event_id, bump)
    updates = n / (time.perf_counter() - began)
    assert memory.get_workspace(ws.event_id).shared_data["count"] == n
    began = time.perf_counter()
    for i in range(n):
        memory.append_turn("bench", f"message {i}", f"reply {i}")
    appends = n / (time.perf_counter() - began)
    return {
        "workspace_updates_per_s": round(updates, 1),
        "history_appends_per_s": round(appends, 1),
    }


def bench_operating_all(n: int) -> dict:
    from memlab.stores.kv import InProcessKV, RedisKV

    out = {"in_process": bench_operating(InProcessKV(), n)}
    try:
        from services import RedisServer

        with RedisServer() as server:
            out["redis"] = bench_operating(RedisKV(server.url), n)
    except BaseException as exc:  # noqa: BLE001 - pytest.skip raises a BaseException
        out["redis"] = {"skipped": str(exc) or type(exc).__name__}
    return out


def markdown(results: dict) -> str:
    lines = [
        "| store | docs | top-5 p50 ms | top-5 p95 ms | insert docs/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for store, by_size in results["vector_query_incl_embedding"].items():
        for size, row in by_size.items():
            lines.append(
                f"| {store} | {int(size):,} | {row['p50_ms']} | {row['p95_ms']} | "
                f"{row['insert_docs_per_s']:,.0f} |"
            )
    emb = results["embedding"]
    lines += [
        "",
        f"Embedding: {emb['sentences_per_s_batch32']:,.0f} sentences/s (batches of 32; "
        f"{emb['sentences_per_s_batch32_spinning']:,.0f} with ORT spinning on);"
        f" one query {emb['query_embed']['p50_ms']} ms p50 / {emb['query_embed']['p95_ms']}"
        " ms p95.",
        "",
        "| operating memory | workspace updates/s | history appends/s |",
        "|---|---:|---:|",
    ]
    for backend, row in results["operating_memory"].items():
        if "skipped" in row:
            lines.append(f"| {backend} | skipped: {row['skipped']} | |")
        else:
            lines.append(
                f"| {backend} | {row['workspace_updates_per_s']:,.0f} | "
                f"{row['history_appends_per_s']:,.0f} |"
            )
    load = results["machine"].get("load_average_1_5_15_at_start")
    lines += ["", f"Machine: {results['machine'].get('cpus')} CPUs, load average at start {load}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--server", action="store_true", help="also a `chroma run` server")
    parser.add_argument("--ops", type=int, default=2000, help="operating-memory operations")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    model = MiniLMEmbedder()
    load = [round(x, 2) for x in os.getloadavg()]
    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_1_5_15_at_start": load,
        },
        "started_at": time.time(),
    }
    results["embedding"] = bench_embedding(model)
    print("embedding:", results["embedding"], flush=True)
    texts = corpus(sizes[-1])
    vectors = corpus_vectors(model, texts)
    queries = questions(args.queries)
    vq = results["vector_query_incl_embedding"] = {}
    vq["chroma embedded (HNSW)"] = bench_vector_store(
        "chroma", texts, vectors, sizes, queries, model
    )
    if args.server:
        from services import ChromaServer

        with ChromaServer() as server:
            vq["chroma server (HTTP)"] = bench_vector_store(
                "chroma-http", texts, vectors, sizes, queries, model, url=server.url
            )
    vq["episodic store (SQL + chroma, in-process search)"] = bench_episodic(
        texts, vectors, sizes, queries, model)
    results["operating_memory"] = bench_operating_all(args.ops)
    results["finished_at"] = time.time()
    results["machine"]["load_average_1_5_15_at_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "stores.json").write_text(json.dumps(results, indent=2))
    table = markdown(results)
    (RESULTS / "stores.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
