"""``memlab lab`` starts a real JupyterLab, and the tour notebook runs in that server's kernel.

As root (a container, a VM) JupyterLab refuses to start without ``--allow-root``, and ``memlab
lab`` used to exit with the server's log there; it now passes the flag and says so on stderr.
The server test starts ``memlab lab --no-browser`` on a free loopback port with a token
(``JUPYTER_TOKEN``) and HOME and Jupyter's folders in a temp folder, waits for the Lab page,
creates a kernel over the REST API and executes ``tour.ipynb`` (FakeLLM, hashing embedder,
injected after its parameters cell as papermill does) cell by cell over the kernel's websocket,
then stops the server's process group. It runs as whoever runs the tests: root here and in CI
(the case that failed), a normal user on a developer's machine. Running it as ``nobody`` from
root is not possible here (this venv's python lives under /root, mode 700), so the flag choice
for a normal user is also covered without a server. Marked ``integration``; without JupyterLab
it skips, or fails under ``MEMLAB_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from services import free_port, require_or_skip, wait_until

from memlab import cli
from memlab.cli import runs
from memlab.notebook_files import notebook_path

ROOT_LINE = "lab: running as root: JupyterLab started with --allow-root"
TOUR = {"llm": "fake", "embedder": "hashing", "condition": "sleep"}
START_S, CELL_S, STOP_S = 90, 120, 20  # deadlines: server up, one cell, server gone


# --- which flags: no server -------------------------------------------------------------------
def test_the_command_has_allow_root_only_as_root(tmp_path):
    user = runs.jupyterlab_command(tmp_path, 8890, browser=True, as_root=False)
    assert user == [sys.executable, "-m", "jupyterlab", f"--notebook-dir={tmp_path}",
                    "--port=8890"]
    root = runs.jupyterlab_command(tmp_path, 8890, browser=False, as_root=True)
    assert root == [*user, "--no-browser", "--allow-root"]


@pytest.mark.parametrize(("euid", "flagged"), [(0, True), (1000, False)])
def test_lab_chooses_the_flag_from_the_effective_user(tmp_path, monkeypatch, capsys, euid,
                                                      flagged):
    launched, find_spec = [], importlib.util.find_spec
    monkeypatch.setattr("importlib.util.find_spec",  # JupyterLab "installed"; nothing else changes
                        lambda name, *a: object() if name == "jupyterlab" else find_spec(name, *a))
    monkeypatch.setattr("subprocess.call", lambda command: launched.append(command) or 0)
    monkeypatch.setattr("os.geteuid", lambda: euid)
    assert cli.main(["lab", "--dir", str(tmp_path / "nb"), "--no-browser"]) == 0
    assert ("--allow-root" in launched[0]) is flagged
    assert (ROOT_LINE in capsys.readouterr().err) is flagged


# --- a real server ----------------------------------------------------------------------------
@dataclass
class Lab:
    port: int
    token: str
    log: Path
    folder: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def memlab_lab(base: Path) -> Iterator[Lab]:
    """``memlab lab --dir base/notebooks``, HOME and Jupyter's folders in ``base``."""
    lab = Lab(free_port(), secrets.token_hex(16), base / "lab.log", base / "notebooks")
    environment = {"HOME": base / "home", "JUPYTER_TOKEN": lab.token,
                   "JUPYTER_CONFIG_DIR": base / "jupyter-config",
                   "JUPYTER_RUNTIME_DIR": base / "jupyter-runtime",
                   "MEMLAB_CACHE_DIR": base / "cache", "PYTHONPATH": os.environ.get("PYTHONPATH")}
    command = ["env", *(f"{k}={v}" for k, v in environment.items() if v is not None),
               sys.executable, "-m", "memlab.cli", "lab", "--dir", str(lab.folder),
               "--port", str(lab.port), "--no-browser"]
    with open(lab.log, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=base,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        try:
            wait_until(lambda: lab_page(lab).status_code == 200, START_S, "memlab lab", proc)
        except RuntimeError as exc:
            pytest.fail(f"{exc}; its output:\n{lab.text()[-4000:]}")
        yield lab
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """Terminate the whole process group (memlab, JupyterLab, its kernels) and wait it out."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(RuntimeError):
            wait_until(lambda: not group_running(proc.pid), STOP_S, "the server's processes")
            break
    proc.wait(timeout=STOP_S)
    assert not group_running(proc.pid), "memlab lab's processes outlived SIGKILL"


def group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie waiting to be reaped does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if state != "Z" and int(group) == pgid:
                return True
    return False


def lab_page(lab: Lab):
    import httpx

    return httpx.get(f"{lab.url}/lab?token={lab.token}", timeout=5)


def tour_cells(workdir: Path) -> list[str]:
    """The tour's code cells with the test's parameters injected after its parameters cell."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    notebook = parameterize_notebook(load_notebook_node(str(notebook_path("tour"))),
                                     {**TOUR, "workdir": str(workdir)})
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def execute(channel, code: str) -> tuple[dict, str]:
    """Run ``code`` over the kernel's websocket: its execute_reply, and the text it showed."""
    msg_id = uuid.uuid4().hex
    channel.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": uuid.uuid4().hex, "version": "5.3"},
        "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": True,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    reply, idle, shown = None, False, []
    deadline = time.monotonic() + CELL_S
    while reply is None or not idle:
        channel.settimeout(max(0.1, deadline - time.monotonic()))
        message = json.loads(channel.recv())  # raises WebSocketTimeoutException at the deadline
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "execute_reply":
            reply = content
        elif kind == "status":
            idle = content["execution_state"] == "idle"
        elif kind == "stream":
            shown.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            shown.append(content["data"].get("text/plain", ""))
    return reply, "".join(shown)


def run_tour(lab: Lab) -> str:
    """Create a kernel through the REST API, execute every tour cell in it; what it showed."""
    import httpx
    import websocket

    auth = {"Authorization": f"token {lab.token}"}
    kernel = httpx.post(f"{lab.url}/api/kernels", json={"name": "python3"}, headers=auth,
                        timeout=30)
    assert kernel.status_code == 201, kernel.text
    channel = websocket.create_connection(
        f"ws://127.0.0.1:{lab.port}/api/kernels/{kernel.json()['id']}/channels", header=auth,
        timeout=CELL_S)
    shown = []
    try:
        for code in tour_cells(lab.folder / "tour-run"):
            reply, text = execute(channel, code)
            assert reply["status"] == "ok", (
                f"cell failed:\n{code}\n{reply.get('ename')}: {reply.get('evalue')}")
            shown.append(text)
    finally:
        channel.close()
    return "\n".join(shown)


@pytest.mark.integration
def test_memlab_lab_serves_jupyterlab_and_runs_the_tour_in_its_kernel(tmp_path):
    if importlib.util.find_spec("jupyterlab") is None:
        require_or_skip("JupyterLab is not installed: pip install 'memlab[lab]'")
    (tmp_path / "home").mkdir()
    with memlab_lab(tmp_path) as lab:
        page = lab_page(lab)
        assert page.status_code == 200 and "<title>JupyterLab</title>" in page.text
        assert (ROOT_LINE in lab.text()) is (os.geteuid() == 0), lab.text()[-4000:]
        shown = run_tour(lab)
    assert "Porto" in shown and "episodes_considered" in shown
