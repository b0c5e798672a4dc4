"""Where wrong answers come from (memlab.report.failures, a table of every paper whose runs
measured evidence recall): the split of answered tests by whether their evidence reached the
prompt, on constructed scores whose counts are known."""

from __future__ import annotations

import pandas as pd
import pytest

from memlab.report.failures import failures, failures_shown


def _score(condition: str, i: int, fraction: float, recall: float | None, *,
           span: int = 32000, answered: bool = True, phase: str = "main") -> dict:
    return {"suite": "persona", "span": span, "seed": 0, "condition": condition,
            "test_id": f"t{i}", "phase": phase, "answered": answered, "fraction": fraction,
            "evidence_recall": recall}


def _scores() -> pd.DataFrame:
    """rag, 20 tests: 12 with all evidence (9 right, 3 wrong), 4 with part of it (1 right, 3
    wrong), 4 with none (all wrong); full_context, 10 tests, none with evidence (3 right by
    chance); and rows the split must not count."""
    rows = [_score("rag", i, 1.0 if i < 9 else 0.0, 1.0) for i in range(12)]
    rows += [_score("rag", 12 + i, 1.0 if i == 0 else 0.0, 0.5) for i in range(4)]
    rows += [_score("rag", 16 + i, 0.0, 0.0) for i in range(4)]
    rows += [_score("full_context", i, 1.0 if i < 3 else 0.0, 0.0) for i in range(10)]
    rows += [_score("rag", 90, 0.0, 1.0, answered=False),  # evidence-only: not answered
             _score("rag", 91, 0.0, None),  # recall not measured
             _score("rag", 92, 0.0, 1.0, phase="probe")]  # not the main phase
    return pd.DataFrame(rows)


def test_the_split_counts_evidence_given_and_wrong_answers_by_their_source():
    table = failures(_scores()).set_index("condition")
    rag = table.loc["rag"]
    assert rag["tests"] == 20 and rag["with_evidence_n"] == 20
    assert rag["with_evidence"] == pytest.approx(12 / 20)
    assert rag["accuracy_with"] == pytest.approx(9 / 12) and rag["accuracy_with_n"] == 12
    assert rag["accuracy_without"] == pytest.approx(1 / 8) and rag["accuracy_without_n"] == 8
    # 10 wrong: 3 with all their evidence in the prompt (the model's), 7 without (the memory's)
    assert rag["model_share"] == pytest.approx(3 / 10) and rag["model_share_n"] == 10
    assert 0 < rag["model_share_low"] < 0.3 < rag["model_share_high"] < 1  # Wilson
    fc = table.loc["full_context"]
    assert fc["with_evidence"] == 0 and fc["with_evidence_high"] > 0  # never +-0 at 0/n
    assert pd.isna(fc["accuracy_with"]) and fc["accuracy_with_n"] == 0
    assert fc["accuracy_without"] == pytest.approx(0.3)
    assert fc["model_share"] == 0 and fc["model_share_n"] == 7


def test_the_shown_table_gives_percentages_intervals_and_each_n():
    shown = failures_shown(failures(_scores())).set_index("condition")
    assert shown.loc["rag", "evidence all in prompt (%)"] == "60.0"
    assert shown.loc["rag", "accuracy with it (%)"] == "75.0"
    assert shown.loc["rag", "n without"] == 8
    assert shown.loc["rag", "wrong with evidence in prompt (%)"] == "30.0"
    assert shown.loc["rag", "n wrong"] == 10
    assert shown.loc["full_context", "accuracy with it (%)"] == "--"


def test_scores_without_evidence_recall_give_an_empty_table():
    assert failures(_scores().drop(columns=["evidence_recall"])).empty
    assert failures(pd.DataFrame()).empty



def test_show_failures_displays_the_table_or_says_why_there_is_none(tmp_path, capsys):
    from memlab.report import NO_FAILURES, show_failures, tables

    show_failures({"figures": {}, "tables": {}})
    assert capsys.readouterr().out.strip() == NO_FAILURES
    frame = failures(_scores())
    paths = tables.write_table(frame, "failures", tmp_path, failures_shown(frame))
    show_failures({"figures": {}, "tables": {"failures": paths}})
    assert "<IPython.core.display.Markdown object>" in capsys.readouterr().out
    assert "wrong with evidence in prompt (%)" in paths[2].read_text()
