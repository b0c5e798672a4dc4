"""The prioritisation debate (seed 003) from data/decision/sample_input.json with a real model.

Runs the full debate (3 rounds x 13 turns, then TOPSIS), then checks every validation rule of
the seed on its outputs (the round files validated by their models, weights summing to 1,
distinct ranks, closeness in 0-1, CR <= threshold and equal to the CR of the written matrix).
Writes ``benchmarks/results/debate[-<tier>][-strict].json``: completed or where it stopped,
per-round calls, re-asks and seconds, CR per Director attempt (the first reply, then each CR
retry), whether a retry repeated a matrix already tried, whether the Director's matrix was
repaired (and how: ``stats.cr_repair``), JSON re-ask rate with its Wilson interval.
``--strict-cr`` measures the debate without the repair (it stops where CR stays too high).

The round files stay in ``--out`` (default ``results/decision/bench-<tier>[-strict]``, not in
git), so ``memlab decide data/decision/sample_input.json --out <that> --session-id bench``
shows them.

Usage:
    nice python benchmarks/bench_debate.py [--llm-model 0.5b|1.5b] [--out DIR] [--strict-cr]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from seeds_common import DATA, rate, write

from memlab import lab
from memlab.decision.ahp import ahp_weights
from memlab.decision.debate import DecisionDebate
from memlab.decision.outputs import ROUND_OUTPUTS, final_ranking_filename, read_user_input
from memlab.errors import MemlabError
from memlab.models.decision import check_ranks, check_weights, round_output_filename


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-model", default="0.5b")
    parser.add_argument("--out", default=None, help="folder of the round files")
    parser.add_argument("--strict-cr", action="store_true",
                        help="no repair: stop when CR stays above the threshold")
    args = parser.parse_args()
    strict = "-strict" if args.strict_cr else ""
    out = Path(args.out or f"results/decision/bench-{args.llm_model}{strict}")
    user = read_user_input(DATA / "decision" / "sample_input.json")
    llm = lab.make_llm("local", args.llm_model, llm_cache=False)
    turns: list[dict] = []

    def on_turn(round_no, turn, info):
        turns.append({"round": round_no, "turn": turn.turn, "speaker": turn.speaker,
                      **info.model_dump()})
        print(f"round {round_no} turn {turn.turn:>2} {info.seconds:6.1f}s reasks {info.reasks}"
              f"  {turn.content[:70]!r}", flush=True)

    start = time.perf_counter()
    shutil.rmtree(out, ignore_errors=True)  # a fresh debate, not a resumed one
    debate = DecisionDebate(llm, output_dir=out, on_turn=on_turn,
                            cr_repair=False if args.strict_cr else None)
    try:
        state = debate.run(user, session_id="bench")
        stopped, rules = None, check_rules(out, state)
    except MemlabError as exc:
        stopped, rules, state = f"{type(exc).__name__}: {exc}", {}, None
    files = sorted(p.name for p in out.glob("*.json"))
    calls = sum(r.calls for r in debate.stats.rounds.values())
    reasks = sum(r.reasks for r in debate.stats.rounds.values())
    stats = debate.stats
    result = {"model": llm.model, "completed": stopped is None, "stopped": stopped,
              "seconds": round(time.perf_counter() - start, 1), "turns": len(turns),
              "cr_repair_allowed": debate.cr_repair, "cr_attempts": stats.cr_attempts,
              "cr_retries": max(len(stats.cr_attempts) - 1, 0),
              "cr_stopped_on_repeat": stats.cr_stopped_on_repeat,
              "cr_repaired": stats.cr_repair is not None,
              "json_calls": calls, "json_reasks": reasks,
              "json_invalid_rate": rate(reasks, calls) if calls else None,
              "stats": debate.stats.model_dump(mode="json"), "rules": rules,
              "final_ranking": [r.model_dump() for r in state.final_ranking] if state else [],
              "criteria_weights": state.criteria_weights if state else {},
              "turn_log": turns, "files": files, "output_dir": str(out)}
    suffix = "" if args.llm_model == "0.5b" else f"-{args.llm_model}"
    write(f"debate{suffix}{strict}", result)
    print(f"{llm.model}: completed={result['completed']} {stopped or ''}")


def check_rules(out: Path, state) -> dict:
    """Every seed validation rule on the written outputs; raises on the first that fails."""
    for number, model in ROUND_OUTPUTS.items():
        model.model_validate_json((out / round_output_filename(number, "bench")).read_text())
    round2 = json.loads((out / round_output_filename(2, "bench")).read_text())
    recomputed = ahp_weights(state.criteria_names, round2["comparison_matrix"])
    assert abs(recomputed.consistency_ratio - round2["consistency_ratio"]) < 1e-9
    assert round2["consistency_ratio"] <= round2["user_input"]["settings"]["cr_threshold"]
    final = json.loads((out / final_ranking_filename("bench")).read_text())
    check_weights(final["criteria_weights"], state.criteria_names)
    check_ranks([r["rank"] for r in final["final_ranking"]])
    assert all(0.0 <= r["closeness_coefficient"] <= 1.0 for r in final["final_ranking"])
    assert final["consistency_ratio"] == round2["consistency_ratio"]
    return {"round_files_validate": True, "weights_sum_to_1": True, "ranks_distinct": True,
            "closeness_in_0_1": True, "cr_within_threshold": True,
            "cr_matches_the_written_matrix": True,
            "score_diversity_ok": not state.decision_matrix or not debate_repeats(state)}


def debate_repeats(state) -> dict:
    from memlab.models.decision import repeated_scores

    return repeated_scores(state.decision_matrix)


if __name__ == "__main__":
    main()
