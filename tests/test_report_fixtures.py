"""Hand-made results folders in the runner's format (manifest.json, turns.jsonl, scores.jsonl).

Helpers only (no tests): imported by test_report*, test_cli* and test_notebooks*.
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


def turn(index, kind, phase="main", test_id=None, test_type=None, tokens=100, **extra):
    return {"index": index, "phase": phase, "kind": kind, "test_id": test_id,
            "test_type": test_type, "session_id": "s0", "text": f"message {index}",
            "reply": f"reply {index}", "store": kind != "question", "choice": None,
            "prompt_tokens": tokens, "prompt_tokens_system": 20, "prompt_tokens_memory": tokens - 40,
            "prompt_tokens_history": 10, "prompt_tokens_user": 10, "completion_tokens": 12,
            "llm_latency_s": 0.5, "memory_latency_s": 0.01 * (1 + index % 3),
            "memory_ids": [f"ep:{index - 1}"] if index else [], "memory_kinds": ["episode"]
            if index else [], "truncated_turns": 0, "cached": False, "slept": False,
            "cycle_stats": None, "error": None} | extra


def write_run(root: Path, condition: str, suite: str, seed: int, span: int,
              status: str = "complete", probes: bool = False,
              spec: RunSpec | None = None) -> Path:
    """One run folder with deterministic but condition-dependent numbers (of ``spec``, default:
    the fake LLM and hashing embedder's spec of these parameters)."""
    rng = random.Random(f"{condition}{suite}{seed}{span}")
    spec = spec or RunSpec(suite=suite, condition=condition, span=span, seed=seed, llm="fake",
                           embedder="hashing", probes_sleep=probes)
    run_id = spec.run_id
    folder = root / run_id
    folder.mkdir(parents=True, exist_ok=True)
    skill = (CONDITIONS.index(condition) + 1) / (len(CONDITIONS) + 1)
    types = LTM_TYPES if suite == "ltm" else PERSONA_TYPES
    turns, scores = [], []
    for i, test_type in enumerate(types * 2):
        test_id = f"{test_type}-{i}"
        turns.append(turn(2 * i, "needle", test_id=test_id, test_type=test_type,
                          tokens=100 + 50 * CONDITIONS.index(condition)))
        turns.append(turn(2 * i + 1, "filler"))
        scores.append({"test_id": test_id, "test_type": test_type,
                       "score": float(rng.random() < skill), "max_score": 1.0,
                       "reasoning": [], "judge": "rule", "metadata": {}, "phase": "main"})
    for j, probe in enumerate(PROBES if probes else ()):
        for phase, bonus in (("pre_sleep", 0.0), ("post_sleep", 0.2)):
            turns.append(turn(100 + 2 * j + (phase == "post_sleep"), "question", phase=phase,
                              test_id=f"probe-{j}", test_type=probe))
            scores.append({"test_id": f"probe-{j}", "test_type": probe,
                           "score": round(min(1.0, 0.4 + 0.1 * j + bonus), 2), "max_score": 1.0,
                           "reasoning": [], "judge": "rule", "metadata": {"probe": probe},
                           "phase": phase})
    manifest = {"run_id": run_id, "condition": condition, "suite": suite, "span": span,
                "spec": spec.identity(), "suite_params": {"span": span, "seed": seed},
                "seed": seed,
                "llm": {"provider": "fake", "model": "fake", "context_window": 4096},
                "embedder": "hashing", "memlab_version": "0.1.0", "git_commit": None,
                "python": "3.11", "started_at": "2026-01-01T00:00:00Z",
                "finished_at": "2026-01-01T00:01:00Z", "status": status,
                "counts": {"turns": len(turns), "scores": len(scores)}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    return folder


def write_results(root: Path, seeds=(0, 1), spans=(1000, 4000), persona_span=2000) -> Path:
    """A results folder: every condition on both suites, two seeds, two LTM spans, probes."""
    for condition in CONDITIONS:
        for seed in seeds:
            for span in spans:
                write_run(root, condition, "ltm", seed, span)
            write_run(root, condition, "persona", seed, persona_span, probes=condition == "sleep")
    write_run(root, "vanilla", "ltm", 9, 1000, status="running")  # must be ignored
    return root
