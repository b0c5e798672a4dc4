"""`memlab grid --status`: each cell's state, its turns done of planned and the model time left,
read from a results folder of real (FakeLLM) runs."""

from __future__ import annotations

import json

from test_report_fixtures import write_run
from test_runner import TinySuite, fake_reply, run, tiny_spec

from memlab.bench.runlog import read_jsonl, run_lock, write_json_atomic
from memlab.gridspec import SPECS
from memlab.gridstatus import format_status, grid_status
from memlab.llm.fake import FakeLLM

EVENTS = len(TinySuite().events())  # 3 sessions of a needle, 4 fillers and a question


def _run(tmp_path, condition, seed=0):
    return run(TinySuite(), condition, llm=FakeLLM([fake_reply]), results_dir=tmp_path,
               seed=seed, progress=False)


def _edit_manifest(run_dir, **changes):
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for key, value in changes.items():
        if value is None:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    write_json_atomic(run_dir / "manifest.json", manifest)
    return manifest


def _killed_after(run_dir, kept, seconds_a_turn):
    """Leave ``run_dir`` as a run killed after ``kept`` turns, recorded before runs planned
    their turns, each turn having cost ``seconds_a_turn`` (2/3 model, 1/3 memory)."""
    turns = read_jsonl(run_dir / "turns.jsonl")[:kept]
    for turn in turns:
        turn.update(llm_latency_s=seconds_a_turn * 2 / 3, memory_latency_s=seconds_a_turn / 3,
                    cycle_stats=None)
    (run_dir / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (run_dir / "scores.jsonl").unlink()
    _edit_manifest(run_dir, status="running", counts={"resumed_from_turn": 0},
                   finished_at=None)


def test_a_run_records_the_turns_it_plans_and_a_finished_run_has_them_all(tmp_path):
    manifest = json.loads((_run(tmp_path, "vanilla") / "manifest.json").read_text())
    assert manifest["counts"]["turns_planned"] == manifest["counts"]["turns"] == EVENTS


def test_status_names_each_cells_state_and_the_model_time_left(tmp_path):
    for seed in (0, 1):
        _run(tmp_path, "rag", seed)  # complete: says how many turns a cell of its seed plans
    _killed_after(_run(tmp_path, "vanilla"), kept=5, seconds_a_turn=3.0)
    failed = _run(tmp_path, "episodic")
    _edit_manifest(failed, status="failed", error="RuntimeError: model gone")
    other = _run(tmp_path, "full_context")
    spec = json.loads((other / "manifest.json").read_text())["spec"]
    _edit_manifest(other, spec=spec | {"llm_model": "another"})
    cells = [tiny_spec(TinySuite(), c, seed=s) for c, s in (
        ("rag", 0), ("vanilla", 0), ("vanilla", 1), ("sleep", 0), ("episodic", 0),
        ("full_context", 0), ("hybrid", 0))]
    live = _run(tmp_path, "hybrid")
    _edit_manifest(live, status="running")
    with run_lock(live):  # a process writing the run
        status = {s.run_id: s for s in grid_status(cells, tmp_path)}
    by_cell = [status[c.run_id] for c in cells]
    assert [s.state for s in by_cell] == ["complete", "stopped", "not started", "not started",
                                          "failed", "other run", "running"]
    rag, stopped, fresh, sleep = by_cell[:4]
    assert (rag.turns_done, rag.turns_planned, rag.seconds_left) == (EVENTS, EVENTS, 0.0)
    # the killed run planned nothing in its manifest: a complete run of its events says 18
    assert (stopped.turns_done, stopped.turns_planned) == (5, EVENTS)
    assert abs(stopped.seconds_per_turn - 3.0) < 1e-9
    assert abs(stopped.seconds_left - (EVENTS - 5) * 3.0) < 1e-9
    # not started: its turns from seed 1's rag run, its rate from vanilla's turns of seed 0
    assert (fresh.turns_done, fresh.turns_planned) == (0, EVENTS)
    assert abs(fresh.seconds_left - EVENTS * 3.0) < 1e-9
    # no sleep run anywhere: nothing to measure it by, said, not guessed
    assert (sleep.turns_planned, sleep.seconds_per_turn, sleep.seconds_left) == (EVENTS, None,
                                                                                 None)
    assert by_cell[5].turns_done == 0  # another spec's turns are not this cell's progress
    assert all(s.state != "running" for s in grid_status(cells, tmp_path))  # lock released

    text = format_status("tiny", tmp_path, list(status.values()))
    assert "7 cells; 1 complete, 1 running, 1 stopped, 1 failed, 2 not started, 1 other run" in text
    assert f"5 / {EVENTS}" in text
    assert "1 cell(s) with nothing yet to measure them by" in text
    assert "holds a run of another spec" in text


def test_grid_status_prints_and_runs_nothing(tmp_path, capsys):
    from memlab import cli

    cells = SPECS["peers"].cells()
    done = write_run(tmp_path, cells[0].condition, cells[0].suite, cells[0].seed, cells[0].span,
                     spec=cells[0])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(["grid", "--spec", "peers", "--status", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"grid peers in {tmp_path}: {len(cells)} cells; 1 complete, " \
           f"{len(cells) - 1} not started" in out
    assert any(line.split()[:2] == [done.name, "complete"] for line in out.splitlines())
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
