"""The papermill grid: conditions x suites x spans x seeds, one notebook execution per cell.

Each cell is a RunSpec; it executes the shipped ``condition.ipynb`` with the spec's fields as parameters.
Paths follow from the spec alone: the run lands in ``<results_dir>/<run_id>/`` and the executed
notebook in ``<results_dir>/notebooks/<run_id>.ipynb`` (``RunSpec.run_id``). A cell is skipped when
its run is complete and its manifest records the same spec (a run left by another grid spec is
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from tqdm.auto import tqdm

from memlab.bench.base import SUITES
from memlab.bench.runner import is_complete
from memlab.bench.spec import RunSpec
from memlab.config import get_settings
from memlab.errors import ConfigError, MissingDependencyError, fields_message
from memlab.gridpool import pool_map, sigterm_as_interrupt
from memlab.memory.base import MEMORIES
from memlab.notebooks import notebook_path
from memlab.userfiles import load_yaml, writable_folder


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the grid; its complete cells are kept."""


def cell_parameters(cell: RunSpec, results_dir: Path) -> dict[str, Any]:
    """The papermill parameters of condition.ipynb for one cell: its spec's fields + out_dir."""
    return cell.identity() | {"out_dir": str(results_dir)}


class GridSpec(BaseModel):
    """A grid as data (see ``QUICK`` and ``FULL``; ``load_spec`` reads the same from YAML).

    Attributes:
        spans: per suite, the memory spans (ltm) or context lengths (persona) in tokens.
        suite_options: per suite, extra generator options passed to the suite.
        expected_minutes: wall-clock estimate on a 2-core machine with the local 0.5B model.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    conditions: list[str] = Field(default_factory=MEMORIES.names, min_length=1)
    suites: list[str] = Field(default_factory=SUITES.names, min_length=1)
    spans: dict[str, list[int]]
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    suite_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    llm: str = "local"
    llm_model: str | None = None
    embedder: str = "minilm"
    sleep_probes: bool = Field(True, description="the sleep cells also run Table 2's protocol")
    expected_minutes: float | None = None

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        return [MEMORIES.check(v) for v in value]

    @field_validator("suites")
    @classmethod
    def _known_suites(cls, value: list[str]) -> list[str]:
        return [SUITES.check(v) for v in value]

    def cells(self, **overrides: Any) -> list[RunSpec]:
        """Every cell of the grid, validated before anything runs.

        Args:
            **overrides: llm / llm_model / embedder replacing the spec's (None: keep).

        Raises:
            ConfigError: a suite without spans, a duplicate cell, or a field no RunSpec takes
                (named with the cell it belongs to).
        """
        base = {"llm": self.llm, "llm_model": self.llm_model, "embedder": self.embedder} | {
            k: v for k, v in overrides.items() if v is not None}
        missing = [suite for suite in self.suites if not self.spans.get(suite)]
        if missing:
            raise ConfigError(f"grid {self.name!r}: spans has no size for suite(s) {missing}")
        cells = [RunSpec.parse({"condition": c, "suite": s, "span": span, "seed": seed,
                                "suite_options": self.suite_options.get(s, {}),
                                "probes_sleep": self.sleep_probes and c == "sleep", **base},
                               f"grid {self.name!r}, cell {s}/{c}/{span}/s{seed}")
                 for s in self.suites for span in self.spans[s]
                 for c in self.conditions for seed in self.seeds]
        ids = [cell.run_id for cell in cells]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ConfigError(f"grid {self.name!r}: cells repeat ({', '.join(repeated)}): "
                              "a condition, span or seed is listed twice")
        return cells


# The quick paper's LTM types: the four with the fewest needles (3-5 answered turns each), one
# of each kind of memory: the latest value (colours), a list (jokes), a deferred action
# (prospective_memory) and a standing instruction (trigger_response). The full grid runs all nine.
QUICK_LTM_TYPES = ["colours", "jokes", "prospective_memory", "trigger_response"]
PAPER_SUITES = ["ltm", "persona"]  # the generated suites: they need no data from the user
QUICK = GridSpec(
    name="quick", suites=PAPER_SUITES,
    description=("All seven conditions on both suites at a small size, one seed (make paper): "
                 "LTM at a 1k-token span with one example of 4 test types, a persona history of "
                 "1k tokens on 1 topic (9 questions, every question type)."),
    spans={"ltm": [1000], "persona": [1000]},
    suite_options={"ltm": {"examples": 1, "types": QUICK_LTM_TYPES}, "persona": {"n_topics": 1}},
    expected_minutes=20,
)
FULL = GridSpec(
    name="full", suites=PAPER_SUITES,
    description=("The paper grid: LTM at spans 1k/4k/8k with 3 examples per test type, persona "
                 "histories of 8k and 32k tokens, three seeds."),
    spans={"ltm": [1000, 4000, 8000], "persona": [8000, 32000]},
    seeds=[0, 1, 2],
    suite_options={"ltm": {"examples": 3}},
    expected_minutes=48 * 60,
)
SPECS = {"quick": QUICK, "full": FULL}


def validate_spec(values: dict[str, Any], source: str) -> GridSpec:
    """GridSpec from ``values``; a bad field raises ConfigError naming it and the rule."""
    try:
        return GridSpec.model_validate(values)
    except ValidationError as exc:
        message = fields_message(exc.errors(), whole="spec")
        raise ConfigError(f"grid spec {source}: {message}") from exc


def load_spec(name_or_path: str | Path) -> GridSpec:
    """A built-in spec ("quick", "full") or a YAML file with GridSpec's fields."""
    if str(name_or_path) in SPECS:
        return SPECS[str(name_or_path)]
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(f"grid spec {str(name_or_path)!r}: not a built-in spec "
                          f"({', '.join(SPECS)}) nor a YAML file")
    values = load_yaml(path, "grid spec") or {}
    if not isinstance(values, dict):
        raise ConfigError(f"grid spec {path}: expected a mapping of GridSpec fields")
    return validate_spec(values, str(path))


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
                 retries: int = 2, start_timeout: float = 60) -> CellResult:
    """Execute condition.ipynb for one cell (skipped when its run is already complete)."""
    import papermill

    results = Path(results_dir)
    if is_complete(cell.run_dir(results), cell):
        return CellResult(run_id=cell.run_id, status="skipped")
    output = results / "notebooks" / f"{cell.run_id}.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    start, attempt = time.perf_counter(), 0
    while True:
        attempt += 1
        try:
            in_own_event_loop(papermill.execute_notebook, notebook, str(output),
                              parameters=cell_parameters(cell, results),
                              kernel_name=kernel_name, progress_bar=False,
                              start_timeout=start_timeout, cwd=os.getcwd(),
                              kernel_manager_class=ipc_kernel_manager())
            return CellResult(run_id=cell.run_id, status="complete", attempts=attempt,
                              seconds=time.perf_counter() - start, notebook=str(output))
        except Exception as exc:  # noqa: BLE001 - every failure is reported with its cell
            if attempt <= retries and _is_kernel_start_failure(exc):
                time.sleep(min(2 ** attempt, 10))
                continue
            return CellResult(run_id=cell.run_id, status="failed", attempts=attempt,
                              seconds=time.perf_counter() - start, notebook=str(output),
                              error=_short_error(exc))


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


def ipc_kernel_manager() -> type:
    """A kernel manager whose kernel talks over Unix sockets, not loopback TCP (no open ports,
    and ipykernel has no unencrypted-TCP warning to print for every cell)."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_ipc(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_unique(self) -> str:  # socket files <ip>-<n>, removed when the kernel stops
            return os.path.join(tempfile.gettempdir(), f"memlab-kernel-{uuid.uuid4().hex[:12]}")

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
# quick grid: sleep and hybrid call the model while storing, the others only to answer).
_COST_RANK = {"sleep": 0, "hybrid": 1, "episodic_summary": 2, "full_context": 3, "episodic": 4,
              "rag": 5, "vanilla": 6}


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

    results = writable_folder(results_dir, "results folder").resolve()
    notebook = Path(notebook or notebook_path("condition")).resolve()
    if not notebook.is_file():
        raise ConfigError(f"notebook {str(notebook)!r}: no such file")
    task = partial(execute_cell, results_dir=str(results), notebook=str(notebook),
                   kernel_name=kernel_name, retries=retries)
    scheduler = scheduler or get_settings().dask_scheduler
    todo = by_expected_cost([c for c in cells if not is_complete(c.run_dir(results), c)])
    done = {c.run_id: CellResult(run_id=c.run_id, status="skipped") for c in cells
            if c not in todo}
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
