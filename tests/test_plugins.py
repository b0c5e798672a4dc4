"""Plugins: the names other packages declare as entry points join memlab's registries.

Fake distributions are written as ``<name>-<version>.dist-info`` folders on a path of their own
(entry points are read from dist-info on sys.path); the example plugin under
examples/memlab-recency is really installed, into a temp folder, by pip, offline.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.errors import UnknownBackendError
from memlab.memory.base import CONDITIONS, MEMORIES, MemorySystem
from memlab.registry import Registry

ROOT = Path(__file__).resolve().parents[1]
GOOD = '''
from memlab.memory.base import MemoryContext, MemorySystem

class EchoMemory(MemorySystem):
    """Remembers the last exchange only (a test plugin)."""

    def observe(self, exchange):
        self.last = exchange

    def recall(self, query):
        return MemoryContext()

class NotAMemory:
    """A class of the wrong kind."""
'''


def write_dist(root: Path, name: str, version: str, entry_points: dict[str, dict[str, str]],
               modules: dict[str, str]) -> Path:
    """A distribution as installers leave it: modules plus ``<name>-<version>.dist-info``."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in names.items())
        for group, names in entry_points.items()))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)
    return root


ENTRIES = {"echo": "echo_plugin:EchoMemory", "missing": "no_such_module:Memory",
           "wrong": "echo_plugin:NotAMemory", "rag": "echo_plugin:EchoMemory",
           "Bad-Name": "echo_plugin:EchoMemory"}


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    root = write_dist(tmp_path / "site", "memlab-echo", "1.2", {"memlab.conditions": ENTRIES},
                      {"echo_plugin": GOOD})
    monkeypatch.syspath_prepend(str(root))
    return root


def test_a_plugin_joins_after_the_built_ins_and_each_broken_one_is_named_once(
        plugin_path, caplog):
    registry = Registry("memory condition", group="memlab.conditions", base=MemorySystem)
    registry.register("rag", "memlab.memory.rag:RagMemory", "built-in")
    with caplog.at_level(logging.WARNING, logger="memlab.registry"):
        assert registry.names() == ["rag", "echo"]
        registry.names()  # loaded once: no second warning
    assert registry.builtins() == ["rag"]
    assert registry.origin("rag") == "memlab"
    assert registry.origin("echo") == "plugin: memlab-echo 1.2"
    assert dict(registry.describe())["echo"] == "Remembers the last exchange only (a test plugin)."
    assert registry.resolve("echo").__name__ == "EchoMemory"
    assert registry.resolve("rag").__name__ == "RagMemory"  # the built-in keeps its name
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4 and all("\n" not in line for line in lines)
    reasons = registry.broken()
    assert "ModuleNotFoundError: No module named 'no_such_module'" in reasons["missing"]
    assert "is not a subclass of memlab.memory.base.MemorySystem" in reasons["wrong"]
    assert "the name is taken by a built-in" in reasons["rag"]
    assert "lower-case letters" in reasons["Bad-Name"]
    for name in ("missing", "wrong", "rag", "Bad-Name"):
        line = next(line for line in lines if repr(name) in line)
        assert "memlab-echo 1.2" in line and f"entry point {name} = {ENTRIES[name]}" in line
    with pytest.raises(UnknownBackendError, match="'missing' cannot be used: plugin: memlab-echo"):
        registry.resolve("missing")


def test_built_ins_alone_load_no_plugin_and_the_paper_conditions_stay_built_in(plugin_path):
    registry = Registry("suite", group="memlab.suites")
    registry.register("ltm", "builtins:dict")
    assert registry.builtins() == ["ltm"] and not registry._plugins_loaded
    assert registry.names() == ["ltm"]  # nothing declared in memlab.suites
    assert list(CONDITIONS) == [n for n in MEMORIES.builtins() if n not in ("mem0", "langmem", "graphiti", "mcp")]


def memlab_cli(*argv: str, path: Path, cwd: Path | None = None,
               timeout: int = 120) -> subprocess.CompletedProcess:
    """``memlab argv`` in a new process with ``path`` on its PYTHONPATH (the kernels a grid
    starts inherit it)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMLAB_DASK_SCHEDULER"}
    env["PYTHONPATH"] = os.pathsep.join([str(path), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", "import sys; from memlab.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *argv], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def test_the_cli_lists_a_plugin_with_its_origin_and_refuses_a_broken_one_in_one_line(
        plugin_path):
    listed = memlab_cli("conditions", path=plugin_path)
    assert listed.returncode == 0, listed.stderr
    echo = next(line for line in listed.stdout.splitlines() if line.startswith("echo "))
    assert "plugin: memlab-echo 1.2" in echo and "Remembers the last exchange" in echo
    assert "memlab " in next(line for line in listed.stdout.splitlines()
                             if line.startswith("rag "))
    warnings = listed.stderr.splitlines()
    assert len(warnings) == 4 and all(w.startswith("memlab: warning: memory condition plugin")
                                      for w in warnings), listed.stderr
    used = memlab_cli("run", "-c", "missing", "-s", "ltm", "--llm", "fake", path=plugin_path)
    assert used.returncode == 2
    error = used.stderr.splitlines()[-1]
    assert "argument -c/--condition: memory condition 'missing' cannot be used" in error
    assert "No module named 'no_such_module'" in error and "Traceback" not in used.stderr


def test_the_example_plugin_installs_offline_lists_and_runs_in_a_grid_beside_rag(tmp_path):
    site, source = tmp_path / "site", tmp_path / "memlab-recency"
    # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    shutil.copytree(ROOT / "examples" / "memlab-recency", source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                          "--no-build-isolation", "--quiet", "--target", str(site), str(source)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert pip.returncode == 0, pip.stderr
    listed = memlab_cli("conditions", path=site)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    recency = next(line for line in listed.stdout.splitlines() if line.startswith("recency "))
    assert "plugin: memlab-recency 0.1.0" in recency
    (tmp_path / "spec.yaml").write_text(
        "name: plugin\nconditions: [rag]\nsuites: [ltm]\nspans: {ltm: [300]}\nseeds: [1]\n"
        "suite_options: {ltm: {examples: 1, types: [colours, shopping]}}\n")
    ran = memlab_cli("grid", "--spec", "spec.yaml", "--conditions", "recency,rag", "--suites",
                     "ltm", "--seeds", "0", "--llm", "fake", "--embedder", "hashing",
                     "--results", "results", "--workers", "1", path=site, cwd=tmp_path,
                     timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "grid: 2 run, 0 skipped" in ran.stdout
    from memlab.bench.tables import table1

    table = table1(tmp_path / "results")
    assert sorted(table["condition"]) == ["rag", "recency"]
    assert (table["runs"] == 1).all()
