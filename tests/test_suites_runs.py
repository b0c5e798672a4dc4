"""Runs of the published-file suites through the real runner: one memory scope per
conversation, the answer instruction only in the prompt, resume, and the CLI around them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memlab import lab
from memlab.bench.base import Suite, SuiteEvent, TestScore
from memlab.bench.questions import PromptStore
from memlab.bench.runlog import read_jsonl, write_json_atomic
from memlab.bench.runner import run as run_spec
from memlab.bench.runner import strip_timing
from memlab.bench.spec import RunSpec
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import MemlabError
from memlab.llm.fake import FakeLLM

DATA = Path(__file__).parent / "suites_data"
LOCOMO, LONGMEMEVAL = DATA / "locomo_mini.json", DATA / "longmemeval_mini.json"


def run_locomo(tmp_path: Path, condition: str, llm=None, **options) -> Path:
    spec = RunSpec(suite="locomo", condition=condition, span=4000, llm="fake",
                   embedder="hashing", suite_options={"data": str(LOCOMO), **options})
    return lab.run(spec, tmp_path, llm=llm or FakeLLM(), embedder=HashingEmbedder(),
                   progress=False)


def question_turns(run_dir: Path) -> dict[str, dict]:
    return {t["test_id"]: t for t in read_jsonl(run_dir / "turns.jsonl")
            if t["kind"] == "question"}


def test_each_conversation_has_its_own_memory_and_the_prompt_its_instruction(tmp_path):
    run_dir = run_locomo(tmp_path, "full_context")
    turns = read_jsonl(run_dir / "turns.jsonl")
    assert {t["user_id"] for t in turns} == {"conv-a", "conv-b"}
    prompts = PromptStore(run_dir / "prompts")
    clarinet = question_turns(run_dir)["conv-b:q0"]
    sent = "\n".join(m.content for m in prompts.get(clarinet["prompt_sha"]))
    assert "clarinet every evening" in sent  # conv-b's own turn is in its history
    assert "necklace" not in sent and "Ana" not in sent  # conv-a's memory is not
    assert sent.rstrip().endswith("Question: What instrument does Cleo play? Short answer:")
    assert clarinet["evidence_recall"] == 1.0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["suite_params"]["sha256"] and manifest["status"] == "complete"
    scores = read_jsonl(run_dir / "scores.jsonl")
    assert len(scores) == 7 and all("f1" in s["metadata"] for s in scores)


def test_the_memory_is_queried_with_the_question_not_the_instruction(tmp_path):
    spec = RunSpec(suite="locomo", condition="rag", span=4000, llm="fake", embedder="hashing",
                   suite_options={"data": str(LOCOMO), "conversations": ["conv-b"]})
    queries: list[str] = []

    def factory(condition, **kw):
        agent = lab.make_agent(condition, llm=kw["llm"], embedder=kw["embedder"],
                               workdir=kw["workdir"], user_id=kw["scope"].user_id)
        recall = agent.memory.recall
        agent.memory.recall = lambda q: queries.append(q) or recall(q)
        return agent

    run_spec(spec, suite=lab.build_suite(spec), llm=FakeLLM(), embedder=HashingEmbedder(),
             results_dir=tmp_path, agent_factory=factory, progress=False)
    assert queries == ["What instrument does Cleo play?"]


def test_oracle_reaches_all_evidence_and_vanilla_none(tmp_path):
    oracle = question_turns(run_locomo(tmp_path, "oracle"))
    vanilla = question_turns(run_locomo(tmp_path, "vanilla"))
    with_evidence = [q for q, t in oracle.items() if t["evidence"]]
    assert len(with_evidence) == 6
    assert all(oracle[q]["evidence_recall"] == 1.0 for q in with_evidence)
    assert all(vanilla[q]["evidence_recall"] == 0.0 for q in with_evidence)
    assert oracle["conv-a:q3"]["evidence_recall"] is None  # empty evidence in the file


def test_a_killed_run_of_several_conversations_resumes_to_the_same_records(tmp_path):
    whole = run_locomo(tmp_path / "whole", "rag")
    part = run_locomo(tmp_path / "part", "rag")
    lines = (part / "turns.jsonl").read_text().splitlines(keepends=True)
    (part / "turns.jsonl").write_text("".join(lines[:10]))  # killed inside conv-a's questions
    (part / "scores.jsonl").unlink()
    manifest = json.loads((part / "manifest.json").read_text())
    write_json_atomic(part / "manifest.json", manifest | {"status": "running"})
    resumed = run_locomo(tmp_path / "part", "rag")
    final = json.loads((resumed / "manifest.json").read_text())
    assert final["status"] == "complete" and final["counts"]["diverged_turns"] == []
    assert [strip_timing(t) for t in read_jsonl(resumed / "turns.jsonl")] == \
        [strip_timing(t) for t in read_jsonl(whole / "turns.jsonl")]


def test_longmemeval_run_judges_every_instance_in_its_own_scope(tmp_path):
    def reply(messages):
        return "yes" if "Answer yes or no only" in messages[-1].content else "Portland"

    spec = RunSpec(suite="longmemeval", condition="rag", span=4000, llm="fake",
                   embedder="hashing", suite_options={"data": str(LONGMEMEVAL)})
    run_dir = lab.run(spec, tmp_path, llm=FakeLLM([reply]), embedder=HashingEmbedder(),
                      progress=False)
    scores = {s["test_id"]: s for s in read_jsonl(run_dir / "scores.jsonl")}
    assert set(scores) == {"q1", "q2_abs", "q3"}
    assert all(s["score"] == 1.0 and s["metadata"]["judge_model"] == "fake"
               for s in scores.values())
    prompts = PromptStore(run_dir / "prompts")
    sent = "\n".join(m.content for m in prompts.get(question_turns(run_dir)["q3"]["prompt_sha"]))
    assert "dentist" in sent and "Portland" not in sent  # q1's history stays in q1's scope


class Interleaved(Suite):
    """A suite whose first user comes back after another: refused, never silently re-created."""

    name = "interleaved"

    def events(self):
        t0 = datetime(2024, 1, 1)
        users = ["a", "b", "a"]  # a's question comes after b's turn
        return [SuiteEvent(index=i, kind="question" if i == 2 else "filler", text=f"turn {i}",
                           reply="ok", user_id=u, timestamp=t0 + timedelta(minutes=i))
                for i, u in enumerate(users)]

    def score(self, responses):
        return [TestScore(test_id="t", test_type="t", score=0, max_score=1)]


def test_a_conversation_resuming_after_another_is_refused(tmp_path):
    spec = RunSpec(suite="ltm", condition="rag", span=1000, llm="fake", embedder="hashing")
    with pytest.raises(MemlabError, match="not contiguous"):
        run_spec(spec, suite=Interleaved(), llm=FakeLLM(), embedder=HashingEmbedder(),
                 results_dir=tmp_path, progress=False)


# ---------------------------------------------------------------- CLI


def memlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_suites_lists_and_info_prints_counts(tmp_path):
    listed = memlab("suites", cwd=tmp_path)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "ltm", "persona", "locomo", "longmemeval"]
    table = memlab("suites", "info", "locomo", "--data", str(LOCOMO), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "questions by category" in table.stdout and "conv-b" in table.stdout
    counts = json.loads(memlab("suites", "info", "locomo", "--data", str(LOCOMO), "--json",
                               cwd=tmp_path).stdout)
    assert (counts["samples"], counts["sessions"], counts["turns"], counts["questions"]) == \
        (2, 3, 9, 8)
    assert counts["questions_by_category"] == {"1": 1, "2": 1, "3": 1, "4": 4, "5": 1}
    assert counts["questions_with_evidence"] == 7 and counts["evidence_ids_unresolved"] == 1
    lme = json.loads(memlab("suites", "info", "longmemeval", "--data", str(LONGMEMEVAL),
                            "--json", cwd=tmp_path).stdout)
    assert lme["questions_by_type"] == {"single-session-user": 2, "temporal-reasoning": 1}
    assert lme["abstention_questions"] == 1 and lme["sessions"] == 4


@pytest.mark.parametrize("args, expected", [
    (("suites", "info", "locomo", "--data", "{bad}"), "field 'qa[2].category'"),
    (("suites", "info", "locomo", "--data", "nowhere.json"), "no such file"),
    (("suites", "info", "ltm", "--data", str(LOCOMO)), "is generated, not read from a data"),
    (("suites", "info", "locomo"), "the following arguments are required: --data"),
    (("run", "-c", "rag", "-s", "locomo", "--llm", "fake"), "suite_options.data"),
    (("run", "-c", "rag", "-s", "locomo", "--llm", "fake", "--data", str(LOCOMO),
      "-o", "sessions=0"), "'suite_options.sessions'"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, expected):
    bad = tmp_path / "bad.json"
    data = json.loads(LOCOMO.read_text())
    data[0]["qa"][2]["category"] = 9
    bad.write_text(json.dumps(data))
    done = memlab(*[str(bad) if a == "{bad}" else a for a in args], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    if "{bad}" in args:
        assert str(bad) in done.stderr and "sample 'conv-a'" in done.stderr


def test_memlab_run_reads_data_and_suite_options(tmp_path):
    done = memlab("run", "-c", "vanilla", "-s", "locomo", "--llm", "fake", "--embedder",
                  "hashing", "--data", str(LOCOMO), "-o", "conversations=[conv-b]",
                  "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    turns = read_jsonl(tmp_path / "out" / "locomo-vanilla-1000-s0" / "turns.jsonl")
    assert {t["user_id"] for t in turns} == {"conv-b"}


def test_paper_grid_adds_published_cells_at_one_seed_and_documented_sizes():
    from memlab.gridspec import PUBLISHED_SIZES, QUICK, STANDARD, plan, with_published

    spec = with_published(QUICK, {"locomo": str(LOCOMO), "longmemeval": None})
    cells = [c for c in spec.cells(llm="fake") if c.suite == "locomo"]
    assert len(cells) == len(QUICK.conditions)  # one seed, no evidence seeds, no Table 2 cells
    assert {c.seed for c in cells} == {QUICK.seeds[0]} and not any(c.probes_sleep for c in cells)
    assert {c.span for c in cells} == {PUBLISHED_SIZES["quick"]["locomo"]["span"]}
    assert cells[0].suite_options == {"conversations": 1, "data": str(LOCOMO)}
    assert cells[0].answered == 24
    assert len([c for c in spec.cells(llm="fake") if c.suite == "ltm"]) == \
        len([c for c in QUICK.cells(llm="fake") if c.suite == "ltm"])
    counted = plan(spec, cells).iloc[0]
    assert counted["evidence_per_condition"] == 6  # conv-a's questions of categories 1-4
    standard = with_published(STANDARD, {"longmemeval": str(LONGMEMEVAL)})
    lme = [c for c in standard.cells(llm="fake") if c.suite == "longmemeval"]
    assert lme[0].suite_options["instances"] == 30 and lme[0].answered is None
