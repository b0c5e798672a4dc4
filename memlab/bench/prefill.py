"""What a run's model calls read: prompt tokens sent, reused from an evaluated prefix, evaluated.

Prefill (evaluating the prompt) is most of a local model's time on a long history: the 1.5B
model reads ~40 tokens a second on 2 cores. A token the model reused from an earlier call's
prefix costs nothing, so the floor of a run is each history token evaluated once. ``totals``
sums a run's paid calls (``calls.jsonl``) per model, for its manifest and the benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.bench.runlog import read_jsonl


def totals(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per model, over the paid completions of ``calls`` (calls.jsonl entries): ``calls``,
    ``prompt_tokens`` sent, ``reused`` and ``evaluated`` prompt tokens (over the calls whose
    backend reports reuse: ``measured_calls`` of them), and ``completion_tokens``."""
    out: dict[str, dict[str, int]] = {}
    for entry in calls:
        completion = entry.get("completion")
        if not entry.get("paid") or not isinstance(completion, dict):
            continue
        row = out.setdefault(str(completion.get("model")), dict.fromkeys(
            ("calls", "prompt_tokens", "measured_calls", "reused", "evaluated",
             "completion_tokens"), 0))
        sent = int(completion.get("prompt_tokens") or 0)
        row["calls"] += 1
        row["prompt_tokens"] += sent
        row["completion_tokens"] += int(completion.get("completion_tokens") or 0)
        reused = completion.get("prompt_tokens_reused")
        if reused is not None:
            row["measured_calls"] += 1
            row["reused"] += int(reused)
            row["evaluated"] += sent - int(reused)
    return out


def run_totals(run_dir: Path) -> dict[str, dict[str, int]]:
    """``totals`` of the run in ``run_dir`` (its calls.jsonl)."""
    return totals(read_jsonl(Path(run_dir) / "calls.jsonl"))  # reads only: never repairs
