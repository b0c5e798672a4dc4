"""Where a grid stands: each cell's state, its turns done of planned, and the model time left.

A long grid runs in pieces (the standard peers grid needs some 43 h on 2 cores), so
``memlab grid --spec NAME --status`` reads the results folder and runs nothing. Progress is
counted in turns: one ``turns.jsonl`` record per event of the cell's suite. A run records how
many it plans (``counts.turns_planned`` in its manifest); for a run made before that, or a cell
not started, a run of another condition on the same suite events says it (its finished turns).

Time left is model time, measured: a turn's model and memory seconds (``llm_latency_s`` plus
``memory_seconds``, sleep's cycles included), averaged over the cell's recorded turns (once there
are ``MIN_TURNS``), else over its condition's turns on the same models (the same suite first)
elsewhere in the folder, else in the other grid folders beside it (``results/peers`` for
``results/peers-standard``). It is what the turns cost as they ran (at their threads, on a
shared or idle machine), not a promise: cells run side by side share the cores, and turns still
to run whose calls the cache holds take none. A run whose calls came mostly from the response
cache measures nothing (``measures_seconds``: more than half of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from memlab.bench.runlog import is_locked, read_jsonl
from memlab.bench.runner import is_complete, read_manifest
from memlab.bench.spec import RunSpec
from memlab.errors import ConfigError
from memlab.report.peers import memory_seconds

State = Literal["complete", "running", "stopped", "failed", "not started", "other run"]
RateSource = Literal["run", "grid", "other grid"]

# the spec fields that fix a suite's events (and so the turns a run records), whatever the
# condition and its memory model
EVENT_FIELDS = ("suite", "span", "seed", "suite_options", "llm", "llm_model", "n_ctx",
                "probes_sleep")
MODEL_FIELDS = ("llm", "llm_model", "memory_llm", "memory_llm_model")
# A run's first turns are mostly its cold first calls (mem0's first: 400 s, later ones 25 s),
# and one that waited out a paused grid counts the pause: an estimate needs more turns than that.
MIN_TURNS = 30
# the share of a run's calls the response cache may serve for it to be timed: a replay or a
# cell another grid ran is served (nearly) all; a fresh cell whose needles other cells of its
# grid stored too is served some (the scaling grid's hybrid at LTM 32k: 37%; LoCoMo's sleep
# 19%), and its grid's other cells are served alike, so its seconds say what they will cost
CACHED_AT_MOST = 0.5


class CellStatus(BaseModel):
    run_id: str
    condition: str
    suite: str
    state: State
    turns_done: int = 0
    turns_planned: int | None = None
    seconds_per_turn: float | None = None
    rate_from: RateSource | None = None
    seconds_left: float | None = None


class Recorded(BaseModel):
    """What one run folder holds: its manifest, its turns, and what ``measured`` of them cost
    (``seconds``; see ``_recorded``)."""

    manifest: dict[str, Any]
    turns: int
    measured: int
    seconds: float

    @property
    def planned(self) -> int | None:
        counts = self.manifest.get("counts") or {}
        if counts.get("turns_planned") is not None:
            return counts["turns_planned"]
        return counts.get("turns") if self.manifest.get("status") == "complete" else None


def turn_seconds(turn: dict[str, Any]) -> float:
    """The model and memory seconds one recorded turn cost."""
    return (turn.get("llm_latency_s") or 0.0) + memory_seconds(turn)


def events_key(spec: dict[str, Any]) -> str:
    return repr([spec.get(field) for field in EVENT_FIELDS])


def _state(cell: RunSpec, run_dir: Path, recorded: Recorded | None) -> State:
    if recorded is None:
        return "not started"
    if recorded.manifest.get("spec") != cell.identity():
        return "other run"
    if is_locked(run_dir):
        return "running"
    if is_complete(run_dir, cell):
        return "complete"
    return "failed" if recorded.manifest.get("status") == "failed" else "stopped"


def _rate(runs: Iterable[Recorded], min_turns: int) -> float | None:
    runs = list(runs)
    turns = sum(r.measured for r in runs)
    return sum(r.seconds for r in runs) / turns if turns and turns >= min_turns else None


def _like(run: Recorded, cell: RunSpec) -> bool:
    """A run of the cell's condition on the cell's models (what its seconds per turn depend on)."""
    spec = run.manifest.get("spec") or {}
    return run.manifest.get("condition") == cell.condition and all(
        spec.get(field) == getattr(cell, field) for field in MODEL_FIELDS)


def _rate_for(cell: RunSpec, ours: Recorded | None,
              pools: Iterable[tuple[RateSource, Callable[[], list[Recorded]]]], min_turns: int
              ) -> tuple[float | None, RateSource | None]:
    """The cell's seconds per turn and where they were measured: its own turns, else its
    condition's runs on the same models (same suite first) in this grid, else in other grids;
    each only from at least ``min_turns`` measured turns."""
    if ours is not None and (rate := _rate([ours], min_turns)) is not None:
        return rate, "run"
    for source, runs in pools:
        like = [r for r in runs() if _like(r, cell)]
        rate = (_rate([r for r in like if r.manifest.get("suite") == cell.suite], min_turns)
                or _rate(like, min_turns))
        if rate is not None:
            return rate, source
    return None, None


def _read_folder(folder: Path, wanted: Callable[[dict[str, Any]], bool] = bool
                 ) -> dict[str, Recorded]:
    """The runs in ``folder`` (each a sub-folder with a manifest) whose manifest is ``wanted``."""
    out = {}
    for run_dir in sorted(folder.iterdir()) if folder.is_dir() else []:
        manifest = read_manifest(run_dir) if (run_dir / "manifest.json").is_file() else {}
        if manifest and wanted(manifest):
            out[run_dir.name] = _recorded(run_dir, manifest)
    return out


def measures_seconds(calls: list[dict[str, Any]]) -> bool:
    """Whether a run's seconds measure what its turns cost: not when the response cache served
    more than ``CACHED_AT_MOST`` (half) of its model calls (a served call takes no time; a cell another
    grid already ran replays in a fraction of a second a turn). The peers table, which times
    memory calls alone, counts each served one at the paid ones' mean instead
    (``report.peers.stored_turn_seconds``); here answers and memory calls mix."""
    served = sum(c.get("paid") is False for c in calls)
    return not calls or served / len(calls) <= CACHED_AT_MOST


def _recorded(run_dir: Path, manifest: dict[str, Any]) -> Recorded:
    """The run's turns and their cost; a run the response cache mostly served measures none
    (``measures_seconds``: its condition's other runs then say it)."""
    turns = read_jsonl(run_dir / "turns.jsonl")
    if not measures_seconds(read_jsonl(run_dir / "calls.jsonl")):
        return Recorded(manifest=manifest, turns=len(turns), measured=0, seconds=0.0)
    return Recorded(manifest=manifest, turns=len(turns), measured=len(turns),
                    seconds=sum(turn_seconds(t) for t in turns))


def _other_grids(results: Path, conditions: set[str]) -> list[Recorded]:
    """Runs of ``conditions`` in the results folder's sibling grid folders (a folder that
    cannot be read is passed over: it only informs an estimate)."""
    out = []
    try:
        grids = [p for p in sorted(results.resolve().parent.iterdir())
                 if p.is_dir() and p != results.resolve()]
    except OSError:
        return out
    for grid in grids:
        try:
            out += _read_folder(grid, lambda m: m.get("condition") in conditions).values()
        except (OSError, ConfigError):
            continue
    return out


def grid_status(cells: list[RunSpec], results_dir: str | Path, *,
                min_turns: int = MIN_TURNS) -> list[CellStatus]:
    """Each cell's CellStatus, in the order given (nothing is run or written).

    Args:
        min_turns: the fewest measured turns a seconds-per-turn estimate is taken from.
    """
    results = Path(results_dir)
    recorded = _read_folder(results)
    planned = {events_key(r.manifest.get("spec") or {}): r.planned
               for r in recorded.values() if r.planned is not None}
    others: list[list[Recorded]] = []  # read once, and only when a cell needs them

    def other_grids() -> list[Recorded]:
        if not others:
            others.append(_other_grids(results, {c.condition for c in cells}))
        return others[0]

    pools = (("grid", lambda: list(recorded.values())), ("other grid", other_grids))
    out = []
    for cell in cells:
        run = recorded.get(cell.run_id)
        state = _state(cell, cell.run_dir(results), run)
        ours = run if state != "other run" else None
        done = ours.turns if ours else 0
        total = (ours.planned if ours else None) or planned.get(events_key(cell.identity()))
        rate, source = _rate_for(cell, ours, pools, min_turns)
        finished = state == "complete" or (total is not None and done >= total)
        left = 0.0 if finished else (  # a stopped run with every turn done only scores
            (total - done) * rate if total is not None and rate is not None else None)
        out.append(CellStatus(run_id=cell.run_id, condition=cell.condition, suite=cell.suite,
                              state=state, turns_done=done, turns_planned=total,
                              seconds_per_turn=rate, rate_from=source, seconds_left=left))
    return out


def format_status(name: str, results_dir: str | Path, status: list[CellStatus]) -> str:
    """The status as the command prints it: a line a cell, then the model time left."""
    states = ("complete", "running", "stopped", "failed", "not started", "other run")
    counts = ", ".join(f"{sum(s.state == k for s in status)} {k}" for k in states
                       if any(s.state == k for s in status))
    width = max([len(s.run_id) for s in status] + [4])
    lines = [f"grid {name} in {results_dir}: {len(status)} cells; {counts}"
             + ("" if Path(results_dir).is_dir() else " (no such folder yet: nothing has run "
                "there; check --results)"),
             f"  {'cell':<{width}}  {'state':<11}  {'turns':>11}  {'s/turn':>7}  {'left (h)':>8}"]
    for s in status:
        turns = f"{s.turns_done} / {'?' if s.turns_planned is None else s.turns_planned}"
        rate = "--" if s.seconds_per_turn is None else f"{s.seconds_per_turn:.1f}" + (
            "*" if s.rate_from == "other grid" else "")
        left = "?" if s.seconds_left is None else f"{s.seconds_left / 3600:.1f}"
        lines.append(f"  {s.run_id:<{width}}  {s.state:<11}  {turns:>11}  {rate:>7}  {left:>8}")
    known = [s.seconds_left for s in status if s.seconds_left is not None]
    unknown = sum(s.seconds_left is None for s in status)
    tail = (f", and {unknown} cell(s) not estimated yet (no run has measured their turns or "
            "seconds per turn)") if unknown else ""
    lines.append(f"model time left: {sum(known) / 3600:.1f} h at the measured seconds per turn"
                 f"{tail}; cells run side by side share the cores")
    if any(s.rate_from == "other grid" for s in status):
        lines.append(f"  * measured in another grid's runs of the condition on the same models "
                     f"(beside {results_dir})")
    for s in status:
        if s.state == "other run":
            lines.append(f"  {s.run_id}: its folder holds a run of another spec; the grid will "
                         "refuse it (move the folder or use another --results)")
    return "\n".join(lines)
