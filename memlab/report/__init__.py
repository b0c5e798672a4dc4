"""Figures and tables of the paper, and the functions the notebooks call.

``write_paper(results_dir, figures_dir)`` reads every complete run under ``results_dir`` and writes
every figure (PNG + PDF) into ``figures_dir`` and every table (CSV, LaTeX, markdown) into
``figures_dir/tables``, and the findings they support as sentences (``findings.md``,
``memlab.report.findings``); when the results hold a complete mem0, LangMem or graphiti run,
also the peers figure and tables (``memlab.report.peers``; ``memlab paper --spec peers`` runs
them); when they hold a LoCoMo or LongMemEval run, those benchmarks' tables in their papers'
style and the judges' table (``memlab.report.literature``; ``labels``: a hand-label file, e.g.
``data/locomo_labels.jsonl``, whose answers the runs gave).
"""

from __future__ import annotations

from pathlib import Path

from memlab.report import (
    accuracy,
    data,
    figures,
    findings,
    judge_labels,
    literature,
    paired,
    peers,
    recall,
    style,
    summary,
    tables,
)

_figures = figures  # write_paper's own ``figures`` flag shadows the module

NO_PEERS = ("No complete mem0, LangMem or graphiti run in the results: `memlab paper --spec peers` "
            "runs them beside vanilla, rag, hybrid and sleep, then writes this section.")


def write_paper(results_dir: str | Path, figures_dir: str | Path = "figures", *,
                figures: bool = True, labels: str | Path | None = None,
                heldout_labels: str | Path | None = None) -> dict:
    """Write all figures, tables and the findings; return ``{"figures": {...}, "tables": {...},
    "findings": path}`` (a figure: [png, pdf]; a table: [csv, tex, md]; ``peers`` and
    ``peers_paired`` only with peer runs, ``locomo_*`` / ``longmemeval_*`` only with those
    suites' runs). ``figures=False``: the tables and findings only. ``labels``: a hand-label
    file for the LoCoMo judges' table (``judge_labels.read_labels``); ``heldout_labels``: one
    of labels no revision of the judge's rule has read, for a judges' table of its own
    (``locomo_judges_heldout``)."""
    out = Path(figures_dir) / "tables"
    frames = tables.paper_tables(results_dir)
    hand = judge_labels.read_labels(labels) if labels is not None else None
    held = judge_labels.read_labels(heldout_labels) if heldout_labels is not None else None
    written_tables = tables.write_tables(
        results_dir, out, frames | literature.literature_tables(results_dir, hand, held))
    written_figures = (_figures.write_figures(results_dir, figures_dir) if figures else {})
    if figures:
        written_figures |= {name: style.save(figure, name, figures_dir) for name, figure
                            in literature.literature_figures(results_dir, hand).items()}
    text = findings.findings_text(frames["overview"][0], frames["paired_accuracy"][0],
                                  frames["answer_forms"][0])
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


NO_LITERATURE = ("No complete LoCoMo or LongMemEval run in the results: `memlab paper --spec "
                 "locomo` runs LoCoMo's ten conversations (docs/suites.md), then writes this "
                 "section.")


def show_literature(written: dict) -> None:
    """In a notebook: the published benchmarks' tables and figure of ``write_paper``'s
    ``written`` (LoCoMo's per category with both judges, F1 and BLEU-1, the paired comparisons,
    the judges' table; LongMemEval's), or one line saying how to produce them."""
    from IPython.display import Image, Markdown, display

    names = [n for n in written["tables"] if n.startswith(("locomo_", "longmemeval_"))]
    if not names:
        print(NO_LITERATURE)
        return
    for name in ("locomo_figure", "locomo_judges", "longmemeval_figure"):
        if name in written["figures"]:
            display(Image(written["figures"][name][0]))
    for name in names:
        display(Markdown(f"**{name}**\n\n" + written["tables"][name][2].read_text()))


NO_FAILURES = "No evidence recall was measured in these runs, so no split of their wrong answers."


def show_failures(written: dict) -> None:
    """In a notebook: the ``failures`` table of ``write_paper``'s ``written`` (where wrong
    answers come from, ``memlab.report.failures``), or one line when the runs measured no
    evidence recall (``NO_FAILURES``)."""
    from IPython.display import Markdown, display

    if "failures" not in written["tables"]:
        print(NO_FAILURES)
        return
    display(Markdown(written["tables"]["failures"][2].read_text()))


NO_CHOICES = "No persona question was answered in these runs, so no option kinds to count."


def show_choices(written: dict) -> None:
    """In a notebook: the ``persona_choices`` table of ``write_paper``'s ``written`` (which
    kind of option persona's answers chose, ``memlab.report.choices``), or one line when no
    persona question was answered (``NO_CHOICES``)."""
    from IPython.display import Markdown, display

    if "persona_choices" not in written["tables"]:
        print(NO_CHOICES)
        return
    display(Markdown(written["tables"]["persona_choices"][2].read_text()))


NO_SCALING = ("The results hold one span per suite: `memlab paper --spec scaling` runs LTM at "
              "1k-32k and persona at 4k-32k tokens (docs/grids.md), then writes this section.")
SCALING_FIGURES = ("accuracy_vs_span", "recall_vs_span", "cost_vs_span", "memory_size_vs_span")


def show_scaling(written: dict) -> None:
    """In a notebook: the span-scaling figures and crossover table of ``write_paper``'s
    ``written`` (``memlab.report.scaling``; written when some suite ran at several spans), or
    one line saying how to produce them (``NO_SCALING``)."""
    from IPython.display import Image, Markdown, display

    if "crossover" not in written["tables"]:
        print(NO_SCALING)
        return
    for name in SCALING_FIGURES:
        if name in written["figures"]:
            display(Image(written["figures"][name][0]))
    display(Markdown(written["tables"]["crossover"][2].read_text()))


__all__ = ["accuracy", "data", "figures", "findings", "judge_labels", "literature", "paired",
           "peers", "recall", "style", "summary", "tables", "show_choices", "show_failures",
           "show_literature",
           "show_peers", "show_scaling", "write_paper"]
