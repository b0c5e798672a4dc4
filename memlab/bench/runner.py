"""Run one suite under one memory condition, resumably, into ``results/<run_id>/``.

Filler goes through ``Agent.observe`` (no model call); needles and questions through
``Agent.interact``. Every step is appended to ``turns.jsonl`` (flushed and fsync'ed) and every
model call to ``calls.jsonl`` before the next step starts.

Resume (a killed run, same ``run_id``): the memory is rebuilt by replaying the recorded prefix
into a fresh store folder through the very same agent calls, with ``CallJournal`` answering every
model call (answers, sleep compression, extraction, option scores) from ``calls.jsonl`` by step
and position; replayed steps are checked against their records (differences are listed in the
manifest's ``diverged_turns``) and not written again; the run continues live after the last
recorded turn. Replaying (rather than persisting the store) rebuilds the memory the killed
process had, access counts and auto-sleep cycles included, with nothing to keep consistent
between a store and the journals; memory ids repeat because memlab draws them from a generator
seeded by the run for its duration (``memlab.models.seed_ids``).
The manifest's ``memory_stats`` are the rebuilt memory's (its counts and model calls as one
process would have them), but a stat each process times for itself (``PROCESS_TOTALS``: a peer's
``add_seconds``) is summed over the run's processes, the replay's adds included; a process killed
before it finished (kill -9) leaves no total to add. Its ``memory_size`` (items and tokens
stored, ``MemorySystem.size``) is read when a user's memory closes, so a resumed run records the
size of the memory its replay rebuilt.

Table 2 protocol (``probes_sleep=True``): after the conversation the suite's questions are asked
again without being stored (phase ``pre_sleep``), ``Agent.sleep()`` is forced, and they are asked
once more (phase ``post_sleep``).
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from memlab.agent import Agent, TurnTrace
from memlab.bench.base import Response, Suite, SuiteEvent
from memlab.bench.failures import (
    FailedCalls,
    cut_at_first_failure,
    disk_full_error,
    free_space,
    release_space,
    reserve_space,
)
from memlab.bench.prefill import run_totals
from memlab.bench.questions import SCRIPTED_ACK, QuestionPlan
from memlab.bench.runfolders import claim_run_folder
from memlab.bench.runlog import (
    CallJournal,
    JsonlWriter,
    read_jsonl,
    run_lock,
    write_json_atomic,
)
from memlab.bench.spec import RunSpec
from memlab.bench.versions import environment_info, prompt_versions
from memlab.config import get_settings
from memlab.errors import ConfigError, MemlabError
from memlab.memory._backends import purge_namespace
from memlab.memory.base import MEMORIES, MemoryContext, MemorySystem, Scope
from memlab.models import seed_ids
from memlab.stores.base import run_namespace
from memlab.userfiles import read_text

log = logging.getLogger(__name__)

Phase = Literal["main", "pre_sleep", "post_sleep"]
AgentFactory = Callable[..., Agent]
TIMING_FIELDS = ("llm_latency_s", "memory_latency_s",  # the only fields a replay may change
                 "recall_latency_s")
CYCLE_TIMING_FIELDS = ("started_at", "finished_at", "phase_durations_s")
# memory stats each process measures for itself (wall time, a peer's adds): a resumed run's
# manifest sums them over its processes; the others (counts, model calls) the replay rebuilds
PROCESS_TOTALS = ("add_seconds",)


@dataclass(frozen=True)
class Step:
    """One thing the runner does: an event in a phase, or the forced sleep (event None)."""

    phase: str
    event: SuiteEvent | None = None

    @property
    def name(self) -> str:
        """``<phase>:<event index>`` (``sleep`` for the forced sleep): the journals' step."""
        return self.phase if self.event is None else f"{self.phase}:{self.event.index}"


def default_agent_factory(condition: str, *, llm: Any, embedder: Any, workdir: Path,
                          scope: Scope, memory_llm: Any = None, namespace: str | None = None,
                          config: dict[str, Any] | None = None) -> Agent:
    """The condition's memory (``MEMORIES.create`` with its ``config``, its own calls on
    ``memory_llm``, its server-side stores under the run's ``namespace``) behind a default
    Agent answering with ``llm``."""
    own = llm if MEMORIES.resolve(condition).sized_to_answering_model else memory_llm or llm
    memory = MEMORIES.create(condition, scope=scope, llm=own, embedder=embedder,
                             workdir=workdir, namespace=namespace, config=config)
    return Agent(memory, llm)


def plan_steps(events: list[SuiteEvent], *, probes_sleep: bool) -> list[Step]:
    """The main conversation, then (Table 2) the probes pre sleep, the sleep, the probes post."""
    steps = [Step("main", event) for event in events]
    if probes_sleep:
        probes = [e for e in events if e.kind == "question"]
        steps += [Step("pre_sleep", e) for e in probes] + [Step("sleep")]
        steps += [Step("post_sleep", e) for e in probes]
    return steps


def is_complete(run_dir: Path, spec: RunSpec | None = None) -> bool:
    """Whether ``run_dir`` holds a finished, scored run (of ``spec``, when given).

    A grid skips a complete run of its cell's spec; a complete run of another spec is not
    "complete" for it (the runner then refuses the folder, naming what differs).
    """
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ValueError):
        return False
    if manifest.get("status") != "complete" or not (Path(run_dir) / "scores.jsonl").exists():
        return False
    return spec is None or manifest.get("spec") == spec.identity()


def is_recorded(run_dir: Path, spec: RunSpec | None = None) -> bool:
    """Whether ``run_dir`` holds a finished run (of ``spec``, when given) not scored in it: its
    manifest says complete and it has no scores.jsonl (a grid's records copied without their
    scores, or a run whose scores were deleted to score it again). Its turns are scored as they
    are (``score_recorded``), none is run again."""
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ValueError):
        return False
    if manifest.get("status") != "complete" or (Path(run_dir) / "scores.jsonl").exists():
        return False
    return spec is None or manifest.get("spec") == spec.identity()


def check_turns(run_dir: Path, events: list[SuiteEvent]) -> list[dict[str, Any]]:
    """The run's recorded turns, each checked to be the suite's event of its index (same text).

    Raises:
        ConfigError: no turn, or a turn the suite does not have (the records were made with
            another suite or version of it).
    """
    path = Path(run_dir) / "turns.jsonl"
    turns = read_jsonl(path)
    if not turns:
        raise ConfigError(f"{path}: no turn recorded")
    for number, turn in enumerate(turns, start=1):
        index = turn.get("index")
        if not (isinstance(index, int) and 0 <= index < len(events)
                and events[index].text == turn.get("text")):
            raise ConfigError(f"{path}: line {number} (turn {index!r}) is not this suite's "
                              "event of that index: the records are of another suite version")
    return turns


def score_recorded(run_dir: Path, suite: Suite, llm: Any) -> tuple[list[dict[str, Any]], int]:
    """Score a finished run's recorded turns into its scores.jsonl with no model call: a
    judged test's call is answered by the run's own journal (calls.jsonl), by its exact prompt;
    ``(the scores.jsonl lines, judge calls the journal answered)``.

    Raises:
        ConfigError: a turn that is not ``suite``'s (``check_turns``).
        LiveCallError: a judged test asked for a call the journal does not hold.
        MemlabError: a model call was made all the same, or the journal changed.
    """
    turns = check_turns(run_dir, suite.events())
    journal_path = Path(run_dir) / "calls.jsonl"
    before, calls = journal_path.read_bytes(), llm.calls
    journal = CallJournal(journal_path, fsync=False, replay_only=True)
    journal.begin_step(f"{turns[-1]['phase']}:{turns[-1]['index']}")  # where scoring ran
    try:
        with llm.using_cache(journal):
            lines = write_scores(run_dir, suite)
    finally:
        journal.close()
    if llm.calls != calls or journal_path.read_bytes() != before:
        raise MemlabError(f"{run_dir}: scoring made a model call; scoring recorded turns "
                          "makes none")
    return lines, journal.replayed


def _score_recorded_run(run_dir: Path, suite: Suite, llm: Any,
                        identity: dict[str, Any]) -> None:
    """Score a recorded run (``is_recorded``) in place; its manifest then names the scorers
    that scored it (``suite_params``: ``check_same_run`` found the rest the same) and their
    count. A run whose scoring fails keeps no scores.jsonl and is left as it was."""
    try:
        lines, _ = score_recorded(run_dir, suite, llm)
    except BaseException:
        (Path(run_dir) / "scores.jsonl").unlink(missing_ok=True)
        raise
    manifest = read_manifest(run_dir)
    manifest["suite_params"] = identity["suite_params"]
    manifest.setdefault("counts", {})["scores"] = len(lines)
    write_json_atomic(Path(run_dir) / "manifest.json", manifest)


def check_same_run(run_dir: Path, expected: dict[str, Any]) -> None:
    """Raise ConfigError when ``run_dir`` already holds a run with other parameters.

    A folder is resumed or reused only by the same run; a run of another suite size, seed,
    model or protocol there would otherwise be silently mixed into the results.
    """
    manifest = read_manifest(run_dir)
    if not manifest:
        return
    # the scorers score the recorded turns at the end: a run not scored yet (killed before, or
    # a grid's records copied without their scores) is scored by this memlab's, not refused;
    # a run already scored by others still is (its scores would pass for this memlab's)
    if "suite_params" in expected and not (Path(run_dir) / "scores.jsonl").exists():
        params = {k: v for k, v in expected["suite_params"].items() if k != "scorers"}
        expected = {**expected, "suite_params": params}
    differs = [f"{key}: recorded {recorded!r}, now {value!r}"
               for key, recorded, value in _differences(manifest, expected)]
    if differs:
        raise OtherRunError(run_dir, differs)


class OtherRunError(ConfigError):
    """A run folder holds a run with other parameters; ``differs``: each as "key: recorded
    ..., now ..."."""

    def __init__(self, run_dir: Path, differs: list[str]):
        self.differs = differs
        super().__init__(f"run folder {str(run_dir)!r} holds a run with other parameters ("
                         + "; ".join(differs) + "): use another results folder or delete it")


def _differences(recorded: Any, expected: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, recorded, expected)`` for every key of ``expected`` that differs."""
    if isinstance(expected, dict) and isinstance(recorded, dict):
        return [d for k, v in expected.items()
                for d in _differences(recorded.get(k), v, f"{prefix}{k}.")]
    if _matches(recorded, expected):
        return []
    return [(prefix.rstrip("."), recorded, expected)]


def _matches(recorded: Any, expected: Any) -> bool:
    """``recorded`` agrees with ``expected`` on every key ``expected`` names."""
    if isinstance(expected, dict):
        return isinstance(recorded, dict) and all(_matches(recorded.get(k), v)
                                                  for k, v in expected.items())
    return json.loads(json.dumps(recorded)) == json.loads(json.dumps(expected, default=str))


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's manifest.json ({} when there is none yet).

    Raises:
        ConfigError: the file is not a JSON object (the message names it).
    """
    path = Path(run_dir) / "manifest.json"
    if not path.exists():
        return {}
    try:
        manifest = json.loads(read_text(path, "run manifest"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"run manifest {str(path)!r}: not valid JSON ({exc.msg} at line "
                          f"{exc.lineno}); restore it or delete the run folder") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"run manifest {str(path)!r}: not a JSON object; restore it or "
                          "delete the run folder")
    return manifest


def run(spec: RunSpec, *, suite: Suite, llm: Any, embedder: Any = None,
        memory_llm: Any = None, results_dir: Path | str | None = None,
        agent_factory: AgentFactory | None = None, progress: bool = True,
        fsync: bool = True, replay_only: bool = False) -> Path:
    """Run (or resume, or skip when complete) ``spec`` into ``<results_dir>/<spec.run_id>/``.

    Args:
        spec: the run (condition, seed, protocol; its suite fields describe ``suite``).
        suite: the suite ``spec`` names, built (``Suite.build`` / ``memlab.lab.build_suite``).
        llm: the answering model.
        embedder: the embedder ``spec.embedder`` names.
        memory_llm: the model of the memory's own calls (default: ``llm``).
        results_dir: parent folder of run folders (default ``Settings.results_dir``).
        agent_factory: ``(condition, *, llm, memory_llm, embedder, workdir, scope) -> Agent``.
        replay_only: every model call must be answered by the folder's journal, by its exact
            request (``CallJournal``): a call it does not hold fails the run with
            ``LiveCallError`` and none reaches a model (``memlab.rebuild``).

    Returns:
        The run folder (``manifest.json``, ``turns.jsonl``, ``calls.jsonl``, ``scores.jsonl``).

    Raises:
        ConfigError: the folder holds a run of another spec, model or embedder, or files that
            are not a run's, or lies inside another run's folder (``runfolders``).
    """
    settings = get_settings()
    run_dir = spec.run_dir(results_dir or settings.results_dir)
    if not any(event.kind == "question" for event in suite.events()):
        raise ConfigError(f"run {spec.run_id}: suite {suite.name!r} asks no question with these "
                          "options, so the run would measure nothing; choose options that "
                          "select questions")
    memory_llm = memory_llm or llm
    identity = run_identity(spec, suite, llm, embedder, memory_llm)
    check_same_run(run_dir, identity)
    if is_complete(run_dir):
        return run_dir
    claim_run_folder(run_dir)  # outside other runs; never a folder of the user's files
    with run_lock(run_dir):  # one writer; RunLockedError names the other
        check_same_run(run_dir, identity)  # it may have finished while we waited to look
        if is_recorded(run_dir):
            _score_recorded_run(run_dir, suite, llm, identity)
        elif not is_complete(run_dir):
            try:
                _run_locked(spec, suite, run_dir, llm=llm, memory_llm=memory_llm,
                            embedder=embedder, factory=agent_factory or default_agent_factory,
                            progress=progress, fsync=fsync, replay_only=replay_only,
                            max_failed_share=settings.max_failed_share)
            except Exception as exc:
                error = disk_full_error(exc, run_dir)
                if error is exc:
                    raise
                raise error from exc
    return run_dir


def _run_locked(spec: RunSpec, suite: Suite, run_dir: Path, *, llm: Any, memory_llm: Any,
                embedder: Any, factory: AgentFactory, progress: bool, fsync: bool,
                max_failed_share: float, replay_only: bool = False) -> None:
    """Run ``spec`` in its locked folder: retry failed calls, execute, score, record status."""
    steps = plan_steps(suite.events(), probes_sleep=spec.probes_sleep)
    retry = cut_at_first_failure(run_dir, [step.name for step in steps])
    reserve_space(run_dir)
    try:
        session = _RunSession(spec, suite, run_dir, llm=llm, memory_llm=memory_llm,
                              embedder=embedder, factory=factory, fsync=fsync,
                              replay_only=replay_only)
    except BaseException as exc:
        _mark_failed(run_dir, exc)
        raise
    session.failures = FailedCalls(sum(s.event is not None and s.event.kind != "filler"
                                       for s in steps), max_failed_share)
    earlier = read_manifest(run_dir).get("retries") or []
    manifest = session.start_manifest()
    manifest["retries"] = earlier + ([retry] if retry else [])  # failures.cut_at_first_failure
    # one turns.jsonl record per event step: what `memlab grid --status` measures progress by
    manifest["counts"]["turns_planned"] = sum(step.event is not None for step in steps)
    write_json_atomic(run_dir / "manifest.json", manifest)
    try:
        session.execute(steps, progress)
        session.failures.check()
        scores = session.score()
    except BaseException as exc:
        session.fail(manifest, exc)
        raise
    session.finish(manifest, status="complete", scores=len(scores))


def _mark_failed(run_dir: Path, exc: BaseException) -> None:
    """Record a failure before the run's session existed in the manifest, if there is one."""
    free_space(run_dir, exc)
    manifest = read_manifest(run_dir)
    try:
        if manifest:
            manifest.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            write_json_atomic(run_dir / "manifest.json", manifest)
    except OSError as again:
        log.warning("%s: could not record the failure: %s", run_dir, again)
    finally:
        release_space(run_dir)


def run_identity(spec: RunSpec, suite: Suite, llm: Any, embedder: Any,
                 memory_llm: Any = None) -> dict[str, Any]:
    """Everything that can change a run's results, as its manifest records it."""
    memory_llm = memory_llm or llm
    return {"spec": spec.identity(), "suite_params": suite.describe(),
            "llm": {"provider": llm.provider, "model": llm.model,
                    "context_window": llm.context_window, **llm.cache_identity({})},
            "memory_llm": {"provider": memory_llm.provider, "model": memory_llm.model,
                           **memory_llm.cache_identity({})},
            "embedder": getattr(embedder, "name", None),
            "prompts": prompt_versions(spec.condition, spec.suite)}


class _RunSession:
    """The mutable state of one run process (agent, journals, counters)."""

    def __init__(self, spec: RunSpec, suite: Suite, run_dir: Path, *, llm: Any,
                 memory_llm: Any, embedder: Any, factory: AgentFactory, fsync: bool,
                 replay_only: bool = False):
        self.spec, self.suite, self.condition, self.run_dir = spec, suite, spec.condition, run_dir
        self.llm, self.memory_llm, self.embedder, self.seed = llm, memory_llm, embedder, spec.seed
        self.logprob = spec.option_scoring == "logprob" and llm.supports_logprobs
        self.recorded = read_jsonl(run_dir / "turns.jsonl", repair=True)
        self.namespace = run_namespace(run_dir)
        store = _fresh_store(run_dir / "store", self.namespace)
        random.seed(spec.seed)
        np.random.seed(spec.seed % 2**32)
        self._stack = ExitStack()
        # process-wide for the run's duration (one run per process at a time)
        seed_ids(f"{run_dir.name}:{spec.seed}")
        self._stack.callback(seed_ids, None)
        self.journal = CallJournal(run_dir / "calls.jsonl", inner=llm.cache, fsync=fsync,
                                   replay_only=replay_only)
        self._stack.callback(self.journal.close)
        for client in {id(llm): llm, id(memory_llm): memory_llm}.values():
            self._stack.enter_context(client.using_cache(self.journal))
        params = suite.describe()
        self.default_user = str(params.get("user_id") or params.get("persona_id") or suite.name)
        self.store, self.factory = store, factory
        self.agents: dict[str, Agent] = {}  # open agents by user (one per conversation)
        self.memory_stats: dict[str, dict[str, Any]] = {}  # by user, taken at close
        self.memory_sizes: dict[str, dict[str, int] | None] = {}  # by user, read at close
        self.earlier_stats: dict[str, dict[str, Any]] = {}  # the run's earlier processes'
        self.left: set[str] = set()  # users whose conversation is over and memory closed
        self.events_by_user: dict[str, dict[int, int]] = {}
        first = next((e.user_id for e in suite.events() if e.user_id), None)
        self.first_user = first or self.default_user
        try:
            self._use(first)
        except BaseException:
            self._stack.close()
            raise
        self.questions = QuestionPlan(suite.events(), spec, run_dir)
        self.writer = JsonlWriter(run_dir / "turns.jsonl", fsync=fsync)
        self.diverged: list[int] = []
        self.sleep_stats: dict[str, Any] | None = None
        self.failures = FailedCalls(0, 0.0)  # set by the caller for the run's steps

    # ------------------------------------------------------------------ users
    def _memory_config(self) -> dict[str, Any]:
        """The factory's ``config`` keyword, only when the spec sets the condition's options
        (an agent factory written before them need not take it)."""
        options = self.spec.memory_options
        return {"config": dict(options)} if options else {}

    def _use(self, user: str | None) -> None:
        """Make ``user``'s agent current (None: the suite's one user).

        Each user of a suite of several conversations has its own agent, memory scope and
        store folder; a finished conversation's memory is closed when the next one starts
        (kept open under Table 2's protocol, whose probes come back to it).
        """
        user = user or self.default_user
        if getattr(self, "user", None) == user:
            return
        if user in self.left:
            raise MemlabError(f"suite {self.suite.name!r}: the events of user {user!r} are not "
                              "contiguous (a conversation must not resume after another)")
        previous = getattr(self, "user", None)
        if previous is not None and not self.spec.probes_sleep:
            done = self.agents.pop(previous)
            self.memory_stats[previous] = done.memory.stats()
            self.memory_sizes[previous] = _size_of(done.memory)
            done.memory.close()
            self.left.add(previous)
        if user not in self.agents:
            workdir = self.store if user == self.default_user else \
                self.store / f"user-{len(self.events_by_user)}"
            workdir.mkdir(parents=True, exist_ok=True)
            agent = self.factory(self.spec.condition, llm=self.llm, memory_llm=self.memory_llm,
                                 embedder=self.embedder, workdir=workdir,
                                 scope=Scope(user_id=user, agent_id=self.spec.condition),
                                 namespace=self.namespace, **self._memory_config())
            agent.auto_sleep = not self.spec.probes_sleep
            agent.time_format = self.suite.format_time
            agent.show_clock = self.suite.states_clock
            self.agents[user] = agent
        self.user, self.agent = user, self.agents[user]
        self.turn_events = self.events_by_user.setdefault(user, {})  # turn_number -> event

    def _sleep_all(self) -> dict[str, Any] | None:
        """Table 2's forced sleep: every open agent's cycle (one user: its CycleStats record;
        several: one record per user)."""
        cycles = {user: agent.sleep() for user, agent in self.agents.items()}
        records = {u: c.model_dump(mode="json") if c else None for u, c in cycles.items()}
        if len(records) == 1:
            return next(iter(records.values()))
        return records if any(records.values()) else None

    # ------------------------------------------------------------------ manifest
    def start_manifest(self) -> dict[str, Any]:
        old = read_manifest(self.run_dir)
        identity = run_identity(self.spec, self.suite, self.llm, self.embedder, self.memory_llm)
        manifest = {
            "run_id": self.spec.run_id, "condition": self.spec.condition,
            "suite": self.spec.suite, "span": self.spec.span, "seed": self.spec.seed,
            **identity, **environment_info(),
            "started_at": old.get("started_at") or _now(), "finished_at": None,
            "status": "running", "error": None, "resumes": old.get("resumes", -1) + 1,
            "counts": {"resumed_from_turn": len(self.recorded)},
            # kept until this process finishes, so a process killed first loses only its own
            "memory_stats": old.get("memory_stats"),
        }
        self.earlier_stats = self._by_user(old.get("memory_stats"))
        write_json_atomic(self.run_dir / "manifest.json", manifest)
        return manifest

    def _by_user(self, stats: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        """A manifest's ``memory_stats`` by user: one user's are recorded unkeyed, and that
        user is the suite's first (conversations run in order, each once)."""
        if not stats:
            return {}
        if len(stats) > 1 and all(isinstance(v, dict) for v in stats.values()):
            return stats
        return {self.first_user: stats}

    def finish(self, manifest: dict[str, Any], *, status: str, **extra: Any) -> None:
        quietly = status == "failed"
        for user, agent in self.agents.items():
            self.memory_stats[user] = agent.memory.stats()
            self.memory_sizes[user] = _size_of(agent.memory)
        for close in (self._stack.close, self.writer.close,
                      *(agent.memory.close for agent in self.agents.values())):
            _close(close, quietly=quietly)
        stats = {**self.earlier_stats, **{
            user: _with_earlier(now, self.earlier_stats.get(user))
            for user, now in self.memory_stats.items()}}
        manifest.update(status=status, finished_at=_now(), sleep_stats=self.sleep_stats,
                        failed_calls=self.failures.summary(),
                        memory_stats=next(iter(stats.values())) if len(stats) == 1 else stats,
                        memory_size=_size_record(self.memory_sizes))
        release_space(self.run_dir)
        manifest["counts"].update(
            turns=len(read_jsonl(self.run_dir / "turns.jsonl")), llm_calls_paid=self.journal.paid,
            llm_calls_recorded=self.journal.recorded, llm_calls_replayed=self.journal.replayed,
            llm_calls_mismatched=self.journal.mismatched, llm_calls_failed=self.journal.failed,
            diverged_turns=self.diverged, **extra)
        manifest["prompt_tokens"] = run_totals(self.run_dir)  # per model, what it read
        write_json_atomic(self.run_dir / "manifest.json", manifest)

    def fail(self, manifest: dict[str, Any], exc: BaseException) -> None:
        """Record ``exc`` as the run's failure (on a full disk, after ``free_space``)."""
        free_space(self.run_dir, exc)
        manifest["error"] = f"{type(exc).__name__}: {exc}"
        try:
            self.finish(manifest, status="failed")
        except OSError as again:  # the original error is the one to report
            log.warning("%s: could not record the failure in manifest.json: %s",
                        self.run_dir, again)

    # ------------------------------------------------------------------ steps
    def execute(self, steps: list[Step], progress: bool) -> None:
        done = 0
        desc = f"{self.suite.name}/{self.condition}"
        with tqdm(total=len(steps), desc=desc, disable=not progress, leave=False) as bar:
            for step in steps:
                self.journal.begin_step(step.name)
                if step.event is None:
                    self.sleep_stats = self._sleep_all()
                    self.failures.note(step.name, None, self.journal.step_failures)
                else:
                    record = self.do_step(step)
                    if done < len(self.recorded):
                        self._check_replay(record, self.recorded[done])
                    else:
                        self.writer.write(record)
                    self.failures.note(step.name, record, self.journal.step_failures)
                    done += 1
                bar.update()

    def _check_replay(self, record: dict[str, Any], recorded: dict[str, Any]) -> None:
        if (record["index"], record["phase"]) != (recorded["index"], recorded["phase"]):
            raise MemlabError(
                f"resume: turns.jsonl of {self.run_dir} does not match this suite "
                f"(step {record['phase']}:{record['index']} vs "
                f"{recorded['phase']}:{recorded['index']})")
        if strip_timing(record) != strip_timing(recorded):
            self.diverged.append(record["index"])

    def do_step(self, step: Step) -> dict[str, Any]:
        event = step.event
        assert event is not None
        self._use(event.user_id)
        failures = getattr(self.agent.memory, "failures", None)  # hybrid's, the peers'
        known = len(failures) if isinstance(failures, list) else None
        record = {"index": event.index, "phase": step.phase, "kind": event.kind,
                  "test_id": event.test_id, "test_type": event.test_type,
                  "session_id": event.session_id, "text": event.text}
        if event.user_id is not None:
            record["user_id"] = event.user_id
        if event.kind == "filler" or (event.kind == "needle"
                                      and not self.questions.answered(event)):
            start = time.perf_counter()
            reply = event.reply if event.kind == "filler" else SCRIPTED_ACK
            stats = self.agent.observe(event.text, reply or "", timestamp=event.timestamp,
                                       session_id=event.session_id)
            elapsed = time.perf_counter() - start
            self.turn_events[self.agent.turn_number] = event.index
            cycle = stats.model_dump(mode="json") if stats else None
            # memory_latency_s: storing the exchange (a cycle's own time is in cycle_stats)
            trace = TurnTrace(reply=reply or "", slept=stats is not None, cycle_stats=cycle,
                              memory_latency_s=max(0.0, elapsed - cycle_seconds(cycle)),
                              answered=event.kind == "filler")
            record.update(reply=trace.reply, store=True, **_trace_fields(trace),
                          turn_number=self.agent.turn_number, memory_events=[],
                          memory_schemas=[])
        else:
            record.update(self._interact(event, store=event.store and step.phase == "main"))
        record.update(timestamp=event.timestamp, options=event.options,
                      answer_index=event.answer_index, metadata=event.metadata)
        if known is not None and len(failures) > known:
            # a memory's own failure on this turn (counted, never fatal) is kept with the turn,
            # so a run killed before its manifest's memory_stats still shows it
            record["memory_failures"] = failures[known:]
        return json.loads(_dumps(record))  # exactly what turns.jsonl holds

    def _interact(self, event: SuiteEvent, *, store: bool) -> dict[str, Any]:
        plan = self.questions
        answer = plan.answered(event)
        order = plan.orders.get(event.index)
        shown = [event.options[i] for i in order] if order and event.options else event.options
        if self.agent.memory.uses_evidence:
            self.agent.memory.set_evidence(plan.evidence_turns(event, self.turn_events))
        trace = self.agent.interact(event.text, store=store and answer,
                                    timestamp=event.timestamp, session_id=event.session_id,
                                    options=shown, answer=answer, prompt=event.prompt)
        choice = plan.original(order, trace.choice)
        if self.logprob and shown and answer and trace.error is None:
            scores = self.llm.score_options(self.agent.last_messages, shown)
            choice = plan.original(order, int(np.argmax(scores)))
        turn_number = self.agent.turn_number if store and answer else None
        if turn_number is not None:
            self.turn_events[turn_number] = event.index
        context = trace.context or MemoryContext()
        return {"reply": trace.reply, "store": turn_number is not None, **_trace_fields(trace),
                "choice": choice, "option_order": order, "turn_number": turn_number,
                "memory_events": sorted({self.turn_events[t] for t in context_turns(context)
                                         if t in self.turn_events}),
                "memory_schemas": [i.text for i in context.items if i.kind == "schema"],
                **plan.audit(event, trace, self.turn_events,
                             provenance=self.agent.memory.keeps_provenance)}

    # ------------------------------------------------------------------ scores
    def score(self) -> list[dict[str, Any]]:
        """Score every phase with ``suite.score`` and write scores.jsonl (``write_scores``)."""
        return write_scores(self.run_dir, self.suite)


def score_turns(suite: Suite, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scores.jsonl lines of a run's ``turns`` (its turns.jsonl records): every phase
    scored with ``suite.score`` (main-phase replies as context), each with the question audit's
    ``answered`` and ``evidence_recall``. The calls a judged type makes go to the suite's judge
    client (a run's: through its call journal)."""
    main = {t["index"]: _response(t) for t in turns if t["phase"] == "main"}
    lines: list[dict[str, Any]] = []
    for phase in ("main", "pre_sleep", "post_sleep"):
        probes = {t["index"]: _response(t) for t in turns if t["phase"] == phase}
        if not probes:
            continue
        audit = question_audit([t for t in turns if t["phase"] == phase])
        for score in suite.score({**main, **probes}):
            lines.append({**score.model_dump(mode="json"), "phase": phase,
                          **audit.get(score.test_id, {"answered": True,
                                                      "evidence_recall": None})})
    return lines


def write_scores(run_dir: Path, suite: Suite) -> list[dict[str, Any]]:
    """``score_turns`` of ``run_dir``'s turns.jsonl, written whole and atomically to its
    scores.jsonl; the lines."""
    lines = score_turns(suite, read_jsonl(Path(run_dir) / "turns.jsonl"))
    path = Path(run_dir) / "scores.jsonl"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(_dumps(line) + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)
    return lines


def _close(close: Callable[[], Any], *, quietly: bool) -> None:
    """``close()``; when ``quietly`` (a failing run) an error is logged, not raised."""
    try:
        close()
    except Exception as exc:
        if not quietly:
            raise
        log.info("closing after a failure: %s: %s", type(exc).__name__, exc)


def question_audit(turns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per test id, from its question turns: ``answered`` (all of them went to the model) and
    ``evidence_recall`` (their mean; None when the suite names no evidence)."""
    by_test: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        if turn.get("kind") == "question":
            by_test.setdefault(turn.get("test_id") or str(turn["index"]), []).append(turn)
    audit = {}
    for test_id, own in by_test.items():
        recalls = [t["evidence_recall"] for t in own if t.get("evidence_recall") is not None]
        audit[test_id] = {"answered": all(t.get("answered", True) for t in own),
                          "evidence_recall": sum(recalls) / len(recalls) if recalls else None}
    return audit


def _fresh_store(root: Path, namespace: str) -> Path:
    """An empty store folder for this attempt (the replay rebuilds the memory from scratch).

    Earlier attempts' folders are deleted and the run's ``namespace`` is purged on every
    configured server (Redis, chroma, SQL), so the replay starts from nothing there too. A new
    name per attempt keeps an embedded store that caches its handles per path in-process
    (chromadb) from reopening a deleted database.
    """
    if root.exists():
        for old in root.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    purge_namespace(namespace)
    store = root / f"attempt-{time.time_ns()}"
    store.mkdir(parents=True)
    return store


def context_turns(context: MemoryContext) -> set[int]:
    """Agent turn numbers whose content reached the prompt through ``context``: its history
    exchanges and every item's provenance (``MemoryItem.source_turns``)."""
    turns = {ex.turn_number for ex in context.history}
    for item in context.items:
        turns.update(item.source_turns)
    return turns


def strip_timing(record: dict[str, Any]) -> dict[str, Any]:
    """A turn record without its wall-clock fields (what must be identical across a resume):
    the latencies, and a sleep cycle's start/finish times and phase durations."""
    out = {k: v for k, v in record.items() if k not in TIMING_FIELDS}
    if isinstance(out.get("cycle_stats"), dict):
        out["cycle_stats"] = {k: v for k, v in out["cycle_stats"].items()
                              if k not in CYCLE_TIMING_FIELDS}
    return out


def _size_of(memory: MemorySystem) -> dict[str, int] | None:
    """``memory.size()`` as the manifest records it; None when the memory keeps nothing
    countable or counting it failed (logged at debug level: a measurement taken at close must
    not fail a run that has answered every question, nor add a line to the one that names the
    error stopping a failing one: a store that went away fails the count too)."""
    try:
        size = memory.size()
    except Exception as exc:
        log.debug("could not count the memory (memory_size left out): %s: %s",
                  type(exc).__name__, exc)
        return None
    return None if size is None else size.model_dump()


def _size_record(sizes: dict[str, dict[str, int] | None]) -> Any:
    """The manifest's ``memory_size``, kept as ``memory_stats`` is: one user's unkeyed
    (``{"items": ..., "tokens": ...}`` or None), several users' by user; None without a user."""
    if len(sizes) == 1:
        return next(iter(sizes.values()))
    return sizes or None


def _with_earlier(stats: dict[str, Any], earlier: dict[str, Any] | None) -> dict[str, Any]:
    """One user's memory stats of this process with the ``PROCESS_TOTALS`` of the run's
    earlier processes (``earlier``, as their manifest recorded them) added."""
    summed = {key: round(stats[key] + earlier[key], 3) for key in PROCESS_TOTALS
              if isinstance(stats.get(key), int | float)
              and isinstance((earlier or {}).get(key), int | float)}
    return {**stats, **summed}


def cycle_seconds(stats: dict[str, Any] | None) -> float:
    """Wall time of one cycle from its CycleStats record (0 for a turn without a cycle)."""
    if not isinstance(stats, dict):
        return 0.0
    return float(sum((stats.get("phase_durations_s") or {}).values()))


def _trace_fields(trace: TurnTrace) -> dict[str, Any]:
    return trace.model_dump(mode="json", exclude={"reply"})


def _response(turn: dict[str, Any]) -> Response:
    return Response(index=turn["index"], reply=turn.get("reply") or "", choice=turn.get("choice"),
                    memory_ids=turn.get("memory_ids") or [], error=turn.get("error"))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _now() -> str:
    return datetime.now(UTC).isoformat()


__all__ = ["Step", "TIMING_FIELDS", "context_turns", "default_agent_factory", "is_complete",
           "plan_steps", "read_manifest", "run", "run_identity", "score_turns", "strip_timing",
           "write_scores"]
