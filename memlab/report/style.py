"""The look every figure of the paper shares: style, one colour and marker per condition, labels,
saving as PNG (200 dpi) and PDF, the shared legend and the panel for a figure without data."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from memlab.memory.base import CONDITIONS, PEERS  # noqa: E402

DRAWN = CONDITIONS + PEERS  # every condition a figure may show, in the paper's order
MARKERS = ("o", "*", "s", "D", "^", "v", "P", "X", "h", "p")
LABELS = {"vanilla": "Vanilla", "oracle": "Oracle (evidence only)",
          "full_context": "Full context", "rag": "RAG", "episodic": "Episodic",
          "episodic_summary": "Episodic + summary", "sleep": "Sleep", "hybrid": "Hybrid",
          "mem0": "mem0", "langmem": "LangMem", "graphiti": "graphiti"}
SUITE_LABELS = {"ltm": "LTM suite", "persona": "Persona suite"}
DPI = 200


def apply_style() -> None:
    """Paper style: white grid, readable fonts."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.25)
    plt.rcParams.update({"figure.dpi": 100, "savefig.bbox": "tight", "pdf.fonttype": 42})


def colours() -> dict[str, tuple]:
    """Condition -> colour (colour-blind palette, stable order; the opt-in peers last, so the
    paper's conditions keep their colours)."""
    palette = list(sns.color_palette("colorblind"))  # ten colours; more conditions than
    palette += [c for c in sns.color_palette("dark") if c not in palette]  # that get dark ones
    return dict(zip(DRAWN, palette[: len(DRAWN)], strict=True))


def label(condition: str) -> str:
    return LABELS.get(str(condition), str(condition))


def marker(condition: str) -> str:
    """The condition's marker (its place in ``DRAWN``; the first for an unknown one)."""
    known = list(DRAWN)
    return MARKERS[known.index(str(condition)) % len(MARKERS) if str(condition) in known else 0]


def save(fig: plt.Figure, name: str, out_dir: str | Path) -> list[Path]:
    """Write ``name``.png and ``name``.pdf into ``out_dir``; close the figure."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=DPI)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def no_data(fig: plt.Figure, ax: plt.Axes, message: str) -> plt.Figure:
    """``message`` in place of a plot (nothing to show)."""
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def suite_axes(panels: list, height: float = 4.2,
               sharey: bool = False) -> tuple[plt.Figure, list[plt.Axes]]:
    """One row of axes, one per panel (a suite, or a suite and span)."""
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5.4 * max(len(panels), 1), height),
                             squeeze=False, sharey=sharey)
    return fig, list(axes[0])


def legend(fig: plt.Figure, conditions) -> None:
    """The conditions' colours and markers below the figure."""
    handles = [plt.Line2D([], [], color=colours().get(c, "grey"), marker=marker(c),
                          linestyle="", markersize=8, label=label(c))
               for c in DRAWN if c in set(map(str, conditions))]
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False, title="Memory condition")
    fig.subplots_adjust(bottom=0.2)  # room for the axis labels; the legend hangs below
