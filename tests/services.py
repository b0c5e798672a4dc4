"""Throwaway servers for integration tests: redis-server, PostgreSQL, ``chroma run``, a Dask
scheduler and its workers, and llama-cpp-python's OpenAI-compatible server.

Each starts on a random loopback port in its own temp folder and is killed afterwards. When a
binary is missing the test is skipped with the reason, unless ``MEMLAB_REQUIRE_SERVICES=1``
(set by ``.ci/run``), where it fails instead: use :func:`require_or_skip`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memlab.config import get_settings


def require_or_skip(reason: str) -> None:
    """Skip the test with ``reason``, or fail it when ``MEMLAB_REQUIRE_SERVICES=1``."""
    if get_settings().require_services:
        pytest.fail(f"MEMLAB_REQUIRE_SERVICES=1 but: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_binary(name: str, *extra_dirs: str) -> str | None:
    for folder in extra_dirs:
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate)
    return shutil.which(name)


def wait_until(check, timeout_s: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {timeout_s} s")


class _Server:
    """A child process on a loopback port, in a temp folder removed on :meth:`cleanup`."""

    name = "server"
    own_group = False  # True: the process and its children are stopped together

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"memlab-{self.name}-"))
        self.proc: subprocess.Popen | None = None
        self.log = self.dir / "server.log"

    def _spawn(self, args: list[str], **kwargs) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=self.own_group, **kwargs)

    def stop(self) -> None:
        """Kill the server process (data folder kept, so :meth:`start` can resume)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.own_group:
            try:  # children that outlived their parent (a worker process, a kernel)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def start(self):  # pragma: no cover - overridden
        raise NotImplementedError


class RedisServer(_Server):
    """``redis-server`` without persistence; :meth:`stop` then :meth:`start` simulates a crash."""

    name = "redis"

    def __init__(self) -> None:
        self.binary = find_binary("redis-server")
        if self.binary is None:
            require_or_skip("redis-server not on PATH (apt-get install -y redis-server)")
        super().__init__()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self._spawn(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "no",
            ]
        )
        wait_until(self._ping, 15, "redis-server", self.proc)
        return self

    def _ping(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")


class PostgresServer(_Server):
    """A PostgreSQL cluster via initdb + postgres; runs as user ``postgres`` when we are root."""

    name = "postgres"

    def __init__(self) -> None:
        self.initdb = find_binary("initdb", "/usr/local/bin")
        self.postgres = find_binary("postgres", "/usr/local/bin")
        if self.initdb is None or self.postgres is None:
            require_or_skip("PostgreSQL binaries (initdb, postgres) not found")
        super().__init__()
        self.prefix: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            user = os.environ.get("MEMLAB_PG_OS_USER", "postgres")
            runuser = shutil.which("runuser")
            if runuser is None:
                require_or_skip("running as root and runuser is missing: cannot start PostgreSQL")
            shutil.chown(self.dir, user=user)
            self.prefix = [runuser, "-u", user, "--"]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> PostgresServer:
        data = self.dir / "data"
        if not data.exists():
            subprocess.run(
                [
                    *self.prefix,
                    self.initdb,
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
        self._spawn(
            [
                *self.prefix,
                self.postgres,
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                str(self.dir),
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "synchronous_commit=off",
            ]
        )
        wait_until(self._ready, 60, "postgres", self.proc)
        return self

    def _ready(self) -> bool:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", connect_timeout=2
        ) as conn:
            return conn.execute("select 1").fetchone() == (1,)


class ChromaServer(_Server):
    """``chroma run --path DIR --port P`` from the chromadb package, telemetry off."""

    name = "chroma"

    def __init__(self) -> None:
        self.binary = find_binary("chroma", str(Path(sys.executable).parent))
        if self.binary is None:
            require_or_skip("the chroma CLI (chromadb package) is not installed")
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaServer:
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self._spawn(
            [
                self.binary,
                "run",
                "--path",
                str(self.dir / "data"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            env=env,
        )
        wait_until(self._heartbeat, 60, "chroma run", self.proc)
        return self

    def _heartbeat(self) -> bool:
        import httpx

        return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=2).status_code == 200


def _cli(name: str, package: str) -> str:
    """A console script of the running interpreter's environment (``dask``)."""
    binary = find_binary(name, str(Path(sys.executable).parent))
    if binary is None:
        require_or_skip(f"the {name} CLI is not installed (pip install '{package}')")
    return binary


class DaskScheduler(_Server):
    """``dask scheduler`` on loopback, no dashboard."""

    name = "dask-scheduler"

    def __init__(self) -> None:
        self.binary = _cli("dask", "dask[distributed]")
        super().__init__()

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self) -> DaskScheduler:
        self._spawn([self.binary, "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                     "--no-dashboard"], cwd=self.dir)
        wait_until(self._accepts, 60, "dask scheduler", self.proc)
        return self

    def _accepts(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True


class DaskWorkers(_Server):
    """``dask worker`` with ``n`` single-threaded worker processes (each behind a nanny),
    started with ``env``; :meth:`start` returns once they are connected to ``scheduler``."""

    name = "dask-workers"
    own_group = True

    def __init__(self, scheduler: DaskScheduler, n: int, env: dict[str, str]) -> None:
        self.binary = _cli("dask", "dask[distributed]")
        self.scheduler, self.n, self.env = scheduler, n, env
        super().__init__()

    def start(self) -> DaskWorkers:
        from dask.distributed import Client

        self._spawn([self.binary, "worker", self.scheduler.address, "--host", "127.0.0.1",
                     "--nworkers", str(self.n), "--nthreads", "1", "--no-dashboard",
                     "--local-directory", str(self.dir)], cwd=self.dir, env=self.env)
        with Client(self.scheduler.address, timeout=30) as client:
            client.wait_for_workers(self.n, timeout=90)
        return self


class LlamaCppServer(_Server):
    """llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on one
    thread, serving the GGUF ``model`` as ``alias``; it answers one request at a time."""

    name = "llama-cpp-server"

    def __init__(self, model: Path, alias: str, n_ctx: int = 2048) -> None:
        try:
            import llama_cpp.server.app  # noqa: F401 - the server's extras are installed
        except ImportError as exc:
            require_or_skip(f"llama-cpp-python's server needs its extras: {exc}")
        self.model, self.alias, self.n_ctx = model, alias, n_ctx
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppServer:
        self._spawn([sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
                     "--model_alias", self.alias, "--host", "127.0.0.1", "--port",
                     str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", "1",
                     "--n_threads_batch", "1", "--verbose", "False"], cwd=self.dir)
        wait_until(self._models, 120, "llama_cpp.server", self.proc)
        return self

    def _models(self) -> bool:
        import httpx

        return httpx.get(f"{self.url}/models", timeout=2).status_code == 200
