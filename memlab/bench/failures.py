"""Failed model calls in a run: how many a run may have, and how a resume retries them.

A model call that fails after its retries (a server down, the call budget spent, a prompt over
the window) leaves an ``error`` on its turn in turns.jsonl and an entry in calls.jsonl.
``FailedCalls`` counts the answering calls that failed against ``Settings.max_failed_share``
(``MEMLAB_MAX_FAILED_SHARE``; default 0: any failed answer fails the run). Once a run can no
longer stay within it, it stops at once with ``RunFailedError``: its manifest says ``failed`` with
the count and the first error, and it is not complete, so a grid runs it again. A memory's own
call (extraction, compression) that meets a transient fault (timeout, rate limit, connection)
fails the run at once too: the condition would go on with a fallback and a memory that is not its
own; a failure of the request itself (a prompt over the window) is the condition's behaviour on
this model and is only recorded (``counts.llm_calls_failed``).

A failure is never replayed. When a run is resumed, ``cut_at_first_failure`` moves the records of
the first step holding a failed call (answering or the memory's own) and of every step after it
out of turns.jsonl and calls.jsonl, into ``failed/<attempt>-turns.jsonl`` and
``failed/<attempt>-calls.jsonl`` (kept, never deleted), and the run goes on live from that step:
once the fault is fixed the failed calls are paid again and the run ends as if they had never
failed. Calls paid after the failure are asked again too (their prompts followed a failed turn);
the shared response cache answers those whose prompt is unchanged.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
from pathlib import Path
from typing import Any

from memlab.bench.runlog import move_tail, read_records
from memlab.errors import RunFailedError

FAILED_DIR = "failed"


class FailedCalls:
    """The answering calls of one run and their failures, against ``max_share``.

    Args:
        planned: the run's answering steps (needles and questions of every phase).
        max_share: the share of them that may fail (``Settings.max_failed_share``).
    """

    def __init__(self, planned: int, max_share: float):
        self.planned, self.max_share = planned, max_share
        self.answered = self.failed = self.memory_failed = 0
        self.first_error: str | None = None
        self.first_step: str | None = None

    def note(self, step: str, record: dict[str, Any] | None,
             failures: list[tuple[str, bool]] = ()) -> None:
        """Count one step: its turn record (None for the forced sleep) and the model calls that
        failed in it (``CallJournal.step_failures``: error, transient).

        Raises:
            RunFailedError: more answers failed than ``max_share`` of the planned ones allows,
                or a memory call met a transient fault (a memory built around an outage is not
                the condition's memory; a request's own failure, e.g. a prompt over the window,
                is the condition's behaviour and is only recorded).
        """
        memory = list(failures)
        error = None if record is None else record.get("error")
        if error is not None and (error, True) in memory:
            memory.remove((error, True))  # the answering call's own failure
        elif error is not None and (error, False) in memory:
            memory.remove((error, False))
        transient = [text for text, is_transient in memory if is_transient]
        if transient:
            self._first(step, transient[0])
            self.memory_failed += len(transient)
            raise RunFailedError(
                f"a memory call failed at step {step}: {transient[0]}. Fix the cause and run "
                "it again: the failed calls are retried, the rest is kept")
        if record is None or record.get("kind") == "filler" or record.get("answered") is False:
            return
        self.answered += 1
        if error is None:
            return
        self.failed += 1
        self._first(step, str(error))
        if self.failed > math.floor(self.max_share * self.planned + 1e-9):
            raise RunFailedError(self.message())

    def _first(self, step: str, error: str) -> None:
        if self.first_error is None:
            self.first_error, self.first_step = error, step

    def check(self) -> None:
        """At the end of a run: raise RunFailedError when the share of failed answers exceeds
        ``max_share``."""
        if self.failed > self.max_share * self.answered:
            raise RunFailedError(self.message())

    def message(self) -> str:
        return (f"{self.failed} of {self.answered} answering calls failed (max_failed_share "
                f"{self.max_share:g}, MEMLAB_MAX_FAILED_SHARE); the first at step "
                f"{self.first_step}: {self.first_error}. Fix the cause and run it again: the "
                "failed calls are retried, the rest is kept")

    def summary(self) -> dict[str, Any]:
        """What the manifest records under ``failed_calls``."""
        return {"answering": self.answered, "failed": self.failed, "planned": self.planned,
                "max_share": self.max_share, "memory_failed": self.memory_failed,
                "first_step": self.first_step, "first_error": self.first_error}


def turn_step(record: dict[str, Any]) -> str:
    """The runner step a turn record belongs to (``Step.name``): ``<phase>:<event index>``."""
    return f"{record.get('phase')}:{record.get('index')}"


def cut_at_first_failure(run_dir: Path, steps: list[str]) -> dict[str, Any] | None:
    """Move the first failed step and everything after it aside (see the module docstring).

    Args:
        steps: the run's step names in order (``Step.name``).

    Returns:
        ``{"step", "attempt", "turns", "calls"}`` (records moved) or None when nothing failed.
    """
    order = {name: i for i, name in enumerate(steps)}
    turns = read_records(run_dir / "turns.jsonl")
    calls = read_records(run_dir / "calls.jsonl")
    failed = [order.get(turn_step(t), -1) for _, t in turns if t.get("error") is not None]
    failed += [order.get(str(c.get("step")), -1) for _, c in calls if "error" in c]
    failed = [i for i in failed if i >= 0]
    if not failed:
        return None
    first = min(failed)
    folder = run_dir / FAILED_DIR
    earlier = [p.name.split("-")[0] for p in folder.glob("*-*.jsonl")] if folder.is_dir() else []
    attempt = 1 + max((int(n) for n in earlier if n.isdigit()), default=0)
    moved = {}
    for name, records, step_of in (("turns", turns, turn_step),
                                   ("calls", calls, lambda c: str(c.get("step")))):
        cut = [start for start, record in records if order.get(step_of(record), -1) >= first]
        moved[name] = len(cut)
        if cut:
            move_tail(run_dir / f"{name}.jsonl", cut[0],
                      folder / f"{attempt}-{name}.jsonl")
    return {"step": steps[first], "attempt": attempt, **moved}


RESERVE_FILE = "reserve.bin"
RESERVE_BYTES = 64 * 1024  # a manifest is a few KB; its temporary copy as much again
NEARLY_FULL_BYTES = 256 * 1024


def reserve_space(run_dir: Path) -> None:
    """Set aside room for the manifest while the run writes (``free_space`` gives it back on a
    full disk, ``release_space`` at the end), so a full disk still ends as ``failed``."""
    path = run_dir / RESERVE_FILE
    try:
        with path.open("wb") as fh:
            fh.write(b"\0" * RESERVE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # no room even for this: say so, leave nothing behind
        path.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def release_space(run_dir: Path) -> None:
    (run_dir / RESERVE_FILE).unlink(missing_ok=True)


def free_space(run_dir: Path, exc: BaseException) -> None:
    """On a full disk, give back the reserved room and delete the run's store folder (a resume
    rebuilds it from the journals), so that the manifest can still record the failure."""
    if disk_full(exc, run_dir):
        release_space(run_dir)
        shutil.rmtree(run_dir / "store", ignore_errors=True)


def disk_full(exc: BaseException | None, folder: Path | None = None) -> bool:
    """Whether ``exc`` comes from a full disk: ENOSPC or SQLite's "disk is full" anywhere in
    its chain, or any error while ``folder``'s file system has almost no room left (a library
    may word it as anything, chroma's "Failed to apply logs" for one)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        if "disk is full" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    try:
        return folder is not None and shutil.disk_usage(folder).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def disk_full_error(exc: BaseException, run_dir: Path) -> BaseException:
    """``exc``, or for a full disk however a library words it, one ``OSError(ENOSPC)`` naming the
    run folder (the command then says what to do): an ENOSPC that names no file (a write or
    fsync on an open file says none) gets the run folder's name."""
    if not disk_full(exc, run_dir):
        return exc
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return exc if exc.filename else OSError(errno.ENOSPC, exc.strerror or str(exc),
                                                 str(run_dir))
    return OSError(errno.ENOSPC, f"No space left on device ({type(exc).__name__}: "
                                 f"{str(exc)[:160]})", str(run_dir))
