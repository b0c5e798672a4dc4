"""A finished run kept without its scores (a grid's records copied, or scores deleted to score
again) is scored from its recorded turns: no step runs again, no model is called, and a grid
scores such cells in its own process, not through a notebook."""

from __future__ import annotations

import json

import pytest
from test_runner import TinySuite, fake_reply, run

from memlab import cli, grid
from memlab.bench.runner import is_complete, is_recorded, read_manifest
from memlab.bench.spec import RunSpec
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM


def never(*args, **kwargs):
    pytest.fail("a recorded run was run again")


def _recorded(tmp_path):
    """A finished tiny run with its scores deleted: (run folder, its scores, turns, calls)."""
    run_dir = run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                  embedder=HashingEmbedder(dim=64), progress=False)
    files = [(run_dir / name).read_bytes() for name in ("scores.jsonl", "turns.jsonl",
                                                        "calls.jsonl")]
    (run_dir / "scores.jsonl").unlink()
    return run_dir, *files


def test_a_recorded_run_is_scored_without_running_a_step(tmp_path):
    run_dir, scores, turns, calls = _recorded(tmp_path)
    before = read_manifest(run_dir)
    assert is_recorded(run_dir) and not is_complete(run_dir)
    llm = FakeLLM([fake_reply])
    run(TinySuite(), "rag", llm=llm, results_dir=tmp_path, embedder=HashingEmbedder(dim=64),
        agent_factory=never, progress=False)
    assert is_complete(run_dir) and not is_recorded(run_dir)
    assert (run_dir / "scores.jsonl").read_bytes() == scores
    assert (run_dir / "turns.jsonl").read_bytes() == turns
    assert (run_dir / "calls.jsonl").read_bytes() == calls
    assert llm.calls == 0
    after = read_manifest(run_dir)
    assert after["counts"]["scores"] == 3
    # a scoring, not a resume: the run's own record of when and how it ran is kept
    assert {k: after[k] for k in ("started_at", "finished_at", "resumes")} == \
        {k: before[k] for k in ("started_at", "finished_at", "resumes")}


def test_a_recorded_run_of_another_suite_is_refused_and_left_as_it_was(tmp_path):
    run_dir, _, _, _ = _recorded(tmp_path)
    lines = (run_dir / "turns.jsonl").read_text().splitlines()
    first = json.loads(lines[0]) | {"text": "Something else entirely."}
    (run_dir / "turns.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    manifest = (run_dir / "manifest.json").read_bytes()
    with pytest.raises(ConfigError, match="line 1 .* not this suite's event"):
        run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
            embedder=HashingEmbedder(dim=64), agent_factory=never, progress=False)
    assert not (run_dir / "scores.jsonl").exists()
    assert (run_dir / "manifest.json").read_bytes() == manifest


def test_a_grid_scores_its_recorded_cells_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert cli.main(["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
                     "--embedder", "hashing", "--out", str(out)]) == 0
    run_dir = next(out.iterdir())
    scores, calls = (run_dir / "scores.jsonl").read_bytes(), (run_dir / "calls.jsonl").read_bytes()
    (run_dir / "scores.jsonl").unlink()
    cell = RunSpec.parse(read_manifest(run_dir)["spec"], "spec")

    def no_notebooks(task, cells, workers):
        assert not cells, "a recorded cell was sent to a notebook"
        yield from ()

    monkeypatch.setattr(grid, "pool_map", no_notebooks)
    outcome = grid.run_grid([cell], out, progress=False)
    assert [r.status for r in outcome] == ["complete"]
    assert (run_dir / "scores.jsonl").read_bytes() == scores
    assert (run_dir / "calls.jsonl").read_bytes() == calls
    assert grid.run_grid([cell], out, progress=False)[0].status == "skipped"


def test_ctrl_c_while_scoring_recorded_cells_stops_the_grid_with_one_message(tmp_path,
                                                                           monkeypatch):
    run_dir, _, _, _ = _recorded(tmp_path)
    cell = RunSpec.parse(read_manifest(run_dir)["spec"], "spec")
    assert grid.score_recorded_cells([cell.model_copy(update={"seed": 9})], tmp_path) == []

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("memlab.lab.run", interrupted)
    with pytest.raises(grid.GridInterrupted, match="running again scores the rest"):
        grid.run_grid([cell], tmp_path, progress=False)
    assert is_recorded(run_dir, cell) and not (run_dir / "scores.jsonl").exists()
