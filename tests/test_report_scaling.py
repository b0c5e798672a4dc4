"""The span-scaling report (issue 45 item 2): the crossover table on constructed paired data,
and the figures written from a grid with several spans."""

from __future__ import annotations

import pandas as pd

from memlab.report import paired, scaling

CONDITIONS = ["vanilla", "oracle", "full_context", "rag", "sleep"]


def _scores(n: int = 80) -> pd.DataFrame:
    """rag: clearly above full_context at span 4000 only; sleep: never above it."""
    rows = []
    for span in (1000, 4000):
        for i in range(n):
            full = int(i % 2 == 0) if span == 1000 else int(i % 4 == 0)
            outcome = {"vanilla": 0, "oracle": 1, "full_context": full,
                       "rag": full if span == 1000 else int(i % 4 != 3),
                       "sleep": full}
            rows += [{"suite": "ltm", "span": span, "seed": 0, "test_id": f"t{i}",
                      "test_type": "colours",
                      "phase": "main", "condition": c, "fraction": float(v)}
                     for c, v in outcome.items()]
    return pd.DataFrame(rows)


def _turns(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.assign(kind="question", index=scores["test_id"].str[1:].astype(int),
                         evidence_recall=scores["fraction"],
                         prompt_tokens=scores["span"] * 1.2, memory_latency_s=0.1,
                         llm_latency_s=scores["span"] / 1000.0)


def test_crossover_names_the_first_span_above_full_context_or_none():
    table = scaling.crossover(paired.accuracy_comparisons(_scores())).set_index("condition")
    assert set(table.index) == {"rag", "sleep"}  # vanilla and oracle are not memories
    assert table.loc["rag", "crossover"] == "4,000"
    assert table.loc["sleep", "crossover"] == "none up to 4,000"
    assert table.loc["rag", "4,000"].startswith("+50.0 pp [") and "n=80" in table.loc["rag", "4,000"]
    assert table.loc["rag", "1,000"].startswith("+0.0 pp [")
    # the interval in the difference's units (percentage points), not fractions
    low, high = (float(x) for x in table.loc["rag", "4,000"].split("[")[1].split("]")[0]
                 .split(" to " if " to " in table.loc["rag", "4,000"] else "-"))
    assert 30 < low < 50 < high < 70, table.loc["rag", "4,000"]


def test_a_difference_not_significant_after_holm_is_no_crossover():
    small = scaling.crossover(paired.accuracy_comparisons(_scores(n=8))).set_index("condition")
    assert small.loc["rag", "crossover"] == "none up to 4,000"


def test_figures_are_written_only_for_several_spans(tmp_path):
    scores = _scores()
    turns = _turns(scores)
    assert scaling.has_several_spans(scores)
    assert not scaling.has_several_spans(scores[scores["span"] == 1000])
    written = scaling.write_scaling(scores, turns, tmp_path)
    assert set(written) == {"accuracy_vs_span", "recall_vs_span", "cost_vs_span"}
    assert all(p.stat().st_size > 0 for paths in written.values() for p in paths)


def test_a_span_where_full_context_answered_nothing_is_left_out_not_an_error(tmp_path):
    """The scaling grid's cut: full_context measures evidence recall only at LTM 16k."""
    scores = _scores()
    longer = scores[scores["span"] == 4000].assign(span=16000)
    scores = pd.concat([scores, longer[longer["condition"] != "full_context"]])
    table = scaling.crossover(paired.accuracy_comparisons(scores)).set_index("condition")
    assert table.loc["rag", "crossover"] == "4,000"
    assert table.loc["sleep", "crossover"] == "none up to 4,000"  # the last span compared
    assert "16,000" not in table.columns
    written = scaling.write_scaling(scores, _turns(scores), tmp_path)
    assert set(written) == {"accuracy_vs_span", "recall_vs_span", "cost_vs_span"}


def test_given_the_scores_a_span_without_full_context_answers_says_so_not_not_run(tmp_path):
    """LTM 16k in the scaling grid: the memories answer, full_context measures evidence recall
    only; another suite's 16k column must not make the LTM cell read "not run"."""
    scores = _scores()
    longer = scores[scores["span"] == 4000].assign(span=16000)
    persona = scores.assign(suite="persona", span=scores["span"] * 4)  # 4k and 16k, all answered
    scores = pd.concat([scores, longer[longer["condition"] != "full_context"], persona])
    comparisons = paired.accuracy_comparisons(scores)
    table = scaling.crossover(comparisons, scores=scores).set_index(["suite", "condition"])
    assert table.loc[("ltm", "rag"), "16,000"] == scaling.NO_REFERENCE
    assert table.loc[("ltm", "sleep"), "crossover"] == (
        "none up to 4,000 (full_context answered nothing at 16,000)")
    assert table.loc[("ltm", "rag"), "crossover"] == "4,000 (full_context answered nothing at 16,000)"
    assert table.loc[("persona", "rag"), "1,000"] == scaling.NOT_AT_SPAN  # persona has no 1k span
    assert table.loc[("persona", "rag"), "16,000"].startswith("+50.0 pp")
    assert list(table.columns) == ["crossover", "1,000", "4,000", "16,000"]  # spans in order
    without = scaling.crossover(comparisons).set_index(["suite", "condition"])
    # without the scores nothing says full_context answered nothing at LTM 16k
    assert without.loc[("ltm", "rag"), "16,000"] == scaling.NOT_AT_SPAN
    fig = scaling.plot_accuracy_vs_span(scores)
    ltm_top, ltm_bottom = fig.axes[0], fig.axes[2]
    assert ltm_top.get_title() == "ltm"
    drawn = {round(x) for line in ltm_top.get_lines() for x in line.get_xdata()}
    assert any(15000 < x < 17000 for x in drawn)  # the memories' accuracy at 16k is drawn
    notes = [t.get_text() for t in ltm_bottom.texts]
    assert notes == ["full_context answered\nnothing at 16k"], notes
    assert not fig.axes[3].texts  # persona's full_context answered at every span


def test_a_span_a_memory_did_not_run_reads_not_run_and_its_crossover_names_the_gap(tmp_path):
    """A spec's ``not_run``: sleep has no cell at 4k, rag does (here, the middle span of
    three), so sleep's crossover at 16k cannot claim 4k was below full_context."""
    scores = _scores()
    longer = scores[scores["span"] == 4000].assign(span=16000)
    longer.loc[longer["condition"] == "sleep", "fraction"] = 1.0  # always right at 16k
    scores = pd.concat([scores[~((scores["span"] == 4000) & (scores["condition"] == "sleep"))],
                        longer])
    table = scaling.crossover(paired.accuracy_comparisons(scores)).set_index("condition")
    assert table.loc["sleep", "4,000"] == "not run"
    assert table.loc["sleep", "crossover"] == "16,000 (not run at 4,000)"
    assert table.loc["rag", "crossover"] == "4,000"  # ran at every span: no gap named
    assert table.loc["rag", "4,000"].startswith("+50.0 pp")
    written = scaling.write_scaling(scores, _turns(scores), tmp_path)
    assert "accuracy_vs_span" in written


def test_show_scaling_displays_the_figures_and_tables_or_says_how_to_get_them(tmp_path, capsys):
    from memlab.report import NO_SCALING, show_scaling, tables

    show_scaling({"figures": {}, "tables": {}})  # one span per suite: no crossover written
    assert capsys.readouterr().out.strip() == NO_SCALING
    scores = _scores()
    figures = scaling.write_scaling(scores, _turns(scores), tmp_path)
    crossover = scaling.crossover(paired.accuracy_comparisons(scores))
    written = {"figures": figures,
               "tables": {"crossover": tables.write_table(crossover, "crossover", tmp_path)}}
    show_scaling(written)  # outside a kernel IPython's display prints each object's repr
    out = capsys.readouterr().out
    assert out.count("<IPython.core.display.Image object>") == len(figures) == 3
    assert out.count("<IPython.core.display.Markdown object>") == 1  # the crossover table
