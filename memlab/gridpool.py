"""The grid's local process pool: run cells in worker processes and stop them cleanly.

Ctrl-C or SIGTERM stops a local grid: pending cells are cancelled and each worker stops its cell
through papermill, which shuts the kernel down (a kernel runs in its own session, out of reach of
the terminal's Ctrl-C). A worker also stops when the grid process dies, even by SIGKILL, and a
kernel exits when its worker is gone (ipykernel polls its parent).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing.connection import wait
from typing import Any, TypeVar

from memlab.config import get_settings

Item = TypeVar("Item")
Result = TypeVar("Result")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A worker's kernel shutdown: interrupt, shutdown_request, SIGTERM and SIGKILL within 5 s.
STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def pool_map(task: Callable[[Item], Result], cells: list[Item], workers: int) -> Iterator[Result]:
    """``task(cell)`` for each cell on ``workers`` spawned processes, yielded as they finish."""
    if workers > 1 and get_settings().n_threads is None:
        # Share the cores: each worker's local model gets its slice (the kernels inherit the
        # environment, and read it through Settings).
        os.environ["MEMLAB_N_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(os.getpid(),))
    finished = False
    try:
        futures = [pool.submit(_execute_in_worker, task, cell) for cell in cells]
        for future in as_completed(futures):
            yield future.result()
        finished = True
    finally:
        if finished:
            pool.shutdown()
        else:  # interrupted, or the caller stopped iterating
            _stop_pool(pool)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel pending cells, SIGTERM the workers (each shuts its kernel down), wait, then kill."""
    workers = list((pool._processes or {}).values())  # Python 3.14: pool.terminate_workers()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    # Wait on the sentinels, not join(): the pool's own thread reaps the same processes.
    running = {worker.sentinel: worker for worker in workers}
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        while running and (left := deadline - time.monotonic()) > 0:
            for sentinel in wait(list(running), left):
                del running[sentinel]
    except KeyboardInterrupt:
        pass  # interrupted again: stop waiting; a kernel exits within 1 s of its worker
    for worker in running.values():
        worker.kill()


def _init_worker(parent_pid: int) -> None:
    """Pool initializer: an idle worker exits on a signal, and gets SIGTERM if the parent dies."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_idle_worker)
    if not _signal_on_parent_death(parent_pid):
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def _signal_on_parent_death(parent_pid: int) -> bool:
    """Linux: the kernel sends SIGTERM when the parent dies (SIGKILL included); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:  # died before prctl
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


def _exit_idle_worker(signum: int, frame: Any) -> None:
    os._exit(128 + signum)  # no kernel to shut down


def _stop_cell(signum: int, frame: Any) -> None:
    # Once: the exception unwinds papermill, whose finally shuts the kernel down. A second signal
    # (Ctrl-C reaches the whole process group, then the pool terminates the workers) must not
    # interrupt that shutdown.
    for other in STOP_SIGNALS:
        signal.signal(other, _ignore_signal)  # not SIG_IGN: a signal already caught would warn
    raise KeyboardInterrupt


def _ignore_signal(signum: int, frame: Any) -> None:
    pass


def _execute_in_worker(task: Callable[[Item], Result], cell: Item) -> Result:
    """``task(cell)`` in a pool worker; a signal stops the cell and then the worker."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_cell)
    try:
        return task(cell)
    except KeyboardInterrupt:
        os._exit(130)  # the kernel is shut down; take no further cell from the pool's queue
    finally:
        for signum in STOP_SIGNALS:
            signal.signal(signum, _exit_idle_worker)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the grid as Ctrl-C does (only the main thread may set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
