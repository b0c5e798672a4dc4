"""Figures, tables and summaries from hand-made results folders (no model, no kernel)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from test_report_fixtures import write_results, write_run

from memlab import lab, stats
from memlab.bench.runlog import read_jsonl
from memlab.errors import ConfigError
from memlab.memory.base import CONDITIONS, PEERS
from memlab.report import data, figures, forest, summary, tables, write_paper


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_results(tmp_path_factory.mktemp("results"))


def test_runs_frame_reads_complete_runs_only_in_condition_order(results):
    runs = data.runs_frame(results)
    # every condition x (2 seeds x 2 LTM spans + 2 persona), and sleep's 2 Table 2 runs
    assert len(runs) == len(CONDITIONS) * (2 * 2 + 2) + 2
    assert "running" not in set(runs["status"])
    assert list(runs["condition"].cat.categories[:len(CONDITIONS)]) == list(CONDITIONS)
    assert set(runs["span"]) == {1000, 2000, 4000}
    assert set(runs[runs["probes"]]["run_id"]) == {"persona-sleep-2000-s0-probes",
                                                   "persona-sleep-2000-s1-probes"}


def _scores(results, pattern, answered_only=True):
    """The main-phase scores of the run folders matching ``pattern`` (answered tests only)."""
    rows = [json.loads(line) for path in results.glob(f"{pattern}/scores.jsonl")
            for line in path.read_text().splitlines()]
    return [s for s in rows if s["phase"] == "main" and (s["answered"] or not answered_only)]


def _ltm_scores(results, condition):
    return _scores(results, f"ltm-{condition}-*")


def test_accuracy_counts_answered_tests_only_with_a_wilson_interval(results):
    frame = summary.accuracy_tokens(data.scores_frame(results), data.turns_frame(results))
    for condition in ("full_context", "rag", "hybrid"):  # vanilla has a running run too
        for span in (1000, 4000):
            row = frame[(frame["suite"] == "ltm") & (frame["condition"] == condition)
                        & (frame["span"] == span)].iloc[0]
            scores = _scores(results, f"ltm-{condition}-{span}-s*")
            assert len(scores) == 12 == row["accuracy_n"]  # 6 of 8 tests answered, 2 seeds
            assert len(_scores(results, f"ltm-{condition}-{span}-s*", False)) == 16
            wilson = stats.proportion_ci(sum(s["score"] for s in scores), 12).scaled(100)
            assert (row["accuracy"], row["accuracy_low"], row["accuracy_high"]) == pytest.approx(
                (wilson.estimate, wilson.low, wilson.high))
    # every answer of a condition costs the same tokens here: a zero-spread t interval
    assert (frame["tokens_low"] == frame["tokens"]).all()


def test_a_table2_run_counts_in_table2_only(results):
    frame = summary.accuracy_tokens(data.scores_frame(results), data.turns_frame(results))
    row = frame[(frame["suite"] == "persona") & (frame["condition"] == "sleep")].iloc[0]
    ordinary = _scores(results, "persona-sleep-2000-s?")
    assert row["accuracy_n"] == len(ordinary) == 12
    assert row["accuracy"] == pytest.approx(100 * sum(s["score"] for s in ordinary) / 12)


def test_scores_by_type_shows_low_high_intervals(results):
    scores = data.scores_frame(results / "persona-sleep-2000-s0-probes")
    table = summary.scores_by_type(scores).set_index("test_type")
    assert list(table.columns) == ["n", "score (%)", "95% CI"] and table["n"].sum() == 6
    main = scores[(scores["phase"] == "main") & scores["answered"]]
    for test_type, group in main.groupby("test_type"):
        wilson = stats.proportion_ci(group["fraction"].sum(), len(group)).scaled(100)
        assert table.loc[test_type, "95% CI"] == f"{wilson.low:.1f}-{wilson.high:.1f}"
    assert summary.scores_by_type(scores, phase="post_sleep")["n"].sum() == 4


def test_tokens_per_answer_agree_with_the_files(results):
    frame = summary.accuracy_tokens(data.scores_frame(results), data.turns_frame(results))
    row = frame[(frame["suite"] == "ltm") & (frame["condition"] == "rag")].iloc[0]
    assert row["tokens"] == pytest.approx(100 + 50 * CONDITIONS.index("rag"))
    assert row["tokens_n"] == 2 * (8 + 6)  # per seed: 8 needles and 6 answered questions


def test_ltm_score_is_the_sum_over_types_of_the_mean(tmp_path):
    write_run(tmp_path, "rag", "ltm", 0, 1000)
    scores = data.scores_frame(tmp_path)
    answered = scores[scores["answered"]]
    expected = answered.groupby("test_type")["fraction"].mean().sum()
    frame = summary.ltm_by_span(scores)
    assert frame.iloc[0]["score"] == pytest.approx(expected)
    assert frame.iloc[0]["n_types"] == 4 and frame.iloc[0]["score_n"] == 6
    interval = stats.sum_of_means_ci(g["fraction"] for _, g in answered.groupby("test_type"))
    assert (frame.iloc[0]["score_low"], frame.iloc[0]["score_high"]) == pytest.approx(
        (interval.low, interval.high))
    assert 0 <= interval.low < interval.estimate < interval.high <= 4


def test_table2_from_scores_gives_pre_post_and_delta(results):
    frame = summary.table2_from_scores(data.scores_frame(results))
    assert set(frame["probe"]) == {"delayed_recall", "cue_based_recall",
                                   "cross_episode_integration", "schema_utilisation"}
    assert (frame["delta"].round(6) == 20.0).all()  # the fixture adds 0.2 after sleep
    # two seeds with the same fractional score: a zero-spread t interval, no bar
    assert all(err == (0.0, 0.0) for err in frame["pre_err"])


def test_table2_shows_what_the_forced_cycles_did(results):
    """Beside the probes: the cycles' counts summed over the suite's Table 2 runs (two seeds,
    each manifest's sleep_stats as written by the fixture)."""
    frame = tables.bench_table("table2")(results)
    assert set(frame["suite"]) == {"persona"} and len(frame) == 5
    row = frame.iloc[0]
    assert (row["cycles"], row["episodes_considered"], row["episodes_replayed"],
            row["memories_formed"], row["schemas_formed"], row["episodes_forgotten"],
            row["cycle_failures"]) == (2, 24, 20, 4, 2, 6, 2)
    caption = summary.cycle_caption(frame)
    assert caption.startswith("persona: 2 forced cycle(s) over 24 unconsolidated episodes")
    assert "4 memories and 2 schemas formed, 6 episodes forgotten; 2 failed steps" in caption


def test_persona_matrix_has_a_row_per_condition(results):
    matrix = summary.persona_by_type(data.scores_frame(results))
    assert list(matrix.index) == list(CONDITIONS)
    assert matrix.shape[1] == 4 and matrix.values.min() >= 0 and matrix.values.max() <= 100
    counts = summary.persona_by_type(data.scores_frame(results), counts=True)
    # 6 answered questions a run, 2 seeds; sleep's Table 2 runs are not counted again
    assert (counts.sum(axis=1) == 12).all() and counts.shape == matrix.shape


def _is_png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


FIGURES = {"accuracy_vs_tokens", "paired_accuracy", "evidence_recall", "paired_recall",
           "ltm_ceilings", "ltm_vs_span", "persona_by_type", "table2_sleep", "latency",
           # the fixture's LTM runs have two spans: the scaling figures (memlab.report.scaling)
           "accuracy_vs_span", "recall_vs_span", "cost_vs_span"}
TABLES = {"overview", "accuracy", "evidence_recall", "paired_accuracy", "paired_recall",
          "ltm_ceilings", "table1", "table2", "ltm_scores", "persona_by_type", "costs",
          "crossover", "failures", "answer_forms", "persona_choices"}


def test_write_paper_writes_every_figure_and_table(results, tmp_path):
    written = write_paper(results, tmp_path / "figures")
    assert set(written["figures"]) == FIGURES and set(written["tables"]) == TABLES
    for png, pdf in written["figures"].values():
        assert _is_png(png) and png.stat().st_size > 20_000
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    csv, tex, md = written["tables"]["overview"]
    overview = pd.read_csv(csv)  # the numbers: proportions with their interval ends and n
    assert len(overview) == 2 * len(CONDITIONS) + len(CONDITIONS)  # LTM at two spans
    row = overview[(overview["suite"] == "ltm") & (overview["condition"] == "rag")
                   & (overview["span"] == 1000)].iloc[0]
    scores = _scores(results, "ltm-rag-1000-s*")
    wilson = stats.proportion_ci(sum(s["score"] for s in scores), len(scores))
    assert (row["accuracy"], row["accuracy_low"], row["accuracy_high"], row["accuracy_n"]) == \
        pytest.approx((wilson.estimate, wilson.low, wilson.high, 12))
    assert row["recall_n"] == 16 and row["answers"] == 2 * (8 + 6)
    assert row["model_calls"] == 2 * (8 + 6)  # the manifests' recorded calls
    shown = md.read_text()  # what a reader sees: percent, the interval as text, n
    assert re.match(r"\| suite +\| span +\| condition +\| accuracy \(%\) +\| 95% CI +\| n +\|",
                    shown)
    assert re.search(rf"\| {re.escape(wilson.scaled(100).text())} +\|", shown)
    assert "\\begin{tabular}" in tex.read_text() and "recall 95\\% CI" in tex.read_text()
    said = written["findings"].read_text()  # the findings beside the tables, every suite/span
    assert written["findings"].parent == tmp_path / "figures" / "tables"
    assert [line for line in said.splitlines() if line.startswith("### ")] == [
        "### ltm at 1000 tokens", "### ltm at 4000 tokens", "### persona at 2000 tokens"]


def test_figures_use_one_colour_per_condition_in_condition_order():
    palette = figures.colours()
    assert list(palette) == list(CONDITIONS) + list(PEERS)  # the opt-in peers after them
    assert len(set(palette.values())) == len(CONDITIONS) + len(PEERS)


def test_empty_results_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no complete run"):
        figures.write_figures(tmp_path, tmp_path / "out")
    with pytest.raises(ConfigError, match="no such folder"):
        data.runs_frame(tmp_path / "missing")
    with pytest.raises(ConfigError, match="no complete run"):
        tables.overview(tmp_path)


def test_torn_last_line_is_ignored_but_a_torn_middle_line_is_an_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"a": 2')
    assert read_jsonl(path) == [{"a": 1}]
    path.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(ConfigError, match="line 2"):
        read_jsonl(path)


def test_lab_views_of_one_run(results):
    run_dir = results / "persona-sleep-2000-s0-probes"
    assert lab.run_summary(run_dir)["condition"] == "sleep"
    by_type = lab.scores_by_type(run_dir)
    assert by_type["n"].sum() == 6  # the answered tests
    assert len(lab.table2(run_dir)) == 4
    costs = lab.costs(run_dir)
    assert costs.loc[("main", "needle"), "answers"] == 8


def test_lab_rejects_bad_parameters_naming_them(tmp_path):
    good = dict(condition="rag", suite="ltm", span=100, seed=0, llm="fake", embedder="hashing")
    for field, bad in (("condition", "nope"), ("suite", "x"), ("llm", "gpt"), ("span", 0),
                       ("seed", -1), ("embedder", "bert"), ("option_scoring", "vote")):
        with pytest.raises(ConfigError, match=f"parameters: field '{field}'"):
            lab.run_condition(**(good | {field: bad}), out_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing was written


def test_background_spreads_cycles_and_storing_over_the_run_answers():
    cycle = {"phase_durations_s": {"replay": 0.5, "compression": 3.0, "decay": 0.5}}

    def turn(run_id, kind, stats=None, phase="main", store_s=0.0):
        return {"suite": "persona", "condition": "sleep", "run_id": run_id, "phase": phase,
                "kind": kind, "cycle_stats": stats, "memory_latency_s": store_s,
                "llm_latency_s": 1.0}

    turns = pd.DataFrame([
        turn("a", "filler", cycle, store_s=0.5), turn("a", "question", store_s=9.0),
        turn("a", "question"), turn("a", "filler", cycle, store_s=0.5), turn("a", "question"),
        turn("a", "question"),
        turn("a", "filler", cycle, phase="pre_sleep"),  # the forced Table 2 sleep: left out
        turn("b", "filler"), turn("b", "question"),
    ])
    row = summary.background(turns).iloc[0]
    # run a: 2 cycles x 4 s + 2 x 0.5 s storing filler, over 4 answers = 2250 ms; run b: none
    assert (row["cycles"], row["consolidation_s"], row["storing_s"]) == (1, 4.0, 0.5)
    assert row["background_ms"] == pytest.approx(1125.0)
    assert summary.latency(turns).iloc[0]["background_ms"] == pytest.approx(1125.0)


def test_sleep_store_views_read_runs_written_before_the_sql_layer(tmp_path, monkeypatch):
    """A run folder from before the record stores moved to the SQL layer keeps its views: a
    table per kind in store/*/sleep_memory.sqlite."""
    import sqlite3

    from memlab.models.sleep import ConsolidatedMemory, Schema

    monkeypatch.delenv("MEMLAB_SQL_URL", raising=False)
    run_dir = tmp_path / "persona-sleep-300-s0"
    folder = run_dir / "store" / "attempt-1"
    folder.mkdir(parents=True)
    memory = ConsolidatedMemory(summary="User keeps a cat", key_concepts=["cat"],
                                source_episode_ids=["e1", "e2"])
    schema = Schema(name="Pets", description="animals at home", core_concepts=["cat"])
    with sqlite3.connect(folder / "sleep_memory.sqlite") as db:
        for table, record in (("consolidated_memories", memory), ("schemas", schema)):
            db.execute(f"CREATE TABLE {table} (scope TEXT, id TEXT, seq INTEGER, data TEXT, "
                       "embedding BLOB, embedder TEXT)")
            db.execute(f"INSERT INTO {table} VALUES ('u', ?, 0, ?, x'', 'hashing')",
                       (record.id, record.model_dump_json()))
    from memlab.report import views

    assert views._stored(run_dir, "consolidated_memories")[0]["summary"] == "User keeps a cat"
    assert [r["name"] for r in views._stored(run_dir, "schemas")] == ["Pets"]


def test_forest_plot_labels_each_row_with_its_pairs_and_holm_p():
    frame = pd.DataFrame({
        "suite": ["ltm", "ltm"], "span": [1000, 1000], "reference": ["full_context"] * 2,
        "condition": ["rag", "hybrid"], "difference": [-0.064, -0.172], "low": [-0.133, -0.244],
        "high": [0.006, -0.101], "n_pairs": [105, 105], "p_holm": [0.0741, 0.0002]})
    fig = forest.plot_forest(frame)
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["n=105, p<0.001", "n=105, p=0.074"]


def test_forest_panel_with_no_pairs_says_so():
    # the scaling grid's LTM 32k: full_context answers nothing, so its column has no pairs
    row = {"condition": "rag", "difference": 0.1, "low": 0.0, "high": 0.2, "n_pairs": 48,
           "p_holm": 0.01}
    frame = pd.DataFrame([{**row, "suite": "ltm", "span": 32000, "reference": "vanilla"},
                          {**row, "suite": "persona", "span": 4000, "reference": "full_context"}])
    fig = forest.plot_forest(frame)
    texts = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes}
    assert texts == {
        "LTM suite, 32,000 tokens\nvs Vanilla": ["n=48, p=0.010"],
        "LTM suite, 32,000 tokens\nvs Full context": ["no questions answered by both"],
        "Persona suite, 4,000 tokens\nvs Vanilla": ["no questions answered by both"],
        "Persona suite, 4,000 tokens\nvs Full context": ["n=48, p=0.010"]}


@pytest.mark.parametrize(("panels", "rows"), [
    ([("ltm", 1000), ("persona", 4000)], [[("ltm", 1000), ("persona", 4000)]]),
    ([("ltm", s) for s in (1, 4, 16, 32)] + [("persona", s) for s in (4, 16, 32)],
     [[("ltm", s) for s in (1, 4, 16, 32)], [("persona", s) for s in (4, 16, 32)]]),
    ([("ltm", s) for s in range(6)], [[("ltm", s) for s in range(4)],
                                      [("ltm", s) for s in range(4, 6)]]),
    (list(range(5)), [[0, 1, 2, 3], [4]]),
])
def test_panels_wrap_into_a_row_per_suite_beyond_four(panels, rows):
    from memlab.report.style import panel_rows, suite_axes
    assert panel_rows(panels) == rows
    fig, axes = suite_axes(panels)
    assert len(axes) == len(panels) and all(ax.get_visible() for ax in axes)
    hidden = [ax for ax in fig.axes if not ax.get_visible()]
    assert len(hidden) == len(rows) * max(map(len, rows)) - len(panels)
    tops = sorted({round(ax.get_position().y1, 3) for ax in axes}, reverse=True)
    assert len(tops) == len(rows)  # a row of axes a row of panels


def test_accuracy_against_tokens_goes_log_where_prompts_differ_twentyfold():
    frame = pd.DataFrame({
        "suite": ["persona"] * 3 + ["ltm"] * 2, "span": [32000] * 3 + [1000] * 2,
        "condition": ["vanilla", "rag", "full_context", "vanilla", "rag"],
        "tokens": [150.0, 480.0, 18000.0, 80.0, 440.0], "accuracy": [33.0, 38.0, 30.0, 3.0, 18.0],
        **{f"{v}_{end}": [float("nan")] * 5 for v in ("tokens", "accuracy")
           for end in ("low", "high")}})
    fig = figures.plot_accuracy_vs_tokens(frame)
    scales = {ax.get_title(): ax.get_xscale() for ax in fig.axes if ax.get_visible()}
    assert scales == {"LTM suite, 1,000 tokens": "linear",
                      "Persona suite, 32,000 tokens": "log"}
