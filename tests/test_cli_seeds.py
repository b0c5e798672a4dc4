"""``memlab docqa``, ``decide`` and ``taskforce``: help, and every seed rule on bad input
rejected with exit status 2 and one line naming the field, before any model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab import cli

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE_INPUT = json.loads((DATA / "decision" / "sample_input.json").read_text())


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMLAB_EMBEDDER", "hashing")
    monkeypatch.chdir(tmp_path)


def fails(capsys, *argv: str, code: int = 2) -> str:
    """Run the command, expect ``code`` and a one-line error; return that line."""
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == code
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def no_model_loaded(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("bad input must be rejected before a model loads")

    monkeypatch.setattr("memlab.lab.make_llm", refuse)


@pytest.mark.parametrize("command, words", [
    (["docqa", "--help"], ["ingest", "PENDING -> PROCESSING", "example"]),
    (["docqa", "ask", "--help"], ["--session", "1-1000 characters"]),
    (["decide", "--help"], ["13 turns", "TOPSIS", "sample_input.json", "--session-id",
                             "--strict-cr", "cr_repair"]),
    (["taskforce", "--help"], ["calculator", "python", "search_documents", "resume"]),
    (["taskforce", "run", "--help"], ["--profile", "--user", "example"]),
])
def test_help_teaches(capsys, command, words):
    with pytest.raises(SystemExit) as done:
        cli.main(command)
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert all(w in out for w in words), out


# --- docqa (seed 001) -------------------------------------------------------------------------
def test_docqa_ingest_then_ask_with_a_model_that_fails_reports_failed(tmp_path, capsys):
    assert cli.main(["docqa", "ingest", str(DATA / "docqa"), "--workdir", "dq"]) == 0
    out = capsys.readouterr().out
    assert "ingested 2 document(s)" in out and "256-dim embeddings" in out
    assert cli.main(["docqa", "ask", "Which sensors keep balance?", "--workdir", "dq",
                     "--llm", "fake"]) == 1  # the fake's "ok" is no answer: the query FAILS
    shown = capsys.readouterr().out
    assert "status: FAILED" in shown and "StructuredOutputError" in shown


@pytest.mark.parametrize("argv, field", [
    (["docqa", "ask", ""], "field 'text'"),
    (["docqa", "ask", "   "], "field 'text'"),
    (["docqa", "ask", "x" * 1001], "field 'text'"),
    (["docqa", "ask", "why?", "-k", "0"], "argument -k"),
    (["docqa", "ingest", "no/such/folder"], "document: 'no/such/folder' is neither"),
])
def test_docqa_bad_input(capsys, monkeypatch, argv, field):
    no_model_loaded(monkeypatch)
    assert field in fails(capsys, *argv)


def test_docqa_ingest_of_text_too_short_for_a_chunk(tmp_path, capsys):
    (tmp_path / "tiny.md").write_text("short")
    assert "no text of at least 10 characters" in fails(capsys, "docqa", "ingest", "tiny.md")


# --- decide (seed 003) ------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"mbti": "ABCD"}, "field 'mbti'"),
    ({"candidate_majors": ["Medicine"]}, "field 'candidate_majors'"),
    ({"candidate_majors": ["Medicine", "Medicine"]}, "field 'candidate_majors'"),
    ({"core_values": []}, "field 'core_values'"),
    ({"core_values": list("abcdefg")}, "field 'core_values'"),
    ({"settings": {"max_criteria": 2}}, "field 'settings.max_criteria'"),
    ({"settings": {"max_criteria": 11}}, "field 'settings.max_criteria'"),
    ({"settings": {"cr_threshold": 0.04}}, "field 'settings.cr_threshold'"),
    ({"settings": {"cr_threshold": 0.25}}, "field 'settings.cr_threshold'"),
    ({"settings": {"cr_max_retries": -1}}, "field 'settings.cr_max_retries'"),
    ({"hobbies": ["chess"]}, "field 'hobbies'"),
])
def test_decide_rejects_every_user_input_rule(tmp_path, capsys, monkeypatch, change, field):
    no_model_loaded(monkeypatch)
    (tmp_path / "input.json").write_text(json.dumps({**SAMPLE_INPUT, **change}))
    err = fails(capsys, "decide", "input.json", "--out", "out")
    assert "input.json" in err and field in err
    assert not (tmp_path / "out").exists()


def test_decide_bad_files(tmp_path, capsys, monkeypatch):
    no_model_loaded(monkeypatch)
    assert "input: no file at missing.json" in fails(capsys, "decide", "missing.json")
    (tmp_path / "broken.json").write_text("{not json")
    assert "input 'broken.json': not valid JSON" in fails(capsys, "decide", "broken.json")


def test_decide_prints_the_cr_repair_and_strict_cr_stops_with_one_line(tmp_path, capsys,
                                                                         monkeypatch):
    from test_decision_debate import USER, Script

    from memlab.llm.fake import FakeLLM

    monkeypatch.delenv("MEMLAB_DECISION_CR_REPAIR", raising=False)
    monkeypatch.setattr("memlab.lab.make_llm", lambda *a, **k: FakeLLM([Script(
        inconsistent_director_tries=99, garbage_once=False)]))
    (tmp_path / "input.json").write_text(json.dumps(USER))
    assert cli.main(["decide", "input.json", "--out", "out", "--session-id", "c1"]) == 0
    out = capsys.readouterr().out
    assert ("CR repair: the Director's matrix (attempt 1) had CR 0.918; changed Salary vs "
            "Interest 9.0 -> Interest vs Salary 2.0; Aptitude vs Impact 9.0 -> Impact vs "
            "Aptitude 2.0; CR now 0.000") in out
    assert (tmp_path / "out" / "final_ranking_c1.json").exists()
    err = fails(capsys, "decide", "input.json", "--out", "out", "--session-id", "c2",
                "--strict-cr", code=1)
    assert "consistency_ratio: stayed above cr_threshold 0.1" in err
    assert "resume at round 2" in err and not (tmp_path / "out" / "round2_test_c2.json").exists()


def test_the_shipped_sample_input_validates():
    from memlab.decision.outputs import read_user_input
    from memlab.decision.personas import generate_personas

    user = read_user_input(DATA / "decision" / "sample_input.json")
    assert len(generate_personas(user)) == 3 and len(user.candidate_majors) == 3


# --- taskforce (seed 004) ---------------------------------------------------------------------
@pytest.mark.parametrize("argv, field", [
    (["taskforce", "run", "   "], "field 'mission'"),
    (["taskforce", "run", "x" * 4001], "field 'mission'"),
    (["taskforce", "run", "add 1 and 1", "--profile", "production"], "argument --profile"),
    (["taskforce", "run", "add 1 and 1", "--max-steps", "0"], "argument --max-steps"),
])
def test_taskforce_bad_input(capsys, monkeypatch, argv, field):
    no_model_loaded(monkeypatch)
    assert field in fails(capsys, *argv)


def test_taskforce_resume_of_an_unknown_or_finished_session(tmp_path, capsys):
    from test_taskforce_agent import MISSION, Script

    from memlab import lab
    from memlab.embed.hashing import HashingEmbedder
    from memlab.llm.fake import FakeLLM

    assert "session_id: no session 'nope'" in fails(
        capsys, "taskforce", "resume", "nope", "--workdir", "tf", "--llm", "fake")
    agent = lab.make_taskforce("tf", llm=FakeLLM([Script()]), embedder=HashingEmbedder())
    done = agent.run(MISSION).session.session_id
    assert f"session {done} is completed" in fails(
        capsys, "taskforce", "resume", done, "--workdir", "tf", "--llm", "fake")


def test_missions_file_rules(tmp_path):
    from memlab.errors import ConfigError
    from memlab.taskforce.missions import load_missions

    shipped = load_missions(DATA / "taskforce" / "missions.json")
    assert len(shipped.missions) == 10 and shipped.workspace.is_dir()
    assert {m.kind for m in shipped.missions} == {"arithmetic", "file", "lookup"}
    (tmp_path / "m.json").write_text(json.dumps({"missions": [
        {"id": "a", "kind": "file", "mission": "x", "file": "f.txt"}]}))
    with pytest.raises(ConfigError, match="file and file_contains go together"):
        load_missions(tmp_path / "m.json")


@pytest.mark.parametrize("expected, text, hit", [
    ("36", "0.36", False), ("36", "36.0", True), ("36", "360 pencils", False),
    ("42", "The result is 42.", True), ("5050", "5,050", True), ("pelvis", "In the Pelvis", True),
    ("two to four hours", "It lasts 2 to 4 hours", False),
])
def test_mission_answers_are_matched_as_numbers_or_text(expected, text, hit):
    from memlab.taskforce.missions import found

    assert found(expected, text) is hit


def test_check_mission_needs_completion_the_answer_and_the_file(tmp_path):
    from memlab.taskforce.missions import Mission, check_mission

    mission = Mission(id="m", kind="file", mission="write it", file="out.txt",
                      file_contains="hello", answer_contains=["7"])
    assert not check_mission(mission, False, "7", tmp_path).succeeded
    assert "lacks 'hello'" in check_mission(mission, True, "7", tmp_path).reason
    (tmp_path / "out.txt").write_text("Hello there")
    assert check_mission(mission, True, "7.0", tmp_path).succeeded
    assert "contain none of" in check_mission(mission, True, "17", tmp_path).reason
