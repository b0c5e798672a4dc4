"""Hand-made results folders in the runner's format (manifest.json, turns.jsonl, scores.jsonl).

Helpers only (no tests): imported by test_report*, test_cli* and test_notebooks*.

Every run has two tests per test type; each test is a needle, a filler turn and a question that
names the needle as its evidence. The model answers the questions of 6 tests in 8 (the same
tests in every condition and seed, as a grid's answered sample: ``is_answered_test``); the
others are evidence-only: not answered, scored 0 by the suite's scorer, evidence still checked.
Evidence reaches the prompt always for oracle and full_context, never for vanilla, and with a
condition-dependent chance otherwise.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from memlab.bench.spec import RunSpec
from memlab.memory.base import CONDITIONS

LTM_TYPES = ("colours", "shopping", "name_list", "jokes")
PERSONA_TYPES = ("recall_user_shared_facts", "acknowledge_latest_user_preferences",
                 "track_full_preference_evolution", "generalize_to_new_scenarios")
PROBES = ("delayed_recall", "cue_based_recall", "cross_episode_integration",
          "schema_utilisation")
SLEEP_STATS = {"episodes_considered": 12, "episodes_replayed": 10, "memories_created": 2,
               "schemas_created": 1, "schemas_updated": 0, "episodes_forgotten": 3,
               "failures": ["compression: one batch kept unconsolidated"]}


def turn(index, kind, phase="main", test_id=None, test_type=None, tokens=100, **extra):
    return {"index": index, "phase": phase, "kind": kind, "test_id": test_id,
            "test_type": test_type, "session_id": "s0", "text": f"message {index}",
            "reply": f"reply {index}", "store": kind != "question", "choice": None,
            "prompt_tokens": tokens, "prompt_tokens_system": 20, "prompt_tokens_memory": tokens - 40,
            "prompt_tokens_history": 10, "prompt_tokens_user": 10, "completion_tokens": 12,
            "llm_latency_s": 0.5, "memory_latency_s": 0.01 * (1 + index % 3),
            "memory_ids": [f"ep:{index - 1}"] if index else [], "memory_kinds": ["episode"]
            if index else [], "truncated_turns": 0, "cached": False, "slept": False,
            "cycle_stats": None, "error": None, "answered": True} | extra


def is_answered_test(number: int) -> bool:
    """The fixture's answered sample: 6 of the 8 tests (every type keeps one), the same in
    every run."""
    return number not in (3, 6)


def reached(condition: str, rng: random.Random, skill: float) -> bool:
    if condition in ("oracle", "full_context"):
        return True
    return condition != "vanilla" and rng.random() < skill


def evidence(index: int, hit: bool) -> list[dict]:
    return [{"index": index, "direct": hit, "derived": hit, "answer_in_prompt": hit,
             "reached": hit}]


def question(index, needle, test_id, test_type, answered, hit, tokens):
    extra = {} if answered else {"reply": "", "llm_latency_s": 0.0, "completion_tokens": 0}
    return turn(index, "question", test_id=test_id, test_type=test_type, tokens=tokens,
                answered=answered, evidence=evidence(needle, hit),
                evidence_recall=float(hit), **extra)


def score(test_id, test_type, value, phase="main", **extra):
    return {"test_id": test_id, "test_type": test_type, "score": value, "max_score": 1.0,
            "reasoning": [], "judge": "rule", "metadata": {}, "phase": phase,
            "answered": True, "evidence_recall": None} | extra


def write_run(root: Path, condition: str, suite: str, seed: int, span: int,
              status: str = "complete", probes: bool = False,
              spec: RunSpec | None = None) -> Path:
    """One run folder with deterministic but condition-dependent numbers (of ``spec``, default:
    the fake LLM and hashing embedder's spec of these parameters)."""
    rng = random.Random(f"{condition}{suite}{seed}{span}{probes}")
    spec = spec or RunSpec(suite=suite, condition=condition, span=span, seed=seed, llm="fake",
                           embedder="hashing", probes_sleep=probes)
    folder = root / spec.run_id
    folder.mkdir(parents=True, exist_ok=True)
    skill = (CONDITIONS.index(condition) + 1) / (len(CONDITIONS) + 1)
    tokens = 100 + 50 * CONDITIONS.index(condition)
    turns, scores = [], []
    for i, test_type in enumerate((LTM_TYPES if suite == "ltm" else PERSONA_TYPES) * 2):
        test_id, answered, hit = f"{test_type}-{i}", is_answered_test(i), reached(
            condition, rng, skill)
        turns += [turn(3 * i, "needle", test_id=test_id, test_type=test_type, tokens=tokens),
                  turn(3 * i + 1, "filler"),
                  question(3 * i + 2, 3 * i, test_id, test_type, answered, hit, tokens)]
        value = float(answered and rng.random() < skill)
        scores.append(score(test_id, test_type, value, answered=answered,
                            evidence_recall=float(hit)))
    for j, probe in enumerate(PROBES if probes else ()):
        for phase, bonus in (("pre_sleep", 0.0), ("post_sleep", 0.2)):
            turns.append(turn(100 + 2 * j + (phase == "post_sleep"), "question", phase=phase,
                              test_id=f"probe-{j}", test_type=probe))
            scores.append(score(f"probe-{j}", probe, round(min(1.0, 0.4 + 0.1 * j + bonus), 2),
                                phase, metadata={"probe": probe}))
    answers = sum(t["answered"] and t["kind"] != "filler" for t in turns)
    manifest = {"run_id": spec.run_id, "condition": condition, "suite": suite, "span": span,
                "spec": spec.identity(), "suite_params": {"span": span, "seed": seed},
                "seed": seed,
                "llm": {"provider": "fake", "model": "fake", "context_window": 4096},
                "embedder": "hashing", "memlab_version": "0.1.0", "git_commit": None,
                "python": "3.11", "started_at": "2026-01-01T00:00:00Z",
                "finished_at": "2026-01-01T00:01:00Z", "status": status,
                "counts": {"turns": len(turns), "scores": len(scores),
                           "llm_calls_recorded": answers, "llm_calls_paid": answers},
                "sleep_stats": SLEEP_STATS if probes else None}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    return folder


def write_results(root: Path, seeds=(0, 1), spans=(1000, 4000), persona_span=2000) -> Path:
    """A results folder: every condition on both suites, two seeds, two LTM spans; the sleep
    condition's persona runs also under Table 2's protocol (probes)."""
    for condition in CONDITIONS:
        for seed in seeds:
            for span in spans:
                write_run(root, condition, "ltm", seed, span)
            write_run(root, condition, "persona", seed, persona_span)
            if condition == "sleep":
                write_run(root, condition, "persona", seed, persona_span, probes=True)
    write_run(root, "vanilla", "ltm", 9, 1000, status="running")  # must be ignored
    return root
