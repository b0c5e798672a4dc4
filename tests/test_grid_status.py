"""`memlab grid --status`: each cell's state, its turns done of planned and the model time left,
read from a results folder of real (FakeLLM) runs."""

from __future__ import annotations

import json

import pytest
from test_report_fixtures import write_run
from test_runner import TinySuite, fake_reply, run, tiny_spec

from memlab.bench.runlog import read_jsonl, run_lock, write_json_atomic
from memlab.gridspec import SPECS
from memlab.gridstatus import format_status, grid_status, measures_seconds
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


def _with_turn_seconds(run_dir, seconds_a_turn):
    turns = read_jsonl(run_dir / "turns.jsonl")
    for turn in turns:
        turn.update(llm_latency_s=seconds_a_turn, memory_latency_s=0.0, cycle_stats=None)
    (run_dir / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))


def test_status_names_each_cells_state_and_the_model_time_left(tmp_path):
    grid = tmp_path / "grid"
    for seed in (0, 1):
        _run(grid, "rag", seed)  # complete: says how many turns a cell of its seed plans
    _killed_after(_run(grid, "vanilla"), kept=5, seconds_a_turn=3.0)
    # a vanilla run the response cache answered: its turns took no time and measure nothing
    served = _run(grid, "vanilla", seed=2)
    _with_turn_seconds(served, 0.0)
    calls = read_jsonl(served / "calls.jsonl")
    (served / "calls.jsonl").write_text("".join(json.dumps(c | {"paid": False}) + "\n"
                                                for c in calls))
    failed = _run(grid, "episodic")
    _edit_manifest(failed, status="failed", error="RuntimeError: model gone")
    other = _run(grid, "full_context")
    spec = json.loads((other / "manifest.json").read_text())["spec"]
    _edit_manifest(other, spec=spec | {"llm_model": "another"})
    # another grid beside this one ran sleep: on the same models at 5 s a turn, on another
    # answering model at 100 s (not this cell's cost)
    _with_turn_seconds(_run(tmp_path / "quick", "sleep"), 5.0)
    elsewhere = _run(tmp_path / "bigger", "sleep")
    _with_turn_seconds(elsewhere, 100.0)
    _edit_manifest(elsewhere, spec=spec | {"condition": "sleep", "llm_model": "another"})
    cells = [tiny_spec(TinySuite(), c, seed=s) for c, s in (
        ("rag", 0), ("vanilla", 0), ("vanilla", 1), ("sleep", 0), ("episodic", 0),
        ("full_context", 0), ("hybrid", 0), ("episodic_summary", 0))]
    live = _run(grid, "hybrid")
    _edit_manifest(live, status="running")
    with run_lock(live):  # a process writing the run
        status = {s.run_id: s for s in grid_status(cells, grid, min_turns=1)}
    by_cell = [status[c.run_id] for c in cells]
    assert [s.state for s in by_cell] == ["complete", "stopped", "not started", "not started",
                                          "failed", "other run", "running", "not started"]
    rag, stopped, fresh, sleep = by_cell[:4]
    assert (rag.turns_done, rag.turns_planned, rag.seconds_left) == (EVENTS, EVENTS, 0.0)
    # the killed run planned nothing in its manifest: a complete run of its events says 18
    assert (stopped.turns_done, stopped.turns_planned, stopped.rate_from) == (5, EVENTS, "run")
    assert abs(stopped.seconds_per_turn - 3.0) < 1e-9
    assert abs(stopped.seconds_left - (EVENTS - 5) * 3.0) < 1e-9
    # not started: its turns from seed 1's rag run, its rate from vanilla's turns of seed 0
    # (not seed 2's, which the cache served)
    assert (fresh.turns_done, fresh.turns_planned, fresh.rate_from) == (0, EVENTS, "grid")
    assert abs(fresh.seconds_left - EVENTS * 3.0) < 1e-9
    # no sleep run in this grid: measured in the grid beside it on the same models
    assert (sleep.turns_planned, sleep.rate_from) == (EVENTS, "other grid")
    assert abs(sleep.seconds_left - EVENTS * 5.0) < 1e-9
    # no episodic_summary run anywhere: nothing to measure it by, said, not guessed
    unmeasured = by_cell[7]
    assert (unmeasured.seconds_per_turn, unmeasured.seconds_left) == (None, None)
    assert by_cell[5].turns_done == 0  # another spec's turns are not this cell's progress
    assert all(s.state != "running" for s in grid_status(cells, grid))  # lock released
    # by default an estimate needs 30 measured turns: the killed run's 5 (its cold first
    # calls, say) give none, and vanilla has no other run to go by
    default = {s.run_id: s for s in grid_status(cells, grid)}
    assert default[stopped.run_id].seconds_per_turn is None
    assert default[stopped.run_id].seconds_left is None

    text = format_status("tiny", grid, list(status.values()))
    assert "8 cells; 1 complete, 1 running, 1 stopped, 1 failed, 3 not started, 1 other run" in text
    assert f"5 / {EVENTS}" in text and "5.0*" in text and "* measured in another grid's" in text
    assert "2 cell(s) not estimated yet" in text  # + the other run
    assert "holds a run of another spec" in text


def test_a_stopped_run_with_every_turn_done_needs_no_model_time(tmp_path):
    """A run killed after its last turn, before it was marked complete (or copied from the
    records of a grid), has nothing left to run, though nothing measured its seconds."""
    grid = tmp_path / "grid"
    run_dir = _run(grid, "hybrid")
    _killed_after(run_dir, kept=EVENTS, seconds_a_turn=2.0)
    _edit_manifest(run_dir, counts={"turns_planned": EVENTS})
    cell = tiny_spec(TinySuite(), "hybrid", seed=0)
    (status,) = grid_status([cell], grid)  # 18 turns: too few for an estimate by default
    assert (status.state, status.turns_done, status.seconds_per_turn) == ("stopped", EVENTS, None)
    assert status.seconds_left == 0.0
    assert "not estimated" not in format_status("tiny", grid, [status])
    turns = (run_dir / "turns.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "turns.jsonl").write_text("".join(turns[:-1]))  # one turn short
    (status,) = grid_status([cell], grid)
    assert (status.turns_done, status.seconds_left) == (EVENTS - 1, None)


def test_a_finished_run_kept_without_its_scores_is_recorded_not_stopped(tmp_path):
    """A grid's records keep a finished run's manifest, turns and calls and leave the scoring
    to a replay: its status says so, with nothing left to run, and names the command."""
    grid = tmp_path / "records"
    run_dir = _run(grid, "rag")
    cell = tiny_spec(TinySuite(), "rag", seed=0)
    assert grid_status([cell], grid)[0].state == "complete"
    (run_dir / "scores.jsonl").unlink()
    (status,) = grid_status([cell], grid)
    assert (status.state, status.turns_done, status.seconds_left) == ("recorded", EVENTS, 0.0)
    text = format_status("tiny", grid, [status])
    assert "1 cells; 1 recorded" in text and f"memlab replay {grid}` scores a copy" in text
    assert "scores it in place from its turns (no model call" in text
    _edit_manifest(run_dir, status="running")  # a run killed before it finished
    assert grid_status([cell], grid)[0].state == "stopped"


def test_grid_status_prints_and_runs_nothing(tmp_path, capsys):
    from memlab import cli

    results = tmp_path / "peers"
    cells = SPECS["peers"].cells()
    done = write_run(results, cells[0].condition, cells[0].suite, cells[0].seed, cells[0].span,
                     spec=cells[0])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(["grid", "--spec", "peers", "--status", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert f"grid peers in {results}: {len(cells)} cells; 1 complete, " \
           f"{len(cells) - 1} not started" in out
    assert any(line.split()[:2] == [done.name, "complete"] for line in out.splitlines())
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before



def test_status_of_a_missing_folder_says_so_and_of_a_file_is_an_error(tmp_path, capsys):
    from memlab import cli

    assert cli.main(["grid", "--spec", "quick", "--status", "--results",
                     str(tmp_path / "typo")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "(no such folder yet: nothing has run there; check --results)" in first
    file = tmp_path / "results.json"
    file.write_text("{}")
    assert cli.main(["grid", "--spec", "quick", "--status", "--results", str(file)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"--results '{file}': is a file, not a folder"), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err

@pytest.mark.parametrize(("served", "paid", "measures"), [
    (0, 10, True), (37, 63, True),  # a fresh cell whose needles its grid's other cells stored
    (50, 50, True), (51, 49, False), (10, 0, False), (0, 0, True)])
def test_a_run_is_timed_unless_the_cache_served_most_of_its_calls(served, paid, measures):
    calls = [{"paid": False}] * served + [{"paid": True}] * paid
    assert measures_seconds(calls) is measures


def _cost_by_part(run_dir, *, question_s, char_s, stretch=1):
    """Give ``run_dir``'s turns a cost by part: ``question_s`` a question turn, ``char_s`` a
    character a stored turn holds, after its text is made ``stretch`` times as long."""
    turns = read_jsonl(run_dir / "turns.jsonl")
    for turn in turns:
        if turn["kind"] != "question":
            turn["text"] *= stretch
        asks, chars = turn["kind"] == "question", len(turn["text"]) + len(turn["reply"] or "")
        turn.update(llm_latency_s=question_s if asks else 0.0, cycle_stats=None,
                    memory_latency_s=0.0 if asks else chars * char_s)
    (run_dir / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    return turns


def test_turns_left_are_priced_as_questions_and_characters_stored_nearest_span_first(tmp_path):
    """A span whose stored turns are longer costs a memory more a turn (LTM 32k's stored turns
    average 252 tokens, LTM 1k's 18): the time left prices a cell's question turns at the
    seconds a question cost and its stored turns by their characters, each measured at the
    cell's own span first."""
    grid = tmp_path / "grid"
    short, long_ = TinySuite(sessions=3), TinySuite(sessions=6)

    def at(suite, condition, seed=0):
        return run(suite, condition, llm=FakeLLM([fake_reply]), results_dir=grid, seed=seed,
                   progress=False)

    # rag measured at 3 sessions: 10 s a question, 0.01 s a stored character
    _cost_by_part(at(short, "rag"), question_s=10.0, char_s=0.01)
    # the 6-session events, seed 0, recorded by vanilla: stored turns 5 times as long
    shape = _cost_by_part(at(long_, "vanilla"), question_s=1.0, char_s=0.0, stretch=5)
    questions = sum(t["kind"] == "question" for t in shape)
    chars = sum(len(t["text"]) + len(t["reply"] or "") for t in shape if t["kind"] != "question")
    cell = tiny_spec(long_, "rag", seed=0)
    (status,) = grid_status([cell], grid, min_turns=1)
    assert (status.state, status.turns_planned, status.rate_from) == (
        "not started", len(shape), "grid")
    assert status.seconds_left == pytest.approx(questions * 10.0 + chars * 0.01)
    # the same seconds a turn, spread evenly, would have priced it at the short span's turns
    measured = read_jsonl(cell.run_dir(grid).parent / tiny_spec(short, "rag").run_id
                          / "turns.jsonl")
    per_turn = sum(t["llm_latency_s"] + t["memory_latency_s"] for t in measured) / len(measured)
    assert abs(per_turn * len(shape) - status.seconds_left) > 0.2 * status.seconds_left
    # a run of rag at the cell's own span (another seed) says what a question costs there
    _cost_by_part(at(long_, "rag", seed=1), question_s=20.0, char_s=0.01, stretch=5)
    (status,) = grid_status([cell], grid, min_turns=1)
    assert status.seconds_left == pytest.approx(questions * 20.0 + chars * 0.01)
    assert status.seconds_per_turn == pytest.approx(status.seconds_left / len(shape))
