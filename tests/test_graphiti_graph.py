"""benchmarks/graphiti_graph.py: a graphiti run's facts traced to the turns they name, and the
funnel from an evidence turn to the answer reaching the prompt."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import graphiti_graph  # noqa: E402


def question(index, evidence, memory_events, kind="colours"):
    return {"index": index, "kind": "question", "test_type": kind, "text": f"question {index}",
            "reply": "a reply", "answered": True, "memory_events": memory_events,
            "evidence": [{"index": i, "reached": reached} for i, reached in evidence]}


def test_the_funnel_counts_each_stage_of_each_evidence_pair():
    turns = [{"index": 0, "kind": "needle", "text": "My favourite colour is Peach.",
              "turn_number": 1},
             {"index": 1, "kind": "needle", "text": "I go by Quillon now.", "turn_number": 2},
             {"index": 2, "kind": "filler", "text": "Lovely weather.", "turn_number": 3},
             question(3, [(0, True)], [0]),
             question(4, [(1, False), (2, False)], [2], kind="name_list")]
    by_turn = {1: [{"fact": "Nisha loves Peach", "valid_at": None, "invalid_at": None}],
               2: [{"fact": "Jordan works at Acme", "valid_at": None, "invalid_at": None}]}
    answers = {3: {0: "Peach"}, 4: {1: "Quillon", 2: None}}
    out = graphiti_graph.funnel(turns, by_turn, answers, examples=1)
    every = out["all"]
    assert (every["n"], every["n_answer"]) == (3, 2)
    counts = {s: (every[s]["successes"], every[s]["n"]) for s in graphiti_graph.STAGES}
    # turn 2 has no fact; turn 1's fact lost the name; only question 3 reached its answer
    assert counts == {"stored": (2, 3), "stored_answer": (1, 2), "recalled": (2, 3),
                      "reached": (1, 3)}
    names = out["name_list"]
    assert names["stored_answer"]["successes"] == 0 and names["recalled"]["successes"] == 1
    assert len(names["examples"]) == 1 and names["examples"][0]["facts"][0]["fact"] == (
        "Jordan works at Acme")
    assert out["colours"]["stored"]["low"] < 1.0  # an interval, not a bare 1/1


def test_a_graph_is_read_from_the_run_folder_with_each_fact_under_its_turn(tmp_path):
    pytest.importorskip("graphiti_core")
    from memlab.embed.hashing import HashingEmbedder
    from memlab.llm.fake import FakeLLM
    from memlab.memory.base import MEMORIES, Exchange, Scope
    from memlab.testing.fakes import peer_reply

    run = tmp_path / "ltm-graphiti-1000-s0"
    memory = MEMORIES.create("graphiti", scope=Scope(user_id="alice"),
                             llm=FakeLLM([peer_reply]), embedder=HashingEmbedder(dim=384),
                             workdir=run / "store" / "attempt-1")
    start = datetime(2025, 3, 3, 9, tzinfo=UTC)
    for turn, text in enumerate(("Let's chat about football.",
                                 "My sister is called Quenby and she lives in Tromso.",
                                 "My car is a green Volvo estate from 2011."), 1):
        memory.observe(Exchange(user=text, assistant="Noted.", turn_number=turn,
                                timestamp=start + timedelta(days=turn)))
    memory.close()
    counts, by_turn = graphiti_graph.read_graph(run)
    assert counts["episodes"] == 3 and counts["facts"] == 3 and counts["invalidated"] == 0
    assert any("Quenby" in f["fact"] for f in by_turn[2])
    assert any("Volvo" in f["fact"] for f in by_turn[3])
    assert not any("Volvo" in f["fact"] for f in by_turn.get(2, []))
    assert by_turn[3][0]["valid_at"].startswith("2025-03-06")  # the turn's reference time


def test_a_folder_that_is_not_a_graphiti_run_is_refused_in_one_line(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"condition": "rag"}))
    for cell in (tmp_path / "missing", tmp_path):
        done = subprocess.run([sys.executable, str(BENCHMARKS / "graphiti_graph.py"),
                               "--cells", str(cell)], capture_output=True, text=True)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
