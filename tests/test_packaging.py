"""pyproject.toml puts every folder of memlab/ and the top-level notebooks/ into the wheel.

The packages are listed by hand (the notebooks' mapping rules out ``packages.find``), so a new
folder under memlab/ that is not listed would silently be missing from ``pip install``.
tests/test_wheel.py builds the real wheel; this is the fast check.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from memlab import notebook_files

CHECKOUT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_folder_of_the_package_is_listed():
    folders = [CHECKOUT / "memlab", *(CHECKOUT / "memlab").rglob("*")]
    found = {".".join(f.relative_to(CHECKOUT).parts) for f in folders
             if f.is_dir() and f.name != "__pycache__" and any(f.glob("*.py"))}
    assert found | {"memlab.notebooks"} == set(SETUPTOOLS["packages"])


def test_the_top_level_notebooks_ship_as_memlab_notebooks():
    assert SETUPTOOLS["package-dir"] == {"memlab.notebooks": "notebooks"}
    assert SETUPTOOLS["package-data"]["memlab.notebooks"] == ["*.ipynb"]
    shipped = sorted(p.stem for p in (CHECKOUT / "notebooks").glob("*.ipynb"))
    assert shipped == sorted(notebook_files.NAMES)
