"""A finished grid's committed records and their replay (``memlab replay``, records/README.md).

A grid's records are ``records/<grid>/<run_id>/`` with each cell's ``manifest.json`` (its
identity, status ``complete``), ``turns.jsonl`` (every turn, the model's replies included) and
``calls.jsonl`` (every model call's reply), and ``records/<grid>/tables/``: the tables a replay of
them writes, committed.

A replay copies the three files of each cell into ``<out>/runs/``, scores every cell from its
recorded turns (``runner.score_turns``: the suite rebuilt from the manifest's spec, the turns
checked against its events, a judged test's calls answered from the cell's own journal with
``replay_only``: each by the entry of its exact request, never by position, and a call it does
not hold stops the replay with ``LiveCallError``, so no model is ever called) and writes the paper's tables (and figures) from them (``report.write_paper``) into
``<out>/figures/``. ``first_difference`` compares the tables written with the committed ones,
byte for byte.

Records of a change (a prompt or a memory's code changed, some cells run again) name the grid
they change in ``records/<grid>/before.json`` (``{"records": "../standard"}``): their replay
replays those records too (into ``<out>/before``) and writes ``tables/change``: each condition
after minus before, paired on the same questions (``report.paired.change_comparisons``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.bench.runner import read_manifest, score_recorded
from memlab.bench.spec import RunSpec
from memlab.errors import ConfigError, MemlabError

RECORD_FILES = ("manifest.json", "turns.jsonl", "calls.jsonl")
TABLES = "tables"  # records/<grid>/tables/: the committed tables
BEFORE = "before.json"  # records/<grid>/before.json: the records of the grid these change


@dataclass
class Replay:
    """What a replay did: its cells, the judge calls its journals answered, where it wrote."""

    records: Path
    out: Path
    cells: list[str] = field(default_factory=list)
    scores: int = 0
    journal_calls: int = 0
    seconds: float = 0.0
    before: Replay | None = None  # the replay of the records ``before.json`` names

    @property
    def runs(self) -> Path:
        return self.out / "runs"

    @property
    def tables(self) -> Path:
        return self.out / "figures" / TABLES

    def summary(self) -> str:
        return (f"replay of {self.records}: {len(self.cells)} cells scored from their records "
                f"({self.scores} test scores; {self.journal_calls} judge calls answered by the "
                f"cells' journals; 0 model calls) in {self.seconds:.0f} s; tables in "
                f"{self.tables}")


def record_cells(records: str | Path) -> list[Path]:
    """The cell folders of a grid's records, each checked to hold ``RECORD_FILES`` and a
    complete manifest.

    Raises:
        ConfigError: no such folder, no cell in it, a cell missing a file or not complete (the
            message names the file and the rule).
    """
    root = Path(records)
    if not root.is_dir():
        raise ConfigError(f"records {str(root)!r}: no such folder (a grid's records are "
                          "records/<grid>/, e.g. records/peers)")
    cells = sorted(p.parent for p in root.glob("*/manifest.json"))
    if not cells:
        raise ConfigError(f"records {str(root)!r}: no cell folder holding a manifest.json")
    for cell in cells:
        check_cell(cell)
    return cells


def check_cell(cell: Path) -> dict[str, Any]:
    """The manifest of a recorded cell, checked to hold ``RECORD_FILES`` and be complete.

    Raises:
        ConfigError: a file missing or the cell not complete (the message names the file).
    """
    for name in RECORD_FILES:
        if not (cell / name).is_file():
            raise ConfigError(f"{cell / name}: missing (a cell's records are "
                              f"{', '.join(RECORD_FILES)})")
    manifest = read_manifest(cell)
    status = manifest.get("status")
    if status != "complete":
        raise ConfigError(f"{cell / 'manifest.json'}: status {status!r}, not 'complete' "
                          "(records are committed once their grid has finished)")
    return manifest


def copy_records(cells: list[Path], runs: Path) -> list[Path]:
    """Copy each cell's ``RECORD_FILES`` (nothing else) into ``runs/<cell>/``."""
    copies = []
    for cell in cells:
        target = runs / cell.name
        target.mkdir(parents=True)
        for name in RECORD_FILES:
            shutil.copyfile(cell / name, target / name)
        copies.append(target)
    return copies


class _Models:
    """The answering models of the cells (loaded once each): their tokenizers rebuild the
    suites, their cache is swapped for each cell's journal."""

    def __init__(self) -> None:
        self._built: dict[tuple, Any] = {}

    def get(self, spec: RunSpec) -> Any:
        from memlab.lab import make_llm

        key = (spec.llm, spec.llm_model)
        if key not in self._built:
            self._built[key] = make_llm(spec.llm, spec.llm_model, llm_cache=False)
        return self._built[key]


def recorded_spec(run_dir: Path, manifest: dict[str, Any]) -> RunSpec:
    """The spec a recorded cell's manifest names, its data file where this machine keeps it
    (``data_here``)."""
    where = Path(run_dir) / "manifest.json"
    return data_here(RunSpec.parse(manifest.get("spec") or {}, f"{where} spec"), manifest, where)


def data_here(spec: RunSpec, manifest: dict[str, Any], where: Path) -> RunSpec:
    """``spec`` with its data file where this machine keeps it. A cell records the path it read
    (often relative: ``../shared/data/locomo/locomo10.json``) and the file's sha256; where that
    path is not a file, a LoCoMo cell reads ``MEMLAB_LOCOMO_DATA`` instead, if its sha256 is
    the recorded one.

    Raises:
        ConfigError: the recorded path is not here and no other copy is named, or the copy
            named is missing or another file.
    """
    from memlab.config import get_settings
    from memlab.llm.weights import sha256_file

    recorded = (spec.suite_options or {}).get("data")
    if not isinstance(recorded, str) or Path(recorded).is_file():
        return spec
    sha256 = (manifest.get("suite_params") or {}).get("sha256")
    other = get_settings().locomo_data if spec.suite == "locomo" else None
    if other is None:
        named = " (or name a copy in MEMLAB_LOCOMO_DATA)" if spec.suite == "locomo" else ""
        raise ConfigError(f"{where}: its data {recorded!r} is not a file here: replay from where "
                          f"that path resolves{named}")
    if not Path(other).is_file():
        raise ConfigError(f"MEMLAB_LOCOMO_DATA {str(other)!r}: no such file")
    if sha256 and sha256_file(Path(other)) != sha256:
        raise ConfigError(f"MEMLAB_LOCOMO_DATA {str(other)!r}: not the file {where} ran on "
                          f"(sha256 must be {sha256})")
    return spec.model_copy(update={"suite_options": {**spec.suite_options, "data": str(other)}})


def score_cell(run_dir: Path, models: _Models) -> tuple[int, int]:
    """Score one copied cell from its turns into its scores.jsonl, with no model call;
    ``(scores, judge calls its journal answered)``.

    Raises:
        LiveCallError: a judged test asked for a call the cell's journal does not hold.
        MemlabError: a model call was made all the same, or the journal changed.
    """
    from memlab.lab import build_suite

    manifest = read_manifest(run_dir)
    spec = recorded_spec(run_dir, manifest)
    llm = models.get(spec)
    lines, replayed = score_recorded(run_dir, build_suite(spec, llm), llm)
    recorded = (manifest.get("counts") or {}).get("scores")
    if recorded is not None and recorded != len(lines):
        raise MemlabError(f"{run_dir}: scored {len(lines)} tests, its manifest recorded "
                          f"{recorded}")
    return len(lines), replayed


def replay(records: str | Path, out: str | Path, *, figures: bool = True) -> Replay:
    """Copy ``records`` into ``out`` (a new or empty folder), score every cell and write the
    paper's tables (and, with ``figures``, its figures) into ``out/figures``."""
    from memlab.report import judge_labels, write_paper

    start = time.perf_counter()
    cells = record_cells(records)
    cited(Path(records))  # a bad cited.json is named now, not after the replay
    before = before_records(Path(records))
    done = Replay(records=Path(records), out=Path(out))
    if done.out.exists() and any(done.out.iterdir()):
        raise ConfigError(f"--out {str(done.out)!r}: not empty (a replay writes a fresh copy)")
    models = _Models()
    for run_dir in copy_records(cells, done.runs):
        scores, judged = score_cell(run_dir, models)
        done.cells.append(run_dir.name)
        done.scores += scores
        done.journal_calls += judged
    write_paper(done.runs, done.out / "figures", figures=figures,
                labels=judge_labels.default_labels(),
                heldout_labels=judge_labels.default_heldout_labels())
    if before is not None:
        done.before = replay(before, done.out / "before", figures=False)
        write_change(done.before.runs, done.runs, done.tables)
    done.seconds = time.perf_counter() - start
    return done


def before_records(records: Path) -> Path | None:
    """The records ``records/<grid>/before.json`` names (``{"records": "../standard"}``,
    relative to ``records``): the grid these records change; None without the file.

    Raises:
        ConfigError: the file is not such an object, or names no records folder (or one that
            names its own before).
    """
    path = records / BEFORE
    if not path.exists():
        return None
    try:
        named = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not (isinstance(named, dict) and set(named) == {"records"}
            and isinstance(named["records"], str) and not Path(named["records"]).is_absolute()):
        raise ConfigError(f"{path}: must be {{\"records\": \"../<grid>\"}}, the records of the "
                          "grid these change, relative to this folder")
    before = Path(os.path.normpath(records / named["records"]))
    if not before.is_dir() or (before / BEFORE).exists():
        raise ConfigError(f"{path}: {named['records']!r} is not a grid's records folder "
                          "without a before.json of its own")
    return before


def write_change(before_runs: Path, after_runs: Path, tables: Path) -> list[Path]:
    """``tables/change``: the conditions of ``after_runs`` against the same conditions of
    ``before_runs``, paired (``report.paired.change_comparisons``)."""
    from memlab.report import data, paired
    from memlab.report.tables import change_shown, write_table

    frames = [(data.scores_frame(runs), data.turns_frame(runs)) for runs in (before_runs,
                                                                             after_runs)]
    change = paired.change_comparisons(*frames)
    return write_table(change, "change", tables, change_shown(change))


def cited(records: Path) -> dict[str, Path]:
    """``records/<grid>/cited.json``: the copies of the replay's files the docs cite (a figure
    in figures/, a table), replay path (under ``<out>/figures``) -> the copy's path (relative to
    the records folder in the file); {} without the file.

    Raises:
        ConfigError: the file is not a JSON object of relative paths.
    """
    path = records / "cited.json"
    if not path.exists():
        return {}
    try:
        pairs = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not (isinstance(pairs, dict) and all(isinstance(k, str) and isinstance(v, str)
                                            and not Path(k).is_absolute()
                                            for k, v in pairs.items())):
        raise ConfigError(f"{path}: must be an object of replay path -> cited copy, e.g. "
                          '{"peers.png": "../../figures/peers_paired_accuracy.png"}')
    return {written: Path(os.path.normpath(records / copy)) for written, copy in pairs.items()}


def compared(done: Replay) -> list[tuple[Path | None, Path | None]]:
    """``(committed, written)`` pairs a check compares: every table on either side (None: the
    side has no such file), then each ``cited`` copy with the file the replay wrote."""
    committed = done.records / TABLES
    ours = {p.name for p in committed.iterdir() if p.is_file()} if committed.is_dir() else set()
    theirs = {p.name for p in done.tables.iterdir() if p.is_file()}
    pairs = [(committed / n if n in ours else None, done.tables / n if n in theirs else None)
             for n in sorted(ours | theirs)]
    figures = done.out / "figures"
    return pairs + [(copy, figures / written) for written, copy in cited(done.records).items()]


def first_difference(done: Replay) -> str | None:
    """Where the replay's files first differ from the committed ones (``compared``): a file only
    one side has, or the first differing line; None when all are identical byte for byte."""
    if not (done.records / TABLES).is_dir():
        return f"{done.records / TABLES}: no committed tables (write them with --update)"
    for committed, written in compared(done):
        if committed is None:
            return f"{written}: written by the replay, not committed in {done.records / TABLES}"
        if written is None or not written.is_file():
            return f"{committed}: committed, but the replay wrote no such file"
        if not committed.is_file():
            return f"{committed}: cited in {done.records / 'cited.json'}, no such file"
        a, b = committed.read_bytes(), written.read_bytes()
        if a != b:
            return f"{committed}: {_first_line(a, b)}"
    return None


def _first_line(committed: bytes, written: bytes) -> str:
    old, new = committed.splitlines(), written.splitlines()
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        if a != b:
            return (f"line {number} differs: committed {_clip(a)}, replay {_clip(b)}")
    if len(old) != len(new):
        return f"committed {len(old)} lines, the replay {len(new)}"
    return "the same lines, other bytes (line endings or a final newline)"


def _clip(line: bytes, width: int = 120) -> str:
    text = line.decode("utf-8", "replace")
    return json.dumps(text if len(text) <= width else text[:width] + "...")


def update(done: Replay) -> list[Path]:
    """Make the replay's tables the committed ones (``records/<grid>/tables``) and copy its
    ``cited`` files over their copies; the paths written."""
    target = done.records / TABLES
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(done.tables, target)
    written = [target]
    for source, copy in cited(done.records).items():
        shutil.copyfile(done.out / "figures" / source, copy)
        written.append(copy)
    return written
