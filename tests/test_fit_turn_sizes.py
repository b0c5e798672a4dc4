"""benchmarks/fit_turn_sizes.py: the slopes ``memlab.gridcost`` prices LTM's longer turns with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import fit_turn_sizes  # noqa: E402


def test_a_line_is_fitted_across_turn_sizes_and_refused_where_they_are_one_size():
    # LTM: 17.7 tokens a turn at 1k, 252 at 32k; a prompt of 400 + 4.7 x tokens
    points = [(x, 400 + 4.7 * x) for x in (17.7, 58.9, 202.7, 251.2)]
    a, b = fit_turn_sizes.line(points)
    assert (a, b) == (pytest.approx(400), pytest.approx(4.7))
    # persona: 20.1-20.8 tokens at every span, nothing to fit a slope on
    assert fit_turn_sizes.line([(20.8, 480.0), (20.3, 466.0), (20.1, 469.0)]) is None
    assert fit_turn_sizes.line([]) is None


def test_a_folder_that_is_not_there_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        fit_turn_sizes.main(["--results", "/nonexistent/scaling"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--results '/nonexistent/scaling': no such folder" in err and err.count("\n") == 1
