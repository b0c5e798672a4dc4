"""Helpers of the bad-input and fault tests (no tests here): the command as a user runs it, what
it printed, and checksums of a folder before and after."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` by relative path (what "nothing changed" compares)."""
    folder = Path(folder)
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): _file_digest(p)
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except PermissionError:  # a file a test made unreadable: its size and time stand in
        stat = path.stat()
        return f"unreadable:{stat.st_size}:{stat.st_mtime_ns}"


def visible_lines(stderr: str) -> list[str]:
    """The lines a terminal would show (a progress bar's ``\\r`` rewrites are one line)."""
    lines = [line.rsplit("\r", 1)[-1] for line in stderr.split("\n")]
    return [line for line in lines if line.strip()]


def memlab_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
               prefix: tuple[str, ...] = (), timeout: float = 120) -> subprocess.CompletedProcess:
    """``memlab <args>`` in a child process (``prefix``: e.g. an ``unshare`` wrapper).

    Output is decoded without newline translation, so a progress bar's ``\r`` stays one.
    """
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run([*prefix, sys.executable, "-m", "memlab.cli", *args],
                          capture_output=True, timeout=timeout, cwd=cwd, env=full_env)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


def unshare_prefix(before: str, after: str = "") -> tuple[str, ...]:
    """Run the command between ``before`` (mounts) and ``after`` in a new user and mount
    namespace; the command's exit status is kept.

    Unprivileged (``unshare -Urm``): a read-only bind mount or a small tmpfs without root.
    """
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed to mount a read-only or full file system"
    script = f'{before} && {{ "$@"; rc=$?; {after}; exit $rc; }}' if after \
        else f'{before} && exec "$@"'
    return (unshare, "-Urm", "sh", "-c", script, "sh")


class ChatServer:
    """A loopback OpenAI-compatible server whose answer is a hash of the prompt (deterministic,
    like temperature 0), or HTTP 503 while ``down``; ``requests`` counts the chat calls."""

    def __init__(self, tag: str = "chat") -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.tag, self.down, self.requests = tag, False, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                server.requests += 1
                status, payload = (503, {"error": {"message": "down"}}) if server.down \
                    else (200, server.answer(body["messages"]))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def answer(self, messages: list[dict]) -> dict:
        text = messages[-1]["content"]
        digest_ = hashlib.sha1(json.dumps(messages).encode()).hexdigest()[:6]
        reply = "A" if "Answer with the letter" in text else f"{self.tag} noted {digest_}."
        return {"model": "m", "choices": [{"message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 4}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def without_root() -> tuple[str, ...]:
    """A prefix that makes file permissions bind the command: as root, a new user namespace
    (``unshare -U``: root keeps its uid but loses the power to override permissions)."""
    if os.geteuid() != 0:
        return ()
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed to test permissions as root"
    return (unshare, "-U")
