"""Figures and tables of the paper, and the functions the notebooks call.

``write_paper(results_dir, figures_dir)`` reads every complete run under ``results_dir`` and writes
every figure (PNG + PDF) into ``figures_dir`` and every table (CSV, LaTeX, markdown) into
``figures_dir/tables``.
"""

from __future__ import annotations

from pathlib import Path

from memlab.report import accuracy, data, figures, paired, recall, summary, tables


def write_paper(results_dir: str | Path, figures_dir: str | Path = "figures") -> dict:
    """Write all figures and tables; return ``{"figures": {...}, "tables": {...}}`` of paths."""
    written_tables = tables.write_tables(results_dir, Path(figures_dir) / "tables")
    written_figures = figures.write_figures(results_dir, figures_dir)
    return {"figures": written_figures, "tables": written_tables}


__all__ = ["accuracy", "data", "figures", "paired", "recall", "summary", "tables",
           "write_paper"]
