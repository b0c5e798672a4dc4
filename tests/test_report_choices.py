"""Which option persona's answers chose (memlab.report.choices, a table of every paper with
persona answers), on constructed scores whose counts are known."""

from __future__ import annotations

import pandas as pd
import pytest

from memlab.report import NO_CHOICES, show_choices, tables
from memlab.report.choices import choices, choices_shown


def _score(condition: str, i: int, kind: str | None, *, suite: str = "persona",
           answered: bool = True, phase: str = "main") -> dict:
    return {"suite": suite, "span": 4000, "seed": 0, "condition": condition, "test_id": f"t{i}",
            "phase": phase, "answered": answered, "fraction": float(kind == "correct"),
            "metadata": {"chosen_kind": kind, "chosen": None if kind is None else 0}}


def _scores() -> pd.DataFrame:
    """rag, 20 answers: 8 right, 9 outdated, 2 never stated, 1 no option; full_context, 10:
    6 right, 1 outdated, 3 contradicting; and rows the table must not count."""
    kinds = ["correct"] * 8 + ["outdated"] * 9 + ["never_stated"] * 2 + [None]
    rows = [_score("rag", i, k) for i, k in enumerate(kinds)]
    kinds = ["correct"] * 6 + ["outdated"] + ["contradicting"] * 3
    rows += [_score("full_context", i, k) for i, k in enumerate(kinds)]
    rows += [_score("rag", 90, "outdated", answered=False),  # evidence only: not answered
             _score("rag", 91, "outdated", phase="probe"),  # Table 2's probes
             _score("rag", 92, "outdated", suite="ltm")]  # not a persona question
    return pd.DataFrame(rows)


def test_each_kind_is_counted_over_the_answers_and_outdated_over_the_wrong_ones():
    table = choices(_scores()).set_index("condition")
    rag = table.loc["rag"]
    assert rag["questions"] == 20 and rag["correct_n"] == 20
    assert rag["correct"] == pytest.approx(8 / 20)
    assert rag["outdated"] == pytest.approx(9 / 20)
    assert rag["never_stated"] == pytest.approx(2 / 20)
    assert rag["contradicting"] == 0 and rag["contradicting_high"] > 0  # never +-0 at 0/n
    # 12 wrong (the one that chose no option among them): 9 chose the outdated option
    assert rag["outdated_of_wrong"] == pytest.approx(9 / 12) and rag["outdated_of_wrong_n"] == 12
    assert 0.4 < rag["outdated_of_wrong_low"] < 0.75 < rag["outdated_of_wrong_high"] < 1  # Wilson
    fc = table.loc["full_context"]
    assert fc["outdated_of_wrong"] == pytest.approx(1 / 4) and fc["contradicting"] == 0.3


def test_the_shown_table_gives_percentages_intervals_and_two_ns():
    shown = choices_shown(choices(_scores())).set_index("condition")
    assert shown.loc["rag", "right (%)"] == "40.0"
    assert shown.loc["rag", "outdated (%)"] == "45.0"
    assert shown.loc["rag", "outdated of wrong (%)"] == "75.0"
    assert shown.loc["rag", "questions"] == 20 and shown.loc["rag", "n wrong"] == 12
    assert "n outdated" not in shown.columns  # the answers' n is said once


def test_no_persona_answers_give_an_empty_table_and_the_notebook_says_so(tmp_path, capsys):
    assert choices(_scores().query("suite == 'ltm'")).empty
    assert choices(pd.DataFrame()).empty
    show_choices({"figures": {}, "tables": {}})
    assert capsys.readouterr().out.strip() == NO_CHOICES
    frame = choices(_scores())
    paths = tables.write_table(frame, "persona_choices", tmp_path, choices_shown(frame))
    show_choices({"figures": {}, "tables": {"persona_choices": paths}})
    assert capsys.readouterr().out.count("<IPython.core.display.Markdown object>") == 1
