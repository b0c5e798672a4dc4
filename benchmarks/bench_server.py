"""Agent server under load: 50 concurrent clients x 20 turns on 10 sessions (FakeLLM).

Starts ``memlab serve`` as its own process (as deployed, loopback), creates the sessions, lets
every client send its turns to one session (client i -> session i mod 10, so 5 clients share a
session), then checks from the sessions' journals that every acknowledged turn was stored
exactly once, and after a restart that each session's memory holds them. Server overhead per
turn = client round trip minus the model time the server reports (``llm_latency_s``; FakeLLM
answers in microseconds); under load it includes waiting for the session (one turn at a time
per session) and for the worker threads. A single client's 100 turns give the overhead without
queueing. Writes ``benchmarks/results/server.json``.

    .venv/bin/python benchmarks/bench_server.py [--clients 50] [--turns 20] [--sessions 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "server.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(workdir: Path, port: int, condition: str) -> subprocess.Popen:
    env = {**os.environ, "MEMLAB_CACHE_DIR": str(workdir / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlab.cli", "serve", "-c", condition, "--llm", "fake",
         "--embedder", "hashing", "--workdir", str(workdir), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise SystemExit(f"memlab serve exited: {proc.stderr.read()}")
    proc.kill()
    raise SystemExit("memlab serve did not answer /health within 120 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def client(url: str, session_id: str, name: str, turns: int, barrier: threading.Barrier,
           out: list[dict]) -> None:
    barrier.wait()
    with httpx.Client(timeout=60) as http:
        for n in range(turns):
            text = f"{name} turn {n}: remember token {name}-{n}."
            start = time.perf_counter()
            try:
                answer = http.post(f"{url}/sessions/{session_id}/turn", json={"message": text})
            except httpx.HTTPError as exc:
                out.append({"session": session_id, "text": text, "status": repr(exc)})
                continue
            elapsed = time.perf_counter() - start
            body = answer.json()
            out.append({"session": session_id, "text": text, "status": answer.status_code,
                        "round_trip_s": elapsed,
                        "overhead_s": elapsed - body.get("llm_latency_s", 0.0)})


def stored_turns(workdir: Path, session_ids: list[str]) -> Counter:
    counts: Counter = Counter()
    for sid in session_ids:
        for line in (workdir / "sessions" / sid / "journal.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["kind"] == "turn":
                counts[(sid, record["user"])] += 1
    return counts


def measure(args: argparse.Namespace, workdir: Path) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(workdir, port, args.condition)
    try:
        ids = [httpx.post(f"{url}/sessions", json={}).json()["id"] for _ in range(args.sessions)]
        results: list[dict] = []
        barrier = threading.Barrier(args.clients)
        threads = [threading.Thread(target=client, args=(url, ids[i % args.sessions], f"c{i}",
                                                         args.turns, barrier, results))
                   for i in range(args.clients)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
        alone: list[dict] = []  # the same turns from one client: overhead without queueing
        client(url, httpx.post(f"{url}/sessions", json={}).json()["id"], "solo", 100,
               threading.Barrier(1), alone)
    finally:
        stop_server(proc)
    acked = [(r["session"], r["text"]) for r in results if r["status"] == 200]
    counts = stored_turns(workdir, ids)
    proc = start_server(workdir, port, args.condition)  # restarted: rebuilt from the journals
    try:
        remembered = sum(httpx.get(f"{url}/sessions/{sid}", timeout=120).json()["turns"]
                         for sid in ids)
    finally:
        stop_server(proc)
    overhead = np.array([r["overhead_s"] for r in results if r["status"] == 200]) * 1000
    solo = np.array([r["overhead_s"] for r in alone if r["status"] == 200]) * 1000
    return {
        "condition": args.condition, "clients": args.clients, "turns_per_client": args.turns,
        "sessions": args.sessions, "requests": len(results), "acknowledged": len(acked),
        "statuses": dict(Counter(str(r["status"]) for r in results)),
        "acknowledged_stored_exactly_once": all(counts[key] == 1 for key in acked),
        "stored_not_acknowledged": sum(counts.values()) - len(acked),
        "stored_twice_or_more": sum(1 for c in counts.values() if c > 1),
        "remembered_after_restart": remembered,
        "wall_s": round(wall, 2), "turns_per_s": round(len(acked) / wall, 1),
        "overhead_ms": {"p50": round(float(np.percentile(overhead, 50)), 1),
                        "p95": round(float(np.percentile(overhead, 95)), 1),
                        "p99": round(float(np.percentile(overhead, 99)), 1),
                        "max": round(float(overhead.max()), 1)},
        "one_client_overhead_ms": {"turns": len(solo),
                                   "p50": round(float(np.percentile(solo, 50)), 1),
                                   "p95": round(float(np.percentile(solo, 95)), 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--condition", default="rag")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlab-bench-server-") as folder:
        result = measure(args, Path(folder))
    result.update(machine=platform.platform(), cpus=os.cpu_count(),
                  measured_at=time.strftime("%Y-%m-%d %H:%M:%S"))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
