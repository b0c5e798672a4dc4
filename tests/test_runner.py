"""The resumable runner: records, probes, scoring, skip, and kill -9 + resume.

Run as a script (``python tests/test_runner.py RESULTS_DIR [--hang-at-call K]``) it is the child
process the kill tests start and kill.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memlab.agent import Agent  # noqa: E402
from memlab.bench.base import SUITES, Response, Suite, SuiteEvent, TestScore  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import (  # noqa: E402
    default_agent_factory,
    is_complete,
    strip_timing,
)
from memlab.bench.runner import run as run_spec  # noqa: E402
from memlab.bench.spec import RunSpec  # noqa: E402
from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.errors import ConfigError, MemlabError  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySystem  # noqa: E402

COLOURS = ["red", "blue", "green", "yellow", "purple", "orange"]
T0 = datetime(2024, 1, 1, tzinfo=UTC)


class TinySuite(Suite):
    """Sessions of filler + one needle ("my favourite colour is X") + a 4-option question."""

    name = "tiny"

    def __init__(self, sessions: int = 3, filler: int = 4):
        self.sessions, self.filler = sessions, filler

    def events(self) -> list[SuiteEvent]:
        events: list[SuiteEvent] = []

        def add(**kw):
            events.append(SuiteEvent(index=len(events), session_id=f"s{kw.pop('s')}",
                                     timestamp=T0 + timedelta(minutes=len(events)), **kw))

        for s in range(self.sessions):
            colour = COLOURS[s % len(COLOURS)]
            add(s=s, kind="needle", text=f"My favourite colour is {colour}.", test_id=f"t{s}",
                test_type="colours")
            for f in range(self.filler):
                add(s=s, kind="filler", text=f"Filler question {s}.{f}?", reply=f"Answer {f}.")
            options = [COLOURS[(s + k) % len(COLOURS)] for k in range(4)]
            add(s=s, kind="question", text="What is my favourite colour?", test_id=f"t{s}",
                test_type="colours", store=False, options=options, answer_index=0,
                metadata={"evidence_indices": [len(events) - self.filler - 1]})
        return events

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        out = []
        for event in self.events():
            if event.kind != "question":
                continue
            ok = responses[event.index].choice == event.answer_index
            out.append(TestScore(test_id=event.test_id, test_type=event.test_type,
                                 score=float(ok), max_score=1.0))
        return out

    def describe(self):
        return {"name": self.name, "size": self.sessions, "filler": self.filler}


SUITES.register("tiny", TinySuite, "the runner tests' suite")


def tiny_spec(suite: TinySuite, condition: str, **fields) -> RunSpec:
    """The RunSpec of ``suite`` (its span: the number of sessions)."""
    return RunSpec.parse({"suite": suite.name, "condition": condition, "span": suite.sessions,
                          "llm": "fake", "embedder": "hashing", **fields})


def run(suite: TinySuite, condition: str, *, llm, results_dir=None, agent_factory=None,
        progress=True, **fields) -> Path:
    """``runner.run`` of ``suite`` under ``condition``: an embedder object goes to the run,
    anything else (spec fields, an embedder name) into its RunSpec."""
    embedder = fields.pop("embedder", None)
    if isinstance(embedder, str):
        fields["embedder"], embedder = embedder, None
    return run_spec(tiny_spec(suite, condition, **fields), suite=suite, llm=llm,
                    embedder=embedder, results_dir=results_dir, agent_factory=agent_factory,
                    progress=progress)


def fake_reply(messages) -> str:
    """Deterministic in the prompt; answers option questions with (a)."""
    text = messages[-1].content
    if "Answer with the letter" in text:
        return "A"
    digest = hashlib.sha1("".join(m.content for m in messages).encode()).hexdigest()[:6]
    return f"Noted {digest}."


class ScriptedMemory(MemorySystem):
    """Remembers every exchange and recalls the last three as items with turn metadata."""

    key = "scripted"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.exchanges: list[Exchange] = []
        self.slept = 0

    def observe(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)

    def recall(self, query: str) -> MemoryContext:
        items = [MemoryItem(id=f"ep{e.turn_number}", kind="episode", text=e.render(),
                            metadata={"turn_number": e.turn_number}) for e in self.exchanges[-3:]]
        if self.slept:
            items.append(MemoryItem(id="schema1", kind="schema", text="colours schema",
                                    metadata={"turn_numbers": [1]}))
        return MemoryContext(items=items)

    def sleep(self):
        self.slept += 1
        self.llm.complete([{"role": "user", "content": "compress please"}], max_tokens=8)
        return None


def scripted_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None,
                     namespace=None):
    return Agent(ScriptedMemory(scope, llm=llm, embedder=embedder, workdir=workdir), llm)


def comparable(path: Path) -> list[dict]:
    return [strip_timing(t) for t in read_jsonl(path)]


class FailingMemory(ScriptedMemory):
    """Fails (counted, not fatal, like hybrid and the peers) on the filler turns "?.1"."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failures: list[str] = []

    def observe(self, exchange: Exchange) -> None:
        if ".1?" in exchange.user:
            self.failures.append(f"turn {exchange.turn_number}: the store said no")
            return
        super().observe(exchange)


def failing_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None,
                    namespace=None):
    return Agent(FailingMemory(scope, llm=llm, embedder=embedder, workdir=workdir), llm)


# ---------------------------------------------------------------------------- unit tests
def test_a_memory_failure_is_kept_with_its_turn(tmp_path):
    run_dir = run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                  progress=False, agent_factory=failing_factory)
    turns = read_jsonl(run_dir / "turns.jsonl")
    failed = {t["text"]: t["memory_failures"] for t in turns if "memory_failures" in t}
    assert set(failed) == {"Filler question 0.1?", "Filler question 1.1?",
                           "Filler question 2.1?"}
    assert all(len(f) == 1 and f[0].endswith("the store said no") for f in failed.values())


def test_run_writes_turns_manifest_scores(tmp_path):
    llm = FakeLLM([fake_reply])
    suite = TinySuite()
    run_dir = run(suite, "vanilla", llm=llm, results_dir=tmp_path, seed=1, progress=False)
    turns = read_jsonl(run_dir / "turns.jsonl")
    assert [t["index"] for t in turns] == [e.index for e in suite.events()]
    assert llm.calls == 6  # 3 needles + 3 questions; filler never calls the model
    fill = next(t for t in turns if t["kind"] == "filler")
    assert fill["reply"] == "Answer 0." and fill["prompt_tokens"] == 0
    question = next(t for t in turns if t["kind"] == "question")
    assert question["store"] is False and question["options"][0] == "red"
    assert question["reply"] == "A" and question["prompt_tokens"] > 0
    assert question["option_order"] is not None and question["choice"] == question["option_order"][0]
    for field in ("prompt_tokens_memory", "llm_latency_s", "memory_ids", "cached", "phase"):
        assert field in question
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["llm_calls_paid"] == 6
    assert manifest["llm"]["provider"] == "fake" and manifest["suite_params"]["size"] == 3
    scores = read_jsonl(run_dir / "scores.jsonl")
    # seed 1: the answer is shown at B, C, D in turn, so a model that always says "A" is
    # never right (at seed 0 it would be right once: A, B, C)
    orders = [t["option_order"] for t in turns if t["kind"] == "question"]
    assert orders == [[1, 0, 2, 3], [1, 2, 0, 3], [1, 2, 3, 0]]
    assert [s["score"] for s in scores] == [0, 0, 0] and all(s["phase"] == "main" for s in scores)


def test_complete_run_is_skipped_and_id_depends_on_parameters(tmp_path):
    suite = TinySuite()
    run_dir = run(suite, "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                  progress=False)
    assert is_complete(run_dir)
    again = FakeLLM([fake_reply])
    assert run(suite, "vanilla", llm=again, results_dir=tmp_path, progress=False) == run_dir
    assert again.calls == 0
    assert not is_complete(run_dir, tiny_spec(suite, "vanilla", seed=1))  # another spec
    ids = {tiny_spec(TinySuite(s), c, seed=seed).run_id
           for s in (2, 3) for c in ("vanilla", "rag") for seed in (0, 1)}
    assert len(ids) == 8


def test_a_folder_holding_another_run_is_refused_not_reused(tmp_path):
    first = run(TinySuite(3), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                progress=False)
    before = {f.name: f.read_bytes() for f in first.iterdir() if f.is_file()}
    with pytest.raises(ConfigError, match=r"suite_params\.filler: recorded 4, now 2.*use another"):
        run(TinySuite(3, filler=2), "vanilla", llm=FakeLLM([fake_reply]),
            results_dir=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="spec.embedder: recorded 'hashing', now 'minilm'"):
        run(TinySuite(3), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
            embedder="minilm", progress=False)
    assert {f.name: f.read_bytes() for f in first.iterdir() if f.is_file()} == before


def test_bad_parameters_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="option_scoring"):
        run(TinySuite(), "vanilla", llm=FakeLLM(), results_dir=tmp_path, option_scoring="vote")
    with pytest.raises(ConfigError, match="field 'condition'.*telepathy.*known: vanilla"):
        run(TinySuite(), "telepathy", llm=FakeLLM(), results_dir=tmp_path)
    with pytest.raises(ConfigError, match="field 'span'"):
        run(TinySuite(), "vanilla", llm=FakeLLM(), results_dir=tmp_path, span=10**9)
    with pytest.raises(ConfigError, match="field 'colour'.*Extra inputs"):
        run(TinySuite(), "vanilla", llm=FakeLLM(), results_dir=tmp_path, colour="red")


def test_probes_sleep_protocol_and_memory_events(tmp_path):
    llm = FakeLLM([fake_reply])
    run_dir = run(TinySuite(), "sleep", llm=llm, results_dir=tmp_path, progress=False,
                  probes_sleep=True, agent_factory=scripted_factory)
    turns = read_jsonl(run_dir / "turns.jsonl")
    phases = [t["phase"] for t in turns]
    assert phases.count("pre_sleep") == 3 and phases.count("post_sleep") == 3
    assert phases.index("post_sleep") > max(i for i, p in enumerate(phases) if p == "pre_sleep")
    pre = [t for t in turns if t["phase"] == "pre_sleep"]
    post = [t for t in turns if t["phase"] == "post_sleep"]
    assert all(not t["memory_schemas"] for t in pre)
    assert all(t["memory_schemas"] == ["colours schema"] for t in post)
    assert all(t["store"] is False and t["turn_number"] is None for t in pre + post)
    # item metadata turn numbers resolve to event indices (turn 1 = the first needle, index 0)
    assert all(0 in t["memory_events"] for t in post)
    main_q = [t for t in turns if t["phase"] == "main" and t["kind"] == "question"]
    assert main_q[0]["memory_events"] == [2, 3, 4]  # the last three stored turns
    scores = read_jsonl(run_dir / "scores.jsonl")
    assert {s["phase"] for s in scores} == {"main", "pre_sleep", "post_sleep"}
    assert llm.calls == 6 + 6 + 1  # main + probes + the forced sleep's compression call


def test_failing_factory_restores_cache_and_uuid4(tmp_path):
    import uuid

    original, llm = uuid.uuid4, FakeLLM()

    def broken(condition, **kwargs):
        raise RuntimeError("no memory today")

    with pytest.raises(RuntimeError, match="no memory"):
        run(TinySuite(), "vanilla", llm=llm, results_dir=tmp_path, agent_factory=broken)
    assert uuid.uuid4 is original and llm.cache is None


def test_memory_ids_repeat_for_the_same_run_id(tmp_path):
    ids = []
    for folder in ("a", "b"):
        run_dir = run(TinySuite(), "sleep", llm=FakeLLM([fake_reply]), progress=False,
                      results_dir=tmp_path / folder, agent_factory=uuid_factory)
        ids.append([t["memory_ids"] for t in read_jsonl(run_dir / "turns.jsonl")])
    assert ids[0] == ids[1] and any(ids[0])


class UuidMemory(ScriptedMemory):
    """Gives every recalled item a fresh id (``new_id``, as memlab's stores do)."""

    def recall(self, query):
        from memlab.models import new_id

        context = super().recall(query)
        for item in context.items:
            item.id = new_id()
        return context


def uuid_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None,
                 namespace=None):
    return Agent(UuidMemory(scope, llm=llm, embedder=embedder, workdir=workdir), llm)


class LogprobLLM(FakeLLM):
    supports_logprobs = True

    def _score_options(self, messages, options):
        return [-float(len(o)) for o in options]  # the shortest option wins


def test_logprob_choice_is_recorded(tmp_path):
    run_dir = run(TinySuite(), "vanilla", llm=LogprobLLM([fake_reply]), results_dir=tmp_path,
                  progress=False, option_scoring="logprob")
    questions = [t for t in read_jsonl(run_dir / "turns.jsonl") if t["kind"] == "question"]
    for q in questions:
        lengths = [len(o) for o in q["options"]]
        assert q["choice"] == lengths.index(min(lengths))
    assert json.loads((run_dir / "manifest.json").read_text())["counts"]["llm_calls_paid"] == 9


def test_partial_last_line_is_repaired_on_resume(tmp_path):
    suite = TinySuite()
    full = run(suite, "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path / "a",
               progress=False)
    part = tmp_path / "b" / full.name
    part.mkdir(parents=True)
    lines = (full / "turns.jsonl").read_text().splitlines(keepends=True)
    (part / "turns.jsonl").write_text("".join(lines[:7]) + lines[7][:25])  # torn write
    calls = (full / "calls.jsonl").read_text().splitlines(keepends=True)
    (part / "calls.jsonl").write_text("".join(calls[:3]) + calls[3][:10])
    llm = FakeLLM([fake_reply])
    run(suite, "vanilla", llm=llm, results_dir=tmp_path / "b", progress=False)
    assert comparable(part / "turns.jsonl") == comparable(full / "turns.jsonl")
    manifest = json.loads((part / "manifest.json").read_text())
    assert manifest["counts"]["resumed_from_turn"] == 7
    assert llm.calls == 3 and manifest["counts"]["llm_calls_paid"] == 6


class SaltedMemory(ScriptedMemory):
    """A recall that differs between processes (as a non-deterministic index might)."""

    salt = "first"

    def recall(self, query):
        context = super().recall(query)
        context.items.append(MemoryItem(id="salt", kind="fact", text=f"salt {self.salt}"))
        return context


def salted_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None,
                   namespace=None):
    return Agent(SaltedMemory(scope, llm=llm, embedder=embedder, workdir=workdir), llm)


def test_replay_with_a_different_prompt_gets_the_recorded_answer(tmp_path, monkeypatch):
    suite = TinySuite()
    full = run(suite, "sleep", llm=FakeLLM([fake_reply]), results_dir=tmp_path / "a",
               progress=False, agent_factory=salted_factory)
    part = tmp_path / "b" / full.name
    part.mkdir(parents=True)
    lines = (full / "turns.jsonl").read_text().splitlines(keepends=True)
    (part / "turns.jsonl").write_text("".join(lines[:8]))
    calls = (full / "calls.jsonl").read_text().splitlines(keepends=True)
    (part / "calls.jsonl").write_text("".join(calls[:4]))
    monkeypatch.setattr(SaltedMemory, "salt", "second")  # every prompt differs now
    llm = FakeLLM([fake_reply])
    run(suite, "sleep", llm=llm, results_dir=tmp_path / "b", progress=False,
        agent_factory=salted_factory)
    turns = read_jsonl(part / "turns.jsonl")
    assert [t["reply"] for t in turns[:8]] == [json.loads(x)["reply"] for x in lines[:8]]
    manifest = json.loads((part / "manifest.json").read_text())["counts"]
    assert llm.calls == 2 and manifest["llm_calls_paid"] == 6  # nothing paid twice
    assert manifest["llm_calls_replayed"] == 4 and manifest["llm_calls_mismatched"] == 4


class TimedMemory(ScriptedMemory):
    """Counts one second of add time per stored exchange (as a peer's ``add_seconds``); stops
    the run at its ``stop_at``-th exchange; notes the manifest on disk when the process starts."""

    stop_at: int | None = None
    manifests: list[dict] = []

    def observe(self, exchange: Exchange) -> None:
        if not self.exchanges:
            run_dir = next(d for d in self.workdir.parents if (d / "manifest.json").exists())
            self.manifests.append(json.loads((run_dir / "manifest.json").read_text()))
        if len(self.exchanges) + 1 == self.stop_at:
            raise MemlabError("stopped for the test")
        super().observe(exchange)

    def stats(self):
        return {"stored": len(self.exchanges), "add_seconds": float(len(self.exchanges))}


def timed_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None, namespace=None):
    return Agent(TimedMemory(scope, llm=llm, embedder=embedder, workdir=workdir), llm)


def test_a_resumed_runs_add_seconds_sum_every_process(tmp_path, monkeypatch):
    """Three processes: stopped at the 4th stored exchange (3 stored), at the 9th (8 stored,
    3 of them replayed), then to the end (15, 8 replayed): add seconds 3 + 8 + 15; the stats
    the replay rebuilds (``stored``) are the last process's."""
    suite = TinySuite()
    monkeypatch.setattr(TimedMemory, "manifests", [])
    for stop_at in (4, 9):
        monkeypatch.setattr(TimedMemory, "stop_at", stop_at)
        with pytest.raises(MemlabError, match="stopped for the test"):
            run(suite, "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                progress=False, agent_factory=timed_factory)
    monkeypatch.setattr(TimedMemory, "stop_at", None)
    run_dir = run(suite, "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                  progress=False, agent_factory=timed_factory)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumes"] == 2
    assert manifest["memory_stats"] == {"stored": 15, "add_seconds": 3.0 + 8.0 + 15.0}
    # while a process runs, the earlier processes' totals stay in the manifest (a process
    # killed before it finishes loses only its own)
    assert [(m or {}).get("add_seconds") for m in
            [m.get("memory_stats") for m in TimedMemory.manifests]] == [None, 3.0, 11.0]


# ---------------------------------------------------------------------------- kill -9 + resume
def _child(results_dir: str, hang_at_call: int, hang_in: str, condition: str = "episodic") -> None:
    """Run the tiny suite; hang inside model call K (``llm``) or inside the store after it."""
    calls = {"n": 0}

    def reply(messages):
        calls["n"] += 1
        if hang_in == "llm" and calls["n"] == hang_at_call:
            Path(results_dir, "HANG").write_text("1")
            time.sleep(600)
        return fake_reply(messages)

    def factory(condition, *, llm, embedder, workdir, scope, memory_llm=None, namespace=None):
        make = default_agent_factory if condition == "rag" else scripted_factory
        agent = make(condition, llm=llm, embedder=embedder, workdir=workdir, scope=scope,
                     namespace=namespace)
        observe = agent.memory.observe

        def hanging_observe(exchange):
            if hang_in == "store" and calls["n"] == hang_at_call:
                Path(results_dir, "HANG").write_text("1")  # the answer is journaled, the turn not
                time.sleep(600)
            observe(exchange)

        agent.memory.observe = hanging_observe
        return agent

    run(TinySuite(sessions=4), condition, llm=FakeLLM([reply]), embedder=HashingEmbedder(),
        results_dir=results_dir, agent_factory=factory, probes_sleep=True, progress=False)


def killme(root: Path, condition: str = "episodic") -> Path:
    """The run folder ``_child`` writes under ``root``."""
    return tiny_spec(TinySuite(sessions=4), condition, probes_sleep=True).run_dir(root)


def _kill_midway(results_dir: Path, hang_at_call: int, hang_in: str,
                 condition: str = "episodic") -> None:
    proc = subprocess.Popen([sys.executable, __file__, str(results_dir), str(hang_at_call),
                             hang_in, condition], cwd=ROOT)
    deadline = time.time() + 60
    while not (results_dir / "HANG").exists():
        assert proc.poll() is None, "child ended before reaching the kill point"
        assert time.time() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (results_dir / "HANG").unlink()


@pytest.mark.parametrize("hang_in", ["llm", "store"])
def test_kill9_then_resume_equals_uninterrupted_run(tmp_path, hang_in):
    _child(str(tmp_path / "clean"), hang_at_call=-1, hang_in="none")  # in-process
    clean = killme(tmp_path / "clean")
    _kill_midway(tmp_path / "killed", hang_at_call=5, hang_in=hang_in)
    killed = killme(tmp_path / "killed")
    recorded = read_jsonl(killed / "turns.jsonl")
    assert 0 < len(recorded) < len(read_jsonl(clean / "turns.jsonl"))
    assert json.loads((killed / "manifest.json").read_text())["status"] == "running"
    calls_before = read_jsonl(killed / "calls.jsonl")
    assert len(calls_before) == (4 if hang_in == "llm" else 5)

    _child(str(tmp_path / "killed"), hang_at_call=-1, hang_in="none")  # resume
    assert comparable(killed / "turns.jsonl") == comparable(clean / "turns.jsonl")
    clean_calls, killed_calls = read_jsonl(clean / "calls.jsonl"), read_jsonl(killed / "calls.jsonl")
    assert [c["key"] for c in killed_calls] == [c["key"] for c in clean_calls]  # none repeated
    manifest = json.loads((killed / "manifest.json").read_text())
    clean_manifest = json.loads((clean / "manifest.json").read_text())
    assert manifest["counts"]["llm_calls_paid"] == clean_manifest["counts"]["llm_calls_paid"]
    assert manifest["counts"]["llm_calls_replayed"] == len(calls_before)
    assert manifest["counts"]["diverged_turns"] == [] and manifest["status"] == "complete"
    assert read_jsonl(killed / "scores.jsonl") == read_jsonl(clean / "scores.jsonl")


def test_kill9_resume_with_real_rag_memory(tmp_path):
    """rag's document ids come from uuid4: the run-seeded ids make a resume reproduce them."""
    for folder in ("clean", "killed"):  # each in its own process, as a real resume is
        if folder == "killed":
            _kill_midway(tmp_path / folder, hang_at_call=6, hang_in="llm", condition="rag")
        _run_child(tmp_path / folder, "rag")
    clean, killed = killme(tmp_path / "clean", "rag"), killme(tmp_path / "killed", "rag")
    turns = comparable(killed / "turns.jsonl")
    assert turns == comparable(clean / "turns.jsonl")
    assert any(t["memory_ids"] for t in turns) and any(t["memory_events"] for t in turns)
    manifest = json.loads((killed / "manifest.json").read_text())
    assert manifest["counts"]["llm_calls_paid"] == json.loads(
        (clean / "manifest.json").read_text())["counts"]["llm_calls_paid"]
    assert manifest["resumes"] == 1 and manifest["counts"]["diverged_turns"] == []


def _run_child(results_dir: Path, condition: str) -> None:
    subprocess.run([sys.executable, __file__, str(results_dir), "-1", "none", condition],
                   cwd=ROOT, check=True, timeout=120)


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])


def test_a_sleep_cycle_triggered_by_filler_is_recorded_on_that_turn(tmp_path):
    run_dir = run(TinySuite(sessions=5), "sleep", llm=FakeLLM([fake_reply]),
                  embedder=HashingEmbedder(), results_dir=tmp_path, progress=False)
    turns = read_jsonl(run_dir / "turns.jsonl")
    slept = [t for t in turns if t["slept"]]
    # 20 stored exchanges (needle + 4 filler per session) trigger the sleep condition's cycle
    assert [(t["kind"], t["turn_number"]) for t in slept] == [("filler", 20)]
    assert slept[0]["cycle_stats"]["episodes_considered"] == 20
    assert all(t["cycle_stats"] is None for t in turns if not t["slept"])
    assert all(t["memory_latency_s"] > 0 for t in turns if t["kind"] == "filler")


class UuidDrawingLLM(FakeLLM):
    """Draws a uuid4 per call, as llama-cpp-python does for a completion id on a paid call."""

    def complete(self, messages, **kwargs):
        import uuid

        uuid.uuid4()
        return super().complete(messages, **kwargs)


def test_memory_ids_do_not_depend_on_uuid4_drawn_by_libraries(tmp_path):
    runs = [run(TinySuite(), "episodic", llm=llm, embedder=HashingEmbedder(),
                results_dir=tmp_path / name, progress=False)
            for name, llm in (("paid", UuidDrawingLLM([fake_reply])), ("cached", FakeLLM([fake_reply])))]
    ids = [[t["memory_ids"] for t in read_jsonl(r / "turns.jsonl")] for r in runs]
    assert any(ids[0]) and ids[0] == ids[1]


def test_full_context_is_sized_to_the_answering_model_not_the_memory_model(tmp_path):
    """The paper answers with a long-window model and runs memory calls on a small one:
    full_context's history goes to the answering model, so its budget is that model's window
    (it kept only the memory model's 4,096 tokens before); other conditions keep the memory
    model for their own calls."""
    from memlab.bench.runner import default_agent_factory
    from memlab.memory.base import Scope

    answering, memory_model = FakeLLM(context_window=32768), FakeLLM(context_window=4096)
    agents = {c: default_agent_factory(c, llm=answering, memory_llm=memory_model,
                                       embedder=HashingEmbedder(), workdir=tmp_path / c,
                                       scope=Scope(user_id="u", agent_id=c))
              for c in ("full_context", "hybrid")}
    assert agents["full_context"].memory.budget == 32768 - 1024
    assert agents["hybrid"].memory.llm is memory_model
    for agent in agents.values():
        agent.memory.close()
