"""The ``locomo`` grid: all ten conversations, categories 1-4, eight conditions, >= 300 paired
answered questions, evidence recall on all 1,540, and what ``--plan`` prints (issue 44 item 1).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from memlab.gridcost import JUDGE_CALL_S, LOCOMO_RATES, cell_seconds, prefill_seconds
from memlab.gridspec import LOCOMO, format_plan, load_spec, plan, with_published

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"
ROOT = Path(__file__).resolve().parents[1]


def memlab(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "MEMLAB_LOCOMO_DATA"}
    environ |= {"PYTHONPATH": str(ROOT)} | (env or {})
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300)


def test_the_spec_is_eight_conditions_at_one_seed_on_categories_one_to_four():
    cells = with_published(LOCOMO, {"locomo": str(MINI)}).cells(llm="fake")
    assert [c.condition for c in cells] == ["vanilla", "oracle", "full_context", "rag",
                                           "episodic", "episodic_summary", "sleep", "hybrid"]
    assert {(c.suite, c.seed, c.span, c.answered) for c in cells} == {("locomo", 0, 26000, 320)}
    assert cells[0].suite_options == {"categories": [1, 2, 3, 4], "data": str(MINI)}
    assert not any(c.probes_sleep for c in cells)


def test_plan_projects_hours_from_the_stated_rates():
    spec = with_published(LOCOMO, {"locomo": str(MINI)})
    row = plan(spec, spec.cells(llm="fake")).iloc[0]
    assert (row.answered_per_condition, row.evidence_per_condition) == (7, 7)
    assert row.stored_turns_per_condition == 9  # the mini file's turns (both conversations)
    hybrid = LOCOMO_RATES["hybrid"]
    assert row.hours_by_condition["hybrid"] == round(
        (9 * hybrid.per_turn_s + 7 * (hybrid.answer_s + 2 * JUDGE_CALL_S)) / 3600, 2)
    # full_context reads each of the mini file's two conversations once, at its positions
    assert row.full_context_tokens_read > 0 and row.full_context_window == 32768
    read_s = prefill_seconds(0, row.full_context_tokens_read)
    assert row.projected_hours > sum(
        cell_seconds("locomo", c, stored_turns=9, answered=7) for c in LOCOMO.conditions) / 3600
    assert row.projected_hours < (read_s + sum(
        cell_seconds("locomo", c, stored_turns=9, answered=7) for c in LOCOMO.conditions)) / 3600
    text = format_plan(spec, plan(spec, spec.cells(llm="fake")))
    assert "7 answered and 7 evidence questions per condition" in text
    assert "projected model time" in text and "2 judge calls per answer at 1.05 s" in text


def test_a_suite_without_measured_rates_projects_nothing():
    assert cell_seconds("longmemeval", "rag", stored_turns=100, answered=10) is None
    assert cell_seconds("locomo", "mem0", stored_turns=100, answered=10) is None


def test_the_data_defaults_to_the_shared_file_beside_the_repository(tmp_path):
    shared = tmp_path / "shared" / "data" / "locomo"
    shared.mkdir(parents=True)
    shutil.copy(MINI, shared / "locomo10.json")
    repo = tmp_path / "repo"
    repo.mkdir()
    done = memlab("grid", "--spec", "locomo", "--plan", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "7 answered and 7 evidence questions per condition" in done.stdout
    elsewhere = memlab("grid", "--spec", "locomo", "--plan", cwd=tmp_path)
    assert elsewhere.returncode == 2 and "field 'suite_options.data'" in elsewhere.stderr
    assert len(elsewhere.stderr.strip().splitlines()) == 1
    given = memlab("grid", "--spec", "locomo", "--plan", "--locomo", str(MINI), cwd=tmp_path)
    assert given.returncode == 0 and "8 conditions, 7 answered" in given.stdout


def test_load_spec_fills_the_path_from_memlab_locomo_data(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMLAB_LOCOMO_DATA", str(MINI))
    assert load_spec("locomo").suite_options["locomo"]["data"] == str(MINI)
    assert "data" not in load_spec("quick").suite_options.get("locomo", {})


def test_plan_on_the_published_file_answers_at_least_300_and_measures_all_1540(tmp_path):
    from services import require_or_skip

    from memlab.gridspec import default_locomo_data

    path = default_locomo_data()
    if path is None or not Path(path).is_file():
        require_or_skip("LoCoMo's published file not found (MEMLAB_LOCOMO_DATA)")
    done = memlab("grid", "--spec", "locomo", "--plan", cwd=tmp_path,
                  env={"MEMLAB_LOCOMO_DATA": str(Path(path).resolve())})
    assert done.returncode == 0, done.stderr
    found = re.search(r"8 conditions, (\d+) answered and (\d+) evidence questions", done.stdout)
    assert found and int(found[1]) >= 300 and int(found[2]) == 1540, done.stdout
    assert "5882 stored turns per condition" in done.stdout
