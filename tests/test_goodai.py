"""GoodAI formats: loader, malformed definitions, scorer conformance, re-score report, writer."""

import json
from pathlib import Path

import pytest

from memlab.bench.goodai import (
    TestResult,
    format_rescore_report,
    goodai_rescore,
    load_config,
    load_definition,
    load_definitions,
    load_result,
)
from memlab.bench.scoring import parse_json_as_goodai
from memlab.config import get_settings
from memlab.errors import ConfigError
from memlab.llm.options import parse_final_answer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "goodai-ltm-v3-1k"
needs_data = pytest.mark.skipif(not DATA.is_dir() and not get_settings().require_services, reason=f"published GoodAI run not at {DATA}")


@needs_data
def test_loader_reads_every_published_definition():
    config, tests = load_definitions(DATA / "definitions")
    assert config.memory_span == 1000 and config.dataset_examples == 3
    assert config.type_args()["shopping"] == {"item_changes": 6}
    assert len(tests) == 30 and len({t.test_type for t in tests}) == 10
    jokes = next(t for t in tests if t.test_type == "jokes")
    assert jokes.definition.is_temporal and jokes.definition.waits[0].time == 10500


def _write(tmp_path, folder, payload):
    path = tmp_path / folder / "0.def.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(payload))
    return path


def test_malformed_definition_names_file_and_field(tmp_path):
    path = _write(tmp_path, "Colours", {"script": ["a", "b"], "is_question": [False, "maybe"],
                                        "expected_responses": ["x"]})
    with pytest.raises(ConfigError, match=r"0\.def\.json: field 'is_question\.1'"):
        load_definition(path)


def test_definition_with_mismatched_waits_is_rejected(tmp_path):
    path = _write(tmp_path, "Colours", {"script": ["a", "b"], "is_question": [False, True],
                                        "waits": [{"percentage_finished": 90}],
                                        "expected_responses": ["x"]})
    with pytest.raises(ConfigError, match="waits has 1 entries"):
        load_definition(path)


def test_missing_field_and_bad_json_are_named(tmp_path):
    path = _write(tmp_path, "Colours", {"script": ["a"], "is_question": [True]})
    with pytest.raises(ConfigError, match="field 'expected_responses'"):
        load_definition(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_definition(path)
    bad = tmp_path / "config.yml"
    bad.write_text("datasets: {args: {}}\n")
    with pytest.raises(ConfigError, match="field 'datasets.datasets'"):
        load_config(bad)


@needs_data
def test_scorer_conformance_with_published_scores():
    report = goodai_rescore(DATA / "results", scorers="published")
    ok, total = report.conformance()
    assert total == 273  # 13 agents x 7 rule-scored types x 3 examples
    misses = [i for i in report.items if i.test_type in {"colours", "shopping", "name_list",
              "sallyanne", "prospective_memory", "trigger_response", "spy_meeting"} and not i.agrees]
    # the one known disagreement: GoodAI counted "lock picking" for ['pick','picks','key']
    assert [m.file for m in misses] == [
        "LTMAgentWrapper - claude-3-opus - 200000 - QG_JSON_USER_INFO/Spy Meeting/1_0.json"]
    assert ok == 272
    text = format_rescore_report(report)
    assert "Conformance (types GoodAI scored without a GPT judge): 272/273" in text
    assert "Restaurant" in text and "skipped" in text


def test_rescore_any_folder_layout(tmp_path):
    result = TestResult(actual_responses=['{"answer": "drawer"}'], score=1, max_score=1,
                        expected_responses=["drawer"])
    path = tmp_path / "my agent" / "SallyAnne" / "0_0.json"
    path.parent.mkdir(parents=True)
    path.write_text(result.model_dump_json())
    wrong = TestResult(actual_responses=["Red it is"], score=1, max_score=1,
                       expected_responses=["Blue"])
    (tmp_path / "my agent" / "Colours").mkdir()
    (tmp_path / "my agent" / "Colours" / "0_1.json").write_text(wrong.model_dump_json())
    report = goodai_rescore(tmp_path)
    assert report.conformance() == (1, 2)
    assert "NOT in the response" in format_rescore_report(report)
    assert load_result(path).score == 1


def test_lenient_json_repairs_model_output():
    assert parse_json_as_goodai('Sure:\n```json\n["a", "b",]\n```') == ["a", "b"]
    assert parse_json_as_goodai('Here: {"answer": "box"} hope it helps') == {"answer": "box"}
    assert parse_json_as_goodai('[1, 2 3]') == [1, 2, 3]
    with pytest.raises(ValueError):
        parse_json_as_goodai("no json here")


def test_parse_final_answer():
    assert parse_final_answer("I think <final_answer>(c)</final_answer>", 4) == 2
    assert parse_final_answer("Answer: (b)", 4) == 1
    assert parse_final_answer("<final_answer>(e)</final_answer>", 4) is None
