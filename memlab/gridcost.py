"""A grid's model time, projected before it runs (``memlab grid --plan``).

The method is ``benchmarks/estimate_grid.py``'s: a cell costs its memory's work per stored turn
(the memory model's calls and embeddings), its answering calls and the scorer's calls per
answered question. estimate_grid fits those rates on a finished grid's recorded calls; the
plan cannot wait for one, so it carries the rates measured on the one LoCoMo run there is:
conv-26, 419 turns, 20 answered questions per condition, 1.5B answering and judging, 0.5B
memory model, 2 quiet cores (docs/suites.md, "The documented benchmark run"):

- an answer: that run's median seconds per answered question (memory search + answer);
- a judge call: 1.05 s (vanilla's 30 s for 20 answers and 20 judge calls, less its answers'
  0.45 s median); LoCoMo asks two judges per answer;
- per stored turn: the run's seconds less its answers and judge calls, over its 419 turns
  (rag's 0.017 s for episodic too: 9 of episodic's answers were served from the cache);
- full_context pays its history's prefix once per conversation: 346 s for conv-26's 419
  turns, 0.83 s a turn; its answers then reuse it.

A suite without measured rates is projected as nothing (None). The projection assumes quiet
cores: another job on them stretches every call (2-3x seen here).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CellRates:
    """Measured seconds of one condition on one suite (see the module docstring)."""

    answer_s: float
    per_turn_s: float = 0.0
    prefix_per_turn_s: float = 0.0  # paid once per conversation (full_context)


JUDGE_CALL_S = 1.05
LOCOMO_RATES = {
    "vanilla": CellRates(0.451), "oracle": CellRates(1.424),
    "full_context": CellRates(1.759, prefix_per_turn_s=0.826),
    "rag": CellRates(3.087, 0.017), "episodic": CellRates(4.117, 0.017),
    "episodic_summary": CellRates(4.062, 0.73), "sleep": CellRates(6.249, 0.754),
    "hybrid": CellRates(3.303, 2.41),
}
# suite -> (rates by condition, judge calls per answered question)
SUITE_RATES: dict[str, tuple[dict[str, CellRates], int]] = {"locomo": (LOCOMO_RATES, 2)}


def cell_seconds(suite: str, condition: str, *, stored_turns: int,
                 answered: int) -> float | None:
    """Projected seconds of one cell (None: no measured rates for this suite or condition).

    Args:
        stored_turns: the turns the cell replays into memory (every conversation's).
        answered: the questions it answers (and its judges judge).
    """
    rates, judges = SUITE_RATES.get(suite, ({}, 0))
    own = rates.get(condition)
    if own is None:
        return None
    per_answer = own.answer_s + judges * JUDGE_CALL_S
    return stored_turns * (own.per_turn_s + own.prefix_per_turn_s) + answered * per_answer


def rates_text(suite: str) -> str:
    """The rates a suite's projection uses, as ``--plan`` states them ("" when none)."""
    rates, judges = SUITE_RATES.get(suite, ({}, 0))
    if not rates:
        return ""
    parts = [f"{name} {r.answer_s:g}"
             + (f" + {r.per_turn_s + r.prefix_per_turn_s:g}/turn" if r.per_turn_s
                or r.prefix_per_turn_s else "") for name, r in rates.items()]
    return (f"seconds per answer (+ per stored turn), measured on conv-26 on 2 quiet cores: "
            f"{', '.join(parts)}; {judges} judge calls per answer at {JUDGE_CALL_S:g} s")
