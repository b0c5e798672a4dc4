"""The peers table (memlab.report.peers) on real run folders written by the runner on fakes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from peer_fakes import peer_reply  # noqa: E402
from test_runner import TinySuite, tiny_spec  # noqa: E402

from memlab.bench.base import Evidence  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import run  # noqa: E402
from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.report.peers import (  # noqa: E402
    baselines_paired,
    evidence_pieces,
    paired,
    paired_recall,
    peer_rows,
    peers_markdown,
    search_latency,
    write_peers_table,
)

CONDITIONS = ("rag", "mem0", "langmem")


class EvidenceSuite(TinySuite):
    """The runner tests' suite with each question naming its needle and answer as evidence."""

    def events(self):
        events = super().events()
        for event in events:
            if event.kind == "question":
                needle = event.metadata["evidence_indices"][0]
                answer = events[needle].text.split()[-1].rstrip(".")
                event.evidence = [Evidence(index=needle, answer=answer)]
        return events


def picky_reply(messages):
    """Right ("A", the first shown option) only for sessions whose colour reached the prompt."""
    reply = peer_reply(messages)
    if reply == "A":
        prompt = "\n".join(m.content for m in messages[:-1]).lower()
        options = messages[-1].content.split("Options:\n")[1].splitlines()[:4]
        for letter, line in zip("ABCD", options, strict=False):
            if line.split(". ", 1)[1].lower() in prompt:
                return letter
        return "D"
    return reply


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("peers-report")
    suite = EvidenceSuite(sessions=4, filler=2)
    for condition in CONDITIONS:
        run(tiny_spec(suite, condition), suite=suite, llm=FakeLLM([picky_reply]),
            embedder=HashingEmbedder(dim=384), results_dir=root, progress=False)
    return root


def test_rows_match_the_run_files(results):
    rows = peer_rows(results).set_index("condition")
    assert set(rows.index) == set(CONDITIONS)
    for condition in CONDITIONS:
        row = rows.loc[condition]
        scores = [s for s in read_jsonl(Path(row.run_dirs[0]) / "scores.jsonl")
                  if s["phase"] == "main"]
        assert row.answered_tests == len(scores) == 4
        assert row.accuracy == pytest.approx(sum(s["score"] for s in scores) / 4)
        assert row.accuracy_low <= row.accuracy <= row.accuracy_high
        assert row.evidence_pieces == 4 and row.stored_turns == 12  # 8 filler + 4 needles
    assert rows.loc["rag", "llm_calls_per_stored_turn"] == 0
    assert rows.loc["mem0", "llm_calls_per_stored_turn"] == 1  # one extraction call per add
    assert rows.loc["langmem", "llm_calls_per_stored_turn"] >= 1
    assert rows.loc["mem0", "parse_failures"] == 0 and pd_isna(rows.loc["rag", "parse_failures"])
    assert rows.loc["langmem", "cut_replies"] == 0 and pd_isna(rows.loc["rag", "cut_replies"])
    manifest = json.loads((Path(rows.loc["mem0", "run_dirs"][0]) / "manifest.json").read_text())
    assert rows.loc["mem0", "memories_written"] == manifest["memory_stats"]["memories_written"] > 0


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_paired_differences_are_on_the_same_tests_with_holm(results):
    rows = peer_rows(results)
    pairs = paired(rows, baselines=("rag",))
    assert sorted(pairs["peer"]) == ["langmem", "mem0"] and set(pairs["baseline"]) == {"rag"}
    by = rows.set_index("condition")["accuracy"]
    for p in pairs.itertuples():
        assert p.pairs == 4
        assert p.difference == pytest.approx(by[p.peer] - by["rag"])
        assert p.p_holm >= p.p


def test_evidence_by_answer_is_paired_per_piece_and_memories_against_each_other(results):
    rows = peer_rows(results)
    recall = paired_recall(rows, baselines=("rag",))
    assert sorted(recall["peer"]) == ["langmem", "mem0"] and set(recall["baseline"]) == {"rag"}
    by = rows.set_index("condition")
    for p in recall.itertuples():
        pieces = {c: evidence_pieces(by.loc[c, "run_dirs"]) for c in (p.peer, "rag")}
        assert p.pairs == len(pieces["rag"]) == 4  # one evidence piece a question
        assert p.difference == pytest.approx(by.loc[p.peer, "evidence_by_answer"]
                                             - by.loc["rag", "evidence_by_answer"])
        assert p.low <= p.difference <= p.high and p.p_holm >= p.p
    # memlab's memories against each other: each minus each one before it, Holm within the cell
    memories = baselines_paired(rows, baselines=("rag", "mem0", "langmem"))
    assert [f"{p.peer} - {p.baseline}" for p in memories.itertuples()] == [
        "mem0 - rag", "langmem - rag", "langmem - mem0"]
    accuracy = by["accuracy"]
    for p in memories.itertuples():
        assert p.difference == pytest.approx(accuracy[p.peer] - accuracy[p.baseline])
    assert baselines_paired(rows).empty  # hybrid and sleep did not run: nothing to pair


def test_markdown_and_files(results, tmp_path):
    paths = write_peers_table(results, tmp_path)
    text = paths["markdown"].read_text()
    assert text.count("\n| tiny |") == 3 + 2 and "mem0 - rag" in text  # runs + pairs
    assert "| 0 / 0 |" in text and "| -- / -- |" in text  # peers count cut replies; rag has none
    assert len(read_csv_rows(paths["rows"])) == 3
    rows = peer_rows(results)
    assert peers_markdown(rows, paired(rows)) == text


def read_csv_rows(path: Path) -> list[str]:
    return path.read_text().strip().splitlines()[1:]


def test_search_latency_from_the_benchmark_file(tmp_path):
    bench = tmp_path / "peers.json"
    bench.write_text(json.dumps({"search": [
        {"condition": "mem0", "stored": 1000, "search_p50_ms": 5.0, "search_p95_ms": 9.0},
        {"condition": "mem0", "stored": 10000, "search_p50_ms": 7.0, "search_p95_ms": 12.0}]}))
    table = search_latency(bench)
    assert table.loc["mem0", ("search_p95_ms", 10000)] == 12.0


def test_fractional_ltm_scores_get_an_interval_too(tmp_path):
    from memlab.report.peers import run_row

    (tmp_path / "manifest.json").write_text(json.dumps(
        {"condition": "rag", "suite": "ltm", "span": 1000, "seed": 0, "status": "complete"}))
    (tmp_path / "scores.jsonl").write_text("".join(
        json.dumps({"phase": "main", "test_id": f"t{i}", "score": s, "max_score": 1}) + "\n"
        for i, s in enumerate([0.0, 0.5, 1.0, 0.25, 0.0, 1.0])))
    (tmp_path / "turns.jsonl").write_text("")
    (tmp_path / "calls.jsonl").write_text("")
    row = run_row(tmp_path)
    assert row["accuracy"] == pytest.approx(2.75 / 6)
    assert 0.0 <= row["accuracy_low"] < row["accuracy"] < row["accuracy_high"] <= 1.0


def _row_of_filler_turns(run_dir, condition: str, turns: list[dict]) -> dict:
    """The peers-table row of a complete run of only filler ``turns`` (no scores, no calls)."""
    from memlab.report.peers import run_row

    (run_dir / "manifest.json").write_text(json.dumps(
        {"condition": condition, "suite": "persona", "span": 4000, "seed": 0,
         "status": "complete"}))
    (run_dir / "scores.jsonl").write_text("")
    (run_dir / "calls.jsonl").write_text("")
    (run_dir / "turns.jsonl").write_text("".join(
        json.dumps({"index": i, "phase": "main", "kind": "filler", **t}) + "\n"
        for i, t in enumerate(turns)))
    return run_row(run_dir)


def test_a_paused_turn_moves_the_mean_memory_seconds_not_the_median(tmp_path):
    seconds = [30.0, 32.0, 28.0, 31.0, 1000.0]  # the last turn waited out a paused grid
    row = _row_of_filler_turns(tmp_path, "langmem", [{"memory_latency_s": s} for s in seconds])
    assert row["memory_s_per_stored_turn"] == pytest.approx(np.mean(seconds))
    assert row["memory_s_per_stored_turn_p50"] == 31.0


def test_a_sleep_cycle_counts_in_the_memory_seconds_of_the_turn_that_set_it_off(tmp_path):
    cycle = {"phase_durations_s": {"replay": 0.5, "compression": 30.0, "decay": 1.5}}
    turns = [{"memory_latency_s": 0.01} for _ in range(4)]
    turns[1]["cycle_stats"] = cycle
    row = _row_of_filler_turns(tmp_path, "sleep", turns)
    assert row["memory_s_per_stored_turn"] == pytest.approx((4 * 0.01 + 32.0) / 4)
    assert row["memory_s_per_stored_turn_p50"] == pytest.approx(0.01)


def _calls(run_dir, paid_seconds: list[float | None]) -> None:
    """One call a stored turn: paid at the given latency, or served by the cache (None)."""
    (run_dir / "calls.jsonl").write_text("".join(json.dumps(
        {"step": f"main:{i}", "paid": s is not None, "completion": {"latency_s": s or 0.0004}})
        + "\n" for i, s in enumerate(paid_seconds)))


def test_a_call_the_response_cache_served_counts_at_the_paid_calls_mean(tmp_path):
    import pandas as pd

    from memlab.report.peers import condition_row, rows_shown

    runs = [tmp_path / "s0", tmp_path / "s1", tmp_path / "s2"]
    for run_dir in runs:
        run_dir.mkdir()
    # seed 0: two turns paid their 29 s call, two were served from the cache in no time
    _row_of_filler_turns(runs[0], "mem0", [{"memory_latency_s": s} for s in (30, 30, .02, .02)])
    _calls(runs[0], [29.0, 29.0, None, None])
    # seed 1: every call served (a cell another grid ran): nothing to go by, not timed
    _row_of_filler_turns(runs[1], "mem0", [{"memory_latency_s": 0.02}] * 4)
    _calls(runs[1], [None] * 4)
    _row_of_filler_turns(runs[2], "mem0", [{"memory_latency_s": 30.0}] * 4)
    _calls(runs[2], [29.0] * 4)
    row = condition_row(runs)
    assert row["memory_s_per_stored_turn"] == pytest.approx((6 * 30.0 + 2 * 29.02) / 8)
    assert (row["timed_runs"], row["runs"], row["cache_served_calls"]) == (2, 3, 2)
    assert row["stored_turns"] == 12  # every run's turns count as stored; 8 are timed
    shown = rows_shown(pd.DataFrame([row])).iloc[0]["memory s / stored turn (mean / median)"]
    assert shown.endswith("(2 cache-served calls at the paid calls' mean; 2 of 3 runs timed: "
                          "in the others the cache served every memory call)")
    assert condition_row(runs[1:2])["memory_s_per_stored_turn"] is None


def test_recall_latency_is_the_search_alone_even_of_a_stored_question(results):
    from memlab.report.peers import recall_seconds

    rows = peer_rows(results).set_index("condition")
    turns = read_jsonl(Path(rows.loc["mem0", "run_dirs"][0]) / "turns.jsonl")
    waits = [t["recall_latency_s"] for t in turns if t["kind"] == "question"]
    assert len(waits) == 4 and all(0 < w for w in waits)
    assert rows.loc["mem0", "recall_p50_ms"] == pytest.approx(1000 * float(np.median(waits)))
    # LTM stores its questions: memory_latency_s then includes mem0's add (seconds), recall not
    stored = {"kind": "question", "store": True, "memory_latency_s": 20.0, "recall_latency_s": 0.01}
    assert recall_seconds(stored) == 0.01
    assert recall_seconds({"store": True, "memory_latency_s": 20.0}) is None  # older runs
    assert recall_seconds({"store": False, "memory_latency_s": 0.02}) == 0.02


def test_a_cell_pools_its_seeds_and_pairs_each_test_with_its_own_seed(results, tmp_path):
    # the fixture's seed 0 runs, and seed 1 runs of rag and mem0 beside them: the tiny suite's
    # test ids repeat across seeds, so pairing on test id alone would pair 4 tests, not 8
    import shutil

    root = tmp_path / "two-seeds"
    shutil.copytree(results, root)
    suite = EvidenceSuite(sessions=4, filler=2)
    for condition in ("rag", "mem0"):
        run(tiny_spec(suite, condition, seed=1), suite=suite, llm=FakeLLM([picky_reply]),
            embedder=HashingEmbedder(dim=384), results_dir=root, progress=False)
    rows = peer_rows(root).set_index("condition")
    assert rows.loc["mem0", "seeds"] == "0, 1" and rows.loc["langmem", "seeds"] == "0"
    assert rows.loc["mem0", "answered_tests"] == 8 and rows.loc["mem0", "stored_turns"] == 24
    assert rows.loc["mem0", "evidence_pieces"] == 8
    one_seed = peer_rows(results).set_index("condition")
    assert rows.loc["mem0", "memories_written"] > one_seed.loc["mem0", "memories_written"]
    pairs = paired(peer_rows(root), baselines=("rag",)).set_index("peer")
    assert pairs.loc["mem0", "pairs"] == 8 and pairs.loc["mem0", "seeds"] == "0, 1"
    assert pairs.loc["langmem", "pairs"] == 4 and pairs.loc["langmem", "seeds"] == "0"
    assert pairs.loc["mem0", "difference"] == pytest.approx(
        rows.loc["mem0", "accuracy"] - rows.loc["rag", "accuracy"])


def test_a_packaged_model_is_shown_by_its_tier_any_other_by_its_name():
    from memlab.report.peers import forest_frame, model_label

    assert model_label("qwen2.5-coder-1.5b-instruct-q4_k_m") == "1.5B"
    assert model_label("qwen2.5-coder-0.5b-instruct-q4_k_m") == "0.5B"
    assert model_label("gpt-4o-mini") == "gpt-4o-mini"
    import pandas as pd

    pairs = pd.DataFrame([{"memory_model": "qwen2.5-coder-1.5b-instruct-q4_k_m", "seeds": "0, 1",
                           "peer": "mem0", "baseline": "rag", "pairs": 8}])
    assert forest_frame(pairs)["note"].tolist() == ["memory model 1.5B, seeds 0, 1"]
