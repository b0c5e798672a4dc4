"""memlab inside the GoodAI LTM Benchmark's own runner (GoodAI's source, MIT, is not on PyPI).

``install`` copies a GoodAI checkout into a folder of its own (GoodAI writes its runs into its
checkout's ``data/``) and gives it a venv with the pinned packages of
``goodai_requirements.txt``; ``prepare_run`` writes a GoodAI configuration and its test
definitions (by default the published 1k definitions of the six types GoodAI scores without an
LLM); ``run_goodai`` runs GoodAI's runner on it, its agent being a memlab server
(``goodai_launch.py``). The runner opens a Tk progress window: without a display it runs under
``xvfb-run`` (Debian package ``xvfb``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import yaml
from pydantic import BaseModel

from memlab.bench.filler import filler_pair
from memlab.bench.goodai import TYPE_DIRS, load_definitions
from memlab.errors import ConfigError, MemlabError
from memlab.userfiles import OWNED_MARK, claim_folder

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "goodai_requirements.txt"
LAUNCHER = HERE / "goodai_launch.py"
# GoodAI config names of the types its current scorers judge without ever asking an LLM
# (trigger_response, jokes and locations_directions fall back to GPT when their rule fails).
RULE_ONLY_TYPES = ("colours", "shopping", "name_list", "sallyanne", "prospective_memory",
                   "spy_meeting")
TRIVIA_ITEMS = 3000
INSTALLED_MARK = ".memlab-installed"  # the install key of a finished install


class GoodAICheckout(BaseModel):
    """An installed GoodAI checkout: ``root/src`` (the source) and ``root/venv``."""

    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    def results(self, run_name: str, *, isolated: bool = False) -> Path:
        """GoodAI's results folder of ``run_name``: ``<agent>/<Test Type>/<id>_<rep>.json``
        (GoodAI names an isolated run ``<run name> (isolated)``)."""
        name = f"{run_name} (isolated)" if isolated else run_name
        return self.src / "data" / "tests" / name / "results"


def install_key(source: Path) -> str:
    """Hash of the pinned requirements, the launcher and the source's snapshot note."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    for path in (source / "SNAPSHOT.md", source / "runner" / "scheduler.py"):
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def install(source: str | Path, dest: str | Path, *, python: str = sys.executable,
            timeout_s: float = 1800) -> GoodAICheckout:
    """Copy GoodAI's ``source`` into ``dest/src`` and install its venv (skipped when ``dest``
    already holds this source with these pins).

    ``dest`` must be new, empty or made by memlab (``userfiles.claim_folder``); a reinstall
    replaces only the ``src`` and ``venv`` it made there.

    Raises:
        ConfigError: ``source`` is not a GoodAI checkout, or ``dest`` holds files memlab did
            not create.
        MemlabError: pip failed (its last lines are in the message).
    """
    source, checkout = Path(source), GoodAICheckout(root=Path(dest))
    if not (source / "runner" / "run_benchmark.py").is_file():
        raise ConfigError(f"{source}: not a GoodAI LTM Benchmark checkout (no "
                          "runner/run_benchmark.py)")
    marker = checkout.root / INSTALLED_MARK
    key = install_key(source)
    if marker.exists() and marker.read_text().strip() == key and checkout.python.exists():
        return checkout
    claim_folder(checkout.root, "GoodAI home (--home)", marks=(OWNED_MARK, INSTALLED_MARK))
    marker.unlink(missing_ok=True)
    for made in (checkout.src, checkout.root / "venv"):
        shutil.rmtree(made, ignore_errors=True)
    shutil.copytree(source, checkout.src)
    for path in [checkout.src, *checkout.src.rglob("*")]:  # the snapshot is read-only
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    write_trivia(checkout.src / "data" / "trivia" / "trivia.json")
    # SallyAnne reads the ToMi file (not in the snapshot) even when its tests are loaded, not
    # generated; memlab only loads definitions, so an empty file does
    (checkout.src / "data" / "tomi_data").mkdir(parents=True, exist_ok=True)
    (checkout.src / "data" / "tomi_data" / "test.txt").touch()
    _run([python, "-m", "venv", str(checkout.root / "venv")], timeout_s)
    pip = [str(checkout.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "-r", str(REQUIREMENTS)], timeout_s)
    _run([*pip, "--no-deps", "goodai-ltm==0.4.4"], timeout_s)
    marker.write_text(key + "\n")
    return checkout


def write_trivia(path: Path, seed: int = 0) -> None:
    """GoodAI's filler reads ``data/trivia/trivia.json`` (TriviaQA, not in the snapshot): write
    memlab's own generated question/answer pairs in its format instead."""
    rng = random.Random(seed)
    pairs = [filler_pair(rng) for _ in range(TRIVIA_ITEMS)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"Data": [{"Question": q, "AnswerValue": a} for q, a in pairs]}))


def prepare_run(checkout: GoodAICheckout, definitions: str | Path, *, run_name: str,
                types: tuple[str, ...] = RULE_ONLY_TYPES) -> Path:
    """Write GoodAI's configuration and test definitions for ``types`` (GoodAI config names)
    from a published definitions folder; the configuration file's path.

    Raises:
        ConfigError: as ``read_definitions``.
    """
    definitions = Path(definitions)
    config = read_definitions(definitions, run_name=run_name, types=types)
    target = checkout.src / "data" / "tests" / run_name / "definitions"
    shutil.rmtree(target.parent, ignore_errors=True)  # inside the checkout install() made
    for name in types:
        shutil.copytree(definitions / TYPE_DIRS[name], target / TYPE_DIRS[name])
    (target / "config.yml").write_text(yaml.safe_dump(config))
    out = checkout.src / "configurations" / "memlab" / f"{run_name.replace(' ', '_')}.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))
    return out


def read_definitions(definitions: str | Path, *, run_name: str,
                     types: tuple[str, ...] = RULE_ONLY_TYPES) -> dict:
    """GoodAI's configuration for ``run_name`` and ``types`` from a published definitions
    folder, checked before anything is installed or written.

    Raises:
        ConfigError: ``run_name`` is not a plain folder name, a type is unknown, or the folder
            has no ``config.yml`` or no definitions of a type, or one of them breaks a rule
            (``memlab.bench.goodai.load_definitions``: the file and the field named).
    """
    if run_name in ("", ".", "..") or Path(run_name).name != run_name:
        raise ConfigError(f"--run-name {run_name!r}: must be a plain name (GoodAI's folder of "
                          "the run), without '/' and not '.' or '..'")
    unknown = [name for name in types if name not in TYPE_DIRS]
    if unknown:
        raise ConfigError(f"--types: unknown GoodAI type(s) {', '.join(unknown)}; known: "
                          f"{', '.join(TYPE_DIRS)}")
    definitions = Path(definitions)
    config_path = definitions / "config.yml"
    if not config_path.is_file():
        raise ConfigError(f"{definitions}: no config.yml (a GoodAI definitions folder has one)")
    for name in types:
        folder = definitions / TYPE_DIRS[name]
        if not any(folder.glob("*.def.json")):
            raise ConfigError(f"{folder}: no test definitions of type {name}")
    load_definitions(definitions, types)  # config.yml and every file of these types, checked
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config.setdefault("config", {})["run_name"] = run_name
    config["datasets"]["datasets"] = [d for d in config["datasets"]["datasets"]
                                      if d["name"] in types]
    return config


def runner_command(checkout: GoodAICheckout, config: Path, server_url: str, *,
                   isolated: bool = False, session: dict | None = None,
                   timeout_s: float = 600) -> list[str]:
    """The command running GoodAI's runner with the memlab agent (under xvfb-run when no
    display is set)."""
    command = [str(checkout.python), str(LAUNCHER), "--checkout", str(checkout.src),
               "--server", server_url, "--timeout", str(timeout_s),
               "--session", json.dumps(session or {}), "--",
               "-c", str(config), "-a", "memlab", "-y", "-l", *(["-i"] if isolated else [])]
    if os.environ.get("DISPLAY"):
        return command
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        raise MemlabError("GoodAI's runner opens a Tk window and no display is set: install "
                          "Xvfb (apt-get install xvfb) or set DISPLAY")
    return [xvfb, "-a", *command]


def run_goodai(checkout: GoodAICheckout, config: Path, server_url: str, *,
               isolated: bool = False, session: dict | None = None,
               timeout_s: float = 600, budget_s: float = 6 * 3600) -> None:
    """Run GoodAI's runner to the end (``budget_s`` at most); its output goes to ours.

    Raises:
        MemlabError: the runner failed or ran out of time.
    """
    command = runner_command(checkout, config, server_url, isolated=isolated, session=session,
                             timeout_s=timeout_s)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "BROWSER": "true"}
    try:
        done = subprocess.run(command, cwd=checkout.src, env=env, timeout=budget_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise MemlabError(f"GoodAI's runner did not finish within {budget_s:g} s") from None
    if done.returncode != 0:
        raise MemlabError(f"GoodAI's runner exited with status {done.returncode} (its output "
                          "is above)")


def _run(command: list[str], timeout_s: float) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise MemlabError(f"{command[0]} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise MemlabError(f"{' '.join(command[:4])}... failed: {tail}")


class ServerProcess:
    """``memlab serve`` as a child process on a free loopback port, for GoodAI's runner.

    Args:
        args: ``memlab serve`` options (condition, model, workdir).
        start_s: deadline for its first healthy ``/health``.
    """

    def __init__(self, args: list[str], *, start_s: float = 300):
        self.args, self.start_s = args, start_s
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        import socket

        import httpx

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "memlab.cli", "serve", *self.args,
                                      "--port", str(port)], stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.3)
        self.__exit__()
        raise MemlabError(f"memlab serve did not start within {self.start_s:g} s")

    def __exit__(self, *_exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # finishes requests, flushes journals
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
