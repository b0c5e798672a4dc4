"""Run namespaces left on a Redis server: how many keys each holds, which run it belongs to.

Every run keeps its operating memory on Redis under ``memlab:<run namespace>:``
(``memlab.stores.base.run_namespace``) when ``MEMLAB_REDIS_URL`` is set, and nothing removes it
when the run ends: its results are files, so a finished run's keys only take up room. A run
whose lock no process holds (complete, failed or stopped) may lose them: a resume rebuilds its
memory from its journals and purges the namespace first anyway.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memlab.bench.runlog import is_locked
from memlab.bench.runner import read_manifest
from memlab.memory._backends import purge_namespace
from memlab.stores.base import KV_STORES, run_namespace
from memlab.stores.operating import REDIS_PREFIX


@dataclass(frozen=True)
class Namespace:
    """One run namespace on the server.

    Attributes:
        keys: how many Redis keys it holds.
        run: the run folder it belongs to (None: none under the folders searched).
        status: the run's manifest status, ``running`` while a process holds its lock.
    """

    name: str
    keys: int
    run: Path | None = None
    status: str = ""

    @property
    def finished(self) -> bool:
        """Its run is on disk and no process is writing it."""
        return self.run is not None and self.status != "running"


def redis_namespaces(url: str) -> Counter[str]:
    """Every run namespace on the Redis server at ``url`` with its number of keys."""
    kv = KV_STORES.create("redis", url=url, namespace=REDIS_PREFIX)
    try:
        return Counter(key.split(":", 1)[0] for key in kv.keys())
    finally:
        kv.close()


def find_namespaces(url: str, results: list[Path]) -> list[Namespace]:
    """The namespaces on ``url``, each with its run among the runs under ``results``."""
    from memlab.report.data import run_dirs

    runs = {run_namespace(d): d for folder in results if Path(folder).is_dir()
            for d in run_dirs(folder)}
    found = []
    for name, keys in sorted(redis_namespaces(url).items()):
        run = runs.get(name)
        status = "" if run is None else "running" if is_locked(run) else \
            str(read_manifest(run).get("status") or "not started")
        found.append(Namespace(name, keys, run, status))
    return found


def remove_namespace(namespace: Namespace) -> None:
    """Delete everything stored under the namespace on every configured server."""
    purge_namespace(namespace.name)
