"""What a finished grid's cells cost, read from their journals (the measured half of
estimate_grid.py).

A cell (``<results>/<run_id>/``) counts once its manifest says ``complete``. Its cost comes from
the latencies the runner records per turn and per model call, never from the manifest's
``started_at``/``finished_at`` (they span every interrupted attempt of a resumed run):

- answers: the answering model's call for each turn it answered (``turns.jsonl`` says which
  turns; ``calls.jsonl`` holds the call, found by step, model and prompt tokens);
- memory: the seconds recorded for storing and recalling (``memory_latency_s``) and for sleep
  cycles (``cycle_stats``; a Table 2 cell's forced sleep in the manifest's ``sleep_stats``),
  which include the memory model's calls;
- scoring: answering-model calls that answer no turn (the LTM scorer's judge, at the last step;
  when the memory model is the answering model they cannot be told apart and count as memory).

A call the response cache answered records ~0 s; ``LatencyFit`` prices it as if it had run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import cycle_seconds, read_manifest
from memlab.bench.schedule import estimate_tokens
from memlab.errors import ConfigError
from memlab.memory.base import MEMORIES, format_time
from memlab.memory.full_context import FullContextConfig

PROBES = "/probes"  # a Table 2 cell's condition key: "sleep/probes"
TURN_OVERHEAD = FullContextConfig().turn_overhead_tokens


def condition_key(condition: str, probes_sleep: bool) -> str:
    """How costs are grouped: the condition, a Table 2 cell's with ``PROBES`` added."""
    return condition + (PROBES if probes_sleep else "")


def whole_history(condition: str) -> bool:
    """The condition's prompt is the system prompt + the whole history (full_context), the
    same for every question: two answers in a row at the same shown time share all but the new
    message, and llama.cpp evaluates only what follows the shared prefix (measured: persona
    full_context answers after the first take ~6 s, the first ~300 s). Every other condition
    puts the question's recall into the system prompt, so each answer evaluates all of it."""
    return MEMORIES.resolve(condition.removesuffix(PROBES)).sized_to_answering_model


@dataclass(frozen=True)
class Call:
    """One model call; ``reused``: it evaluated only the new message (see ``whole_history``;
    runs recorded before memlab counted reuse); ``evaluated``: the prompt tokens the model
    evaluated, the rest reused from its cache (None where the call does not say: a cached
    answer, a run recorded before it was counted)."""

    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    step: str = ""
    reused: bool = False
    evaluated: int | None = None

    @property
    def tokens_in(self) -> int:
        """The prompt tokens the call paid for: those evaluated where recorded, else all."""
        return self.prompt_tokens if self.evaluated is None else self.evaluated


@dataclass(frozen=True)
class PromptTurn:
    """What decides whether an answer reuses the previous answer's prompt."""

    sent: bool  # the answering model was called
    stored: bool
    shown_time: str | None  # the time the system prompt states (minute resolution)
    truncated: int  # full_context's cut: turns dropped from the history


def reused_prefix(turns: Iterable[PromptTurn]) -> list[bool]:
    """Per turn: an answer whose prompt extends the previous answer's (same shown time, same
    cut, nothing stored in between but that answer itself, which its prompt already ended in)."""
    out, previous, stored_since = [], None, False
    for turn in turns:
        if not turn.sent:
            out.append(False)
            stored_since = stored_since or turn.stored
            continue
        key = (turn.shown_time, turn.truncated)
        out.append(previous == key and not stored_since)
        previous, stored_since = key, False
    return out


def shown_time(timestamp: str | datetime | None) -> str | None:
    if timestamp is None:
        return None
    moment = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
    return format_time(moment)


@dataclass
class CellCost:
    """A finished cell's recorded costs (``condition`` ends in ``/probes`` for Table 2's)."""

    run_id: str
    suite: str
    condition: str
    span: int
    models: tuple[str, str]  # answering and memory model, as the spec names them ("1.5b")
    model_files: tuple[str, str]  # the same, as their calls record them
    spec: dict = field(default_factory=dict)  # the manifest's RunSpec
    stored: int = 0  # turns stored as memory
    questions: int = 0  # questions the model answered
    answers: list[Call] = field(default_factory=list)
    memory_calls: list[Call] = field(default_factory=list)
    scoring_calls: list[Call] = field(default_factory=list)
    memory_s: dict[str, float] = field(default_factory=dict)  # step -> recorded seconds
    stored_steps: list[str] = field(default_factory=list)  # steps that stored a turn, in order
    # whole-history answers before any cut: (prompt tokens, history tokens, the history's
    # token estimate); calibrates the estimate a projected suite is counted with
    history_check: list[tuple[int, int, int]] = field(default_factory=list)


def step_name(turn: dict) -> str:
    return f"{turn['phase']}:{turn['index']}"


def is_sent(turn: dict) -> bool:
    """The answering model was called for this turn (not filler, not an unsampled question)."""
    return (turn.get("kind") != "filler" and bool(turn.get("answered"))
            and turn.get("prompt_tokens", 0) > 0 and not turn.get("error"))


def read_cell(run_dir: Path) -> CellCost | None:
    """The recorded costs of the run in ``run_dir``; None unless it is complete."""
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ConfigError):  # being written, or not a run's
        return None
    if manifest.get("status") != "complete":
        return None
    spec = manifest["spec"]
    answering = manifest["llm"]["model"]
    memory_model = (manifest.get("memory_llm") or {}).get("model", answering)
    cell = CellCost(run_id=manifest["run_id"], suite=spec["suite"], span=spec["span"],
                    condition=condition_key(spec["condition"], bool(spec.get("probes_sleep"))),
                    models=(spec.get("llm_model"), spec.get("memory_llm_model")),
                    model_files=(answering, memory_model), spec=spec)
    sent = _read_turns(cell, read_jsonl(run_dir / "turns.jsonl"))
    if manifest.get("sleep_stats"):
        cell.memory_s["sleep"] = cycle_seconds(manifest["sleep_stats"])
    _sort_calls(cell, read_jsonl(run_dir / "calls.jsonl"), sent)
    return cell


def _read_turns(cell: CellCost, turns: list[dict]) -> dict[str, tuple[dict, bool]]:
    """Fill ``cell`` from its turns; the answered turns by step, each with whether its answer
    reused the previous prompt."""
    reuse = reused_prefix(PromptTurn(is_sent(t), bool(t.get("store")), shown_time(
        t.get("timestamp")), t.get("truncated_turns") or 0) for t in turns)
    sent, whole, estimate = {}, whole_history(cell.condition), 0
    for turn, reused in zip(turns, reuse, strict=True):
        step = step_name(turn)
        cell.memory_s[step] = (turn.get("memory_latency_s") or 0.0) + cycle_seconds(
            turn.get("cycle_stats"))
        if is_sent(turn):
            sent[step] = (turn, reused and whole)
            cell.questions += turn["kind"] == "question"
            if whole and not turn.get("truncated_turns"):
                cell.history_check.append((turn["prompt_tokens"],
                                           turn.get("prompt_tokens_history", 0), estimate))
        if turn.get("store") and turn["phase"] == "main":
            cell.stored_steps.append(step)
            estimate += (estimate_tokens(turn["text"]) + estimate_tokens(turn.get("reply") or "")
                         + TURN_OVERHEAD)
    cell.stored = len(cell.stored_steps)
    return sent


def _sort_calls(cell: CellCost, records: list[dict], sent: dict) -> None:
    answering, memory_model = cell.model_files
    warm = False  # the model holds the current prompt prefix (the cache's answers load none)
    for record in records:
        done = record["completion"]
        reused_tokens = done.get("prompt_tokens_reused")
        call = Call(model=done["model"], prompt_tokens=done["prompt_tokens"],
                    completion_tokens=done["completion_tokens"], latency_s=done["latency_s"],
                    cached=bool(done.get("cached")), step=record["step"],
                    evaluated=(None if reused_tokens is None or done.get("cached")
                               else done["prompt_tokens"] - reused_tokens))
        turn, reused = sent.get(record["step"], (None, False))
        if (turn is not None and call.model == answering
                and call.prompt_tokens == turn["prompt_tokens"]):
            del sent[record["step"]]  # the turn's first matching call is its answer
            # a call that counts what it evaluated is priced by that, not by the clock rule
            warm = warm and reused and call.evaluated is None
            cell.answers.append(Call(**{**call.__dict__, "reused": warm}))
            warm = warm or not call.cached
        elif call.model == answering and answering != memory_model:
            cell.scoring_calls.append(call)
        else:
            cell.memory_calls.append(call)


def read_cells(results: Path) -> tuple[list[CellCost], list[str]]:
    """The complete cells under ``results`` and the run ids of the others."""
    cells, others = [], []
    for run_dir in sorted(p for p in results.iterdir() if (p / "manifest.json").is_file()):
        cell = read_cell(run_dir)
        if cell:
            cells.append(cell)
        else:
            others.append(run_dir.name)
    return cells, others


@dataclass(frozen=True)
class LatencyFit:
    """seconds = a + b * evaluated prompt tokens + c * completion tokens (median regression,
    so the minutes-long stalls some calls had while other jobs loaded the machine do not bend
    the line), times ``slowdown`` = measured total / fitted total: what those stalls added on
    average, so that projected totals are expected values, not medians."""

    a: float
    b: float
    c: float
    slowdown: float
    n: int
    median_abs_residual_s: float
    residual_sd_s: float
    prompt_tokens_range: tuple[int, int]

    def median_s(self, prompt_tokens: float, completion_tokens: float) -> float:
        return max(0.0, self.a + self.b * prompt_tokens + self.c * completion_tokens)

    def expected_s(self, prompt_tokens: float, completion_tokens: float) -> float:
        return self.slowdown * self.median_s(prompt_tokens, completion_tokens)


def fit_latency(calls: list[Call]) -> LatencyFit:
    """Fit on the calls that ran (not cached) and evaluated their whole prompt.

    Raises:
        ConfigError: fewer than 3 such calls.
    """
    ran = [c for c in calls if not c.cached and not c.reused]
    if len(ran) < 3:
        raise ConfigError(f"only {len(ran)} model call(s) ran uncached: too few to fit latency")
    x = np.array([[1.0, c.tokens_in, c.completion_tokens] for c in ran])
    y = np.array([c.latency_s for c in ran])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    for _ in range(100):  # least absolute deviations by iteratively reweighted least squares
        w = np.sqrt(1.0 / np.maximum(np.abs(y - x @ coef), 1e-3))
        coef = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)[0]
    residual = y - x @ coef
    fitted = np.maximum(x @ coef, 0.0).sum()
    return LatencyFit(a=float(coef[0]), b=float(coef[1]), c=float(coef[2]),
                      slowdown=float(y.sum() / fitted) if fitted > 0 else 1.0, n=len(ran),
                      median_abs_residual_s=float(np.median(np.abs(residual))),
                      residual_sd_s=float(residual.std()),
                      prompt_tokens_range=(min(c.prompt_tokens for c in ran),
                                           max(c.prompt_tokens for c in ran)))


def fit_models(cells: list[CellCost]) -> dict[str, LatencyFit]:
    """Per model (file name, as calls record it): the fit over all its calls in ``cells``."""
    calls: dict[str, list[Call]] = {}
    for cell in cells:
        for call in cell.answers + cell.memory_calls + cell.scoring_calls:
            calls.setdefault(call.model, []).append(call)
    return {model: fit_latency(own) for model, own in sorted(calls.items())}


def effective_s(call: Call, fits: dict[str, LatencyFit]) -> float:
    """A call's seconds: as recorded, or (answered by the cache) as its model's fit expects."""
    if not call.cached:
        return call.latency_s
    return fits[call.model].expected_s(call.tokens_in, call.completion_tokens)
