"""What the seed benchmarks share: the machine's description and writing a results file."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from memlab.stats import proportion_ci

RESULTS = Path(__file__).parent / "results"
DATA = Path(__file__).parent.parent / "data"


def machine() -> dict:
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


def rate(successes: int, n: int) -> dict:
    """A proportion with its n and Wilson 95% interval."""
    interval = proportion_ci(successes, n)
    return {**asdict(interval), "successes": successes}


def write(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({**payload, "machine": machine()}, indent=2, default=str) + "\n",
                    encoding="utf-8")
    print(f"wrote {path}")
    return path
