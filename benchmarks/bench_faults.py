"""Chaos benchmark: randomised kill -9 / resume and model outage / recovery cycles (target: every
run ends identical to an uninterrupted one).

Each cycle takes the next condition (in turn) and a suite at random, then runs it in child
processes until it is complete, the first attempts under a random fault: SIGKILL at a random
moment of the run, or a model outage (a window of calls that time out, so the run ends ``failed``) from which the next
attempt recovers. The finished run is compared with an uninterrupted reference run of the same
spec (made once per spec, in a child process too): turns.jsonl without its wall-clock fields,
scores.jsonl byte for byte, and the paid-call count. The reference is run twice: a spec whose two
clean runs differ is not reproducible even without faults, and is reported as such. Models: FakeLLM with prompt-hashed replies
and the hashing embedder (a benchmark of the harness, not of a model). Writes
``benchmarks/results/faults.json``.

    .venv/bin/python benchmarks/bench_faults.py [--cycles 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "faults.json"
CONDITIONS = ("vanilla", "full_context", "rag", "episodic", "episodic_summary", "sleep",
              "hybrid", "oracle")
SUITES = {"ltm": {"span": 400, "options": {"examples": 1, "types": ["colours", "jokes",
                                                                   "prospective_memory",
                                                                   "trigger_response"]}},
          "persona": {"span": 600, "options": {"n_topics": 1}}}
FAULTS = ("kill", "outage")


# ---------------------------------------------------------------------------- the child run
def reply(messages) -> str:
    """Deterministic in the prompt: a letter for multiple choice, "{}" when JSON is asked."""
    text = messages[-1].content
    digest = hashlib.sha1("\x00".join(m.content for m in messages).encode()).hexdigest()
    if "Answer with the letter" in text:
        return "ABCD"[int(digest, 16) % 4]
    if "JSON" in text:
        return "{}"
    return f"Noted {digest[:8]}."


def child(results: str, condition: str, suite: str, outage: str) -> None:
    """One attempt of a run; model calls ``first..last`` of this process time out."""
    from memlab import lab
    from memlab.bench.runner import run
    from memlab.bench.spec import RunSpec
    from memlab.embed.hashing import HashingEmbedder
    from memlab.errors import LLMTimeoutError
    from memlab.llm.fake import FakeLLM

    first, last = (int(x) for x in outage.split(":"))
    calls = {"n": 0}

    def answer(messages):
        calls["n"] += 1
        if first <= calls["n"] <= last:
            raise LLMTimeoutError(f"fake server: outage (call {calls['n']})")
        return reply(messages)

    llm = FakeLLM([answer])
    spec = RunSpec(suite=suite, condition=condition, span=SUITES[suite]["span"], llm="fake",
                   embedder="hashing", suite_options=SUITES[suite]["options"],
                   probes_sleep=condition == "sleep")
    Path(results, "STARTED").write_text(str(os.getpid()))
    run(spec, suite=lab.build_suite(spec, llm), llm=llm, embedder=HashingEmbedder(),
        results_dir=results, progress=False)


# ---------------------------------------------------------------------------- the parent
def attempt(results: Path, condition: str, suite: str, *, kill_after: float | None = None,
            outage: tuple[int, int] = (0, -1)) -> tuple[str, float]:
    """One child attempt: ("complete" | "failed" (exit status != 0) | "killed", seconds from
    the run's start, i.e. after the child's imports, to its end)."""
    (results / "STARTED").unlink(missing_ok=True)
    log = (results.parent / f"{results.name}.log").open("a")
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(results), condition, suite,
                             f"{outage[0]}:{outage[1]}"], stdout=log, stderr=log)
    while not (results / "STARTED").exists() and proc.poll() is None:
        time.sleep(0.002)
    start = time.perf_counter()
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return "killed", time.perf_counter() - start
    status = "complete" if proc.wait(timeout=600) == 0 else "failed"
    return status, time.perf_counter() - start


def outcome_of(run_dir: Path) -> dict:
    """What must match the reference: turns without wall-clock fields, scores, paid calls."""
    from memlab.bench.runlog import read_jsonl
    from memlab.bench.runner import strip_timing

    turns = [json.dumps(strip_timing(t), sort_keys=True) for t in
             read_jsonl(run_dir / "turns.jsonl")]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {"turns": hashlib.sha256("\n".join(turns).encode()).hexdigest(),
            "scores": hashlib.sha256((run_dir / "scores.jsonl").read_bytes()).hexdigest(),
            "paid": manifest["counts"]["llm_calls_paid"], "status": manifest["status"],
            "turn_count": len(turns)}


def run_dir_of(results: Path) -> Path:
    return next(p for p in results.iterdir() if p.is_dir())


def cycle(number: int, rng: random.Random, root: Path, references: dict) -> dict:
    condition = CONDITIONS[number % len(CONDITIONS)]  # every condition, in turn
    suite = rng.choice(sorted(SUITES))
    key = f"{suite}/{condition}"
    if key not in references:  # two clean runs: does the spec reproduce without faults?
        outcomes = []
        for copy in ("a", "b"):
            folder = root / "reference" / f"{key.replace('/', '-')}-{copy}"
            folder.mkdir(parents=True)
            status, seconds = attempt(folder, condition, suite)
            assert status == "complete", f"reference {key} failed"
            outcomes.append(outcome_of(run_dir_of(folder)))
        references[key] = (outcomes[0], seconds, outcomes[0] == outcomes[1])
    reference, duration, reproducible = references[key]
    results = root / f"cycle-{number}"
    results.mkdir()
    faults, attempts = rng.randint(1, 3), []
    for _ in range(faults):
        kind = rng.choice(FAULTS)
        if kind == "kill":  # at a moment of the run, uniformly (a resume replays faster)
            status, _ = attempt(results, condition, suite,
                                kill_after=rng.uniform(0.0, duration))
        else:
            first = rng.randint(1, min(5, reference["paid"]))  # of this attempt's live calls
            status, _ = attempt(results, condition, suite,
                                outage=(first, first + rng.randint(0, 5)))
        attempts.append({"fault": kind, "ended": status})
    attempts.append({"fault": None, "ended": attempt(results, condition, suite)[0]})
    got = outcome_of(run_dir_of(results))
    same = {field: got[field] == reference[field] for field in ("turns", "scores", "paid")}
    return {"cycle": number, "spec": key, "attempts": attempts, "identical": all(same.values()),
            "same": same, "paid": got["paid"], "reference_paid": reference["paid"],
            "reference_seconds": round(duration, 2), "status": got["status"],
            "clean_runs_agree": reproducible}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", type=Path, default=None,
                        help="make the run folders (and child logs) here, for a look after")
    args = parser.parse_args()
    from memlab.stats import proportion_ci

    rng, references, rows = random.Random(args.seed), {}, []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memlab-faults-") as tmp:
        root = Path(tempfile.mkdtemp(dir=args.keep)) if args.keep else Path(tmp)
        for number in range(args.cycles):
            rows.append(cycle(number, rng, root, references))
            print(json.dumps(rows[-1]), flush=True)
    identical = sum(r["identical"] for r in rows)
    interval = proportion_ci(identical, len(rows))
    stable = [r for r in rows if r["clean_runs_agree"]]
    kinds = [a["fault"] for r in rows for a in r["attempts"] if a["fault"]]
    result = {
        "benchmark": "bench_faults", "cycles": len(rows), "identical": identical,
        "identical_share": interval.estimate, "ci95_wilson": [interval.low, interval.high],
        "target": "all cycles identical",
        "identical_where_clean_runs_agree": [sum(r["identical"] for r in stable), len(stable)],
        "specs_whose_clean_runs_differ": sorted({r["spec"] for r in rows
                                                 if not r["clean_runs_agree"]}),
        "faults": {"kill": kinds.count("kill"), "outage": kinds.count("outage"),
                   "kills_that_landed": sum(a["ended"] == "killed" for r in rows
                                            for a in r["attempts"]),
                   "outages_that_failed_the_run": sum(
                       a["fault"] == "outage" and a["ended"] == "failed"
                       for r in rows for a in r["attempts"])},
        "seconds": round(time.perf_counter() - start, 1), "seed": args.seed,
        "models": "FakeLLM (prompt-hashed replies) + hashing embedder",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "per_cycle": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{identical}/{len(rows)} runs identical to the reference "
          f"(95% Wilson {interval.low:.2f}-{interval.high:.2f}) -> {args.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
    else:
        main()
