"""The agent server under uvicorn over real sockets: malformed requests answered (never a hang),
abandoned requests not stored, SIGTERM under load loses no acknowledged turn, start-up errors."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from services import free_port, wait_until

from memlab.config import get_settings
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.server import SessionManager, create_app

BODY = b'{"history": "", "message": "hi"}'


class LiveServer:
    """uvicorn serving ``app`` in a thread on a free loopback port."""

    def __init__(self, app):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_until(lambda: self.server.started, 15, "uvicorn")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(15)

    def raw(self, data: bytes, *, close_after: float | None = None, wait_s: float = 10) -> bytes:
        """Send raw bytes; read until the server closes (or hang up after ``close_after``)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=wait_s) as conn:
            conn.sendall(data)
            if close_after is not None:
                time.sleep(close_after)
                return b""
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)


def make_app(workdir, llm=None, **settings):
    manager = SessionManager(workdir, condition="rag", llm=llm or FakeLLM(default="hi"),
                             embedder=HashingEmbedder())
    return create_app(manager, settings=get_settings(**settings)), manager


@pytest.mark.parametrize("header, status", [
    (b"Content-Length: abc\r\n", b"400"),
    (b"Content-Length: -5\r\n", b"400"),
    (b"Content-Length: 99999999999\r\n", b"413"),
    (b"Content-Length: 500\r\n", b"408"),  # announces more than it sends
    (b"Transfer-Encoding: chunked\r\n", b"408"),  # a chunked body that never ends
])
def test_malformed_or_stalled_bodies_are_answered_and_closed(tmp_path, header, status):
    app, manager = make_app(tmp_path, server_read_timeout_s=1)
    with LiveServer(app) as live:
        request = b"POST /turn HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        body = BODY if b"chunked" not in header else b"5\r\nabcde\r\n"
        started = time.monotonic()
        answer = live.raw(request + header + b"\r\n" + body)
        assert answer.split(b" ")[1] == status, answer
        assert time.monotonic() - started < 8  # answered and closed, not left hanging
        assert not (tmp_path / "sessions" / "default" / "journal.jsonl").exists()


def test_a_request_without_content_length_has_an_empty_body(tmp_path):
    app, _ = make_app(tmp_path)
    with LiveServer(app) as live:
        answer = live.raw(b"POST /turn HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert b" 422 " in answer.split(b"\r\n")[0] and b"body" in answer


def test_a_turn_whose_client_hung_up_is_not_stored(tmp_path):
    release = threading.Event()

    def slow(_messages):
        release.wait(3)
        return "too late"

    app, manager = make_app(tmp_path, llm=FakeLLM([slow, "in time"]))
    with LiveServer(app) as live:
        sid = httpx.post(f"{live.url}/sessions", json={}).json()["id"]
        body = b'{"message": "remember 42"}'
        live.raw(b"POST /sessions/" + sid.encode() + b"/turn HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body, close_after=0.5)
        time.sleep(0.5)  # the server notices the hang-up while the model still runs
        release.set()
        wait_until(lambda: not manager.get(sid).lock.locked(), 10, "the abandoned turn")
        ok = httpx.post(f"{live.url}/sessions/{sid}/turn", json={"message": "second"}, timeout=10)
        assert ok.status_code == 200 and ok.json()["turn_number"] == 1
        stored = httpx.get(f"{live.url}/sessions/{sid}/memory").json()["stored"]
        assert [s["user"] for s in stored] == ["second"]


# ---------------------------------------------------------------- the `memlab serve` process
def start_serve(workdir: Path, port: int, *extra: str, env_extra=None) -> subprocess.Popen:
    env = {**os.environ, "MEMLAB_CACHE_DIR": str(workdir / "cache"), **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "memlab.cli", "serve", "--llm", "fake", "--embedder", "hashing",
         "--workdir", str(workdir), "--port", str(port), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_healthy(url: str, proc: subprocess.Popen) -> None:
    def healthy():
        try:
            return httpx.get(f"{url}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(healthy, 60, "memlab serve", proc)


def hammer(url, session_ids, acked, stop, worker) -> None:
    """Send turns and filler until the server goes away; record what it acknowledged."""
    with httpx.Client(timeout=10) as client:
        for n in range(10_000):
            if stop.is_set():
                return
            sid = session_ids[(worker + n) % len(session_ids)]
            text = f"w{worker}-n{n}"
            route, body = (("turn", {"message": text}) if n % 2 else
                           ("observe", {"user": text, "assistant": "ok"}))
            try:
                answer = client.post(f"{url}/sessions/{sid}/{route}", json=body)
            except httpx.HTTPError:
                return
            if answer.status_code == 200:
                acked.append((sid, text))


def test_sigterm_under_load_loses_no_acknowledged_turn(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_serve(tmp_path, port)
    try:
        wait_healthy(url, proc)
        ids = [httpx.post(f"{url}/sessions", json={}).json()["id"] for _ in range(4)]
        acked: list[tuple[str, str]] = []
        stop = threading.Event()
        workers = [threading.Thread(target=hammer, args=(url, ids, acked, stop, w))
                   for w in range(6)]
        for worker in workers:
            worker.start()
        wait_until(lambda: len(acked) >= 150, 60, "150 acknowledged turns")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        stop.set()
        for worker in workers:
            worker.join(30)
    finally:
        proc.kill()
    # uvicorn re-raises SIGTERM once its graceful shutdown is done
    assert proc.returncode == -signal.SIGTERM and "Traceback" not in err
    assert "4 open sessions closed" in out
    journals = {sid: [json.loads(line) for line in
                      (tmp_path / "sessions" / sid / "journal.jsonl").read_text().splitlines()]
                for sid in ids}
    stored = [(sid, r["user"]) for sid, records in journals.items() for r in records]
    assert len(stored) == len(set(stored))  # nothing stored twice
    assert set(acked) <= set(stored)  # every acknowledged turn is durable
    proc = start_serve(tmp_path, port)  # and a restarted server remembers it
    try:
        wait_healthy(url, proc)
        remembered = {(sid, s["user"]) for sid in ids for s in
                      httpx.get(f"{url}/sessions/{sid}/memory", params={"limit": 100_000}
                                ).json()["stored"]}
        assert set(acked) <= remembered
        assert httpx.get(f"{url}/sessions/{ids[0]}").json()["turns"] == len(journals[ids[0]])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_serve_refuses_a_port_in_use_and_an_open_host_without_token(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_serve(tmp_path, port)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1
    assert f"--port {port}" in err
    proc = start_serve(tmp_path, free_port(), "--host", "0.0.0.0",
                       env_extra={"MEMLAB_API_TOKEN": " "})  # blank: no token
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 2 and "MEMLAB_API_TOKEN" in err and "Traceback" not in err


@pytest.mark.parametrize("port, rule", [("70000", "0..65535"), ("abc", "whole number")])
def test_serve_refuses_a_port_that_is_not_one(tmp_path, port, rule):
    done = subprocess.run([sys.executable, "-m", "memlab.cli", "serve", "--port", port],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "--port" in done.stderr and rule in done.stderr
