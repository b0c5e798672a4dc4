"""The LoCoMo / LongMemEval tables, paired comparisons and figure, from runs the real runner
wrote with scripted answers and verdicts (so every number can be computed by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memlab import lab, stats
from memlab.bench.runlog import read_jsonl
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.report import literature
from memlab.report.judge_labels import read_labels

DATA = Path(__file__).parent / "suites_data"
LOCOMO, LONGMEMEVAL = DATA / "locomo_mini.json", DATA / "longmemeval_mini.json"
# what each condition answers, and the judges' rules: Mem0's J is CORRECT when the answer names
# "strength", the strict judge only when it names all three of "love, faith and strength"; the
# matched verdict is the rule's where one decides (judge_match), else the strict judge's
ANSWERS = {"oracle": "love, faith and strength", "vanilla": "no idea",
           "full_context": "strength"}


def scripted(answer: str):
    def reply(messages):
        text = messages[-1].content
        if "Gold answer:" in text:
            generated = text.split("Generated answer:")[1].split("\n")[0]
            wanted = "love, faith and strength" if "same topic is not enough" in text \
                else "strength"
            return '{"label": "%s"}' % ("CORRECT" if wanted in generated else "WRONG")
        if "Answer yes or no only" in text:  # a city is right, except where none is known
            named = "Portland" in text.split("Model Response:")[1]
            return "no" if named == ("unanswerable" in text) else "yes"
        return "A" if "Options:" in text else answer
    return reply


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("literature")
    for condition, answer in ANSWERS.items():
        for suite, data in (("locomo", LOCOMO), ("longmemeval", LONGMEMEVAL)):
            options = {"data": str(data)} | ({"categories": [1, 2, 3, 4, 5]}
                                             if suite == "locomo" else {})
            spec = lab.RunSpec(suite=suite, condition=condition, span=4000, llm="fake",
                               embedder="hashing", suite_options=options)
            reply = scripted("Portland" if suite == "longmemeval" and condition != "vanilla"
                             else answer)
            lab.run(spec, root, llm=FakeLLM([reply]), embedder=HashingEmbedder(),
                    progress=False)
    return root


def test_questions_frame_has_one_row_per_question_and_run(results):
    questions = literature.questions_frame(results, "locomo")
    assert len(questions) == 3 * 8
    oracle = questions[questions["condition"] == "oracle"].set_index("test_id")
    assert oracle.loc["conv-a:q0", "score"] == 1.0 and oracle.loc["conv-a:q0", "f1"] == 1.0
    assert oracle.loc["conv-a:q4", "test_type"] == "adversarial"
    assert oracle.loc["conv-a:q4", "score"] == 1.0  # chose "A": declined
    assert np.isnan(oracle.loc["conv-a:q4", "f1"])
    turns = {t["test_id"]: t for t in read_jsonl(
        results / "locomo-oracle-4000-s0" / "turns.jsonl") if t["kind"] == "question"}
    assert oracle.loc["conv-a:q1", "prompt_tokens"] == turns["conv-a:q1"]["prompt_tokens"]
    assert oracle.loc["conv-a:q1", "total_s"] == pytest.approx(
        turns["conv-a:q1"]["memory_latency_s"] + turns["conv-a:q1"]["llm_latency_s"])


def test_locomo_table_cells_match_hand_computation(results):
    questions = literature.questions_frame(results, "locomo")
    table = literature.locomo_table(questions).set_index(["condition", "group"])
    overall = table.loc[("full_context", "overall")]
    mine = questions[(questions["condition"] == "full_context")
                     & (questions["test_type"] != "adversarial")]
    expected = stats.proportion_ci(int(mine["score"].sum()), len(mine))
    assert overall["n"] == len(mine) == 7
    assert (overall["J"], overall["J_low"], overall["J_high"]) == pytest.approx(
        (expected.estimate, expected.low, expected.high))
    assert overall["F1"] == pytest.approx(mine["f1"].mean())
    assert overall["evidence_n"] == mine["evidence"].sum()
    assert overall["total_p95_s"] == pytest.approx(np.percentile(mine["total_s"], 95))
    assert table.loc[("oracle", "overall"), "evidence_recall"] == 1.0
    assert table.loc[("vanilla", "overall"), "J"] == 0.0
    assert table.loc[("vanilla", "adversarial"), "J"] == 1.0  # every condition declines here
    groups = list(table.loc["oracle"].index)
    assert groups == ["single_hop", "multi_hop", "open_domain", "temporal", "overall",
                      "adversarial"]


def test_an_answer_from_the_response_cache_has_no_answer_time(results, tmp_path):
    """A re-run served from the cache looks up its answers in milliseconds: that is no answer
    latency, so its total time is left out (the memory search is still timed)."""
    import shutil
    copy = tmp_path / "results"
    shutil.copytree(results / "locomo-full_context-4000-s0", copy / "locomo-full_context-4000-s0")
    path = copy / "locomo-full_context-4000-s0" / "turns.jsonl"
    turns = [t | ({"cached": True} if t.get("test_id") == "conv-a:q0" else {})
             for t in read_jsonl(path)]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    questions = literature.questions_frame(copy, "locomo").set_index("test_id")
    assert np.isnan(questions.loc["conv-a:q0", "total_s"])
    assert not np.isnan(questions.loc["conv-a:q0", "search_s"])
    assert not np.isnan(questions.loc["conv-a:q1", "total_s"])
    timed = questions[(questions["test_type"] != "adversarial") & questions["total_s"].notna()]
    overall = literature.locomo_table(questions.reset_index()).set_index("group").loc["overall"]
    assert overall["total_p50_s"] == pytest.approx(np.percentile(timed["total_s"], 50))
    every = [t | {"cached": True} for t in turns]
    path.write_text("".join(json.dumps(t) + "\n" for t in every))
    overall = literature.locomo_table(literature.questions_frame(copy, "locomo")
                                      ).set_index("group").loc["overall"]
    assert np.isnan(overall["total_p50_s"]) and not np.isnan(overall["search_p50_s"])


def test_paired_comparisons_use_the_same_questions(results):
    questions = literature.questions_frame(results, "locomo")
    paired = literature.paired_comparisons(questions, "full_context").set_index("condition")
    vanilla = paired.loc["vanilla"]
    full = questions[(questions["condition"] == "full_context")
                     & (questions["test_type"] != "adversarial")]
    assert vanilla["n"] == 7
    assert vanilla["reference_only"] == int(full["score"].sum()) and \
        vanilla["condition_only"] == 0
    assert vanilla["difference"] == pytest.approx(-full["score"].mean())
    assert vanilla["p_holm"] >= vanilla["p"]
    with pytest.raises(ConfigError, match="no answered questions"):
        literature.paired_comparisons(questions, "hybrid")


def test_paired_f1_is_the_mean_paired_difference_with_a_bootstrap_interval(results):
    questions = literature.questions_frame(results, "locomo")
    paired = literature.paired_comparisons(questions, "vanilla", measure="f1"
                                           ).set_index("condition")
    scored = questions[questions["answered"] & (questions["test_type"] != "adversarial")]
    wide = scored.pivot_table(index="test_id", columns="condition", values="f1",
                              aggfunc="first", observed=True)
    diffs = (wide["oracle"] - wide["vanilla"]).astype(float)
    oracle = paired.loc["oracle"]
    assert oracle["measure"] == "f1" and oracle["n"] == len(diffs) == 7
    assert oracle["difference"] == pytest.approx(diffs.mean()) and oracle["difference"] > 0
    assert oracle["low"] <= oracle["difference"] <= oracle["high"]
    assert oracle["p_holm"] >= oracle["p"]
    with pytest.raises(ConfigError, match="measure 'j'"):
        literature.paired_comparisons(questions, "vanilla", measure="j")


def test_longmemeval_table_reports_type_task_average_and_abstention(results):
    table = literature.longmemeval_table(literature.questions_frame(results, "longmemeval"))
    oracle = table[table["condition"] == "oracle"].set_index("group")
    assert oracle.loc["single-session-user", "J"] == 0.5  # q1 right, q2_abs answered a city
    assert oracle.loc["temporal-reasoning", "J"] == 1.0  # the scripted judge says yes
    assert oracle.loc["task-averaged", "J"] == pytest.approx(0.75)
    assert oracle.loc["overall", "J"] == pytest.approx(2 / 3)
    assert oracle.loc["abstention", "J"] == 0.0 and oracle.loc["abstention", "n"] == 1


def test_write_literature_writes_tables_and_figure(results, tmp_path):
    written = literature.write_literature(results, tmp_path)
    assert set(written) == {"locomo_table", "locomo_paired", "locomo_paired_j_strict",
                            "locomo_paired_j_matched", "locomo_paired_f1", "locomo_judges",
                            "locomo_paired_vanilla", "locomo_mem0", "locomo_figure",
                            "longmemeval_table", "longmemeval_paired", "longmemeval_figure"}
    assert all(path.exists() and path.stat().st_size > 0 for paths in written.values()
               for path in paths)
    numbers = pd.read_csv(tmp_path / "tables" / "locomo_table.csv")
    assert {"J", "J_low", "J_high", "J_strict", "J_strict_low", "J_matched", "J_matched_high",
            "F1", "B1", "evidence_recall", "evidence_n", "tokens", "search_p95_s",
            "total_p95_s"} <= set(numbers.columns)
    shown = (tmp_path / "tables" / "locomo_table.md").read_text()
    assert "J 95% CI" in shown and "J_strict 95% CI" in shown and "J_matched 95% CI" in shown
    assert "evidence_recall 95% CI" in shown
    assert "J_strict" not in (tmp_path / "tables" / "longmemeval_table.md").read_text()
    # LongMemEval has no matched verdict: no empty J_matched columns in its numbers either
    longmemeval = pd.read_csv(tmp_path / "tables" / "longmemeval_table.csv")
    assert not any(c.startswith("J_matched") for c in longmemeval.columns)


def test_memlabs_rows_stand_beside_the_mem0_papers_with_models_named(results):
    questions = literature.questions_frame(results, "locomo")
    table = literature.locomo_table(questions)
    beside = literature.beside_mem0(table, {"oracle": "1.5b", "vanilla": "1.5b",
                                            "full_context": "0.5b"})
    ours = beside[beside["source"] == "memlab"].set_index("system")
    overall = table[table["group"] == "overall"].set_index("condition")
    assert len(ours) == 3  # one row per condition: its overall (categories 1-4), no other group
    full = ours.loc["Full context"]
    assert full["answering model"] == full["judge"] == "0.5b"
    assert full["n"] == overall.loc["full_context", "n"]
    assert full["J"] == round(100 * overall.loc["full_context", "J"], 1)
    assert full["J 95% CI"] == stats.interval_text(100 * overall.loc["full_context", "J_low"],
                                                   100 * overall.loc["full_context", "J_high"])
    assert full["p95 s per query"] == round(overall.loc["full_context", "total_p95_s"], 2)
    theirs = beside[beside["source"] == "Mem0 paper"]
    assert len(theirs) == len(literature.MEM0_PAPER)
    assert set(theirs["answering model"]) == set(theirs["judge"]) == {"gpt-4o-mini"}
    shown = literature.beside_mem0_shown(beside).set_index("system")
    assert shown.loc["Zep", "tokens per query"] == "--"  # the sources state none: no number
    assert shown.loc["full context", "tokens per query"] == "26,031"


def test_the_strict_judge_is_a_column_beside_mem0s_j(results):
    questions = literature.questions_frame(results, "locomo")
    necklace = questions[questions["test_id"] == "conv-a:q0"].set_index("condition")
    # "strength" is on the topic (J) but not the whole gold fact (strict)
    assert necklace.loc["full_context", ["score", "j_strict"]].tolist() == [1.0, 0.0]
    assert necklace.loc["oracle", ["score", "j_strict"]].tolist() == [1.0, 1.0]
    assert necklace.loc["oracle", "reply"] == "love, faith and strength"
    table = literature.locomo_table(questions).set_index(["condition", "group"])
    full = questions[(questions["condition"] == "full_context")
                     & (questions["test_type"] != "adversarial")]
    expected = stats.proportion(full["j_strict"])
    assert table.loc[("full_context", "overall"), ["J_strict", "J_strict_low"]].tolist() == \
        pytest.approx([expected.estimate, expected.low])
    assert table.loc[("full_context", "overall"), "J"] > table.loc[("full_context", "overall"),
                                                                   "J_strict"]
    paired = literature.paired_comparisons(questions, "full_context", measure="j_strict")
    oracle = paired.set_index("condition").loc["oracle"]
    assert (oracle["condition_only"], oracle["reference_only"]) == (7, 0)


def test_the_matched_verdict_is_a_column_and_a_paired_measure(results):
    questions = literature.questions_frame(results, "locomo")
    oracle = questions[questions["condition"] == "oracle"].set_index("test_id")
    # the race's gold is "The Saturday before 27 June 2023": the rule says WRONG to an answer
    # naming no date, where the strict judge said CORRECT; the necklace's is the rule's CORRECT
    assert oracle.loc["conv-a:q1", ["j_strict", "j_matched"]].tolist() == [1.0, 0.0]
    assert oracle.loc["conv-a:q0", ["j_strict", "j_matched"]].tolist() == [1.0, 1.0]
    assert np.isnan(oracle.loc["conv-a:q4", "j_matched"])  # adversarial: declines, no judge
    table = literature.locomo_table(questions).set_index(["condition", "group"])
    mine = oracle[oracle["test_type"] != "adversarial"]
    expected = stats.proportion(mine["j_matched"])
    assert expected.estimate == pytest.approx(6 / 7)
    assert table.loc[("oracle", "overall"), ["J_matched", "J_matched_low", "J_matched_high"]
                     ].tolist() == pytest.approx([expected.estimate, expected.low, expected.high])
    paired = literature.paired_comparisons(questions, "full_context", measure="j_matched")
    pair = paired.set_index("condition").loc["oracle"]
    assert pair["measure"] == "j_matched"
    assert (pair["condition_only"], pair["reference_only"], pair["n"]) == (6, 0, 7)
    test = stats.mcnemar(np.zeros(7), mine["j_matched"].to_numpy())
    assert (pair["difference"], pair["p"]) == pytest.approx((test.estimate, test.p_value))


def test_runs_recorded_before_the_matched_verdict_keep_their_tables(results, tmp_path):
    """A LoCoMo run scored before j_matched existed: NaN in the questions, and its tables gain
    no J_matched column and no paired file."""
    import shutil
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    for path in copy.glob("locomo-*/scores.jsonl"):
        older = [s | {"metadata": {k: v for k, v in (s.get("metadata") or {}).items()
                                   if not k.startswith("j_matched")}} for s in read_jsonl(path)]
        path.write_text("".join(json.dumps(s) + "\n" for s in older))
    assert literature.questions_frame(copy, "locomo")["j_matched"].isna().all()
    written = literature.write_literature(copy, tmp_path / "figures")
    assert "locomo_paired_j_matched" not in written and "locomo_paired_j_strict" in written
    tables = tmp_path / "figures" / "tables"
    assert not any(c.startswith("J_matched")
                   for c in pd.read_csv(tables / "locomo_table.csv").columns)
    assert "J_matched" not in (tables / "locomo_table.md").read_text()


def test_a_results_folder_without_the_suite_is_refused(results):
    with pytest.raises(ConfigError, match="no complete locomo run"):
        literature.questions_frame(results / "locomo-oracle-4000-s0" / "prompts", "locomo")


def test_the_reference_is_a_condition_that_answered():
    questions = pd.DataFrame({"condition": ["full_context", "oracle", "vanilla"],
                              "answered": [False, True, True]})
    assert literature.reference_condition(questions) == "oracle"
    assert literature.reference_condition(questions.assign(answered=False)) is None


def test_the_paper_writes_the_published_suites_tables_beside_its_own(results, tmp_path):
    """``memlab paper --spec locomo`` and a replay of its records go through write_paper: the
    LoCoMo tables (both judges, F1, the judges' table against the hand labels) are among what it
    writes; without labels the judges' table has no agreement columns."""
    from memlab.report import write_paper

    oracle = literature.questions_frame(results, "locomo")
    answer = oracle[(oracle["condition"] == "oracle") & (oracle["test_id"] == "conv-a:q0")]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"test_id": "conv-a:q0", "condition": "oracle",
                                  "answer": answer["reply"].iloc[0], "gold": "g",
                                  "label": "CORRECT", "reason": "states all three"}) + "\n")
    written = write_paper(results, tmp_path / "figures", figures=False, labels=labels)
    assert {"locomo_table", "locomo_paired_f1", "locomo_judges", "longmemeval_table",
            "overview"} <= set(written["tables"])
    judges = pd.read_csv(written["tables"]["locomo_judges"][0]).set_index("judge")
    assert judges.loc["J strict", "agreement_n"] == 1  # the one label, matched to its answer
    assert "J strict" in written["tables"]["locomo_judges"][2].read_text()
    figures = literature.write_literature(results, tmp_path / "lit", read_labels(labels))
    assert figures["locomo_judges"][0].suffix == ".png"  # the hand labels beside each judge
    assert figures["locomo_judges"][0].stat().st_size > 0
    mine = write_paper(results, tmp_path / "again", figures=False)
    assert "agreement" not in pd.read_csv(mine["tables"]["locomo_judges"][0]).columns


def test_each_condition_is_compared_with_vanilla_under_every_judge(results, tmp_path):
    """With full_context as the reference, whether the oracle (or a memory) beats no memory is
    still a table, per measure, Holm within each: the judge decides it."""
    questions = literature.questions_frame(results, "locomo")
    against = literature.versus_vanilla(questions)
    assert set(against["measure"]) == {"score", "j_strict", "j_matched", "f1"}
    assert set(against["reference"]) == {"vanilla"}
    for measure, rows in against.groupby("measure"):
        direct = literature.paired_comparisons(questions, "vanilla", measure=measure)
        assert rows.set_index("condition")["difference"].to_dict() == pytest.approx(
            direct.set_index("condition")["difference"].to_dict())
        assert rows["p_holm"].tolist() == pytest.approx(stats.holm(rows["p"]).tolist())
    oracle = against[(against["condition"] == "oracle")].set_index("measure")
    assert oracle.loc["j_strict", "condition_only"] == 7  # all three named, vanilla none
    assert oracle.loc["j_strict", "reference_only"] == 0
    written = literature.write_literature(results, tmp_path / "figures")
    assert "locomo_paired_vanilla" in written
    assert literature.versus_vanilla(questions[questions["condition"] != "vanilla"]).empty
