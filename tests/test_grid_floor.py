"""benchmarks/grid_floor.py: a grid's cold token work and its floor at measured rates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import grid_floor  # noqa: E402

ANSWERING, MEMORY = "qwen-1.5b.gguf", "qwen-0.5b.gguf"


def call(key: str, model: str, prompt: int, completion: int, reused: int | None = None) -> dict:
    return {"key": key, "step": "main:0", "paid": True,
            "completion": {"model": model, "prompt_tokens": prompt, "completion_tokens":
                           completion, "prompt_tokens_reused": reused, "cached": False}}


def write_cell(root: Path, condition: str, calls: list[dict], status: str = "complete") -> None:
    folder = root / f"ltm-{condition}-1000-s0"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(
        {"run_id": folder.name, "status": status, "condition": condition,
         "spec": {"condition": condition}, "llm": {"model": ANSWERING},
         "memory_llm": {"model": MEMORY}}))
    (folder / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    (folder / "turns.jsonl").write_text("")


@pytest.fixture
def records(tmp_path: Path) -> Path:
    """sleep and episodic_summary send one compression alike (key c1: paid once); sleep's
    answer reused 300 of its 1,000 prompt tokens; rag is still running; a torn manifest."""
    root = tmp_path / "records"
    write_cell(root, "sleep", [call("c1", MEMORY, 600, 100, reused=200),
                               call("a1", ANSWERING, 1000, 10, reused=300)])
    write_cell(root, "episodic_summary", [call("c1", MEMORY, 600, 100, reused=200),
                                          call("a2", ANSWERING, 500, 5)])
    write_cell(root, "rag", [call("a3", ANSWERING, 9999, 99)], status="running")
    (root / "torn").mkdir()
    (root / "torn" / "manifest.json").write_text('{"status": "compl')
    return root


def estimate_file(tmp_path: Path) -> Path:
    path = tmp_path / "estimate.json"
    path.write_text(json.dumps({
        "spec": "full",
        "measured": {"latency_fits": {ANSWERING: {"role": "answering"},
                                      MEMORY: {"role": "memory"}}},
        "cells_projected": [
            {"answers": 10, "needle_replies": 6, "questions": 4, "answer_evaluated_tokens": 3600,
             "answer_completion_tokens": 360, "memory_prompt_tokens": 7200.4,
             "memory_completion_tokens": 720}]}))
    return path


def rates_file(tmp_path: Path, concurrent: int = 2) -> Path:
    """Answering: 1 prompt / 0.1 written tokens a second; memory 2 / 0.2 (two rows each, the
    mean of each pair)."""
    rows = [{"model": model, "n_threads": 1, "concurrent": concurrent, "prompt_tok_s": p * f,
             "gen_tok_s": g * f}
            for model, p, g in ((ANSWERING, 1, 0.1), (MEMORY, 2, 0.2)) for f in (0.5, 1.5)]
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"measured_at": "2026-11-30T06:25:23+00:00", "results": rows}))
    return path


def test_measured_tokens_count_each_distinct_call_once_less_what_it_reused(records):
    tokens = grid_floor.measured_tokens(records)
    assert tokens["cells"] == 2  # rag running, torn unreadable
    assert tokens["roles"]["memory"] == {"calls": 1, "evaluated": 400, "completion": 100}
    assert tokens["roles"]["answering"] == {"calls": 2, "evaluated": 700 + 500, "completion": 15}
    assert tokens["answering_evaluated_by_condition"] == {"episodic_summary": 500, "sleep": 700}


def test_floor_prices_tokens_at_the_measured_rates_over_two_workers(records, tmp_path):
    estimate = json.loads(estimate_file(tmp_path).read_text())
    rates = grid_floor.slopes(estimate, json.loads(rates_file(tmp_path).read_text()))
    assert rates["answering"]["prompt_tok_s"] == 1 and rates["memory"]["gen_tok_s"] == 0.2
    row = grid_floor.floor("standard", grid_floor.measured_tokens(records), rates)
    # answering 1,200 / 1 + 15 / 0.1 = 1,350 s; memory 400 / 2 + 100 / 0.2 = 700 s
    assert row["model_hours_total"] == round(2050 / 3600, 2)
    assert row["wall_floor_h"] == round(2050 / 3600 / 2, 2) and row["target_wall_h"] == 3.0
    projected = grid_floor.floor("full", grid_floor.projected_tokens(estimate), rates)
    # answering 3,600 / 1 + 360 / 0.1 = 2 h; memory 7,200 / 2 + 720 / 0.2 = 2 h
    assert projected["roles"]["memory"]["evaluated"] == 7200
    assert projected["model_hours"]["answering"] == {"prefill_h": 1.0, "decode_h": 1.0}
    assert projected["wall_floor_h"] == 2.0 and projected["floor_over_target"] == 0.13
    assert projected["target_wall_h"] == 15.0 and projected["needle_replies"] == 6


def test_main_writes_the_floors(records, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grid_floor, "write", lambda name, payload: payload)
    assert grid_floor.main(["--records", f"standard={records}", "--estimate",
                            str(estimate_file(tmp_path)), "--rates",
                            str(rates_file(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "standard:" in out and "full:" in out and "(target 15.0 h)" in out


@pytest.mark.parametrize("case", ["not a folder", "rates of one process", "no complete cell"])
def test_bad_input_is_one_line_and_exit_2(case, records, tmp_path, capsys):
    args = ["--estimate", str(estimate_file(tmp_path)), "--rates", str(rates_file(tmp_path))]
    if case == "not a folder":
        args += ["--records", f"standard={tmp_path / 'missing'}"]
    elif case == "rates of one process":
        args = ["--estimate", str(estimate_file(tmp_path)), "--rates",
                str(rates_file(tmp_path, concurrent=1)), "--records", f"standard={records}"]
    else:
        (tmp_path / "empty").mkdir()
        args += ["--records", f"standard={tmp_path / 'empty'}"]
    with pytest.raises(SystemExit) if case == "not a folder" else _no_exit():
        code = grid_floor.main(args)
        assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert {"not a folder": "NAME=DIR", "rates of one process": "--concurrent 2",
            "no complete cell": "no complete cell"}[case] in err


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
