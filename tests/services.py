"""Throwaway servers for integration tests: redis-server, PostgreSQL and ``chroma run``.

Each starts on a random loopback port in its own temp folder and is killed afterwards. When a
binary is missing the test is skipped with the reason, unless ``MEMLAB_REQUIRE_SERVICES=1``
(set by ``.ci/run``), where it fails instead: use :func:`require_or_skip`.
"""

from __future__ import annotations

import os
import shutil
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

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"memlab-{self.name}-"))
        self.proc: subprocess.Popen | None = None
        self.log = self.dir / "server.log"

    def _spawn(self, args: list[str], **kwargs) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, **kwargs)

    def stop(self) -> None:
        """Kill the server process (data folder kept, so :meth:`start` can resume)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
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
