"""Where a grid stands: each cell's state, its turns done of planned, and the model time left.

A long grid runs in pieces (the standard peers grid needs some 43 h on 2 cores), so
``memlab grid --spec NAME --status`` reads the results folder and runs nothing. Progress is
counted in turns: one ``turns.jsonl`` record per event of the cell's suite. A run records how
many it plans (``counts.turns_planned`` in its manifest); for a run made before that, or a cell
not started, a run of another condition on the same suite events says it (its finished turns).

Time left is model time, measured: a turn's model and memory seconds (``llm_latency_s`` plus
``memory_seconds``, sleep's cycles included). Turns differ: a question is answered at a cost
near its span's, a stored turn costs a memory what it has to read (LTM 32k's stored turns
average 252 tokens, LTM 1k's 18; sleep paid 4.5 s a filler turn there, 0.9 s at persona
32k, and about 7.5 and 12 ms a character at each). So the turns a cell has left are priced as
two parts, their question turns at the seconds a question turn cost and their stored turns at
the seconds a character of stored text (text and reply) cost, each measured over the cell's own
turns (once there are ``MIN_TURNS`` of that part), else its condition's turns on the same
models elsewhere in the folder (the same suite and span first, then the same suite, then any),
else in the other grid folders beside it (``results/peers`` for ``results/peers-standard``).
The turns left are read from a run of the same events whose turns are all recorded (any
condition: the events do not depend on it); a cell with no such run is priced at the seconds a
turn of any kind cost, found the same way. It is what the turns cost as they ran (at their
threads, on a shared or idle machine), not a promise: cells run side by side share the cores,
and turns still to run whose calls the cache holds take none. A run whose calls came mostly
from the response cache measures nothing (``measures_seconds``: more than half of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from memlab.bench.runlog import is_locked, read_jsonl
from memlab.bench.runner import is_complete, read_manifest
from memlab.bench.spec import RunSpec
from memlab.errors import ConfigError
from memlab.report.peers import memory_seconds

# "recorded": a run that finished (its manifest says complete) but was not scored in this folder,
# as in ``records/<grid>``, which keeps the three files a replay scores from
State = Literal["complete", "recorded", "running", "stopped", "failed", "not started",
                "other run"]
STATES: tuple[State, ...] = ("complete", "recorded", "running", "stopped", "failed",
                             "not started", "other run")
RateSource = Literal["run", "grid", "other grid"]
# what a measured second is counted per: any turn, a question turn, a character of stored text
Part = Literal["turn", "question", "char"]

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
    seconds_per_turn: float | None = None  # of the turns left, on average
    rate_from: RateSource | None = None
    seconds_left: float | None = None


class Tally(BaseModel):
    """Measured turns of one part, the units they hold (turns, or characters stored) and the
    seconds they cost."""

    turns: int = 0
    units: float = 0.0
    seconds: float = 0.0


class Recorded(BaseModel):
    """What one run folder holds: its manifest, its turns (``shape``: per turn, whether it is a
    question and the characters it stored) and what its measured turns cost, by part (``tally``;
    see ``_recorded``)."""

    manifest: dict[str, Any]
    shape: list[tuple[bool, int]]
    tally: dict[Part, Tally]

    @property
    def turns(self) -> int:
        return len(self.shape)

    @property
    def planned(self) -> int | None:
        counts = self.manifest.get("counts") or {}
        if counts.get("turns_planned") is not None:
            return counts["turns_planned"]
        return counts.get("turns") if self.manifest.get("status") == "complete" else None


def turn_seconds(turn: dict[str, Any]) -> float:
    """The model and memory seconds one recorded turn cost."""
    return (turn.get("llm_latency_s") or 0.0) + memory_seconds(turn)


def turn_shape(turn: dict[str, Any]) -> tuple[bool, int]:
    """Whether a recorded turn is a question, and the characters it stored (0 for a question)."""
    if turn.get("kind") == "question":
        return True, 0
    return False, len(turn.get("text") or "") + len(turn.get("reply") or "")


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
    if recorded.manifest.get("status") == "complete":
        return "recorded"
    return "failed" if recorded.manifest.get("status") == "failed" else "stopped"


def _rate(runs: Iterable[Recorded], min_turns: int, part: Part) -> float | None:
    tallies = [r.tally[part] for r in runs]
    turns, units = sum(t.turns for t in tallies), sum(t.units for t in tallies)
    return (sum(t.seconds for t in tallies) / units
            if turns and turns >= min_turns and units else None)


def _like(run: Recorded, cell: RunSpec) -> bool:
    """A run of the cell's condition on the cell's models (what its seconds per turn depend on)."""
    spec = run.manifest.get("spec") or {}
    return run.manifest.get("condition") == cell.condition and all(
        spec.get(field) == getattr(cell, field) for field in MODEL_FIELDS)


def _near(run: Recorded, cell: RunSpec) -> tuple[bool, bool, bool]:
    """How near a run's events are to the cell's: same suite and span, same suite, any."""
    suite = run.manifest.get("suite") == cell.suite
    return suite and (run.manifest.get("spec") or {}).get("span") == cell.span, suite, True


def rate_for(cell: RunSpec, ours: Recorded | None,
             pools: Iterable[tuple[RateSource, Callable[[], list[Recorded]]]], min_turns: int,
             part: Part) -> tuple[float | None, RateSource | None]:
    """The cell's seconds per ``part`` and where they were measured: its own turns, else its
    condition's runs on the same models in this grid (the same suite and span first, then the
    same suite, then any), else in other grids; each only from at least ``min_turns`` measured
    turns of the part."""
    if ours is not None and (rate := _rate([ours], min_turns, part)) is not None:
        return rate, "run"
    for source, runs in pools:
        like = [r for r in runs() if _like(r, cell)]
        for level in range(3):
            rate = _rate([r for r in like if _near(r, cell)[level]], min_turns, part)
            if rate is not None:
                return rate, source
    return None, None


def _priced(rest: list[tuple[bool, int]],
            rate_of: Callable[[Part], tuple[float | None, RateSource | None]]
            ) -> tuple[float | None, RateSource | None]:
    """The seconds the turns ``rest`` (a cell's turns left) cost, at its question turns' and
    stored characters' measured rates, and the farthest source one of them was measured in."""
    questions = sum(asks for asks, _ in rest)
    chars = sum(stored for _, stored in rest)
    seconds, sources = 0.0, []
    for part, units in (("question", questions), ("char", chars)):
        if units:
            rate, source = rate_of(part)
            if rate is None:
                return None, None
            seconds += units * rate
            sources.append(source)
    order = ("run", "grid", "other grid")
    return seconds, max(sources, key=order.index, default="run")


def read_runs(folder: Path, wanted: Callable[[dict[str, Any]], bool] = bool
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


def seconds_left(cell: RunSpec, ours: Recorded | None, total: int | None,
                 shape: list[tuple[bool, int]] | None,
                 pools: Iterable[tuple[RateSource, Callable[[], list[Recorded]]]],
                 min_turns: int) -> tuple[float | None, float | None, RateSource | None]:
    """The model seconds a cell has left, the seconds a turn left averages and the farthest
    source they were measured in: its turns left priced by part when its events' turns are
    known (``shape``), else at the seconds a turn of any kind cost."""
    done = ours.turns if ours else 0
    if total is not None and shape is not None and len(shape) == total:
        left, source = _priced(shape[done:], partial(rate_for, cell, ours, pools, min_turns))
        if left is not None:
            return left, left / (total - done), source
    rate, source = rate_for(cell, ours, pools, min_turns, "turn")
    return (None if rate is None or total is None else (total - done) * rate), rate, source


def _recorded(run_dir: Path, manifest: dict[str, Any]) -> Recorded:
    """The run's turns and their cost by part; a run the response cache mostly served measures
    none (``measures_seconds``: its condition's other runs then say it)."""
    turns = read_jsonl(run_dir / "turns.jsonl")
    shape = [turn_shape(t) for t in turns]
    tally: dict[Part, Tally] = {"turn": Tally(), "question": Tally(), "char": Tally()}
    if measures_seconds(read_jsonl(run_dir / "calls.jsonl")):
        for turn, (asks, stored) in zip(turns, shape, strict=True):
            seconds = turn_seconds(turn)
            for part, units in (("turn", 1), ("question", 1) if asks else ("char", stored)):
                counted = tally[part]
                counted.turns, counted.units = counted.turns + 1, counted.units + units
                counted.seconds += seconds
    return Recorded(manifest=manifest, shape=shape, tally=tally)


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
            out += read_runs(grid, lambda m: m.get("condition") in conditions).values()
        except (OSError, ConfigError):
            continue
    return out


def grid_status(cells: list[RunSpec], results_dir: str | Path, *,
                min_turns: int = MIN_TURNS) -> list[CellStatus]:
    """Each cell's CellStatus, in the order given (nothing is run or written).

    Args:
        min_turns: the fewest measured turns of a part (question turns, stored turns, turns)
            an estimate of its seconds is taken from.
    """
    results = Path(results_dir)
    recorded = read_runs(results)
    planned = {events_key(r.manifest.get("spec") or {}): r.planned
               for r in recorded.values() if r.planned is not None}
    # each events' turns, from a run that recorded all it planned
    shapes = {events_key(r.manifest.get("spec") or {}): r.shape
              for r in recorded.values() if r.planned is not None and r.turns == r.planned}
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
        finished = state in ("complete", "recorded") or (total is not None and done >= total)
        # a stopped run with every turn done only scores
        left, rate, source = (0.0, None, None) if finished else seconds_left(
            cell, ours, total, shapes.get(events_key(cell.identity())), pools, min_turns)
        out.append(CellStatus(run_id=cell.run_id, condition=cell.condition, suite=cell.suite,
                              state=state, turns_done=done, turns_planned=total,
                              seconds_per_turn=rate, rate_from=source, seconds_left=left))
    return out


def format_status(name: str, results_dir: str | Path, status: list[CellStatus]) -> str:
    """The status as the command prints it: a line a cell, then the model time left."""
    counts = ", ".join(f"{sum(s.state == k for s in status)} {k}" for k in STATES
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
    lines.append(f"model time left: {sum(known) / 3600:.1f} h (question turns and stored "
                 "characters at their measured seconds; s/turn: the turns left, on average)"
                 f"{tail}; cells run side by side share the cores")
    if any(s.rate_from == "other grid" for s in status):
        lines.append(f"  * measured in another grid's runs of the condition on the same models "
                     f"(beside {results_dir})")
    if any(s.state == "recorded" for s in status):
        lines.append("  recorded: a finished run not scored in this folder (a grid's records); "
                     f"`memlab replay {results_dir}` scores a copy and checks its tables, and "
                     "`memlab grid` or `memlab paper` on this folder scores it in place from its "
                     "turns (no model call, no step run again)")
    for s in status:
        if s.state == "other run":
            lines.append(f"  {s.run_id}: its folder holds a run of another spec; the grid will "
                         "refuse it (move the folder or use another --results)")
    return "\n".join(lines)
