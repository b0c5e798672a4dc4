"""memlab's rag / hybrid against the peers mem0, LangMem and graphiti, in one run on one machine.

1. Search latency: each memory is filled with 1k and 10k stored memories, then ``--queries``
   fresh queries go through its ``recall`` (p50 / p95 ms). hybrid is filled through its own
   ``observe`` (its extractor a FakeLLM, as in bench_memory.py); rag through its vector store
   in batches of TurnDocuments; mem0 and LangMem through their libraries' store APIs directly
   (mem0's vector store ``insert``, the LangGraph store's ``batch`` of puts, graphiti's
   ``add_nodes_and_edges_bulk`` of facts between entities in Kuzu), since 10k adds
   through a real LLM would take days here. Real MiniLM embedder everywhere; the search is each
   condition's own (rag's chroma query, mem0 ``Memory.search``, LangGraph ``store.search``).
2. Ingest cost per stored turn with a real local model: the first ``--ingest-turns`` turns of the
   persona suite through each condition's ``observe`` (response cache off): wall seconds, model
   calls, prompt and completion tokens, memories written, per turn.

Run: .venv/bin/python benchmarks/bench_peers.py [--part search|ingest|both]
     [--sizes 1000 10000] [--queries 100] [--ingest-turns 4] [--ingest-models 1.5b]
     [--conditions rag graphiti] [--out FILE]
Writes benchmarks/results/peers.json (or --out; graphiti's run: peers-graphiti.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_memory import TOPICS, WORDS, exchange, extractor_reply  # noqa: E402

from memlab.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.memory._backends import CachedEmbedder  # noqa: E402
from memlab.memory.base import MEMORIES, Exchange, Scope  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CONDITIONS = ("rag", "hybrid", "mem0", "langmem", "graphiti")
ATTRIBUTES = ["favourite colour", "home town", "sister's name", "dentist", "car", "first pet",
              "favourite film", "employer", "gym", "allergy", "hobby", "neighbour"]
SCOPE = Scope(user_id="bench-user", agent_id="bench")


def memory_text(i: int, rng: random.Random) -> str:
    return f"User's {rng.choice(ATTRIBUTES)} is {rng.choice(WORDS)} (memory {i})."


def fill_mem0(memory, texts: list[str], embedder) -> None:
    """mem0's own vector store, rows shaped as ``Memory.add`` writes them."""
    store = memory.memory.vector_store
    for start in range(0, len(texts), 512):
        chunk = texts[start: start + 512]
        vectors = [row.tolist() for row in embedder.embed(chunk)]
        payloads = [{"data": t, "hash": hashlib.md5(t.encode()).hexdigest(),
                     "created_at": "2025-01-01T00:00:00+00:00", **memory.owner} for t in chunk]
        ids = [f"bench-{start + i}" for i in range(len(chunk))]
        store.insert(vectors=vectors, ids=ids, payloads=payloads)


def fill_langmem(memory, texts: list[str]) -> None:
    """The LangGraph store's batch of puts (the store embeds them with memlab's embedder)."""
    from langgraph.store.base import PutOp

    for start in range(0, len(texts), 512):
        memory.store.batch([PutOp(memory.namespace, f"bench-{start + i}",
                                  {"kind": "Memory", "content": {"content": t}})
                            for i, t in enumerate(texts[start: start + 512])])


def fill_graphiti(memory, texts: list[str]) -> None:
    """graphiti's bulk write of facts (edges with their embeddings) from the user to one entity
    per attribute, as ``add_episode`` writes them, in Kuzu (graphiti's hybrid search then runs
    BM25 and cosine over them)."""
    from graphiti_core.edges import EntityEdge
    from graphiti_core.nodes import EntityNode
    from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

    group, when = memory.group, datetime(2025, 1, 1, tzinfo=UTC)
    user = EntityNode(name="user", group_id=group, labels=["Entity"])
    nodes = {a: EntityNode(name=a, group_id=group, labels=["Entity"]) for a in ATTRIBUTES}
    vectors = memory.embedder.embed(texts)
    edges = [EntityEdge(group_id=group, source_node_uuid=user.uuid, created_at=when,
                        target_node_uuid=nodes[next(a for a in ATTRIBUTES if a in t)].uuid,
                        name="HAS", fact=t, fact_embedding=v.astype(float).tolist(),
                        episodes=[], valid_at=when)
             for t, v in zip(texts, vectors, strict=True)]
    for node in [user, *nodes.values()]:
        node.name_embedding = memory.embedder.embed([node.name])[0].astype(float).tolist()
    for start in range(0, len(edges), 512):
        memory.loop.run(add_nodes_and_edges_bulk(
            memory.driver, [], [], [user, *nodes.values()] if start == 0 else [],
            edges[start: start + 512], memory.graph_embedder))


def fill_rag(memory, size: int, rng: random.Random) -> None:
    """rag's own vector store, TurnDocuments shaped as ``observe`` writes them, in batches."""
    from memlab.memory.rag import _metadata
    from memlab.models.turns import TurnDocument

    for start in range(0, size, 512):
        docs = [TurnDocument(content=ex.render(), turn_number=ex.turn_number,
                             timestamp=ex.timestamp)
                for ex in (exchange(i, "fill", rng) for i in range(start, min(size, start + 512)))]
        memory.vectors.add([d.id for d in docs], [d.content for d in docs],
                           [_metadata(d) for d in docs])
    memory.reload()  # rag searches an in-process index of what chroma holds
    for i in range(size, size + memory.config.recent_turns):  # the history rag also sends
        memory.observe(exchange(i, "fill", rng))
    memory.flush()


def fill(key: str, memory, size: int, embedder, rng: random.Random) -> None:
    if key == "rag":
        return fill_rag(memory, size, rng)
    if key == "hybrid":
        for i in range(size):
            memory.observe(exchange(i, "fill", rng))
        return
    texts = [memory_text(i, rng) for i in range(size)]
    fillers = {"mem0": lambda: fill_mem0(memory, texts, embedder),
               "langmem": lambda: fill_langmem(memory, texts),
               "graphiti": lambda: fill_graphiti(memory, texts)}
    fillers[key]()


def measure_search(key: str, size: int, queries: int, embedder, folder: Path) -> dict:
    rng = random.Random(size)
    memory = MEMORIES.create(key, scope=SCOPE, llm=FakeLLM([extractor_reply]),
                             embedder=embedder, workdir=folder)
    start = time.perf_counter()
    fill(key, memory, size, embedder, rng)
    fill_s = time.perf_counter() - start
    latencies, hits = [], 0
    for j in range(queries):
        query = f"What is my {rng.choice(ATTRIBUTES)}, {rng.choice(TOPICS)} ({key} {size} {j})?"
        t0 = time.perf_counter()
        context = memory.recall(query)  # unique text: never a cached vector
        latencies.append(time.perf_counter() - t0)
        hits += len(context.items)
    memory.close()
    ms = np.array(latencies) * 1000
    return {"condition": key, "stored": size, "queries": queries, "fill_s": round(fill_s, 1),
            "fill": "observe" if key == "hybrid" else "store API",
            "search_p50_ms": round(float(np.percentile(ms, 50)), 2),
            "search_p95_ms": round(float(np.percentile(ms, 95)), 2),
            "items_per_query": round(hits / queries, 2)}


def persona_turns(n: int, llm) -> list[Exchange]:
    """The first ``n`` stored turns of the persona suite (span 1000, seed 0)."""
    from memlab import lab

    spec = lab.RunSpec(suite="persona", condition="rag", span=1000, seed=0)
    events = [e for e in lab.build_suite(spec, llm).events() if e.store][:n]
    return [Exchange(user=e.text, assistant=e.reply or "", turn_number=i + 1,
                     timestamp=e.timestamp) for i, e in enumerate(events)]


class TokenTally:
    """A response cache that serves nothing and sums the tokens of every call it is given."""

    def __init__(self) -> None:
        self.prompt_tokens = self.completion_tokens = 0

    def get(self, *args, **kwargs) -> None:
        return None

    def put(self, provider, model, messages, key, result) -> None:
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens


def measure_ingest(key: str, tier: str, turns: list[Exchange], embedder, folder: Path) -> dict:
    from memlab import lab

    needs = MEMORIES.resolve(key).memory_context_window or 4096
    llm = lab.make_llm("local", tier, n_ctx=needs, llm_cache=False)
    memory = MEMORIES.create(key, scope=SCOPE, llm=llm, embedder=embedder, workdir=folder)
    seconds, calls, tally = [], 0, TokenTally()
    with llm.using_cache(tally):  # every condition's calls counted alike, nothing served
        for ex in turns:
            before = llm.calls
            t0 = time.perf_counter()
            memory.observe(ex)
            seconds.append(time.perf_counter() - t0)
            calls += llm.calls - before
    stats = memory.stats()
    prompt, completion = tally.prompt_tokens, tally.completion_tokens
    written = [i.text for i in memory.recall("What do you know about me?").items]
    memory.close()
    n = len(turns)
    return {"condition": key, "memory_model": tier, "turns": n,
            "seconds_per_turn": round(sum(seconds) / n, 2),
            "first_turn_s": round(seconds[0], 2), "later_turns_s_mean": round(
                float(np.mean(seconds[1:])), 2) if n > 1 else None,
            "llm_calls_per_turn": round(calls / n, 2),
            "prompt_tokens_per_turn": round(prompt / n, 1) if prompt else None,
            "completion_tokens_per_turn": round(completion / n, 1) if completion else None,
            "parse_failures": stats.get("llm", {}).get("parse_failures"),
            "failed_turns": stats.get("failed_turns"), "recalled_after": written[:5]}


def run_all(args) -> dict:
    embedder = CachedEmbedder(MiniLMEmbedder(), maxsize=50_000)
    search, ingest = [], []
    for size in args.sizes if args.part in ("search", "both") else []:
        for key in args.conditions:
            folder = Path(tempfile.mkdtemp(prefix=f"bench-peers-{key}-"))
            try:
                search.append(measure_search(key, size, args.queries, embedder, folder))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            print(json.dumps(search[-1]), flush=True)
    if args.part in ("ingest", "both"):
        from memlab import lab

        turns = persona_turns(args.ingest_turns, lab.make_llm("local", "0.5b", llm_cache=False))
        for tier in args.ingest_models:
            for key in args.conditions:
                folder = Path(tempfile.mkdtemp(prefix=f"bench-peers-ingest-{key}-"))
                try:
                    ingest.append(measure_ingest(key, tier, turns, embedder, folder))
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                print(json.dumps(ingest[-1]), flush=True)
    return {"search": search, "ingest": ingest}


def _merged(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` rows not measured again (same condition, size or memory model), then ``new``."""
    def key(row: dict) -> tuple:
        return row["condition"], row.get("stored"), row.get("memory_model")

    again = {key(row) for row in new}
    return [row for row in old if key(row) not in again] + new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS))
    parser.add_argument("--part", choices=["search", "ingest", "both"], default="both",
                        help="measure one part only (the other is kept from the existing file)")
    parser.add_argument("--ingest-turns", type=int, default=4, help="persona turns ingested "
                        "with the real model")
    parser.add_argument("--ingest-models", nargs="+", default=["1.5b"])
    parser.add_argument("--out", type=Path, default=RESULTS / "peers.json",
                        help="results file (rows measured again replace its rows)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run_all(args)
    meta = {"measured_at": datetime.now(UTC).isoformat(), "python": sys.version.split()[0],
            "machine": platform.platform(), "cpus": os.cpu_count(),
            "load_avg_1m_at_end": os.getloadavg()[0], "wall_s": round(time.perf_counter()
                                                                      - started, 1),
            "embedder": "minilm (int8 ONNX)", "k": 5,
            "note": "search: recall() of each condition (rag/hybrid add the last turns as "
                    "history, no model call); ingest: observe() with the real local model, "
                    "response cache off"}
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.exists() and args.part != "both" else {}
    kept = "ingest" if args.part == "search" else "search"
    if args.part != "both":
        results[kept] = old.get(kept, [])
        results[args.part] = _merged(old.get(args.part, []), results[args.part])
        meta = {**old.get("meta", {}), f"{args.part}_meta": meta}
    out.write_text(json.dumps({"meta": meta, **results}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
