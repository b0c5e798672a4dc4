"""What a run folder is, and the rule that keeps run folders apart.

A run folder (``<results>/<run_id>/``) is memlab's: the runner may delete its store and move
its journals' tails aside. So a run is written only into a folder that is new, empty or already
a run (``claim_run_folder``), and never inside another run's folder, where a report reading
the outer run would also find the inner one (``check_outside_runs``). Reports list each run
once: a run found inside another is left out (``outermost``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from memlab.bench.runlog import LOCK_FILE
from memlab.errors import ConfigError
from memlab.userfiles import claim_folder

MANIFEST = "manifest.json"
# files only a run writes: a folder holding one is a run's (a crash may leave any of them)
RUN_FILES = (LOCK_FILE, MANIFEST, "turns.jsonl", "calls.jsonl")


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a run: its lock file, or a manifest beside a turn journal (runs
    made before runs were locked)."""
    folder = Path(folder)
    return (folder / LOCK_FILE).is_file() or (
        (folder / MANIFEST).is_file() and (folder / "turns.jsonl").is_file())


def enclosing_run(folder: str | Path) -> Path | None:
    """The run folder that is ``folder`` or holds it (None: it is outside every run)."""
    path = Path(folder).resolve()
    return next((p for p in (path, *path.parents) if is_run_folder(p)), None)


def check_outside_runs(results: str | Path, what: str = "results folder") -> None:
    """Refuse a results folder that is a run folder or lies inside one (a path that is a file
    is no folder at all: ``userfiles.writable_folder`` says so).

    Raises:
        ConfigError: names the folder and the run that holds it.
    """
    if Path(results).is_file():
        return
    run = enclosing_run(results)
    if run is not None:
        raise ConfigError(f"{what} {str(results)!r}: inside the run folder {str(run)!r}; a run "
                          "must not be written inside another run's folder: give a results "
                          "folder outside it")


def claim_run_folder(run_dir: str | Path) -> Path:
    """``run_dir`` ready to be written: outside other runs, and new, empty or a run already.

    Raises:
        ConfigError: inside another run, or a folder of other files (memlab deletes only what
            it created), or not writable.
    """
    run_dir = Path(run_dir)
    check_outside_runs(run_dir.parent)
    return claim_folder(run_dir, "run folder", marks=RUN_FILES)


def outermost(folders: Iterable[Path]) -> list[Path]:
    """``folders`` without those inside another of them, sorted."""
    kept: list[Path] = []
    for folder in sorted(Path(f) for f in folders):  # a parent sorts before its children
        if not any(folder.is_relative_to(outer) for outer in kept):
            kept.append(folder)
    return kept
