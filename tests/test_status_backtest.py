"""benchmarks/status_backtest.py: how far ``--status`` prices a cell from runs at other spans."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import status_backtest  # noqa: E402


def test_the_typical_factor_counts_over_and_under_estimates_alike_on_cells_both_priced():
    rows = [{"cell": "a", "seconds": 100.0, "per_turn": 200.0, "by_part": 100.0},
            {"cell": "b", "seconds": 100.0, "per_turn": 50.0, "by_part": 125.0},
            {"cell": "c", "seconds": 100.0, "per_turn": None, "by_part": 900.0}]  # left out
    assert status_backtest.summary(rows, "per_turn") == {
        "cells": 2, "typical_factor": 2.0, "total_ratio": 1.25}
    assert status_backtest.summary(rows, "by_part") == {
        "cells": 2, "typical_factor": pytest.approx(1.12, abs=0.005), "total_ratio": 1.12}
    assert status_backtest.summary([], "by_part")["typical_factor"] is None


def test_a_folder_that_is_not_there_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        status_backtest.main(["--results", "/nonexistent/scaling"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--results '/nonexistent/scaling': no such folder" in err and err.count("\n") == 1
