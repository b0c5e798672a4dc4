"""Issue 42, items 7, 13 and 14: a Trigger Response result without triggers is listed as
unscorable, ChapterBreak is scored by GoodAI's rule (checked against GoodAI's own check, run from
the shared checkout), Colours by whole word in memlab's ``strict`` set, and every disagreement can
be listed."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from faults_helpers import memlab_cli

from memlab.bench.base import Response
from memlab.bench.goodai import LoadedTest, TestDefinition, goodai_rescore
from memlab.bench.runner import check_same_run
from memlab.bench.suites import ltm_scorers
from memlab.bench.suites.ltm import LTMSuite
from memlab.bench.suites.ltm_scorers import scorers
from memlab.errors import ConfigError

SHARED = Path(__file__).resolve().parents[2] / "shared"
GOODAI = SHARED / "goodai-ltm-benchmark"
PUBLISHED_1K = SHARED / "data" / "goodai-ltm-v3-1k" / "results"
VERSIONS = ("current", "published", "strict")
needs_goodai = pytest.mark.skipif(not GOODAI.is_dir(), reason="GoodAI's checkout not found")


def goodai_check(module: str, dataset: str):
    """GoodAI's own ``<dataset>.evaluate_correct`` from the shared checkout, executed as written
    (only the method is taken: the module's imports need GoodAI's venv)."""
    source = (GOODAI / "datasets" / f"{module}.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body
               if isinstance(n, ast.ClassDef) and n.name == dataset)
    method = next(n for n in cls.body
                  if isinstance(n, ast.FunctionDef) and n.name == "evaluate_correct")
    namespace = {"re": re, "List": list, "Tuple": tuple}
    exec(compile(ast.Module(body=[method], type_ignores=[]), str(GOODAI), "exec"), namespace)
    check = namespace["evaluate_correct"]
    return lambda responses, expected: check(None, [""] * len(responses), responses, expected)


def write_result(folder: Path, test_type: str, name: str, *, actual, expected, score=1.0,
                 max_score=1.0, agent="agent") -> Path:
    path = folder / agent / test_type / f"{name}_0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task_log": [], "actual_responses": actual, "score": score,
                                "max_score": max_score, "reasoning": ["published"],
                                "expected_responses": expected}), encoding="utf-8")
    return path


# --- item 7: a Trigger Response result without triggers --------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_a_trigger_result_without_triggers_is_listed_unscorable_and_the_rest_is_scored(
        tmp_path, version):
    write_result(tmp_path, "Trigger Response", "0", actual=[], expected=[], score=0)
    write_result(tmp_path, "Colours", "0", actual=["It is teal."], expected=["Teal"])
    report = goodai_rescore(tmp_path, scorers=version)
    by_type = {item.test_type: item for item in report.items}
    assert set(by_type) == {"trigger_response", "colours"}
    assert by_type["colours"].agrees
    empty = by_type["trigger_response"]
    assert empty.memlab is None and not empty.agrees
    assert "no expected_responses" in empty.reasoning[0]


def test_the_rescore_command_lists_the_unscorable_file_and_exits_0(tmp_path):
    write_result(tmp_path, "Trigger Response", "0", actual=[], expected=[], score=0)
    write_result(tmp_path, "Trigger Response", "1", actual=["It's party time!"],
                 expected=["It's party time!"])
    done = memlab_cli("goodai-rescore", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    listed = [line for line in done.stdout.splitlines() if line.startswith("- ")]
    assert len(listed) == 1 and "Trigger Response/0_0.json" in listed[0]
    assert "memlab n/a" in listed[0] and "no expected_responses" in listed[0]


# --- item 13: ChapterBreak by GoodAI's rule -------------------------------------------------
CHAPTERBREAK_ANSWERS = [
    ("3", "3"), ("Option 3", "3"), ("3.", "3"), ("The answer is 3", "3"), (" 3 ", " 3"),
    ("3 or 4", "3"), ("I think option 3 (not 5)", "3"), ("three", "3"), ("", "3"),
    ("13", "3"), ("03", "3"), ("Option 3, definitely option 3.", "3"), ("\u0663", "3"),
    ("Option #3\n\nChapter 12 ends where option 3 begins.", "3"), ("6", "6"), ("1", "6"),
    ("Options 1-6: I pick 2", "2"), ("2\n", "2"), ("Option 2.5", "2"), ("-2", "2"),
    ("I cannot tell.", "4"), ("4️⃣", "4"), ("４", "4"), ("Option 4", "4 "),
]


@needs_goodai
@pytest.mark.parametrize("version", VERSIONS)
def test_chapterbreak_scores_as_goodais_own_check_on_varied_answers(version):
    goodai = goodai_check("chapterbreak", "ChapterBreakDataset")
    scorer = scorers(version)["chapterbreak"]
    seen = set()
    for reply, expected in CHAPTERBREAK_ANSWERS:
        want, max_score, _ = goodai([reply], [expected])
        judged = scorer([""], [reply], [expected])  # no client: a rule, no LLM judge
        assert (judged.score, judged.max_score) == (want, max_score), (reply, expected)
        seen.add(want)
    assert seen == {0, 1}  # the answers exercise both outcomes


def test_chapterbreak_results_are_rescored_without_an_llm_judge(tmp_path):
    write_result(tmp_path, "ChapterBreak", "12653258_1", actual=["Option 4"], expected=["4"])
    write_result(tmp_path, "ChapterBreak", "47583370_7", actual=["4 or 5"], expected=["4"],
                 score=0)
    write_result(tmp_path, "Restaurant", "0", actual=["a"], expected=["b"], score=0)
    report = goodai_rescore(tmp_path)
    assert [i.test_type for i in report.items] == ["chapterbreak", "chapterbreak"]
    assert all(i.agrees for i in report.items)
    assert set(report.skipped) == {"restaurant"}
    assert report.conformance() == (2, 2)  # counted with the types GoodAI scores by rule


# --- item 14: Colours by whole word in the strict set ----------------------------------------
COLOUR_ANSWERS = [
    ("I have not remembered your favourite colour.", "Red"),
    ("We shared a love of tea.", "Red"), ("Your favourite colour is red.", "Red"),
    ("RED!", "Red"), ("It is red-orange, you said.", "Red"), ("It was reddish.", "Red"),
    ("Tangerine? No: tan.", "Tan"), ("Stand still.", "Tan"), ("bluebell", "Blue"),
    ("Your favourite is Olive.", "Olive"), ("I don't know.", "Cream"),
]


def whole_word(reply: str, colour: str) -> int:
    return int(re.search(rf"\b{re.escape(colour.lower())}\b", reply.lower()) is not None)


@needs_goodai
def test_conformance_sets_keep_goodais_colours_and_strict_needs_a_whole_word():
    goodai = goodai_check("colours", "ColourDataset")
    differ = 0
    for reply, colour in COLOUR_ANSWERS:
        published, _, _ = goodai([reply], [colour])
        for version in ("current", "published"):
            assert scorers(version)["colours"]([""], [reply], [colour]).score == published
        strict = scorers("strict")["colours"]([""], [reply], [colour]).score
        assert strict == whole_word(reply, colour), (reply, colour)
        differ += strict != published
    assert differ >= 3  # "remembered", "shared", "Stand", "bluebell", ...
    assert scorers("strict")["colours"](
        [""], ["I have not remembered your favourite colour."], ["Red"]).score == 0


@pytest.mark.skipif(not (PUBLISHED_1K.is_dir() and GOODAI.is_dir()),
                    reason="published GoodAI 1k results not found")
def test_published_colours_scores_changed_by_each_set():
    """current and published change no published Colours score; strict changes exactly those
    whose colour GoodAI found only inside another word."""
    goodai = goodai_check("colours", "ColourDataset")
    inside = set()
    for path in PUBLISHED_1K.glob("*/Colours/*_*.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        replies, expected = result["actual_responses"], result["expected_responses"]
        if goodai(replies, expected)[0] != whole_word(replies[-1], expected[0]):
            inside.add(str(path.relative_to(PUBLISHED_1K)))
    changed = {}
    for version in VERSIONS:
        report = goodai_rescore(PUBLISHED_1K, scorers=version)
        colours = [i for i in report.items if i.test_type == "colours"]
        assert len(colours) == 39
        changed[version] = {i.file for i in colours if not i.agrees}
    assert changed["current"] == changed["published"] == set()
    assert changed["strict"] == inside


def test_rescore_lists_every_disagreement_with_all(tmp_path):
    for n in range(23):  # published 1 for a wrong colour: memlab disagrees 23 times
        write_result(tmp_path, "Colours", str(n), actual=["It is blue."], expected=["Teal"])
    short = memlab_cli("goodai-rescore", str(tmp_path))
    every = memlab_cli("goodai-rescore", "--all", str(tmp_path))
    assert short.returncode == every.returncode == 0, short.stderr + every.stderr
    listed = [line for line in every.stdout.splitlines() if line.startswith("- ")]
    assert len(listed) == 23 and "more disagreements" not in every.stdout
    assert len({line.split(":")[0] for line in listed}) == 23
    assert sum(line.startswith("- ") for line in short.stdout.splitlines()) == 20
    assert "... and 3 more disagreements" in short.stdout


def test_memlabs_own_runs_use_the_strict_set_and_record_it():
    test = LoadedTest(test_type="colours", example_id="0", definition=TestDefinition(
        script=["My favourite colour is Red.", "What is my favourite colour?"],
        is_question=[False, True], expected_responses=["Red"]))
    suite = LTMSuite([test], span=1000)
    question = next(e for e in suite.events() if e.kind == "question")
    reply = {question.index: Response(index=question.index,
                                       reply="I have not remembered your favourite colour.")}
    assert suite.score(reply)[0].score == 0
    recorded = f"{ltm_scorers.RUN_SCORERS}-{ltm_scorers.RUN_SCORERS_REVISION}"
    assert suite.describe()["scorers"] == recorded and ltm_scorers.RUN_SCORERS == "strict"


def test_a_run_recorded_under_other_scorers_is_scored_by_these(tmp_path, monkeypatch):
    """A finished LTM run kept without its scores (a grid's records) under another scorer set
    (an older revision, or none recorded) is scored by this memlab's from its recorded turns,
    with no model call, rather than refused; a different parameter is still refused."""
    from memlab import cli
    from memlab.bench.runner import is_complete, read_manifest

    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
            "--embedder", "hashing", "--out", str(tmp_path / "out")]
    assert cli.main(argv) == 0
    run_dir = next((tmp_path / "out").iterdir())
    turns, calls = (run_dir / "turns.jsonl").read_bytes(), (run_dir / "calls.jsonl").read_bytes()
    scores = (run_dir / "scores.jsonl").read_text()
    for stale in ("strict-1", None):
        manifest = read_manifest(run_dir)
        params = {k: v for k, v in manifest["suite_params"].items() if k != "scorers"}
        manifest["suite_params"] = params | ({"scorers": stale} if stale else {})
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        (run_dir / "scores.jsonl").unlink()
        assert not is_complete(run_dir)
        check_same_run(run_dir, {"suite_params": LTMSuite(span=200).describe()})  # not refused
        assert cli.main(argv) == 0
        assert is_complete(run_dir)
        assert read_manifest(run_dir)["suite_params"]["scorers"] == ltm_scorers.run_scorers_id()
        assert (run_dir / "scores.jsonl").read_text() == scores
        assert (run_dir / "turns.jsonl").read_bytes() == turns
        assert (run_dir / "calls.jsonl").read_bytes() == calls  # no model call, none journaled
    other = dict(LTMSuite(span=200).describe()) | {"seed": 7}
    with pytest.raises(ConfigError, match="suite_params.seed"):  # other parameters still are
        check_same_run(run_dir, {"suite_params": other})
