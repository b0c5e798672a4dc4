"""Harness overhead: turns per second of the runner with FakeLLM (target >= 500/s for vanilla).

Measures ``memlab.bench.runner.run`` end to end (agent loop, turn records flushed and fsync'ed,
call journal, scoring, manifest) on a synthetic suite, once with answered turns only (every turn
an interact with a model call) and once with GoodAI-like filler (3 of 4 turns observed), then a
resume that replays the whole recorded run. Writes ``benchmarks/results/harness.json``.

    .venv/bin/python benchmarks/bench_harness.py [--turns 2000] [--conditions vanilla rag]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path

from memlab.bench.base import Response, Suite, SuiteEvent, TestScore
from memlab.bench.runner import run
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM

TARGET_TURNS_PER_S = 500
OUT = Path(__file__).resolve().parent / "results" / "harness.json"


class SyntheticSuite(Suite):
    """``turns`` events: a ``filler_share`` of filler, the rest needles and (every 10th) questions."""

    name = "synthetic"

    def __init__(self, turns: int, filler_share: float):
        self.turns, self.filler_share = turns, filler_share

    def events(self) -> list[SuiteEvent]:
        events = []
        for i in range(self.turns):
            filler = (i % 4) < round(self.filler_share * 4)
            if filler:
                events.append(SuiteEvent(index=i, kind="filler", text=f"Filler line {i}?",
                                         reply=f"Filler answer {i}.", session_id=f"s{i // 50}"))
            elif i % 10 == 9:
                events.append(SuiteEvent(index=i, kind="question", text=f"Question {i}?",
                                         test_id=f"t{i}", test_type="q", store=False,
                                         options=["a", "b", "c", "d"], answer_index=0,
                                         session_id=f"s{i // 50}"))
            else:
                events.append(SuiteEvent(index=i, kind="needle", text=f"Remember fact {i}.",
                                         test_id=f"t{i}", test_type="q",
                                         session_id=f"s{i // 50}"))
        return events

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        return [TestScore(test_id=f"t{i}", test_type="q", score=float("(a)" in r.reply),
                          max_score=1.0) for i, r in responses.items() if i % 10 == 9]

    def describe(self):
        return {"name": self.name, "size": self.turns, "filler_share": self.filler_share}


def reply(messages) -> str:
    return "<final_answer>(a)</final_answer>" if "<final_answer>" in messages[-1].content \
        else "Noted."


def measure(condition: str, turns: int, filler_share: float, root: Path) -> dict:
    suite = SyntheticSuite(turns, filler_share)
    start = time.perf_counter()
    run_dir = run(suite, condition, llm=FakeLLM([reply]), embedder=HashingEmbedder(),
                  results_dir=root, run_id=f"{condition}-{filler_share}", progress=False)
    elapsed = time.perf_counter() - start
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").unlink()  # forget completion: the next run replays everything
    (run_dir / "scores.jsonl").unlink()
    start = time.perf_counter()
    run(suite, condition, llm=FakeLLM([reply]), embedder=HashingEmbedder(), results_dir=root,
        run_id=f"{condition}-{filler_share}", progress=False)
    replay = time.perf_counter() - start
    return {"condition": condition, "turns": turns, "filler_share": filler_share,
            "seconds": round(elapsed, 3), "turns_per_s": round(turns / elapsed, 1),
            "llm_calls": manifest["counts"]["llm_calls_paid"],
            "resume_replay_turns_per_s": round(turns / replay, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--conditions", nargs="+", default=["vanilla"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memlab-harness-"))
    try:
        rows = [measure(c, args.turns, share, root)
                for c in args.conditions for share in (0.0, 0.75)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    vanilla = [r["turns_per_s"] for r in rows if r["condition"] == "vanilla"]
    result = {"benchmark": "harness", "target_turns_per_s": TARGET_TURNS_PER_S,
              "meets_target": bool(vanilla) and min(vanilla) >= TARGET_TURNS_PER_S,
              "machine": {"python": platform.python_version(), "cpu": platform.processor(),
                          "platform": platform.platform()},
              "rows": rows}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
