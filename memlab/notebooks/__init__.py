"""The parameterised notebooks memlab ships (package data, executed by papermill).

The ``.ipynb`` files in this folder are the source: edit them in JupyterLab and commit them
stripped (``nbstripout``; no outputs, no execution counts). Each has one cell tagged
``parameters`` and otherwise only calls into memlab.

A wheel installs them inside site-packages, where a user should not edit; ``copy_notebooks``
gives a user a working copy instead (what ``memlab lab`` opens), and ``is_source_checkout``
tells a developer's editable checkout, whose own folder is opened so that edits land in git.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memlab.errors import ConfigError

NAMES = ("condition", "sleep_probes", "paper", "tour", "docqa", "decision", "taskforce")


def notebooks_dir() -> Path:
    """The folder holding the shipped notebooks (inside the installed package)."""
    return Path(str(resources.files(__name__)))


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
    """True when memlab is imported from a source checkout (an editable install), not a wheel."""
    package = notebooks_dir().parent
    installed = {"site-packages", "dist-packages"} & set(package.parts)
    return not installed and (package.parent / "pyproject.toml").is_file()


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
