"""The Taskforce agent (seed 004) on the 10 shipped missions (data/taskforce) with a real model.

Each mission runs as a session in one store (user ``bench``, so lessons carry over), its file
tools in a workspace copied from data/taskforce/workspace, its document search over data/docqa.
Success is checked from what the session produced (memlab.taskforce.missions). Writes
``benchmarks/results/taskforce[-<tier>][-subset].json``: success rate with its Wilson
interval, steps, re-asks, seconds and the final answer per mission. Run it alone, with nice:
it takes tens of minutes.

Usage:
    nice python benchmarks/bench_taskforce.py [--llm-model 0.5b|1.5b] [--only m01,m05]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from seeds_common import DATA, rate, write

from memlab import lab
from memlab.taskforce.missions import check_mission, load_missions, prepare_workspace

SHIPPED = DATA / "taskforce" / "missions.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-model", default="0.5b")
    parser.add_argument("--only", default="", help="comma-separated mission ids (results go "
                        "to taskforce[-tier]-subset.json)")
    parser.add_argument("--missions", type=Path, default=SHIPPED, help="a mission set (another "
                        "set's results go to taskforce[-tier]-<its folder>.json)")
    args = parser.parse_args()
    missions = load_missions(args.missions)
    chosen = [m for m in missions.missions if not args.only or m.id in args.only.split(",")]
    llm = lab.make_llm("local", args.llm_model, llm_cache=False)
    embedder = lab.make_embedder("minilm")
    with tempfile.TemporaryDirectory() as tmp:
        docs = lab.make_docqa(Path(tmp) / "docqa", embedder=embedder)
        docs.ingest(DATA / "docqa")
        agent = lab.make_taskforce(Path(tmp) / "taskforce", llm=llm, embedder=embedder,
                                   docs=docs)
        workspace = prepare_workspace(missions, Path(tmp) / "taskforce" / "workspace")
        rows = [run(agent, mission, workspace) for mission in chosen]
    successes = sum(r["succeeded"] for r in rows)
    result = {"model": llm.model, "success": rate(successes, len(rows)),
              "steps_per_mission": round(sum(r["steps"] for r in rows) / len(rows), 2),
              "reasks": sum(r["reasks"] for r in rows),
              "seconds_per_mission": round(sum(r["seconds"] for r in rows) / len(rows), 1),
              "by_kind": {kind: rate(sum(r["succeeded"] for r in rows if r["kind"] == kind),
                                     sum(r["kind"] == kind for r in rows))
                          for kind in sorted({r["kind"] for r in rows})},
              "missions": rows}
    suffix = ("" if args.llm_model == "0.5b" else f"-{args.llm_model}") + (
        "" if args.missions.resolve() == SHIPPED.resolve() else f"-{args.missions.parent.name}"
    ) + ("-subset" if args.only else "")  # a subset never replaces the full set's file
    write(f"taskforce{suffix}", result)
    print(f"{llm.model}: {successes}/{len(rows)} missions succeeded")


def run(agent, mission, workspace: Path) -> dict:
    start = time.perf_counter()
    result = agent.run(mission.mission, user_id="bench")
    seconds = time.perf_counter() - start
    verdict = check_mission(mission, result.succeeded, result.final_answer, workspace)
    steps = len(agent.repo.history(result.session.session_id))
    row = {"id": mission.id, "kind": mission.kind, "succeeded": verdict.succeeded,
           "reason": verdict.reason, "session_status": result.session.status.value,
           "error": result.error, "final_answer": result.final_answer,
           "answers": {str(k): str(v) for k, v in result.answers.items()},
           "plan_items": len(result.todolist.items) if result.todolist else 0,
           "plan": [[i.description, i.chosen_tool, i.status.value]
                    for i in (result.todolist.items if result.todolist else [])],
           "steps": steps, "reasks": result.reasks, "seconds": round(seconds, 1),
           "actions": [h.action for h in agent.repo.history(result.session.session_id)],
           "lessons_used": [_lesson(x) for x in result.lessons_used],
           "lessons_learned": [_lesson(x) for x in result.lessons_learned]}
    print(f"{mission.id} {'OK  ' if verdict.succeeded else 'FAIL'} {steps} steps "
          f"{seconds:.0f}s {verdict.reason} {row['actions']} answer: "
          f"{str(result.final_answer)[:100]!r}", flush=True)
    return row


def _lesson(lesson) -> str:
    return f"{lesson.lesson} (tool: {lesson.tool_name}; context: {lesson.context})"


if __name__ == "__main__":
    main()
