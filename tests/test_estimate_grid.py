"""benchmarks/estimate_grid.py: fits and projection arithmetic on tiny fake run folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import estimate_grid  # noqa: E402
from grid_costs import (  # noqa: E402
    Call,
    PromptTurn,
    fit_models,
    read_cells,
    reused_prefix,
)

ANSWERING, MEMORY = "qwen-1.5b.gguf", "qwen-0.5b.gguf"


def seconds(prompt: int, completion: int) -> float:
    """The answering model's exact cost in these fakes."""
    return 1.0 + 0.01 * prompt + 0.1 * completion


def turn(index: int, kind: str, **fields) -> dict:
    stored = kind == "filler"
    return {"index": index, "phase": "main", "kind": kind, "text": "hello there", "reply": "ok",
            "answered": True, "store": stored, "prompt_tokens": 0, "truncated_turns": 0,
            "timestamp": f"2024-01-01T09:{index:02d}:00", "memory_latency_s": 0.0,
            "cycle_stats": None, "error": None, **fields}


def call(step: str, prompt: int, completion: int, *, latency: float | None = None,
         cached: bool = False) -> dict:
    """An answering-model call; by default as long as ``seconds`` says (cached: ~0 s)."""
    latency = (0.0001 if cached else seconds(prompt, completion)) if latency is None else latency
    return {"step": step, "completion": {"model": ANSWERING, "prompt_tokens": prompt,
                                         "completion_tokens": completion, "latency_s": latency,
                                         "cached": cached}}


def write_cell(root: Path, condition: str, turns: list[dict], calls: list[dict],
               status: str = "complete") -> None:
    run_id = f"persona-{condition}-1000-s0"
    folder = root / run_id
    folder.mkdir(parents=True)
    spec = {"suite": "persona", "condition": condition, "span": 1000, "seed": 0,
            "llm_model": "1.5b", "memory_llm_model": "0.5b", "probes_sleep": False}
    (folder / "manifest.json").write_text(json.dumps(
        {"run_id": run_id, "status": status, "spec": spec, "llm": {"model": ANSWERING},
         "memory_llm": {"model": MEMORY}}))
    for name, records in (("turns", turns), ("calls", calls)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def measured(tmp_path: Path) -> Path:
    """episodic: 4 stored turns at 0.2 s, 3 answers (one cached); full_context: 2 answers at
    the same minute (the second reuses the first's prompt, 5 s); rag: still running; torn: a
    manifest cut mid-write."""
    filler = [turn(i, "filler", memory_latency_s=0.2) for i in range(4)]
    questions = [turn(4 + i, "question", prompt_tokens=p, completion_tokens=c,
                      timestamp="2024-01-02T10:00:00")
                 for i, (p, c) in enumerate([(400, 1), (500, 3), (700, 2)])]
    write_cell(tmp_path, "episodic", filler + questions,
               [call("main:4", 400, 1), call("main:5", 500, 3), call("main:6", 700, 2,
                                                                     cached=True)])
    # the history: 4 turns the suites' estimate counts as 12 tokens each, 60 in the model's
    history = [turn(4 + i, "question", prompt_tokens=160, prompt_tokens_history=60,
                    completion_tokens=1, timestamp="2024-01-02T10:00:00") for i in range(2)]
    write_cell(tmp_path, "full_context", filler + history,
               [call("main:4", 160, 1), call("main:5", 160, 1, latency=5.0)])
    write_cell(tmp_path, "rag", filler, [], status="running")
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "manifest.json").write_text('{"status": "compl')
    return tmp_path


def test_reused_prefix_needs_same_minute_and_nothing_stored_between():
    turns = [PromptTurn(True, False, "09:00", 0), PromptTurn(True, True, "09:00", 0),
             PromptTurn(True, False, "09:00", 0), PromptTurn(False, True, "09:00", 0),
             PromptTurn(True, False, "09:00", 0), PromptTurn(True, False, "09:01", 0)]
    assert reused_prefix(turns) == [False, True, True, False, False, False]


def test_reads_complete_cells_and_fits_the_calls_that_ran(measured: Path):
    cells, others = read_cells(measured)
    assert [c.condition for c in cells] == ["episodic", "full_context"]
    assert others == ["persona-rag-1000-s0", "torn"]
    episodic, whole = cells
    assert episodic.stored == 4 and episodic.questions == 3
    assert [a.reused for a in whole.answers] == [False, True]
    fit = fit_models(cells)[ANSWERING]
    # the cached answer (~0 s) and the reused one (5 s) are left out of the fit
    assert fit.n == 3
    assert (fit.a, fit.b, fit.c) == pytest.approx((1.0, 0.01, 0.1), abs=1e-3)
    assert fit.slowdown == pytest.approx(1.0, abs=1e-3)
    assert fit.expected_s(2000, 10) == pytest.approx(seconds(2000, 10), rel=1e-3)


def test_calls_that_count_their_reuse_are_fitted_on_what_they_evaluated(tmp_path: Path):
    """A run recorded with ``prompt_tokens_reused``: the fit is on the tokens evaluated, and
    no answer is priced by the clock rule."""
    shapes = [(900, 900, 1), (1000, 100, 3), (1100, 100, 2), (1300, 200, 5)]
    asked = [turn(i, "question", prompt_tokens=p, completion_tokens=c,
                  timestamp="2024-01-02T10:00:00") for i, (p, _, c) in enumerate(shapes)]
    records = []
    for i, (p, new, c) in enumerate(shapes):
        record = call(f"main:{i}", p, c, latency=seconds(new, c))
        record["completion"]["prompt_tokens_reused"] = p - new
        records.append(record)
    write_cell(tmp_path, "full_context", asked, records)
    (cell,), _ = read_cells(tmp_path)
    assert [a.evaluated for a in cell.answers] == [900, 100, 100, 200]
    assert not any(a.reused for a in cell.answers)
    fit = fit_models([cell])[ANSWERING]
    assert (fit.a, fit.b, fit.c) == pytest.approx((1.0, 0.01, 0.1), abs=1e-3)


def test_the_cache_loads_no_prompt_to_reuse(tmp_path: Path):
    """A cached first answer leaves the model empty: the next one evaluates everything."""
    asked = [turn(i, "question", prompt_tokens=160, completion_tokens=1,
                  timestamp="2024-01-02T10:00:00") for i in range(3)]
    write_cell(tmp_path, "full_context", asked, [
        call("main:0", 160, 1, cached=True), call("main:1", 160, 1),
        call("main:2", 160, 1, latency=5.0)])
    (cell,), _ = read_cells(tmp_path)
    assert [a.reused for a in cell.answers] == [False, False, True]


def test_pool_finish_time_is_not_the_sum_over_workers():
    assert estimate_grid.pool_wall_s([3, 3, 2, 2, 2], 2) == 7
    assert estimate_grid.pool_wall_s([3, 3, 2, 2, 2], 1) == 12


def test_cached_memory_calls_are_priced_by_the_memory_models_fit():
    cell = _memory_cell()
    rates = estimate_grid.Rates()
    rates.add_cell(cell, fit_models([cell]))
    ran = sum(1.0 + 0.01 * p + 0.1 * c for p, c in MEMORY_CALLS)
    priced = 1.0 + 0.01 * 300 + 0.1 * 20  # the cached call, as the 0.5B's exact line says
    assert rates.per_turn(rates.memory_model_s) == pytest.approx((ran + priced) / 4, rel=1e-3)
    assert rates.per_turn(rates.memory_local_s) == pytest.approx(3 * 0.5 / 4, rel=1e-3)
    assert rates.memory_s_per_turn == pytest.approx((ran + priced + 1.5) / 4, rel=1e-3)


MEMORY_CALLS = [(200, 10), (400, 30), (250, 50)]


def _memory_cell():
    """A hybrid-like cell: 4 stored turns, 3 with a memory-model call that ran (each turn's
    recorded seconds: the call + 0.5 s of local work), 1 whose call the cache answered."""
    from grid_costs import CellCost

    cell = CellCost(run_id="x", suite="persona", condition="hybrid", span=1000,
                    models=("1.5b", "0.5b"), model_files=(ANSWERING, MEMORY), stored=4,
                    stored_steps=[f"main:{i}" for i in range(4)])
    for i, (p, c) in enumerate(MEMORY_CALLS):
        latency = 1.0 + 0.01 * p + 0.1 * c
        cell.memory_calls.append(Call(MEMORY, p, c, latency, False, step=f"main:{i}"))
        cell.memory_s[f"main:{i}"] = latency + 0.5
    cell.memory_calls.append(Call(MEMORY, 300, 20, 0.0001, True, step="main:3"))
    cell.memory_s["main:3"] = 0.0001
    return cell


@pytest.fixture
def tiny_spec(tmp_path: Path) -> Path:
    """A grid of the two measured conditions on a 2-topic persona history."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text("name: tiny\nsuites: [persona]\nconditions: [episodic, full_context]\n"
                    "spans: {persona: [1000]}\nseeds: [0]\nsleep_probes: false\n"
                    "llm_model: 1.5b\nmemory_llm_model: 0.5b\n"
                    "suite_options: {persona: {n_topics: 2}}\n")
    return spec


def test_projects_a_grid_from_the_measured_cells(measured: Path, tiny_spec: Path,
                                                 tmp_path: Path, capsys):
    out = tmp_path / "estimate.json"
    assert estimate_grid.main(["--results", str(measured), "--spec", str(tiny_spec),
                               "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    cells = {c["condition"]: c for c in report["cells_projected"]}
    episodic, whole = cells["episodic"], cells["full_context"]
    # episodic: every answer at the measured mean prompt (400+500+700)/3 and the suite's
    # mean answer length (1+3+2+1+1)/5, rounded; memory at the measured 0.2 s per stored turn
    assert episodic["answers_s"] == pytest.approx(episodic["answers"] * seconds(533, 2),
                                                  abs=0.1)
    assert episodic["memory_s"] == pytest.approx(0.2 * episodic["stored_turns"], abs=0.1)
    assert episodic["total_s"] == pytest.approx(episodic["answers_s"] + episodic["memory_s"],
                                                abs=0.1)
    # full_context: the clock after the history, so each answer evaluates the history added
    # since the one before and the 100 tokens besides it; in all, the history once (no cut
    # at this size) and the overhead once an answer
    n, prompt = whole["answers"], whole["answer_prompt_tokens_max"]
    assert prompt > 1000  # the whole conversation of a span-1000 history is in the prompt
    assert whole["reused_prefix_answers"] == 0  # the clock rule prices none
    assert whole["answer_evaluated_tokens"] == prompt + 100 * (n - 1)
    assert whole["answers_s"] == pytest.approx(
        n * seconds(0, 2) + 0.01 * whole["answer_evaluated_tokens"], abs=0.2)
    assert whole["answers_s"] < n * seconds(prompt, 2) / 2  # far from re-reading it each time
    assert report["two_cores"]["workers"] == 2
    assert "persona-rag-1000-s0" in report["measured"]["incomplete_skipped"]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--results", "{missing}"], "not a folder"),
    (["--results", "{empty}"], "no complete cell"),
    (["--results", "{measured}", "--spec", "nosuch"], "not a built-in spec"),
    (["--results", "{measured}", "--spec", "full"], "has no complete cell"),
    (["--results", "{measured}", "--decode-tps", "0"], "must be above 0"),
])
def test_bad_arguments_exit_2_with_one_line(measured: Path, tmp_path: Path, capsys, argv,
                                            message):
    empty = tmp_path / "empty"
    empty.mkdir()
    paths = {"missing": tmp_path / "missing", "empty": empty, "measured": measured}
    argv = [a.format(**paths) for a in argv] + ["--out", str(tmp_path / "x.json")]
    try:
        status = estimate_grid.main(argv)
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


def test_an_unwritable_out_exits_2_with_one_line(measured: Path, tiny_spec: Path,
                                                 tmp_path: Path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status = estimate_grid.main(["--results", str(measured), "--spec", str(tiny_spec),
                                 "--out", str(blocker / "x.json")])
    err = capsys.readouterr().err
    assert status == 2 and "--out" in err and err.count("\n") == 1
