"""Document QA (seed 001) on the 20 shipped questions over data/docqa with a real model.

Ingests data/docqa (MiniLM), asks every question of data/docqa/questions.json and scores:
answer accuracy (the answer contains an expected phrase), citation accuracy (the expected file
and page is among the sources), the query status, re-asks and seconds per question. Writes
``benchmarks/results/docqa[-<tier>].json``. Run it alone, with nice: it takes minutes.

Usage:
    nice python benchmarks/bench_docqa.py [--llm-model 0.5b|1.5b] [--k 4]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from seeds_common import DATA, rate, write

from memlab import lab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-model", default="0.5b")
    parser.add_argument("--k", type=int, default=4)
    args = parser.parse_args()
    questions = json.loads((DATA / "docqa" / "questions.json").read_text())["questions"]
    llm = lab.make_llm("local", args.llm_model, llm_cache=False)
    with tempfile.TemporaryDirectory() as workdir:
        qa = lab.make_docqa(workdir, llm=llm, k=args.k)
        report = qa.ingest(DATA / "docqa")
        rows = [ask(qa, q) for q in questions]
    correct = sum(r["correct"] for r in rows)
    cited = sum(r["cited"] for r in rows)
    completed = sum(r["status"] == "COMPLETED" for r in rows)
    result = {"model": llm.model, "k": args.k, "chunks": len(report.chunks),
              "accuracy": rate(correct, len(rows)), "citation_accuracy": rate(cited, len(rows)),
              "completed": rate(completed, len(rows)),
              "reasks": sum(r["reasks"] for r in rows),
              "seconds_per_question": round(sum(r["seconds"] for r in rows) / len(rows), 1),
              "questions": rows}
    suffix = "" if args.llm_model == "0.5b" else f"-{args.llm_model}"
    write(f"docqa{suffix}", result)
    print(f"{llm.model}: accuracy {correct}/{len(rows)}, citations {cited}/{len(rows)}, "
          f"completed {completed}/{len(rows)}")


def ask(qa, question: dict) -> dict:
    start = time.perf_counter()
    result = qa.ask(question["text"])
    seconds = time.perf_counter() - start
    answer = result.response.content if result.response else ""
    sources = result.response.sources if result.response else []
    row = {"id": question["id"], "status": result.query.status.value, "answer": answer,
           "sources": sources, "error": result.error, "reasks": result.reasks,
           "correct": any(e.lower() in answer.lower() for e in question["expect"]),
           "cited": question["source"] in sources, "seconds": round(seconds, 1)}
    print(f"{row['id']} {row['status']} correct={row['correct']} cited={row['cited']} "
          f"{seconds:.0f}s  {answer[:80]!r}", flush=True)
    return row


if __name__ == "__main__":
    main()
