"""What graphiti's graph kept of the turns that hold the answers, and where it lost the rest
(issue 47): read from a finished graphiti run's Kuzu files and its turn records, no model call.

Every (question, evidence turn) pair of the run's questions goes down a funnel:

- ``stored``: some fact of the final graph names the turn among its episodes (graphiti made
  the turn into at least one fact, whatever it says);
- ``stored_answer``: one of those facts holds the answer's content words
  (``memlab.bench.evidence.carries``, the rule evidence recall uses); counted over the pairs
  whose evidence names an answer (``n_answer``: LTM's coded messages name none, only the turn);
- ``recalled``: a fact from the turn, or the turn itself, reached the question's prompt (the
  turn's event index is in the question's ``memory_events``);
- ``reached``: what reached the prompt holds the answer (the question's evidence record, as
  ``evidence_recall`` counts it).

Counts are per test type and in all, each a proportion with its n and Wilson interval, beside
the graph's size and examples (the turn, its facts with their validity, the question and the
reply) to read. The records keep no graph: get it back first with ``memlab rebuild``, which runs
a recorded cell again from its journal with no model call, then point this script at the rebuilt
cells:

    memlab rebuild records/peers/ltm-graphiti-1000-s0        # into results/rebuild/
    memlab rebuild records/peers/persona-graphiti-4000-s0
    .venv/bin/python benchmarks/graphiti_graph.py            # the two cells there

Run: .venv/bin/python benchmarks/graphiti_graph.py [--cells RUN_DIR ...] [--examples 3]
Writes benchmarks/results/graphiti_graph.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from seeds_common import rate, write  # noqa: E402

from memlab.bench.evidence import carries  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import read_manifest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CELLS = [REPO / "results" / "rebuild" / "ltm-graphiti-1000-s0",
         REPO / "results" / "rebuild" / "persona-graphiti-4000-s0"]
STAGES = ("stored", "stored_answer", "recalled", "reached")
FACTS = ("MATCH (a:Entity)-[:RELATES_TO]->(e:RelatesToNode_)-[:RELATES_TO]->(b:Entity) "
         "RETURN e.fact, e.valid_at, e.invalid_at, e.episodes")


def kuzu_files(run_dir: Path) -> list[Path]:
    """The Kuzu databases of the run's latest attempt (one per scope)."""
    attempts = sorted((run_dir / "store").glob("attempt-*"), key=lambda p: p.stat().st_mtime)
    return sorted(attempts[-1].glob("graphiti/*.kuzu")) if attempts else []


def read_graph(run_dir: Path) -> tuple[dict[str, int], dict[int, list[dict[str, Any]]]]:
    """The graph's counts and its facts by the turn number of each episode they name. Reads a
    copy of the files, so a run still writing them is not disturbed."""
    import kuzu

    counts: dict[str, int] = defaultdict(int)
    by_turn: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for path in kuzu_files(run_dir):
        with tempfile.TemporaryDirectory(prefix="graphiti-graph-") as tmp:
            for part in path.parent.glob(path.name + "*"):  # the database and its WAL
                shutil.copy(part, tmp)
            db = kuzu.Database(str(Path(tmp) / path.name), read_only=True,
                               buffer_pool_size=256 * 2**20)
            conn = kuzu.Connection(db)
            episodes = {uuid: int(name.split()[-1]) for name, uuid in
                        _rows(conn, "MATCH (e:Episodic) RETURN e.name, e.uuid")}
            counts["episodes"] += len(episodes)
            counts["entities"] += _rows(conn, "MATCH (n:Entity) RETURN count(n)")[0][0]
            for fact, valid, invalid, uuids in _rows(conn, FACTS):
                counts["facts"] += 1
                counts["invalidated"] += invalid is not None
                record = {"fact": fact, "valid_at": _iso(valid), "invalid_at": _iso(invalid)}
                for number in sorted({episodes[u] for u in uuids or [] if u in episodes}):
                    by_turn[number].append(record)
            conn.close()
            db.close()
    return dict(counts), dict(by_turn)


def _rows(conn: Any, query: str) -> list[list[Any]]:
    result, out = conn.execute(query), []
    while result.has_next():
        out.append(result.get_next())
    return out


def _iso(moment: Any) -> str | None:
    return moment.isoformat(sep=" ", timespec="minutes") if moment is not None else None


def answers_of(run_dir: Path) -> dict[int, dict[int, str | None]]:
    """Question event index -> {evidence event index: its answer}, from the suite the run's
    manifest names (rebuilt with the answering model's tokenizer, as a replay does)."""
    from memlab.lab import build_suite, make_llm
    from memlab.records import recorded_spec

    spec = recorded_spec(run_dir, read_manifest(run_dir))
    suite = build_suite(spec, make_llm(spec.llm, spec.llm_model, llm_cache=False))
    return {e.index: {ev.index: ev.answer for ev in e.evidence}
            for e in suite.events() if e.kind == "question"}


def funnel(turns: list[dict[str, Any]], by_turn: dict[int, list[dict[str, Any]]],
           answers: dict[int, dict[int, str | None]], examples: int) -> dict[str, Any]:
    """The funnel's counts by test type and in all, with ``examples`` pairs of each type."""
    numbers = {t["index"]: t["turn_number"] for t in turns if t.get("turn_number") is not None}
    texts = {t["index"]: t["text"] for t in turns}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(("n", "n_answer", *STAGES), 0))
    shown: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for question in turns:
        if question.get("kind") != "question":
            continue
        kind = question.get("test_type") or "other"
        for record in question.get("evidence") or []:
            index = record["index"]
            facts = by_turn.get(numbers.get(index, -1), [])
            answer = answers.get(question["index"], {}).get(index)
            stages = {"stored": bool(facts),
                      "stored_answer": answer is not None and any(
                          carries(f["fact"], answer) for f in facts),
                      "recalled": index in (question.get("memory_events") or []),
                      "reached": bool(record.get("reached"))}
            for row in (counts[kind], counts["all"]):
                row["n"] += 1
                row["n_answer"] += answer is not None
                for stage, hit in stages.items():
                    row[stage] += hit
            if len(shown[kind]) < examples:
                shown[kind].append({"turn": index, "text": texts.get(index), "answer": answer,
                                    "facts": facts, "question": question["text"],
                                    "reply": question.get("reply"),
                                    "answered": question.get("answered"), **stages})
    return {kind: {"n": row["n"], "n_answer": row["n_answer"],
                   **{s: rate(row[s], row["n_answer" if s == "stored_answer" else "n"])
                      for s in STAGES},
                   "examples": shown.get(kind, [])}
            for kind, row in sorted(counts.items())}


def refuse(message: str) -> None:
    """A wrong folder: one line and exit 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def describe(run_dir: Path, examples: int) -> dict[str, Any]:
    manifest = read_manifest(run_dir)
    if manifest.get("condition") != "graphiti":
        refuse(f"{run_dir / 'manifest.json'}: condition {manifest.get('condition')!r}, "
               "not graphiti")
    if not kuzu_files(run_dir):
        refuse(f"{run_dir}: no graphiti database under store/ (the records keep none: "
               f"get it back with `memlab rebuild records/peers/{run_dir.name}`)")
    counts, by_turn = read_graph(run_dir)
    turns = list(read_jsonl(run_dir / "turns.jsonl"))
    return {"status": manifest.get("status"), "turns": len(turns), "graph": counts,
            "turns_named_by_a_fact": len(by_turn),
            "funnel": funnel(turns, by_turn, answers_of(run_dir), examples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", nargs="+", type=Path, default=CELLS)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    for cell in args.cells:
        if not (cell / "manifest.json").is_file():
            refuse(f"{cell}: no manifest.json (a graphiti run folder, e.g. from `memlab "
                   f"rebuild records/peers/{cell.name}`)")
    out: dict[str, Any] = {"stages": list(STAGES), "cells": {}}
    for cell in args.cells:
        name = str(cell.relative_to(REPO) if cell.is_relative_to(REPO) else cell)
        out["cells"][name] = found = describe(cell, args.examples)
        total = found["funnel"].get("all", {})
        print(f"{cell.name}: graph {found['graph']}; pairs {total.get('n', 0)}: " + ", ".join(
            f"{s} {total[s]['successes']}" for s in STAGES if s in total))
    write("graphiti_graph", out)


if __name__ == "__main__":
    main()
