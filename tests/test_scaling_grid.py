"""The ``scaling`` grid (issue 45 item 1): spans, >= 60 paired answered questions per condition
at every span, evidence recall on >= 100, and the hours ``--plan`` projects."""

from __future__ import annotations

import re

import pytest

from memlab import cli
from memlab.gridcost import cell_seconds, generated_rates, history_reading, prefill_seconds
from memlab.gridspec import SCALING

GENERATED = {suite: generated_rates(suite) for suite in ("ltm", "persona")}


def test_the_spec_spans_and_conditions():
    assert SCALING.spans == {"ltm": [1000, 4000, 16000, 32000], "persona": [4000, 16000, 32000]}
    assert SCALING.conditions == ["vanilla", "oracle", "full_context", "rag", "episodic",
                                  "episodic_summary", "sleep", "hybrid"]


def test_plan_prints_at_least_60_answered_and_the_hours_at_every_span(capsys):
    assert cli.main(["grid", "--spec", "scaling", "--plan"]) == 0
    out = capsys.readouterr().out
    found = re.findall(r"(ltm|persona) at (\d+) tokens: 8 conditions, (\d+) answered(?: \(in \d+ "
                       r"tests, the unit its accuracy is scored and paired on\))? and (\d+) "
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
    assert history_reading([(100, False)] * 5 + [(10, True)], budget=1000)[0] == 500
    # 12 turns of 100 in a 1000 budget: the 11th cuts to 500 kept; the answer reads them anew
    turns = [(100, False)] * 11 + [(10, True)]
    assert history_reading(turns, budget=1000) == (600, pytest.approx(prefill_seconds(0, 600)))
    assert history_reading([(100, False)] * 5, budget=1000) == (0, 0.0)  # nothing answered


def test_a_token_costs_more_the_later_it_sits_in_the_context():
    assert prefill_seconds(0, 1000) == pytest.approx(0.0295 * 1000 + 2.45e-6 * 1000**2 / 2)
    # the same 1,000 tokens read at positions 20k-21k cost more than at 0-1k
    assert prefill_seconds(20000, 21000) > 2 * prefill_seconds(0, 1000)
    # two answers 500 tokens apart read the second 500 at positions 500-1000, once
    turns = [(500, False), (0, True), (500, False), (0, True)]
    assert history_reading(turns, budget=4000) == (1000, pytest.approx(prefill_seconds(0, 1000)))


def test_full_context_pays_its_history_reading_and_memories_per_turn():
    base = cell_seconds("ltm", "full_context", stored_turns=10, answered=2)
    assert cell_seconds("ltm", "full_context", stored_turns=10, answered=2,
                        history_s=100.0) == base + 100
    assert cell_seconds("ltm", "rag", stored_turns=10, answered=2, history_s=100.0) == \
        cell_seconds("ltm", "rag", stored_turns=10, answered=2)  # memories do not read it


def test_longer_stored_turns_cost_a_recalling_memory_more_per_answer_and_turn():
    """LTM's filler grows with the span: recall returns turns, so the answer's prompt grows,
    and a memory that reads each turn pays for its tokens; vanilla and oracle do not recall."""
    rag = GENERATED["ltm"]["rag"]
    assert rag.at(None) == rag.at(rag.turn_tokens) == (rag.answer_s, rag.per_turn_s)
    answer, per_turn = rag.at(rag.turn_tokens + 100)
    assert answer == pytest.approx(rag.answer_s + 100 * rag.answer_s_per_turn_token)
    assert per_turn == pytest.approx(
        rag.per_turn_s * (1 + rag.token_share * 100 / rag.turn_tokens))
    assert answer > rag.answer_s and per_turn > rag.per_turn_s
    long_turns = {"stored_turns": 100, "answered": 10, "turn_tokens": 250.0}
    for condition in ("rag", "episodic", "sleep", "hybrid"):
        assert (cell_seconds("ltm", condition, **long_turns)
                > cell_seconds("ltm", condition, stored_turns=100, answered=10))
    for condition in ("vanilla", "oracle"):
        assert (cell_seconds("ltm", condition, **long_turns)
                == cell_seconds("ltm", condition, stored_turns=100, answered=10))
    # persona's turns do not grow with its span: its rates carry no growth
    assert GENERATED["persona"]["rag"].at(250.0) == GENERATED["persona"]["rag"].at(None)
    assert cell_seconds("ltm", "sleep", stored_turns=100, answered=0) == 80.0


def test_suite_seeds_replace_the_grids_seeds_for_that_suite_only():
    cells = SCALING.cells()
    ltm = {(c.seed, c.answered) for c in cells
           if c.suite == "ltm" and c.condition != "full_context"}
    persona = {(c.seed, c.answered) for c in cells if c.suite == "persona"}
    assert ltm == {(0, None), (1, 0)}  # every test of seed 0 answered; seed 1 evidence only
    assert persona == {(0, 30), (1, 30), (2, 0)}
    assert len(cells) == 8 * (4 * 2 + 3 * 3)


def test_the_seeds_option_replaces_the_answered_seeds_of_every_suite(capsys):
    """`memlab grid --spec scaling --seeds 5` used to leave LTM at seeds 0 and 1: the spec's
    own LTM seeds won over the option."""
    assert cli.main(["grid", "--spec", "scaling", "--conditions", "rag", "--seeds", "5",
                     "--plan"]) == 0
    args = cli.build_parser()[0].parse_args(["grid", "--spec", "scaling", "--conditions", "rag",
                                          "--seeds", "5"])
    from memlab.cli.runs import _grid_cells
    _, cells = _grid_cells(args, "scaling")
    assert {(c.suite, c.seed, c.answered) for c in cells} == {
        ("ltm", 5, None), ("ltm", 1, 0), ("persona", 5, 30), ("persona", 2, 0)}
    assert "grid scaling: 14 cells" in capsys.readouterr().out


def test_suite_seeds_of_an_unknown_suite_is_refused_by_name():
    from memlab.errors import ConfigError
    from memlab.gridspec import validate_spec

    values = SCALING.model_dump() | {"suite_seeds": {"ltmm": {"seeds": [0]}}}
    with pytest.raises(ConfigError, match="suite_seeds"):
        validate_spec(values, "test")
    values["suite_seeds"] = {"ltm": {"seed": [0]}}
    with pytest.raises(ConfigError, match="suite_seeds"):
        validate_spec(values, "test")


def test_each_users_conversation_is_read_on_its_own_and_unanswered_questions_are_not_kept():
    from types import SimpleNamespace

    from memlab.gridcost import full_context_reading

    def turn(user, kind="filler", store=True):
        return SimpleNamespace(user_id=user, kind=kind, store=store, text="word " * 400,
                               reply="word " * 400)

    suite = SimpleNamespace(name="locomo", whole_history=True)
    events = [turn("a"), turn("a"), turn("a", "question", False), turn("a", "question", False),
              turn("b"), turn("b", "question", False)]
    asked = [events[2], events[5]]  # events[3] is measured for evidence only
    window, longest, tokens, seconds = full_context_reading(suite, 26000, events, asked)
    per_turn = longest // 2
    assert window == 32768 and tokens == 3 * per_turn  # a's two turns, then b's one
    assert seconds == pytest.approx(prefill_seconds(0, 2 * per_turn)
                                    + prefill_seconds(0, per_turn))


def test_the_budget_cut_full_context_measures_evidence_only_at_ltm_16k_and_32k():
    cells = {(c.suite, c.condition, c.span, c.seed): c.answered for c in SCALING.cells()}
    assert cells[("ltm", "full_context", 16000, 0)] == 0
    assert cells[("ltm", "full_context", 32000, 0)] == 0
    assert cells[("ltm", "full_context", 4000, 0)] is None  # answers every test below 16k
    assert cells[("ltm", "rag", 32000, 0)] is None
    assert cells[("persona", "full_context", 32000, 0)] == 30


def test_not_run_leaves_a_condition_out_at_a_span_only_and_the_plan_says_so(tmp_path, capsys):
    import yaml

    cut = SCALING.model_copy(update={"not_run": {"persona": {16000: ["sleep", "hybrid"]}}})
    cells = {(c.suite, c.condition, c.span) for c in cut.cells()}
    assert ("persona", "sleep", 16000) not in cells and ("persona", "hybrid", 16000) not in cells
    assert ("persona", "sleep", 32000) in cells and ("ltm", "sleep", 16000) in cells
    assert len(cut.cells()) == len(SCALING.cells()) - 2 * 3  # persona's three seeds
    spec = tmp_path / "cut.yaml"
    spec.write_text(yaml.safe_dump(cut.model_dump(mode="json")))
    assert cli.main(["grid", "--spec", str(spec), "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.count("not run at this span (no cells): sleep, hybrid") == 1
    assert "persona at 16000 tokens: 6 conditions" in out
    assert "persona at 32000 tokens: 8 conditions" in out


def test_not_run_of_an_unknown_condition_is_refused_by_name():
    from memlab.errors import ConfigError
    from memlab.gridspec import validate_spec

    values = SCALING.model_dump() | {"not_run": {"persona": {16000: ["slep"]}}}
    with pytest.raises(ConfigError, match="not_run"):
        validate_spec(values, "test")


def test_the_plan_fits_the_budget_and_names_what_answers_nothing(capsys):
    from memlab.gridspec import plan

    table = plan(SCALING).set_index(["suite", "span"])
    assert table["projected_hours"].sum() <= 24 * 1.05  # the "at most about 24 h"
    # LTM's turns grow with the span (its filler): the plan prices them at their size
    assert table.loc[("ltm", 32000), "tokens_per_stored_turn"] > 10 * table.loc[
        ("ltm", 1000), "tokens_per_stored_turn"]
    assert table.loc[("ltm", 32000), "hours_by_condition"]["episodic"] > table.loc[
        ("ltm", 1000), "hours_by_condition"]["episodic"] * 2
    assert table.loc[("ltm", 32000), "evidence_only_conditions"] == ["full_context"]
    assert table.loc[("ltm", 32000), "hours_by_condition"]["full_context"] == 0
    assert table.loc[("ltm", 32000), "answered_per_condition"] == 60
    # LTM scores and pairs tests, some asking several questions: the power is stated on them
    assert table.loc[("ltm", 32000), "answered_tests_per_condition"] == 48
    assert table.loc[("persona", 32000), "answered_tests_per_condition"] == 60
    ltm, persona = table.loc[("ltm", 32000)], table.loc[("persona", 32000)]
    assert ltm["detectable_difference"] > persona["detectable_difference"]
    assert table.loc[("ltm", 32000), "evidence_per_condition"] == 120
    assert table.loc[("persona", 32000), "evidence_only_conditions"] == []
    assert cli.main(["grid", "--spec", "scaling", "--plan"]) == 0
    assert capsys.readouterr().out.count("evidence recall only (nothing answered): "
                                         "full_context") == 2


def test_evidence_only_of_an_unknown_condition_is_refused_by_name():
    from memlab.errors import ConfigError
    from memlab.gridspec import validate_spec

    values = SCALING.model_dump() | {"evidence_only": {"ltm": {16000: ["full_contxt"]}}}
    with pytest.raises(ConfigError, match="evidence_only"):
        validate_spec(values, "test")
