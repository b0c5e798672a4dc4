"""How similar, to the embedder, a question is to the turns that hold its answer: against
graphiti's similarity floor (``sim_min_score``, 0.6 in graphiti-core 0.31.2), below which its
search drops a fact found by cosine (BM25 still finds it by words).

For each question of a finished cell that names evidence turns, the cosine between the question
(its first line: LTM's answer-format lines dropped) and each evidence turn's text, the highest
kept; and, for contrast, the cosine between the question and every stored turn that is not its
evidence. Both are reported as quartiles and as the share at or above each floor in ``--floors``:
a floor that keeps a question's evidence should drop most of the other turns.

The turns are what the user said; graphiti compares the query with its facts, a model's
rewording of those turns, so this is the floor's effect on the raw text, measured without
running graphiti.

Run: .venv/bin/python benchmarks/evidence_similarity.py [--cells DIR ...] [--embedder minilm]
     [--floors 0.3 0.4 0.5 0.6]
Writes benchmarks/results/evidence_similarity.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from seeds_common import write  # noqa: E402

from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.lab import make_embedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CELLS = [REPO / "records" / "peers" / "ltm-rag-1000-s0",
         REPO / "records" / "peers" / "persona-rag-4000-s0"]


def unit(vectors) -> np.ndarray:
    array = np.asarray(vectors, dtype=float)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def cell_similarities(cell: Path, embedder) -> tuple[list[float], list[float]]:
    """(the best evidence cosine per question, the cosines to the other stored turns)."""
    turns = list(read_jsonl(cell / "turns.jsonl"))
    stored = {t["index"]: t["text"] for t in turns if t["kind"] != "question"}
    order = sorted(stored)
    vectors = dict(zip(order, unit(embedder.embed([stored[i] for i in order])), strict=True))
    evidence_best, others = [], []
    for turn in turns:
        cited = [e["index"] for e in turn.get("evidence") or [] if e["index"] in stored]
        if turn["kind"] != "question" or not cited:
            continue
        query = unit(embedder.embed([turn["text"].split("\n")[0]]))[0]
        evidence_best.append(max(float(vectors[i] @ query) for i in cited))
        others += [float(vectors[i] @ query) for i in order
                   if i < turn["index"] and i not in cited]
    return evidence_best, others


def summary(values: list[float], floors: list[float]) -> dict:
    array = np.asarray(values)
    return {"n": len(values),
            "quartiles": [round(float(q), 3) for q in np.quantile(array, [0.25, 0.5, 0.75])],
            "share_at_or_above": {f"{f:g}": round(float((array >= f).mean()), 3)
                                  for f in floors}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", nargs="+", type=Path, default=CELLS)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--floors", nargs="+", type=float, default=[0.3, 0.4, 0.5, 0.6])
    args = parser.parse_args()
    embedder = make_embedder(args.embedder)
    out = {"embedder": args.embedder, "graphiti_sim_min_score": 0.6, "cells": {}}
    for cell in args.cells:
        best, others = cell_similarities(cell, embedder)
        out["cells"][str(cell.relative_to(REPO) if cell.is_relative_to(REPO) else cell)] = {
            "evidence": summary(best, args.floors), "other_turns": summary(others, args.floors)}
        shown = out["cells"][str(cell.relative_to(REPO) if cell.is_relative_to(REPO) else cell)]
        print(f"{cell.name}: evidence {shown['evidence']}; other turns {shown['other_turns']}")
    write("evidence_similarity", out)


if __name__ == "__main__":
    main()
