"""Write the paper's tables as CSV, LaTeX and markdown into ``figures/tables/``.

The tables themselves come from :mod:`memlab.bench.tables` (Table 1, Table 2, the LTM score
table, persona accuracy by question type, costs); this module adds the paper's overview table
(accuracy with its 95% CI next to tokens and latency per answer) and writes every one of them in
three formats. An interval is shown as ``low-high`` next to its n (``memlab.stats``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from memlab import stats
from memlab.errors import ConfigError
from memlab.report import data, summary

BENCH_TABLES = ("table1", "table2", "ltm_scores", "persona_by_type", "costs")
FORMATS = ("csv", "tex", "md")


def bench_table(name: str) -> Callable[[Path], pd.DataFrame] | None:
    """``memlab.bench.tables.<name>`` (a function of the results folder), None if absent."""
    try:
        module = importlib.import_module("memlab.bench.tables")
    except ImportError:
        return None
    return getattr(module, name, None)


def overview(results_dir: str | Path) -> pd.DataFrame:
    """Per suite and condition: ``accuracy (%)``, its ``95% CI`` (``low-high``; Wilson when every
    test scores 0 or 1) and ``n`` tests; ``tokens`` (prompt tokens per answer), ``tokens 95% CI``
    (t) and ``answers``; then completion tokens, latency and background work per answer."""
    scores, turns = data.scores_frame(results_dir), data.turns_frame(results_dir)
    if scores.empty:
        raise ConfigError(f"results_dir {str(results_dir)!r}: no complete run with scores")
    frame = summary.overview(scores, turns)
    shown = {"accuracy": ("accuracy (%)", "95% CI", "n"),
             "tokens": ("tokens", "tokens 95% CI", "answers")}
    for name, (value, interval, n) in shown.items():
        frame[interval] = [stats.interval_text(low, high) for low, high in
                           zip(frame[f"{name}_low"], frame[f"{name}_high"], strict=True)]
        frame = frame.rename(columns={name: value, f"{name}_n": n}).drop(
            columns=[f"{name}_low", f"{name}_high"])
    first = ["suite", "condition"] + [c for columns in shown.values() for c in columns]
    return frame[first + [c for c in frame.columns if c not in first]].round(3)


def write_table(frame: pd.DataFrame, name: str, out_dir: str | Path) -> list[Path]:
    """Write ``frame`` as ``name``.csv, .tex and .md into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    keep_index = not isinstance(frame.index, pd.RangeIndex)
    paths = [out / f"{name}.{ext}" for ext in FORMATS]
    frame.to_csv(paths[0], index=keep_index)
    paths[1].write_text(frame.to_latex(index=keep_index, float_format="%.3f",
                                       na_rep="--", escape=True))
    paths[2].write_text(frame.to_markdown(index=keep_index, floatfmt=".3f") + "\n")
    return paths


def write_tables(results_dir: str | Path, out_dir: str | Path = "figures/tables") -> dict:
    """Write the overview table and every bench table that exists into ``out_dir``.

    Returns:
        table name -> [csv, tex, md] paths.
    """
    tables = {"overview": overview(results_dir)}
    for name in BENCH_TABLES:
        function = bench_table(name)
        if function is not None:
            tables[name] = function(Path(results_dir))
    return {name: write_table(frame, name, out_dir) for name, frame in tables.items()
            if frame is not None}
