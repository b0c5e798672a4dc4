"""hybrid's handling of the user's requests to forget, per model: which facts each request retires.

A hybrid memory (real MiniLM, a real local model, no response cache) holds ``FACTS``: facts as
hybrid's extractor writes them, two each for the topics of the LTM suite's reset messages
(names, shopping list, home town places, standing instructions) plus a quote request and five
facts no request names. Each request in ``REQUESTS`` then goes through ``HybridMemory.observe``
on a fresh copy of that memory, as a run sends it (the extractor sees it too). A request
*forgets* a fact when the fact is no longer recalled afterwards. Per request: its targets
forgotten (recall) and other facts forgotten (wrongly). The LTM suite's five reset messages
are the prompt's development set; the ``held_out`` requests were written after the prompt and
not tried before this benchmark's first entry.

Run: .venv/bin/python benchmarks/bench_forget.py [--models 0.5b 1.5b] [--label NAME]
Writes benchmarks/results/forget.json (one entry per label and model, replacing that entry);
every share has its n and Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from memlab.bench.suites.ltm import RESETS
from memlab.embed.base import get_embedder
from memlab.llm.factory import get_llm
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.memory.hybrid_facts import DistilledFact
from memlab.stats import proportion_ci

RESULTS = Path(__file__).parent / "results" / "forget.json"
FACTS = {  # id -> (subject, content), as the extractor writes them
    "name1": ("name", "The user wants to be called Rowan."),
    "name2": ("nickname", "The user's nickname is Birdie."),
    "shop1": ("shopping list eggs", "The user wants 2 eggs added to the shopping list."),
    "shop2": ("shopping list apples", "The user wants 3 apples on their shopping list."),
    "town1": ("home town library", "The library stands in the middle of the user's home town."),
    "town2": ("home town bakery", "The bakery is 3 km north of the library in the user's "
                                  "home town."),
    "trig1": ("reply when cold", "When the user says they are cold, the user wants the reply "
                                 "'Put on a warm jumper and make some cocoa'."),
    "trig2": ("reply when bored", "When the user says they are bored, the user wants the reply "
                                  "'Learn a new card trick'."),
    "quote": ("quote request", "The user wants the quote from Seneca appended to the "
                               "assistant's third reply."),
    "colour": ("favourite colour", "The user's favourite colour is teal."),
    "sister": ("sister home", "The user's sister lives in Oslo."),
    "games": ("opinion of board games", "The user dislikes board games because the rules take "
                                        "too long."),
    "volcano": ("past experience", "The user once climbed a volcano."),
    "job": ("job", "The user works as a nurse at the city hospital."),
}
REQUESTS = [  # (request, the facts it asks to forget, set)
    (RESETS["name_list"], ("name1", "name2"), "development"),
    (RESETS["shopping"], ("shop1", "shop2"), "development"),
    (RESETS["locations_directions"], ("town1", "town2"), "development"),
    (RESETS["trigger_response"], ("trig1", "trig2"), "development"),
    (RESETS["prospective_memory"], ("quote",), "development"),
    ("Please delete everything I told you about my sister.", ("sister",), "held_out"),
    ("Forget what I said about board games.", ("games",), "held_out"),
    ("Can you erase my favourite colour from your memory?", ("colour",), "held_out"),
    ("Disregard what I told you about my job.", ("job",), "held_out"),
    ("Please forget the replies I asked for when I say something.", ("trig1", "trig2"),
     "held_out"),
]


def run_request(llm, embedder, request: str, turn: int = 100) -> tuple[dict[str, str], dict]:
    """The facts ``request`` took out of recall on a fresh memory holding ``FACTS`` (id ->
    "forgotten", or "superseded" by a fact the extractor wrote from the request), and the
    memory's stats."""
    with tempfile.TemporaryDirectory() as folder:
        memory = MEMORIES.create("hybrid", scope=Scope(user_id="bench"), llm=llm,
                                 embedder=embedder, workdir=Path(folder))
        for n, (fact_id, (subject, content)) in enumerate(FACTS.items()):
            memory.facts.add_fact(DistilledFact(id=fact_id, subject=subject, content=content,
                                                confidence=0.9, turn_number=n))
        before = {f.id for f in memory.facts.all() if f.current}
        memory.observe(Exchange(user=request, assistant="Done.", turn_number=turn))
        after = {f.id: f for f in memory.facts.all()}
        gone = {i: "forgotten" if after[i].forgotten_turn is not None else "superseded"
                for i in before if not after[i].current}
        stats = {**memory.stats(), "current_before": len(before)}
        memory.close()
    return gone, stats


def share(k: int, n: int) -> dict:
    ci = proportion_ci(k, n)
    return {"k": k, "n": n, "share": ci.estimate, "low": ci.low, "high": ci.high}


def measure(model: str) -> dict:
    llm = get_llm("local", local_size=model, llm_cache=False)
    embedder = get_embedder("minilm")
    rows, start = [], time.perf_counter()
    for request, targets, kind in REQUESTS:
        began = time.perf_counter()
        gone, stats = run_request(llm, embedder, request)
        rows.append({"request": request, "set": kind, "targets": list(targets),
                     "gone": gone, "hits": len(set(gone) & set(targets)),
                     "wrong": sorted(set(gone) - set(targets)), "failures": stats["failures"],
                     "current_before": stats["current_before"],
                     "seconds": round(time.perf_counter() - began, 1)})
    out = {"model": model, "seconds": round(time.perf_counter() - start, 1), "by_set": {}}
    for kind in ("development", "held_out", "all"):
        mine = [r for r in rows if kind in ("all", r["set"])]
        others = sum(r["current_before"] - len(r["targets"]) for r in mine)
        out["by_set"][kind] = {
            "targets_forgotten": share(sum(r["hits"] for r in mine),
                                       sum(len(r["targets"]) for r in mine)),
            "others_forgotten": share(sum(len(r["wrong"]) for r in mine), others),
            "requests_exact": share(sum(r["hits"] == len(r["targets"]) and not r["wrong"]
                                        for r in mine), len(mine))}
    out["llm_failures"] = sum(bool(r["failures"]) for r in rows)
    out["rows"] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["0.5b", "1.5b"],
                        choices=["0.5b", "1.5b", "135m"])
    parser.add_argument("--label", default="current", help="name of this entry (e.g. the code)")
    args = parser.parse_args(argv)
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"entries": []}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    for model in args.models:
        entry = {"label": args.label, "commit": commit, **measure(model),
                 "when": datetime.now(UTC).isoformat(timespec="seconds"),
                 "machine": platform.platform()}
        line = "; ".join(
            f"{kind}: targets {v['targets_forgotten']['k']}/{v['targets_forgotten']['n']}, "
            f"others {v['others_forgotten']['k']}/{v['others_forgotten']['n']}, exact "
            f"{v['requests_exact']['k']}/{v['requests_exact']['n']}"
            for kind, v in entry["by_set"].items())
        print(f"{args.label} {model}: {line}", file=sys.stdout)
        old["entries"] = [e for e in old["entries"]
                          if (e["label"], e["model"]) != (args.label, model)] + [entry]
        RESULTS.write_text(json.dumps(old, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
