"""Seeds 003 and 004 on the real local 0.5B model and MiniLM: short checks (minutes).

The long measurements (a full debate, the 10 missions, the 20 document questions) are
benchmarks: benchmarks/bench_debate.py, bench_taskforce.py, bench_docqa.py.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from services import require_or_skip

from memlab import lab
from memlab.errors import MissingDependencyError

pytestmark = pytest.mark.integration
DATA = Path(__file__).resolve().parent.parent / "data"


def local_llm(size: str):
    try:
        return lab.make_llm("local", size, llm_cache=False)
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


@pytest.fixture(scope="module")
def small_llm():
    return local_llm("0.5b")


@pytest.fixture(scope="module")
def medium_llm():
    return local_llm("1.5b")


# --- seed 003: every Director decision is valid at the first try under its grammar -----------
def test_director_replies_of_every_round_are_valid_first_time(small_llm):
    from memlab.decision.outputs import read_user_input
    from memlab.decision.personas import director_prompt, generate_personas
    from memlab.decision.prompts import round_context, turn_message
    from memlab.decision.replies import comparison_model, criteria_decision_model, decision_model
    from memlab.llm.base import Message
    from memlab.llm.structured import complete_json_reply
    from memlab.models.decision import DebateTurnType, check_comparison_matrix

    user = read_user_input(DATA / "decision" / "sample_input.json")
    names = [p.name for p in generate_personas(user)]
    criteria = ["Career prospects", "Fit with interests", "Workload", "Helping people"]
    models = {1: criteria_decision_model(4, criteria + ["Salary"], names),
              2: comparison_model(criteria, director=True),
              3: decision_model(user.candidate_majors, criteria, director=True)}
    replies = {}
    for round_no, model in models.items():
        text = turn_message(round_no, 13, "Phase 4: Director's final decision",
                            DebateTurnType.FINAL_DECISION, [],
                            round_context(round_no, user, criteria, dict.fromkeys(criteria, .25)),
                            [], 4)
        reply = complete_json_reply(small_llm, [Message(role="system",
                                                        content=director_prompt(user)),
                                                Message(role="user", content=text)],
                                    model, max_tokens=512, compact=True)
        assert reply.attempts == 1, reply.errors
        replies[round_no] = reply.value
    assert len({c.name for c in replies[1].selected_criteria}) == 4
    check_comparison_matrix(replies[2].comparison_matrix, criteria)  # nC2 = 6 pairs, on scale
    assert set(replies[3].decision_matrix) == set(user.candidate_majors)


def test_a_cr_retry_asks_two_pairs_and_gets_a_valid_reply_first_time(small_llm):
    from memlab.decision.ahp import ahp_weights, judgement
    from memlab.decision.consistency import CRRetries
    from memlab.decision.outputs import DebateStats, read_user_input
    from memlab.decision.personas import director_prompt
    from memlab.llm.base import Message
    from memlab.llm.structured import complete_json_reply
    from memlab.models.decision import ConversationState, Criterion, check_comparison_matrix

    user = read_user_input(DATA / "decision" / "sample_input.json")
    names = ["Career prospects", "Fit with interests", "Workload", "Helping people"]
    state = ConversationState(user_input=user, selected_criteria=[
        Criterion(name=n, source_agent="Director") for n in names])
    # the 0.5B Director's matrix of the reproduction (CR 0.27), docs/seeds.md
    given = {"Career prospects vs Fit with interests": 5.0, "Career prospects vs Workload": 7.0,
             "Career prospects vs Helping people": 3.0, "Fit with interests vs Workload": 5.0,
             "Fit with interests vs Helping people": 5.0, "Workload vs Helping people": 3.0}
    attempts = []

    def ask(messages, model):
        reply = complete_json_reply(small_llm, messages, model, max_tokens=512, compact=True)
        attempts.append(reply.attempts)
        return reply.value

    retries = CRRetries(ask, stats=DebateStats(), share=lambda **_: None, repair=True)
    system = Message(role="system", content=director_prompt(user))
    rejudged = retries.rejudge(state, system, given, ahp_weights(names, given))
    assert attempts == [1]
    check_comparison_matrix(rejudged, names)
    changed = [k for k, v in given.items() if judgement(rejudged, k) != (k, v)]
    assert set(changed) <= {"Career prospects vs Helping people", "Workload vs Helping people"}


# --- seed 004 -----------------------------------------------------------------------------------
def test_taskforce_solves_an_arithmetic_mission(medium_llm, tmp_path, minilm):
    """On the 1.5B tier, the one that meets the 8-of-10 target (benchmarks/results/
    taskforce-1.5b.json); the 0.5B fails this mission on some runs (taskforce.json)."""
    agent = lab.make_taskforce(tmp_path / "tf", llm=medium_llm, embedder=minilm)
    result = agent.run("Compute 12 * 3, then add 6 to the result.", user_id="it")
    assert result.succeeded, (result.error, result.answers)
    assert "42" in " ".join(str(a) for a in result.answers.values())
    actions = [h.action for h in agent.repo.history(result.session.session_id)]
    assert "calculator" in actions or "python" in actions
    assert actions[-1] == "complete"


def test_lessons_come_by_meaning_and_stay_with_their_user(tmp_path, minilm):
    from memlab.models.taskforce import Lesson
    from memlab.taskforce import TaskforceRepository

    repo = TaskforceRepository.open(tmp_path, embedder=minilm)
    lesson = Lesson(context="Multi-step arithmetic: compute a product, then add to it.",
                    what_worked="one calculator call per step",
                    lesson="Chain calculator results into the next expression.", confidence=0.9,
                    tool_name="calculator")
    repo.add_lesson(lesson, user_id="alice")
    assert repo.lessons_for("Compute 5 * 5 and then add 6.", user_id="alice") == [lesson]
    for unrelated in ("Write a haiku about the sea into poem.txt",
                      "What is a humanoid robot and why does it have legs?"):
        assert repo.lessons_for(unrelated, user_id="alice") == []
    assert repo.lessons_for("Compute 5 * 5 and then add 6.", user_id="bob") == []


def history_rows(db: Path) -> list[tuple]:
    """The recorded steps ([] while the run is still creating its tables)."""
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("select session_id, step_id from execution_history").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return []


def test_kill_9_during_a_mission_then_resume_finishes_it_without_repeating_a_step(tmp_path,
                                                                                    medium_llm):
    """On the 1.5B tier, as the mission test above (the 0.5B fails the mission on some runs)."""
    env = {**os.environ, "MEMLAB_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "memlab.cli", "taskforce"]
    workdir = ["--workdir", str(tmp_path / "tf"), "--docs", str(tmp_path / "none"),
               "--llm-model", "1.5b"]
    db = tmp_path / "tf" / "taskforce.sqlite"
    run = subprocess.Popen([*command, "run", "Compute 12 * 3, then add 6 to the result.",
                            *workdir], env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not (db.exists() and history_rows(db)):  # the first step is recorded
        assert run.poll() is None, "the run ended before its first step was recorded"
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.kill(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    assert run.returncode == -signal.SIGKILL
    session_id = history_rows(db)[0][0]
    with sqlite3.connect(db) as conn:
        status = conn.execute("select status from sessions").fetchone()[0]
        plans = conn.execute("select todolist_id from todolists").fetchall()
    assert status == "in_progress" and len(plans) == 1
    before = history_rows(db)

    done = subprocess.run([*command, "resume", session_id, *workdir], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"session {session_id}: completed" in done.stdout and "42" in done.stdout
    after = history_rows(db)
    steps = [step for _, step in after]
    assert steps == list(range(len(steps))) and after[: len(before)] == before  # none twice
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from todolists").fetchone()[0] == 1  # same plan
        versions = [v for (v,) in conn.execute("select version from states order by version")]
        final = json.loads(conn.execute("select state_json from states order by version desc "
                                        "limit 1").fetchone()[0])
    assert versions == list(range(1, len(versions) + 1))
    assert final["status"] == "completed" and final["inflight"] is None
