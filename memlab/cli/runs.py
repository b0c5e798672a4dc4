"""``memlab run``, ``grid``, ``paper`` and ``lab``: running conditions and writing the paper."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memlab.bench.base import SUITES
from memlab.cli.common import (
    RAW,
    add_model_options,
    chosen,
    names,
    non_negative_int,
    port,
    positive_int,
    registered,
    split,
)
from memlab.errors import ConfigError, MemlabError, MissingDependencyError
from memlab.memory.base import MEMORIES
from memlab.userfiles import writable_folder

if TYPE_CHECKING:
    from memlab.bench.spec import RunSpec

LAB_DIR = "memlab-notebooks"
LAB_DESCRIPTION = f"""\
Open JupyterLab on memlab's notebooks (needs the lab extra: pip install 'memlab[lab]').
Start with tour.ipynb.

Installed from a wheel, the notebooks live inside site-packages, which is not a place to edit:
memlab copies them into a working folder (--dir, default ./{LAB_DIR}) and opens that. A
notebook already in the folder is kept as it is, never overwritten (delete it to get memlab's
current version); the command says what it copied and what it kept. Kernels start in that
folder, so relative result paths (results/manual) land there too.

In a source checkout (pip install -e .), JupyterLab opens the checkout's notebooks/ itself, so
an edit lands in git; commit it stripped (nbstripout). --dir makes a working copy there too.

As root (a container, a VM) JupyterLab is started with --allow-root, which it needs there.
"""


def add_grid_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="local processes (default 1 with the local model, else 2)")
    parser.add_argument("--scheduler", default=None,
                        help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: "
                             "MEMLAB_DASK_SCHEDULER; unset: local process pool)")
    parser.add_argument("--retries", type=non_negative_int, default=2,
                        help="retries of a cell whose kernel failed to start (default 2)")


def add_published_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--locomo", default=None, metavar="PATH",
                        help="add LoCoMo cells read from this locomo10.json (sizes per grid: "
                             "docs/suites.md)")
    parser.add_argument("--longmemeval", default=None, metavar="PATH",
                        help="add LongMemEval cells read from this longmemeval_s/_m/_oracle "
                             "JSON (sizes per grid: docs/suites.md)")


def register(commands) -> dict:
    raw = RAW

    run = commands.add_parser(
        "run", help="run one condition on one suite", formatter_class=raw,
        description="Run one memory condition on one suite into <out>/<run_id>/ and print its "
                    "summary. A run that exists resumes (or is skipped when complete).",
        epilog="example: memlab run --condition rag --suite ltm --span 2000 --seed 1")
    run.add_argument("-c", "--condition", required=True, type=registered(MEMORIES),
                     metavar="CONDITION", help=f"one of: {names(MEMORIES)}")
    run.add_argument("-s", "--suite", required=True, type=registered(SUITES), metavar="SUITE",
                     help=f"one of: {names(SUITES)}")
    run.add_argument("--span", type=positive_int, default=1000,
                     help="tokens of conversation: the LTM memory span or the persona history "
                          "length (default 1000)")
    run.add_argument("--seed", type=non_negative_int, default=0,
                     help="suite and run seed (default 0)")
    run.add_argument("--out", default="results/manual", help="results folder (results/manual)")
    run.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                     help="a suite option or a setting of the condition, repeatable; the value "
                          "is read as YAML (-o examples=1 -o 'types=[colours, jokes]' -o "
                          "top_k=8 -o url=http://127.0.0.1:8766/mcp; memlab suites lists the "
                          "suites, a wrong key is named with the ones the suite takes)")
    run.add_argument("--answered", type=non_negative_int, default=None,
                     help="answer the questions of a seeded sample of this many tests; the "
                          "others are measured for evidence recall only (default: all; 0: "
                          "evidence recall only, no answering calls)")
    run.add_argument("--scripted-needles", action="store_true",
                     help="store needles with a fixed acknowledgement instead of the model's "
                          "reply (only questions are answered)")
    run.add_argument("--probes-sleep", action="store_true",
                     help="Table 2's protocol: no auto-sleep; the questions before and after "
                          "one forced sleep cycle")
    run.add_argument("--data", default=None,
                     help="the published data file of locomo / longmemeval (suite option "
                          "'data'; see docs/suites.md)")
    add_model_options(run)

    grid = commands.add_parser(
        "grid", help="run conditions x suites x seeds, one notebook per cell", formatter_class=raw,
        description="Execute the shipped condition.ipynb once per grid cell (papermill). Runs go "
                    "to <results>/<suite>-<condition>-<span>-s<seed>/, executed notebooks to "
                    "<results>/notebooks/; complete cells are skipped.",
        epilog="examples:\n  memlab grid --spec quick\n  memlab grid --spec my_grid.yaml "
               "--scheduler tcp://127.0.0.1:8786\n  memlab grid --conditions rag,sleep "
               "--suites persona --seeds 0,1,2\n  memlab grid --spec peers-standard --status")
    grid.add_argument("--spec", default="quick",
                      help="quick, standard, full, locomo (all of LoCoMo), scaling (spans 1k-32k), "
                           "peers (mem0, LangMem and graphiti beside vanilla, rag, hybrid, sleep; "
                           "peers-standard at the standard sizes), or a YAML file with GridSpec "
                           "fields (default quick)")
    grid.add_argument("--plan", action="store_true",
                      help="print the cells, the questions per condition and the smallest "
                           "paired difference the grid detects, and run nothing")
    grid.add_argument("--status", action="store_true",
                      help="print each cell's state in the results folder (complete, running, "
                           "recorded, stopped, failed, not started), its turns done of planned and the "
                           "model time left (its question turns and stored text at the seconds "
                           "measured for them); run nothing")
    grid.add_argument("--conditions", help="comma-separated subset of the spec's conditions")
    grid.add_argument("--suites", help=f"comma-separated subset of: {names(SUITES)}")
    grid.add_argument("--seeds", help="comma-separated seeds replacing the spec's answered "
                      "seeds (its evidence-only seeds stay; --plan lists the cells)")
    grid.add_argument("--results", default=None, help="results folder (default results/<spec>)")
    add_published_options(grid)
    add_model_options(grid)
    add_grid_options(grid)

    paper = commands.add_parser(
        "paper", help="run the grid, then write every figure and table", formatter_class=raw,
        description="Run a grid (default quick: every condition on both suites, 24 answered "
                    "tests per suite by the 1.5B model, evidence recall on 3 seeds; cached "
                    "reruns take seconds), then execute the shipped paper.ipynb: figures (PNG + "
                    "PDF) into --figures and tables (CSV, LaTeX, markdown) into "
                    "--figures/tables. `memlab grid --spec NAME --plan` says what a grid "
                    "measures and with what power before you run it.",
        epilog="examples:\n  memlab paper --figures figures\n  memlab paper --spec standard\n"
               "  memlab paper --spec scaling --no-run --figures interim")
    paper.add_argument("--spec", default="quick",
                       help="quick, standard, full, peers, peers-standard, locomo, scaling, or "
                            "a YAML file (default quick)")
    paper.add_argument("--full", action="store_true", help="same as --spec full")
    paper.add_argument("--results", default=None, help="results folder (default results/<spec>)")
    paper.add_argument("--figures", default="figures", help="figures folder (default figures)")
    paper.add_argument("--no-run", action="store_true",
                       help="run no cell: the figures and tables of the cells complete in "
                            "--results so far (a long grid's interim look)")
    add_published_options(paper)
    add_model_options(paper)
    add_grid_options(paper)

    lab = commands.add_parser("lab", help="JupyterLab on the notebooks", formatter_class=raw,
                              description=LAB_DESCRIPTION,
                              epilog="example: memlab lab --dir my-notebooks --no-browser")
    lab.add_argument("--dir", default=None,
                     help=f"working folder the notebooks are copied into (default ./{LAB_DIR}; "
                          "in a source checkout, default: the checkout's notebooks/)")
    lab.add_argument("--port", type=port, default=8888)
    lab.add_argument("--no-browser", action="store_true")

    return {"run": cmd_run, "grid": cmd_grid, "paper": cmd_paper, "lab": cmd_lab}


def cmd_run(args: argparse.Namespace) -> int:
    from memlab import lab

    suite, memory = split_options(suite_options(args.option), args.suite, args.condition)
    run_dir = lab.run_condition(
        args.condition, args.suite, args.span, args.seed, out_dir=args.out, llm=args.llm,
        llm_model=args.llm_model, memory_llm=args.memory_llm,
        memory_llm_model=args.memory_llm_model, embedder=args.embedder,
        answered=args.answered, probes_sleep=args.probes_sleep,
        suite_options=suite | ({"data": args.data} if args.data else {}), memory_options=memory,
        needle_replies="scripted" if args.scripted_needles else "model")
    print(lab.run_summary(run_dir).to_string())
    print(f"\nrun folder: {run_dir}")
    return 0


def suite_options(pairs: list[str]) -> dict:
    """``KEY=VALUE`` command-line options as a dict (values read as YAML)."""
    import yaml

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"option {pair!r}: expected KEY=VALUE, e.g. examples=1")
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(f"option {key.strip()!r}: value {value!r} is not YAML ({exc})"
                              ) from None
    return options


def split_options(options: dict, suite: str, condition: str) -> tuple[dict, dict]:
    """``-o`` options as (suite options, the condition's settings): a key only the condition's
    Config has is the condition's; a key only the suite takes is the suite's.

    Raises:
        ConfigError: a key both take, or one neither takes (the message lists what each does).
    """
    takes = set(SUITES.resolve(suite).options)
    settings = set(MEMORIES.resolve(condition).Config.model_fields)
    both = sorted(takes & settings & set(options))
    if both:
        raise ConfigError(f"option {both[0]!r}: both suite {suite!r} and condition "
                          f"{condition!r} take it, so -o cannot say whose it is")
    neither = sorted(set(options) - takes - settings)
    if neither:
        raise ConfigError(
            f"option {neither[0]!r}: neither suite {suite!r} "
            f"({', '.join(SUITES.resolve(suite).options) or 'no options'}) nor condition "
            f"{condition!r} ({', '.join(sorted(settings)) or 'no settings'}) takes it")
    memory = {k: v for k, v in options.items() if k in settings and k not in takes}
    return {k: v for k, v in options.items() if k not in memory}, memory


MODEL_FIELDS = ("llm", "llm_model", "memory_llm", "memory_llm_model", "embedder")


def _grid_cells(args: argparse.Namespace, spec_name: str):
    from memlab import grid
    from memlab.gridspec import with_published

    spec = grid.load_spec(spec_name)
    update = {"conditions": split(getattr(args, "conditions", None)),
              "suites": split(getattr(args, "suites", None)),
              "seeds": split(getattr(args, "seeds", None), int, "--seeds")}
    if update["seeds"]:  # the answered seeds everywhere, a suite's own included
        update["suite_seeds"] = {suite: own | ({"seeds": update["seeds"]} if "seeds" in own else {})
                                 for suite, own in spec.suite_seeds.items()}
    spec = grid.validate_spec(spec.model_dump() | {k: v for k, v in update.items() if v},
                              spec.name)
    spec = with_published(spec, {"locomo": getattr(args, "locomo", None),
                                 "longmemeval": getattr(args, "longmemeval", None)})
    cells = spec.cells(**{f: chosen(getattr(args, f), f) for f in MODEL_FIELDS})
    return spec, cells


def _run_cells(args: argparse.Namespace, spec, cells, results: Path) -> int:
    from memlab import grid

    print(grid.format_plan(spec, grid.plan(spec, cells)))
    outcome = grid.run_grid(cells, results, workers=args.workers, scheduler=args.scheduler,
                            retries=args.retries)
    counts = {s: sum(r.status == s for r in outcome) for s in ("complete", "skipped", "failed")}
    print(f"grid: {counts['complete']} run, {counts['skipped']} skipped (already complete), "
          f"{counts['failed']} failed -> {results}")
    for result in outcome:
        if result.status == "failed":
            print(f"  FAILED {result.run_id}: {result.error} (see {result.notebook} and the "
                  "kernel's own output beside it, .kernel.log)")
    stale = grid.scored_by_others(cells, results)
    if stale:
        print(f"  note: {len(stale)} complete LTM cell(s) were scored by another scorer set than "
              f"this memlab's ({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}), so "
              "their tables mix two sets; delete a cell's scores.jsonl and run again to score "
              "its recorded turns anew (no model call)")
    return 1 if counts["failed"] else 0


def cmd_grid(args: argparse.Namespace) -> int:
    from memlab import grid

    spec, cells = _grid_cells(args, args.spec)
    results = Path(args.results or f"results/{spec.name}")
    if args.plan:
        print(grid.format_plan(spec, grid.plan(spec, cells)))
        return 0
    if args.status:
        from memlab.gridstatus import format_status, grid_status

        if results.exists() and not results.is_dir():  # not a grid's folder: say so, do not
            # read the folders beside it as other grids
            raise ConfigError(f"--results {str(results)!r}: is a file, not a folder")
        print(format_status(spec.name, results, grid_status(cells, results)))
        return 0
    return _run_cells(args, spec, cells, results)


def cmd_paper(args: argparse.Namespace) -> int:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from memlab import grid
    from memlab.notebook_files import notebook_path

    spec, cells = _grid_cells(args, "full" if args.full else args.spec)
    writable_folder(args.figures, "figures folder")  # before hours of grid, not after
    results = Path(args.results or f"results/{spec.name}")
    status = _interim(spec.name, cells, results) if args.no_run else _run_cells(
        args, spec, cells, results)
    output = results / "notebooks" / "paper.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(str(notebook_path("paper")), str(output),
                                   parameters={"results_dir": str(results.resolve()),
                                               "figures_dir": str(Path(args.figures).resolve())},
                                   kernel_name="python3", progress_bar=False, cwd=os.getcwd(),
                                   kernel_manager_class=grid.ipc_kernel_manager(
                                       output.with_suffix(".kernel.log")))
    except PapermillExecutionError as exc:
        error = ConfigError if exc.ename == "ConfigError" else MemlabError
        raise error(f"paper notebook: {exc.ename}: {exc.evalue} (see {output})") from exc
    print(f"paper: figures and tables in {args.figures}/ (notebook: {output})")
    return status


def _interim(name: str, cells: list[RunSpec], results: Path) -> int:
    """``paper --no-run``: say how many of the grid's cells are complete in ``results`` (the
    paper reads those), run none; none complete is the user's mistake."""
    from memlab.bench.runner import is_complete

    done = sum(is_complete(cell.run_dir(results), cell) for cell in cells)
    if not done:
        raise ConfigError(f"--results {str(results)!r}: no cell of grid {name!r} is complete "
                          "there (--no-run writes the paper of complete cells only)")
    print(f"paper: {done} of {len(cells)} cells of grid {name} complete in {results}; "
          "none run (--no-run)")
    return 0


def cmd_lab(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("jupyterlab") is None:
        raise MissingDependencyError("JupyterLab is not installed: pip install 'memlab[lab]' "
                                     "(or make lab)")
    folder = _lab_folder(args.dir)
    as_root = _running_as_root()
    if as_root:
        print("lab: running as root: JupyterLab started with --allow-root", file=sys.stderr)
    sys.stdout.flush()  # our lines before JupyterLab's, also when the output is a file
    return subprocess.call(jupyterlab_command(folder, args.port, browser=not args.no_browser,
                                              as_root=as_root))


def jupyterlab_command(folder: Path, port: int, *, browser: bool, as_root: bool) -> list[str]:
    """How ``memlab lab`` starts JupyterLab on ``folder``.

    As root (a container, a VM) JupyterLab refuses to start without ``--allow-root``.
    """
    return ([sys.executable, "-m", "jupyterlab", f"--notebook-dir={folder}", f"--port={port}"]
            + ([] if browser else ["--no-browser"]) + (["--allow-root"] if as_root else []))


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0  # no geteuid on Windows


def _lab_folder(directory: str | None) -> Path:
    """The checkout's own notebook folder (no --dir given), else a working copy (see --help)."""
    from memlab import notebook_files

    if directory is None and notebook_files.is_source_checkout():
        print(f"lab: opening the checkout's notebooks in {notebook_files.notebooks_dir()} "
              "(edits land in git; commit them stripped)")
        return notebook_files.notebooks_dir()
    report = notebook_files.copy_notebooks(directory or LAB_DIR)
    for line in report.lines():
        print(f"lab: {line}")
    return report.folder.resolve()
