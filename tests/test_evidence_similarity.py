"""benchmarks/evidence_similarity.py: each question's best cosine to its evidence turns, and to
the turns before it that are not its evidence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import evidence_similarity  # noqa: E402

from memlab.embed.hashing import HashingEmbedder  # noqa: E402


def turn(index: int, kind: str, text: str, evidence: list[int] | None = None) -> dict:
    return {"index": index, "kind": kind, "text": text,
            "evidence": [{"index": i} for i in evidence or []]}


def test_the_best_evidence_cosine_and_the_other_turns_before_the_question(tmp_path):
    cell = tmp_path / "ltm-rag-1000-s0"
    cell.mkdir()
    turns = [turn(0, "needle", "where is the red scarf"),
             turn(1, "filler", "lorem ipsum dolor sit amet"),
             turn(2, "needle", "completely different words here"),
             turn(3, "question", "where is the red scarf\nAnswer in JSON", evidence=[0, 2]),
             turn(4, "filler", "a turn after the question")]
    (cell / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    best, others = evidence_similarity.cell_similarities(cell, HashingEmbedder(dim=256))
    assert best == [pytest.approx(1.0)]  # the question's first line is turn 0's text
    assert len(others) == 1 and others[0] < 0.5  # turn 1 only: 0 and 2 cite, 4 comes after
    shown = evidence_similarity.summary(best + [0.2], [0.3, 0.6])
    assert shown["n"] == 2 and shown["share_at_or_above"] == {"0.3": 0.5, "0.6": 0.5}
