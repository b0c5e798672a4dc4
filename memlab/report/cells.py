"""Table cells: an estimate with its interval and n per group, and how a table shows it.

A numeric cell is four columns, ``<name>``, ``<name>_low``, ``<name>_high`` and ``<name>_n``
(NaN where nothing can be estimated); a shown cell is the value, its 95% interval as
``low-high`` text (``memlab.stats.interval_text``) and its n.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from memlab import stats

GROUP = ["suite", "span", "condition"]  # a cell of the paper's tables: pooled over seeds


def cell_columns(prefix: str) -> list[str]:
    return [prefix, f"{prefix}_low", f"{prefix}_high", f"{prefix}_n"]


def cell(interval: stats.Interval, prefix: str, scale: float = 1.0) -> dict[str, float]:
    """``interval`` (times ``scale``) as the four columns of ``prefix``."""
    shown = interval.scaled(scale)
    return dict(zip(cell_columns(prefix), (shown.estimate, shown.low, shown.high, shown.n),
                    strict=True))


def intervals_by(frame: pd.DataFrame, keys: list[str], column: str, prefix: str,
                 interval: Callable[..., stats.Interval] = stats.mean_ci,
                 scale: float = 1.0) -> pd.DataFrame:
    """Per group of ``keys``: ``interval`` of ``column`` (times ``scale``) as the four columns
    of ``prefix``."""
    rows = [dict(zip(keys, key, strict=True)) | cell(interval(group[column]), prefix, scale)
            for key, group in frame.groupby(keys, observed=True)]
    return pd.DataFrame(rows, columns=keys + cell_columns(prefix))


def fixed(values: pd.Series, digits: int) -> list[str]:
    """Numbers as text with ``digits`` decimals (``--`` where there is none)."""
    return ["--" if pd.isna(v) else f"{float(v):.{digits}f}" for v in values]


def p_text(p: float) -> str:
    """A p-value as a table shows it: three decimals, ``<0.001`` below, ``--`` for none."""
    if pd.isna(p):
        return "--"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def shown(frame: pd.DataFrame, prefix: str, value: str, interval: str, n: str,
          scale: float = 100.0, digits: int = 1) -> pd.DataFrame:
    """The four columns of ``prefix`` replaced by ``value`` (times ``scale``, as text with
    ``digits`` decimals), ``interval`` (``low-high`` text) and ``n``, in that order, where
    ``prefix`` stood."""
    at = list(frame.columns).index(prefix)
    texts = [stats.interval_text(scale * low, scale * high, digits)
             for low, high in zip(frame[f"{prefix}_low"], frame[f"{prefix}_high"], strict=True)]
    out = frame.drop(columns=cell_columns(prefix))
    out.insert(at, value, fixed(scale * frame[prefix].astype(float), digits))
    out.insert(at + 1, interval, texts)
    out.insert(at + 2, n, frame[f"{prefix}_n"].fillna(0).astype(int))  # absent: none counted
    return out
