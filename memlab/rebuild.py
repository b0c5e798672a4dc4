"""A recorded cell run again from its own journal, with no model call (``memlab rebuild``).

A grid's records keep each cell's turns and model calls, not its memory's store: graphiti's
graph, mem0's memories, the sleep system's schemas. ``rebuild`` copies one cell's records into
a fresh run folder and resumes the run there: every recorded turn is executed again, each model
call answered by the cell's journal by its exact request (``replay_only``: a call the journal
does not hold stops the rebuild with ``LiveCallError``; none reaches a model), so the memory
stores again what it stored when the cell ran. Each executed turn is checked against its
recorded one (timings aside), the journal must come out unchanged and the store's size
(``memory_size``, where the manifest records one) equal to the recorded one; any difference is
named. The store is then under
``<out>/<run_id>/store/`` to be read (``benchmarks/graphiti_graph.py`` reads graphiti's).

The cell's manifest is checked against this memlab as a resume checks it: records made with
other prompts, models or suite parameters are refused, naming what differs.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from memlab.bench.runlog import write_json_atomic
from memlab.bench.runner import OtherRunError, read_manifest
from memlab.errors import ConfigError, LiveCallError, MemlabError
from memlab.records import check_cell, recorded_spec


@dataclass
class Rebuilt:
    """A rebuilt cell: where, how many turns and journal calls, how long."""

    cell: Path
    run_dir: Path
    turns: int
    calls_replayed: int
    seconds: float

    def summary(self) -> str:
        return (f"rebuild of {self.cell}: {self.turns} turns executed again, each the recorded "
                f"one; {self.calls_replayed} model calls answered by its journal, 0 made; "
                f"memory store in {self.run_dir / 'store'} ({self.seconds:.0f} s)")


def rebuild(cell: str | Path, out: str | Path, *, progress: bool = True) -> Rebuilt:
    """Run the recorded ``cell`` again into ``out/<run_id>/`` from its journal (module doc).

    Raises:
        ConfigError: the cell's records are incomplete, made with another memlab's prompts or
            models, or ``out/<run_id>`` is not empty.
        LiveCallError: a call the journal does not hold (the memory asked something else).
        MemlabError: a turn, the journal or the store's size came out other than recorded.
    """
    from memlab.lab import run

    start = time.perf_counter()
    cell = Path(cell)
    if not cell.is_dir():
        raise ConfigError(f"cell {str(cell)!r}: no such folder (a recorded cell is "
                          "records/<grid>/<run_id>/, e.g. records/peers/ltm-mem0-1000-s0)")
    recorded = check_cell(cell)
    where = cell / "manifest.json"
    spec = recorded_spec(cell, recorded)
    run_dir = spec.run_dir(out)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ConfigError(f"--out {str(out)!r}: {run_dir} is not empty (a rebuild runs the cell "
                          "again in a fresh folder)")
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    copies = [run_dir / name for name in ("turns.jsonl", "calls.jsonl", "manifest.json")]
    for name in ("turns.jsonl", "calls.jsonl"):
        shutil.copyfile(cell / name, run_dir / name)
    # a resume of the recorded run: its identity is checked against this memlab's, and the
    # recorded processes' memory counters are not added to this one's
    write_json_atomic(run_dir / "manifest.json", {
        **recorded, "status": "running", "finished_at": None, "memory_stats": None,
        "memory_size": None})
    try:
        run(spec, out, progress=progress, replay_only=True)
    except LiveCallError as exc:
        raise LiveCallError(f"{exc}; the cell was made by commit "
                            f"{recorded.get('git_commit') or 'unknown'}: rebuild it there") from None
    except ConfigError as exc:  # refused before any turn ran: what was made above goes
        if made:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:  # the caller's empty folder stays
            for path in copies:
                path.unlink(missing_ok=True)
        if not isinstance(exc, OtherRunError):
            raise
        raise ConfigError(f"{where}: made by another memlab ({'; '.join(exc.differs)}): "
                          "rebuild it with the memlab that made it, commit "
                          f"{recorded.get('git_commit') or 'unknown'}") from None
    after = read_manifest(run_dir)
    counts = after.get("counts") or {}
    if counts.get("diverged_turns"):
        shown = ", ".join(str(i) for i in counts["diverged_turns"][:5])
        raise MemlabError(f"{cell}: {len(counts['diverged_turns'])} turns came out other than "
                          f"recorded (event {shown}...): the memory does not rebuild the same")
    if (run_dir / "calls.jsonl").read_bytes() != (cell / "calls.jsonl").read_bytes():
        raise MemlabError(f"{run_dir / 'calls.jsonl'}: changed by the rebuild")
    if "memory_size" in recorded and after.get("memory_size") != recorded["memory_size"]:
        raise MemlabError(f"{cell}: the rebuilt store holds {after.get('memory_size')}, the "
                          f"recorded one {recorded.get('memory_size')}")
    return Rebuilt(cell=cell, run_dir=run_dir, turns=counts.get("turns", 0),
                   calls_replayed=counts.get("llm_calls_replayed", 0),
                   seconds=time.perf_counter() - start)
