"""Figures and tables of the paper, and the functions the notebooks call.

``write_paper(results_dir, figures_dir)`` reads every complete run under ``results_dir`` and writes
every figure (PNG + PDF) into ``figures_dir`` and every table (CSV, LaTeX, markdown) into
``figures_dir/tables``, and the findings they support as sentences (``findings.md``,
``memlab.report.findings``); when the results hold a complete mem0 or LangMem run, also the peers
figure and tables (``memlab.report.peers``; ``memlab paper --spec peers`` runs them).
"""

from __future__ import annotations

from pathlib import Path

from memlab.report import accuracy, data, figures, findings, paired, peers, recall, summary, tables

_figures = figures  # write_paper's own ``figures`` flag shadows the module

NO_PEERS = ("No complete mem0 or LangMem run in the results: `memlab paper --spec peers` runs "
            "them beside vanilla, rag, hybrid and sleep, then writes this section.")


def write_paper(results_dir: str | Path, figures_dir: str | Path = "figures", *,
                figures: bool = True) -> dict:
    """Write all figures, tables and the findings; return ``{"figures": {...}, "tables": {...},
    "findings": path}`` (a figure: [png, pdf]; a table: [csv, tex, md]; ``peers`` and
    ``peers_paired`` only with peer runs). ``figures=False``: the tables and findings only."""
    out = Path(figures_dir) / "tables"
    frames = tables.paper_tables(results_dir)
    written_tables = tables.write_tables(results_dir, out, frames)
    written_figures = (_figures.write_figures(results_dir, figures_dir) if figures else {})
    text = findings.findings_text(frames["overview"][0], frames["paired_accuracy"][0])
    (out / "findings.md").write_text(text)
    return {"figures": written_figures, "tables": written_tables,
            "findings": out / "findings.md"}


def show_peers(written: dict) -> None:
    """In a notebook: the peers figure and tables of ``write_paper``'s ``written``, or one line
    saying how to produce them (``NO_PEERS``)."""
    from IPython.display import Image, Markdown, display

    if "peers" not in written["figures"]:
        print(NO_PEERS)
        return
    display(Image(written["figures"]["peers"][0]),
            *(Markdown(written["tables"][name][2].read_text()) for name in ("peers",
                                                                           "peers_paired")))


__all__ = ["accuracy", "data", "figures", "findings", "paired", "peers", "recall", "summary",
           "tables", "show_peers", "write_paper"]
