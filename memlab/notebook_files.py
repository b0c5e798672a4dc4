"""The parameterised notebooks memlab ships (executed by papermill): where they are, and copies.

The source is the checkout's top-level ``notebooks/``: edit the ``.ipynb`` files there in
JupyterLab and commit them stripped (``nbstripout``; no outputs, no execution counts). Each has
one cell tagged ``parameters`` and otherwise only calls into memlab. The build configuration
(pyproject.toml) maps that folder into the wheel as ``memlab/notebooks/``, so an installed memlab
finds them as package data; a checkout (an editable install, or PYTHONPATH) finds them next to
the package. ``notebooks_dir`` is the one place that tells the two apart.

A wheel installs them inside site-packages, where a user should not edit; ``copy_notebooks``
gives a user a working copy instead (what ``memlab lab`` opens), and ``is_source_checkout``
tells a developer's checkout, whose own folder is opened so that edits land in git.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from memlab.errors import ConfigError

NAMES = ("condition", "sleep_probes", "paper", "tour", "docqa", "decision", "taskforce")
PACKAGE = Path(__file__).resolve().parent
INSTALLED = PACKAGE / "notebooks"  # where the wheel puts them (pyproject.toml's package-dir)
CHECKOUT = PACKAGE.parent / "notebooks"  # the source, beside memlab/ in a checkout


def notebooks_dir() -> Path:
    """The folder holding the shipped notebooks: inside the installed package, else the checkout's.

    A folder counts only when it holds the notebooks: a checkout can keep a stale
    ``memlab/notebooks/`` with nothing but ``__pycache__`` from before the notebooks moved out.
    """
    if (INSTALLED / f"{NAMES[0]}.ipynb").is_file():
        return INSTALLED
    return CHECKOUT


def notebook_path(name: str) -> Path:
    """The shipped notebook ``name`` (``"condition"`` or ``"condition.ipynb"``).

    Raises:
        ConfigError: ``name`` is not one of ``NAMES``.
    """
    stem = name.removesuffix(".ipynb")
    if stem not in NAMES:
        raise ConfigError(f"notebook {name!r} is not shipped by memlab; known: {', '.join(NAMES)}")
    return notebooks_dir() / f"{stem}.ipynb"


def is_source_checkout() -> bool:
    """True when memlab is imported from a source checkout (editable or PYTHONPATH), not a wheel."""
    return notebooks_dir() == CHECKOUT and (PACKAGE.parent / "pyproject.toml").is_file()


@dataclass
class CopyReport:
    """What ``copy_notebooks`` did: file names copied, and those kept as the user had them."""

    folder: Path
    copied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line for what was copied and one for what was kept (when any)."""
        shown = [f"copied into {self.folder}: {', '.join(self.copied)}"] if self.copied else []
        if self.kept:
            shown.append(f"kept (already in {self.folder}, not overwritten): "
                         f"{', '.join(self.kept)}")
        return shown


def copy_notebooks(folder: str | Path) -> CopyReport:
    """Copy the shipped notebooks into ``folder``, never overwriting one already there.

    Raises:
        ConfigError: ``folder`` exists and is not a directory.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"notebook folder {str(folder)!r} is a file, not a directory")
    folder.mkdir(parents=True, exist_ok=True)
    report = CopyReport(folder)
    for name in NAMES:
        target = folder / f"{name}.ipynb"
        try:
            with notebook_path(name).open("rb") as source, target.open("xb") as copy:
                shutil.copyfileobj(source, copy)  # "x": a notebook already there is never touched
        except FileExistsError:
            report.kept.append(target.name)
        else:
            report.copied.append(target.name)
    return report
