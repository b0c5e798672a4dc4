"""The wheel ships what a user needs: built, installed outside the checkout, run from elsewhere.

memlab's wheel is built offline from a copy of the checkout (``pip wheel --no-deps
--no-build-isolation``; building in place would leave ``build/`` and ``*.egg-info`` in the
checkout) and installed with ``--no-deps`` into a fresh venv under tmp_path. The dependencies
come from the venv running the tests through a ``.pth`` file holding its site-packages path: a
plain path line does not run that folder's own ``.pth`` files, so its editable memlab stays
invisible and only the wheel's memlab can be imported. Every command runs from a folder outside
the checkout with PYTHONPATH unset.

Marked ``integration`` (about 15 s): ``make test`` and CI run it, ``make test-fast`` does not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from memlab import notebook_files

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parent.parent
NAMES = [f"{name}.ipynb" for name in notebook_files.NAMES]  # shipped order

# Run by the fresh venv's python: what it imports, then condition.ipynb on the fake LLM and a
# one-cell notebook asking the kernel which memlab it imports.
PROBE = """
import json, os, sys
import nbformat, papermill
import memlab
from memlab.notebook_files import is_source_checkout, notebook_path

out = sys.argv[1]
papermill.execute_notebook(
    str(notebook_path("condition")), f"{out}/condition.out.ipynb", kernel_name="python3",
    progress_bar=False, parameters=dict(
        condition="rag", suite="ltm", span=300, llm="fake", embedder="hashing",
        out_dir=f"{out}/results", suite_options={"examples": 1, "types": ["colours"]},
        n_examples=1))
kernel = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import memlab, os; print(memlab.__file__, os.environ.get('PYTHONPATH'))")])
nbformat.write(kernel, f"{out}/kernel.ipynb")
papermill.execute_notebook(f"{out}/kernel.ipynb", f"{out}/kernel.out.ipynb",
                           kernel_name="python3", progress_bar=False)
print(json.dumps({
    "memlab": memlab.__file__, "pythonpath": os.environ.get("PYTHONPATH"),
    "notebook": str(notebook_path("condition")), "checkout": is_source_checkout(),
    "kernel": nbformat.read(f"{out}/kernel.out.ipynb", 4).cells[0].outputs[0]["text"]}))
"""
# Stands in for JupyterLab (not a memlab dependency): says how `memlab lab` launched it.
FAKE_JUPYTERLAB = "import os, sys; print('jupyterlab', os.getcwd(), *sys.argv[1:])\n"


def run(command: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def copy_source(target: Path) -> Path:
    """What the wheel is built from: pyproject, README, the package and notebooks/, no caches."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(CHECKOUT / name, target / name)
    for folder in ("memlab", "notebooks"):  # pyproject maps notebooks/ to memlab/notebooks/
        shutil.copytree(CHECKOUT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "results",
                                                      ".ipynb_checkpoints"))
    return target


def site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(run([python, "-c", code], cwd=python.parent).stdout.strip())


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv holding the wheel's memlab and seeing this venv's dependencies."""
    root = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", root / "dist", copy_source(root / "src")], cwd=root)
    (wheel,) = (root / "dist").glob("memlab-*.whl")
    run([sys.executable, "-m", "venv", "--without-pip", root / "venv"], cwd=root)
    python = root / "venv" / "bin" / "python"
    run([*pip, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], cwd=root)
    fresh = site_packages(python)
    (fresh / "_memlab_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (fresh / "jupyterlab").mkdir()
    (fresh / "jupyterlab" / "__init__.py").write_text("")
    (fresh / "jupyterlab" / "__main__.py").write_text(FAKE_JUPYTERLAB)
    return root / "venv"


@pytest.fixture
def user(tmp_path, venv) -> tuple[Path, dict]:
    """A folder outside the checkout and an environment without PYTHONPATH."""
    assert not tmp_path.is_relative_to(CHECKOUT) and not venv.is_relative_to(CHECKOUT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return tmp_path, env | {"MEMLAB_CACHE_DIR": str(tmp_path / "cache")}


def test_paper_and_lab_help_work_from_the_wheel(venv, user):
    cwd, env = user
    paper = run([venv / "bin" / "memlab", "paper", "--help"], cwd, env).stdout
    assert "usage: memlab paper" in paper and "paper.ipynb" in paper
    lab = run([venv / "bin" / "memlab", "lab", "--help"], cwd, env).stdout
    assert "--dir" in lab and "./memlab-notebooks" in lab and "site-packages" in lab


def test_a_notebook_executes_from_the_wheel_with_the_wheels_memlab(venv, user):
    cwd, env = user
    (cwd / "probe.py").write_text(PROBE)
    seen = json.loads(run([venv / "bin" / "python", "probe.py", cwd], cwd, env).stdout)
    assert seen["pythonpath"] is None and seen["checkout"] is False
    for key in ("memlab", "notebook", "kernel"):
        assert Path(seen[key].split()[0]).is_relative_to(venv), (key, seen[key])
    assert seen["kernel"].split()[1] == "None"  # the kernel has no PYTHONPATH either
    manifest = json.loads((cwd / "results" / "ltm-rag-300-s0" / "manifest.json").read_text())
    assert manifest["status"] == "complete"


def test_lab_copies_the_notebooks_into_a_working_folder_and_keeps_the_users(venv, user):
    cwd, env = user
    memlab = venv / "bin" / "memlab"
    first = run([memlab, "lab", "--no-browser"], cwd, env).stdout
    work = cwd / "memlab-notebooks"
    assert sorted(p.name for p in work.iterdir()) == sorted(NAMES)
    assert f"copied into memlab-notebooks: {', '.join(NAMES)}" in first
    assert f"jupyterlab {cwd} --notebook-dir={work} --port=8888 --no-browser" in first
    (work / "tour.ipynb").write_text("my edits")
    again = run([memlab, "lab"], cwd, env).stdout
    assert "kept (already in memlab-notebooks, not overwritten): " in again
    assert (work / "tour.ipynb").read_text() == "my edits"
