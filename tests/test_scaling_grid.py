"""The ``scaling`` grid (issue 45 item 1): spans, >= 60 paired answered questions per condition
at every span, evidence recall on >= 100, and the hours ``--plan`` projects."""

from __future__ import annotations

import re

import pytest

from memlab import cli
from memlab.gridcost import cell_seconds, history_tokens_read
from memlab.gridspec import SCALING


def test_the_spec_spans_and_conditions():
    assert SCALING.spans == {"ltm": [1000, 4000, 16000, 32000], "persona": [4000, 16000, 32000]}
    assert SCALING.conditions == ["vanilla", "oracle", "full_context", "rag", "episodic",
                                  "episodic_summary", "sleep", "hybrid"]


def test_plan_prints_at_least_60_answered_and_the_hours_at_every_span(capsys):
    assert cli.main(["grid", "--spec", "scaling", "--plan"]) == 0
    out = capsys.readouterr().out
    found = re.findall(r"(ltm|persona) at (\d+) tokens: 8 conditions, (\d+) answered and (\d+) "
                       r"evidence questions per condition; detects a paired difference of "
                       r"(\d+)%", out)
    assert {(s, int(span)) for s, span, *_ in found} == {
        ("ltm", 1000), ("ltm", 4000), ("ltm", 16000), ("ltm", 32000),
        ("persona", 4000), ("persona", 16000), ("persona", 32000)}
    assert all(int(a) >= 60 and int(e) >= 100 for *_, a, e, _ in found)
    hours = [float(h) for h in re.findall(r"projected model time: ([\d.]+) h", out)]
    assert len(hours) == 7 and all(h > 0 for h in hours)
    assert hours[3] > hours[0]  # LTM 32k costs more than 1k (full_context reads more)
    assert "full_context cuts: conversations up to" in out


def test_full_context_reads_each_turn_once_until_a_cut_then_the_kept_half_again():
    assert history_tokens_read([(100, False)] * 5 + [(10, True)], budget=1000) == 500
    # 12 turns of 100 in a 1000 budget: the 11th cuts to 500 kept; the answer reads them anew
    turns = [(100, False)] * 11 + [(10, True)]
    assert history_tokens_read(turns, budget=1000) == 600
    assert history_tokens_read([(100, False)] * 5, budget=1000) == 0  # nothing answered


def test_full_context_pays_history_at_40_tokens_a_second_and_memories_per_turn():
    base = cell_seconds("ltm", "full_context", stored_turns=10, answered=2)
    assert cell_seconds("ltm", "full_context", stored_turns=10, answered=2,
                        history_tokens=4000) == base + 100
    assert cell_seconds("ltm", "sleep", stored_turns=100, answered=0) == 80.0


def test_suite_seeds_replace_the_grids_seeds_for_that_suite_only():
    cells = SCALING.cells()
    ltm = {(c.seed, c.answered) for c in cells if c.suite == "ltm"}
    persona = {(c.seed, c.answered) for c in cells if c.suite == "persona"}
    assert ltm == {(0, None), (1, 0)}  # every test of seed 0 answered; seed 1 evidence only
    assert persona == {(0, 30), (1, 30), (2, 0)}
    assert len(cells) == 8 * (4 * 2 + 3 * 3)


def test_suite_seeds_of_an_unknown_suite_is_refused_by_name():
    from memlab.errors import ConfigError
    from memlab.gridspec import validate_spec

    values = SCALING.model_dump() | {"suite_seeds": {"ltmm": {"seeds": [0]}}}
    with pytest.raises(ConfigError, match="suite_seeds"):
        validate_spec(values, "test")
    values["suite_seeds"] = {"ltm": {"seed": [0]}}
    with pytest.raises(ConfigError, match="suite_seeds"):
        validate_spec(values, "test")
