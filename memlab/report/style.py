"""The look every figure of the paper shares: style, one colour and marker per condition, labels,
saving as PNG (200 dpi) and PDF, the shared legend and the panel for a figure without data."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

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


def plain_number(value: float, _position: object = None) -> str:
    """A tick label: 1,000 and 0.5, not 10^3 notation."""
    return f"{value:,.0f}" if value >= 10 else f"{value:g}"


def log_axis(axis: Axis) -> None:
    """Label a log-scaled axis at 1, 2 and 5 x 10^k in plain numbers, minor ticks unlabelled
    (matplotlib's own labels of a range under a decade overlap: '2 x 10^2' beside '3 x 10^2')."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(plain_number))
    axis.set_minor_formatter(NullFormatter())


MAX_COLUMNS = 4  # panels side by side before a figure wraps (a page holds about four)


def panel_rows(panels: list, max_columns: int = MAX_COLUMNS) -> list[list]:
    """``panels`` laid out in rows, in order: one row when they fit in ``max_columns``; else
    a row per suite (panels that are ``(suite, span, ...)`` tuples: the scaling grid's seven
    suite-and-span panels become an LTM row and a persona row), each wrapped at
    ``max_columns``."""
    if len(panels) <= max_columns:
        return [list(panels)]
    by_suite = all(isinstance(p, tuple) for p in panels)
    groups = [list(g) for _, g in groupby(panels, key=lambda p: p[0] if by_suite else None)]
    return [group[i:i + max_columns] for group in groups
            for i in range(0, len(group), max_columns)]


def panel_grid(panels: list, width: float, height: float, *, stacked: int = 1,
               max_columns: int = MAX_COLUMNS, **kwargs) -> tuple[plt.Figure, list[list[plt.Axes]]]:
    """A figure of ``panel_rows(panels)``, each panel ``stacked`` axes high (``width`` x
    ``height`` inches an axes); returns, per panel in order, its ``stacked`` axes (top first).
    Places the last row leaves empty are hidden."""
    rows = panel_rows(panels, max_columns) if panels else [[None]]
    columns = max(len(row) for row in rows)
    fig, axes = plt.subplots(stacked * len(rows), columns, squeeze=False,
                             figsize=(width * columns, height * stacked * len(rows)), **kwargs)
    out = []
    for r, row in enumerate(rows):
        for c in range(columns):
            cell = [axes[stacked * r + k][c] for k in range(stacked)]
            if c < len(row):
                out.append(cell)
            else:
                for ax in cell:
                    ax.set_visible(False)
    if len(rows) > 1:  # room between rows for the titles and axis labels
        fig.subplots_adjust(hspace=0.45)
    return fig, out


def suite_axes(panels: list, height: float = 4.2,
               sharey: bool = False) -> tuple[plt.Figure, list[plt.Axes]]:
    """One axes per panel (a suite, or a suite and span): one row, or a row per suite when
    there are more than ``MAX_COLUMNS`` (``panel_rows``)."""
    fig, cells = panel_grid(panels, 5.4, height, sharey=sharey)
    return fig, [cell[0] for cell in cells]


def legend(fig: plt.Figure, conditions) -> None:
    """The conditions' colours and markers below the figure."""
    handles = [plt.Line2D([], [], color=colours().get(c, "grey"), marker=marker(c),
                          linestyle="", markersize=8, label=label(c))
               for c in DRAWN if c in set(map(str, conditions))]
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False, title="Memory condition")
    # room for the bottom row's axis labels (about 0.85 inch); the legend hangs below
    fig.subplots_adjust(bottom=min(0.2, 0.85 / fig.get_figheight()))
