"""Tables from a results folder: shape, counts, confidence intervals, exports."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_runner import COLOURS, TinySuite, fake_reply, run, scripted_factory

from memlab import stats
from memlab.bench import tables
from memlab.bench.base import Response, SuiteEvent, TestScore
from memlab.bench.runlog import read_jsonl
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM

KINDS = ["correct", "outdated", "contradicting", "never_stated"]


class PersonaLike(TinySuite):
    """TinySuite with persona question metadata; question types alternate."""

    name = "persona"

    def events(self):
        events = super().events()
        out = []
        for e in events:
            if e.kind == "question":
                n = int(e.test_id[1:])
                e = e.model_copy(update={
                    "test_type": ("recall_user_shared_facts", "generalize_to_new_scenarios")[n % 2],
                    "metadata": {**e.metadata, "distractor_kinds": KINDS, "topic": "colours",
                                 "evidence_indices": [0, e.metadata["evidence_indices"][0]]}})
            out.append(e)
        return out


class LtmLike(TinySuite):
    """Free questions (no options), scored 0, 1, 1, 0; types colours/shopping alternate."""

    name = "ltm"

    def events(self):
        return [e.model_copy(update={"options": None, "answer_index": None})
                for e in super().events()]

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        return [s.model_copy(update={"test_type": ("colours", "shopping")[i % 2],
                                     "score": float(i in (1, 2))})
                for i, s in enumerate(super().score(responses))]


def picky_reply(messages) -> str:
    """The letter of "red" when it is an option, else of the option latest in COLOURS (the
    never-stated distractor of these questions), wherever the rotation shows them."""
    text = messages[-1].content
    if "Answer with the letter" not in text:
        return fake_reply(messages)
    shown = dict(line.split(". ", 1)[::-1] for line in text.splitlines()
                 if len(line) > 3 and line[1:3] == ". ")
    if "red" in shown:
        return shown["red"]
    return shown[max(shown, key=COLOURS.index)]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    for seed in (0, 1):
        run(PersonaLike(sessions=3), "vanilla", llm=FakeLLM([picky_reply]), results_dir=root,
            seed=seed, progress=False)
        run(PersonaLike(sessions=3), "sleep", llm=FakeLLM([picky_reply]), results_dir=root,
            seed=seed, progress=False, agent_factory=scripted_factory)
        run(PersonaLike(sessions=3), "sleep", llm=FakeLLM([picky_reply]), results_dir=root,
            seed=seed, progress=False, probes_sleep=True, agent_factory=scripted_factory)
    run(LtmLike(sessions=4), "vanilla", llm=FakeLLM([fake_reply]), results_dir=root,
        progress=False)
    # an unfinished run is ignored
    (root / "broken").mkdir()
    (root / "broken" / "manifest.json").write_text(json.dumps({"status": "running"}))
    return root


def test_table1_rows_counts_and_intervals(results):
    t1 = tables.table1(results)
    assert set(zip(t1.suite, t1.condition, strict=True)) == {
        ("persona", "vanilla"), ("persona", "sleep"), ("ltm", "vanilla")}
    row = t1[(t1.suite == "persona") & (t1.condition == "vanilla")].iloc[0]
    assert row.runs == 2 and row.long_horizon_qa_n == 6
    assert row.long_horizon_qa == pytest.approx(2 / 6)  # only the "red" questions are right
    wilson = stats.proportion_ci(2, 6)
    assert (row.long_horizon_qa_ci_low, row.long_horizon_qa_ci_high) == (wilson.low, wilson.high)
    # 0 of 4: Wilson 0-49%, not +-0
    assert row.multi_session_continuity_ci_low == 0.0
    assert row.multi_session_continuity_ci_high == pytest.approx(0.49, abs=0.005)
    assert row.hallucination_rate == pytest.approx(4 / 6)  # (d) is the never-stated option
    assert row.multi_session_continuity == 0 and row.multi_session_continuity_n == 4  # vanilla
    sleep = t1[(t1.suite == "persona") & (t1.condition == "sleep")].iloc[0]
    assert sleep.multi_session_continuity == 0  # scripted memory recalls only the last 3 turns
    assert row.prompt_tokens > 0 and row.completion_tokens > 0 and row.latency_s >= 0
    ltm = t1[t1.suite == "ltm"].iloc[0]
    assert ltm.long_horizon_qa == pytest.approx(2 / 4) and ltm.long_horizon_qa_n == 4
    # LTM scores 0, 1, 1, 0 are pass/fail: Wilson, not the t interval (-0.42 to 1.42 clipped)
    assert ltm.long_horizon_qa_ci_low == pytest.approx(stats.proportion_ci(2, 4).low)


def test_table2_pre_post_delta(results):
    t2 = tables.table2(results)
    assert list(t2.metric) == ["delayed_recall", "cue_based_recall", "cross_episode_integration",
                               "schema_utilisation", "schema_generalisation"]
    assert set(t2.condition) == {"sleep"}
    util = t2.set_index("metric").loc["schema_utilisation"]
    assert (util.pre, util.post, util.delta) == (0.0, 1.0, 1.0)  # the schema appears after sleep
    assert util.pre_n == util.post_n == util.delta_n == 6
    assert util.pre_ci_high > 0.3 and util.post_ci_low < 0.7  # 0/6 and 6/6 are not +-0
    # 6 of 6 probes changed, all one way: exact McNemar p = 2 / 2^6, Newcombe's interval
    assert util.delta_p == pytest.approx(2 / 2**6)
    assert 0 < util.delta_ci_low < 1 == util.delta_ci_high
    cross = t2.set_index("metric").loc["cross_episode_integration"]
    assert cross.pre_n == 4 and cross.delta == 0
    assert cross.delta_ci_low < 0 < cross.delta_ci_high and cross.delta_p == 1.0
    assert tables.table2(results, condition="vanilla").empty


def test_ltm_scores_sum_of_type_means(results):
    frame = tables.ltm_scores(results)
    assert list(frame.test_type) == ["colours", "shopping", "total"]
    by_type = frame.set_index("test_type")
    assert by_type.loc["colours", "score"] == 0.5 and by_type.loc["shopping", "score"] == 0.5
    total = by_type.loc["total"]
    assert total.score == 1.0 and total.max_score == 2 and total.n == 4
    assert total.ci_low < total.score < total.ci_high <= total.max_score
    expected = stats.sum_of_means_ci([[0.0, 1.0], [1.0, 0.0]])
    assert (total.ci_low, total.ci_high) == pytest.approx((expected.low, expected.high))
    colours = by_type.loc["colours"]
    assert (colours.ci_low, colours.ci_high) == pytest.approx(
        (stats.proportion_ci(1, 2).low, stats.proportion_ci(1, 2).high))


def test_persona_by_type_and_costs(results):
    frame = tables.persona_by_type(results)
    vanilla = frame[frame.condition == "vanilla"].set_index("test_type")
    assert set(vanilla.index) == {"all", "recall_user_shared_facts", "generalize_to_new_scenarios"}
    assert vanilla.loc["all", "n"] == 6 and vanilla.loc["recall_user_shared_facts", "n"] == 4
    assert vanilla.loc["recall_user_shared_facts", "accuracy"] == 0.5
    cost = tables.costs(results)
    row = cost[(cost.suite == "persona") & (cost.condition == "sleep")].iloc[0]
    # per seed: an ordinary run (3 needles + 3 questions) and a Table 2 run (3 + 3 + 6 probes,
    # one forced sleep call); costs count every phase of both
    assert row.answers == 2 * (6 + 12) and row.llm_calls_paid == 2 * (6 + 12 + 1)
    assert row.prompt_tokens_memory > 0 and row.prompt_tokens_ci_low <= row.prompt_tokens
    assert row.prompt_tokens_ci_high > row.prompt_tokens_ci_low  # tokens vary per answer
    assert cost.set_index(["suite", "condition"]).loc[("persona", "vanilla"),
                                                       "prompt_tokens_memory"] == 0


def test_export_writes_seed_file_names(results, tmp_path):
    paths = tables.export(results, tmp_path, timestamp="20240101_000000")
    for name in ("results_20240101_000000.json", "table1_20240101_000000.csv",
                 "table2_20240101_000000.csv", "table1_20240101_000000.md",
                 "table2_20240101_000000.tex"):
        assert (tmp_path / name).exists(), name
    assert len(pd.read_csv(paths["table1"])) == 3
    payload = json.loads(paths["results"].read_text())
    assert len(payload["runs"]) == 7 and len(payload["table2"]) == 5


def test_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="results_dir"):
        tables.table1(tmp_path / "nope")


def test_suite_event_reexport():  # tables read what the runner writes: keep SuiteEvent fields
    assert {"options", "answer_index", "metadata"} <= set(SuiteEvent.model_fields)


def test_evidence_only_questions_are_left_out_not_counted_wrong(tmp_path):
    """A run answering a sample of 2 of 4 tests: the tables count those 2, the costs their 4
    answers (2 needles, 2 questions); the other questions were never sent to the model."""
    run_dir = run(PersonaLike(sessions=4), "vanilla", llm=FakeLLM([picky_reply]),
                  results_dir=tmp_path, answered=2, progress=False)
    turns = [t for t in read_jsonl(run_dir / "turns.jsonl") if t["kind"] == "question"]
    asked = [t for t in turns if t["answered"]]
    assert len(asked) == 2 and len(turns) == 4
    right = sum(t["choice"] == t["answer_index"] for t in asked)
    row = tables.table1(tmp_path).iloc[0]
    assert row.long_horizon_qa_n == 2 and row.long_horizon_qa == pytest.approx(right / 2)
    assert row.multi_session_continuity_n == 3  # a prompt metric: every question's prompt
    by_type = tables.persona_by_type(tmp_path).set_index("test_type")
    assert by_type.loc["all", "n"] == 2
    cost = tables.costs(tmp_path).iloc[0]
    assert cost.answers == 4 and cost.llm_calls_paid == 4


def test_ltm_scores_count_answered_tests_only(tmp_path):
    run(LtmLike(sessions=4), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
        answered=2, progress=False)
    scores = read_jsonl(next(tmp_path.glob("*/scores.jsonl")))
    answered = [s for s in scores if s["answered"]]
    assert len(scores) == 4 and len(answered) == 2
    total = tables.ltm_scores(tmp_path).set_index("test_type").loc["total"]
    assert total.n == 2
    by_type = {}
    for s in answered:
        by_type.setdefault(s["test_type"], []).append(s["score"])
    assert total.score == pytest.approx(sum(sum(v) / len(v) for v in by_type.values()))
