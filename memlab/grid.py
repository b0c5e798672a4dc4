"""The papermill grid: conditions x suites x spans x seeds, one notebook execution per cell.

Each cell is a RunSpec; it executes the shipped ``condition.ipynb`` with the spec's fields as parameters.
Paths follow from the spec alone: the run lands in ``<results_dir>/<run_id>/`` and the executed
notebook in ``<results_dir>/notebooks/<run_id>.ipynb`` (``RunSpec.run_id``), the kernel
process's own output beside it in ``<run_id>.kernel.log``. A cell is skipped when its run is
complete and its manifest records the same spec (a run left by another grid spec is
re-executed, and the runner then refuses the folder with an error naming what differs), so a grid
can be stopped and run again.

Cells run on a local process pool by default, or on a Dask distributed cluster when a scheduler
address (or ``MEMLAB_DASK_SCHEDULER``) is given. A kernel that fails to start is retried; an
error inside the notebook is not (it would fail again) and is reported with the cell.

Ctrl-C or SIGTERM stops a local grid, its workers and their kernels (``memlab.gridpool``); a
stopped run never reaches ``complete``, so running the grid again redoes it and skips the rest.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from tqdm.auto import tqdm

from memlab.bench.runfolders import check_outside_runs
from memlab.bench.runner import is_complete, is_recorded, read_manifest
from memlab.bench.spec import RunSpec
from memlab.config import get_settings
from memlab.errors import ConfigError, MissingDependencyError
from memlab.gridpool import pool_map, sigterm_as_interrupt
from memlab.gridspec import (  # noqa: F401 - the grid's vocabulary, re-exported
    FULL,
    QUICK,
    SPECS,
    STANDARD,
    GridSpec,
    format_plan,
    load_spec,
    plan,
    validate_spec,
)
from memlab.notebook_files import notebook_path
from memlab.userfiles import writable_folder


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the grid; its complete cells are kept."""


def cell_parameters(cell: RunSpec, results_dir: Path) -> dict[str, Any]:
    """The papermill parameters of condition.ipynb for one cell: its spec's fields + out_dir."""
    return cell.identity() | {"out_dir": str(results_dir)}


class CellResult(BaseModel):
    run_id: str
    status: Literal["complete", "skipped", "failed"]
    seconds: float = 0.0
    attempts: int = 0
    notebook: str | None = None
    error: str | None = None


def _is_kernel_start_failure(exc: BaseException) -> bool:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError | ConfigError | FileNotFoundError):
        return False
    text = f"{type(exc).__name__}: {exc}".lower()
    return isinstance(exc, TimeoutError | RuntimeError | OSError) or "kernel" in text


def execute_cell(cell: RunSpec, results_dir: str, notebook: str, kernel_name: str = "python3",
                 retries: int = 2, start_timeout: float = 180) -> CellResult:
    """Execute condition.ipynb for one cell (skipped when its run is already complete).

    ``start_timeout``: seconds a kernel may take to start. On 2 cores busy with model calls a
    kernel took over 60 s (papermill's default) and four standard-grid cells failed at start.
    """
    import papermill

    results = Path(results_dir)
    if is_complete(cell.run_dir(results), cell):
        return CellResult(run_id=cell.run_id, status="skipped")
    output = results / "notebooks" / f"{cell.run_id}.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    manager = ipc_kernel_manager(output.with_suffix(".kernel.log"))
    start, attempt = time.perf_counter(), 0
    while True:
        attempt += 1
        try:
            in_own_event_loop(papermill.execute_notebook, notebook, str(output),
                              parameters=cell_parameters(cell, results),
                              kernel_name=kernel_name, progress_bar=False,
                              start_timeout=start_timeout, cwd=os.getcwd(),
                              kernel_manager_class=manager)
            return CellResult(run_id=cell.run_id, status="complete", attempts=attempt,
                              seconds=time.perf_counter() - start, notebook=str(output))
        except Exception as exc:  # noqa: BLE001 - every failure is reported with its cell
            if attempt <= retries and _is_kernel_start_failure(exc):
                time.sleep(min(2 ** attempt, 10))
                continue
            return CellResult(run_id=cell.run_id, status="failed", attempts=attempt,
                              seconds=time.perf_counter() - start, notebook=str(output),
                              error=_short_error(exc))


def score_recorded_cells(cells: list[RunSpec], results: Path,
                         progress: bool = True) -> list[CellResult]:
    """Score the cells of ``cells`` whose folders hold a recorded run of their spec
    (``runner.is_recorded``: finished, not scored there) in this process, with no model call
    and no notebook: a grid's committed records copied into ``results`` become complete in
    seconds a cell, where a notebook's kernel would cost more than the scoring."""
    from memlab import lab

    todo = [c for c in cells if is_recorded(c.run_dir(results), c)]
    done = []
    for cell in tqdm(todo, desc="scoring recorded cells", unit="cell", leave=False,
                     disable=not progress or not todo):
        start = time.perf_counter()
        try:
            lab.run(cell, results, progress=False)
            done.append(CellResult(run_id=cell.run_id, status="complete", attempts=1,
                                   seconds=time.perf_counter() - start))
        except Exception as exc:  # noqa: BLE001 - every failure is reported with its cell
            done.append(CellResult(run_id=cell.run_id, status="failed", attempts=1,
                                   seconds=time.perf_counter() - start, error=_short_error(exc)))
    return done


def in_own_event_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` in an empty context, closing the event loop Jupyter opens for it.

    jupyter_core keeps its event loop in a context variable, and a Dask worker copies one context
    into every task thread: two cells running at once would both drive the same loop
    ("This event loop is already running").
    """
    def call() -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            policy = asyncio.get_event_loop_policy()
            try:
                loop = policy.get_event_loop()
            except RuntimeError:  # no loop was opened in this thread
                loop = None
            if loop is not None and not loop.is_running():
                policy.set_event_loop(None)
                loop.close()

    return contextvars.Context().run(call)


def ipc_kernel_manager(kernel_log: Path | None = None) -> type:
    """A kernel manager whose kernel talks over Unix sockets, not loopback TCP (no open ports,
    and ipykernel has no unencrypted-TCP warning to print for every cell).

    Args:
        kernel_log: file the kernel process's own stdout and stderr are appended to (its
            cells' output is in the executed notebook either way). Without it they reach the
            terminal: ipykernel's tracebacks when a stopped grid shuts a busy kernel down, and
            an echo of everything the cells write to the process's file descriptors.
    """
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_ipc(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_unique(self) -> str:  # socket files <ip>-<n>, removed when the kernel stops
            return os.path.join(tempfile.gettempdir(), f"memlab-kernel-{uuid.uuid4().hex[:12]}")

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if kernel_log is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            with open(kernel_log, "ab") as log:  # the kernel holds its own copy of the file
                return await super()._async_launch_kernel(kernel_cmd, **kw | {
                    "stdout": log, "stderr": log})

    return IPCKernelManager


def _short_error(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"{ename}: {evalue}"
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"


def default_workers(cells: list[RunSpec]) -> int:
    """One process per core, at most 2: each local model then runs on its own core.

    llama.cpp defaults to half the cores per process; two single-threaded processes on 2 cores
    finished the quick grid about twice as fast as one process, and generation with 2 threads
    collapses when anything else runs (benchmarks/results/llm.json).
    """
    return max(1, min(2, os.cpu_count() or 1, len(cells)))


# Slowest conditions first, so a pool does not end waiting on one long cell (measured on the
# quick grid: sleep and hybrid call the model while storing, the others only to answer; the
# peers make a 1.5B call on every stored turn, LangMem about 20 s and mem0 about 9 s each on
# idle cores, hybrid about 3 s: benchmarks/results/peers.json).
_COST_RANK = {"graphiti": -3, "langmem": -2, "mem0": -1, "sleep": 0, "hybrid": 1,
              "episodic_summary": 2, "full_context": 3, "episodic": 4, "rag": 5, "vanilla": 6}


def by_expected_cost(cells: list[RunSpec]) -> list[RunSpec]:
    return sorted(cells, key=lambda c: (_COST_RANK.get(c.condition, 9), -c.span))


def _dask_map(task: Callable, cells: list[RunSpec], scheduler: Any) -> Iterator[CellResult]:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError as exc:
        raise MissingDependencyError(
            "a Dask scheduler was given but dask.distributed is not installed: "
            "pip install 'memlab[dask]'") from exc
    try:
        client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
    except ValueError as exc:  # distributed's word for an address it cannot parse
        raise ConfigError(f"--scheduler {scheduler!r} (MEMLAB_DASK_SCHEDULER): not a Dask "
                          f"scheduler address ({exc}); give one like tcp://10.0.0.5:8786") \
            from None
    futures = []
    try:
        futures = client.map(task, cells, pure=False)
        for future in dask_completed(futures):
            yield future.result()
    except BaseException:
        # Pending cells do not start; Dask cannot stop a cell already running on a worker.
        client.cancel(futures)
        raise
    finally:
        if client is not scheduler:
            client.close()


def scored_by_others(cells: list[RunSpec], results_dir: str | Path) -> list[str]:
    """The complete LTM cells of ``cells`` whose scores another scorer set wrote (their
    manifests' ``suite_params.scorers`` is not ``ltm_scorers.run_scorers_id()``): a grid keeps a
    complete cell's scores, so their tables would mix two sets. Deleting a cell's scores.jsonl
    has the next run score its recorded turns again, with no model call."""
    from memlab.bench.suites.ltm_scorers import run_scorers_id

    now = run_scorers_id()
    return [c.run_id for c in cells if c.suite == "ltm" and is_complete(c.run_dir(results_dir), c)
            and (read_manifest(c.run_dir(results_dir)).get("suite_params") or {})
            .get("scorers") != now]


def run_grid(cells: list[RunSpec], results_dir: str | Path, *, notebook: str | Path | None = None,
             workers: int | None = None, scheduler: Any = None, kernel_name: str = "python3",
             retries: int = 2, progress: bool = True) -> list[CellResult]:
    """Run every cell; return one CellResult per cell, in the order given.

    Args:
        workers: local processes (default: ``default_workers``); ignored with a scheduler.
        scheduler: a Dask scheduler address, a ``dask.distributed.Client``, or None for
            ``MEMLAB_DASK_SCHEDULER`` (unset: the local pool).

    Raises:
        GridInterrupted: on Ctrl-C or SIGTERM, once the local workers and their kernels have
            stopped (Dask: once the pending cells are cancelled).
    """
    from functools import partial

    check_outside_runs(results_dir)  # every cell would be refused: say so once, first
    results = writable_folder(results_dir, "results folder").resolve()
    notebook = Path(notebook or notebook_path("condition")).resolve()
    if not notebook.is_file():
        raise ConfigError(f"notebook {str(notebook)!r}: no such file")
    task = partial(execute_cell, results_dir=str(results), notebook=str(notebook),
                   kernel_name=kernel_name, retries=retries)
    scheduler = scheduler or get_settings().dask_scheduler
    try:
        with sigterm_as_interrupt():
            scored = {r.run_id: r for r in score_recorded_cells(cells, results, progress)}
    except KeyboardInterrupt as exc:  # a cell half scored keeps no scores.jsonl
        raise GridInterrupted(f"interrupted while scoring recorded cells in {results}; running "
                              "again scores the rest") from exc
    todo = by_expected_cost([c for c in cells if c.run_id not in scored
                             and not is_complete(c.run_dir(results), c)])
    done = scored | {c.run_id: CellResult(run_id=c.run_id, status="skipped") for c in cells
                     if c not in todo and c.run_id not in scored}
    bar = tqdm(total=len(cells), initial=len(done), desc="grid", unit="cell", leave=False,
               disable=not progress)  # cleared at the end: the command prints the outcome
    stream = (_dask_map(task, todo, scheduler) if scheduler
              else pool_map(task, todo, workers or default_workers(todo)))
    try:
        with sigterm_as_interrupt(), closing(stream):
            for result in (stream if todo else ()):
                done[result.run_id] = result
                bar.update(1)
                bar.set_postfix(failed=sum(r.status == "failed" for r in done.values()))
    except KeyboardInterrupt as exc:
        kept = sum(r.status != "failed" for r in done.values())
        raise GridInterrupted(f"interrupted; the {kept} complete cell(s) in {results} are kept "
                              "(running again skips them)") from exc
    finally:
        bar.close()
    return [done[c.run_id] for c in cells]
