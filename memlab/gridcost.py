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
- full_context reads each conversation's history once, before its first answer (LoCoMo asks
  every question after the conversation): priced by the position model below; each answer
  then costs an answer over a reused prefix (``REUSED_PREFIX_ANSWER_S``).

The generated suites (LTM, persona; the ``scaling`` grid) are priced from the standard grid's
measured calls (``benchmarks/results/grid_estimate.json``, 50 complete cells at LTM 1k and
persona 4k) and the prefix-reuse measurements after issue 41 (docs/efficiency.md,
``benchmarks/results/prefill.json``):

- an answer of a memory condition (its prompt does not grow with the span: recall returns a
  fixed number of items): grid_estimate's answering fit, 1.23 x (-1.54 + 0.0186 s x prompt
  tokens + 0.045 s x completion tokens), at that suite and condition's measured mean prompt
  (``measured.rates``) and the suite's mean answer length (LTM 26.8 tokens, persona 1); LTM's
  scorer adds 0.26 s a question (``measured.suites``);
- full_context reads its history about once (efficiency.md: 1.09-1.18x the conversation): it
  pays the conversation's tokens once per cell (the suites' estimate scaled to the model's
  tokenizer: LTM x1.17, persona x1.02, LoCoMo x1.0, ``HISTORY_SCALE``) plus, where the
  conversation outgrows its window (``memlab.lab.window_for_cut_history``; persona and LoCoMo
  the 32,768 maximum), half the history budget again at every block cut; each answer then
  costs the measured 6.31 s of an answer over a reused prefix (``REUSED_PREFIX_ANSWER_S``).
  A token's cost grows with its position (attention reads every token before it):
  ``benchmarks/bench_prefill_position.py`` measured the 1.5B on 2 quiet cores at
  0.0295 s + 2.45e-6 s x position a token (``prefill_seconds``): 34 tokens/s at the start,
  12 at 22k. A read of 16k tokens from empty takes 786 s, of 32k 2,198 s;
- a memory condition's work per stored turn: sleep 0.80 s, episodic_summary 0.60 s, hybrid
  0.29 s at LTM 1k after the prefix work (efficiency.md); rag 0.023 s and episodic 0.019 s
  (embeddings only, grid_estimate). Persona: the LTM rate times persona's / LTM's rate in the
  same standard grid (episodic_summary 2.19/2.43, sleep 2.40/4.79, hybrid 4.48/1.27; rag
  0.015, episodic 0.012). grid_estimate saw episodic_summary's and sleep's cost per turn grow
  within a cell (x1.69, x1.31 in the second half): at 16k-32k stores the projection is low;
- LTM's stored turns grow with the span (its filler: 17.7 tokens a turn at 1k, 252 at 32k), and
  the rates above were measured at 1k. A memory's recall returns turns, so its answering prompt
  grows with them, and a memory that reads each turn pays for its tokens: each token a stored
  turn has above 17.7 adds ``PROMPT_PER_TURN_TOKEN`` prompt tokens to an answer and scales the
  ``TOKEN_SHARE`` of its seconds a turn (``CellRates.at``), both fitted on the scaling grid's
  complete cells (see the constants). Sleep's and episodic_summary's compressions read every
  turn: on all 136 cells (``benchmarks/results/turn_sizes.json``) about a fifth of their
  seconds a turn grows with its tokens (0.19, 0.21), which the plan does not price yet, so it
  is low for them at 16k-32k (4.6 s a turn measured at 32k at one thread beside another cell);
  the scaling grid as a whole took 23.5 h of wall time against the 24.4 h projected.

A suite without measured rates is projected as nothing (None). The projection assumes quiet
cores: another job on them stretches every call (2-3x seen here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CellRates:
    """Measured seconds of one condition on one suite (see the module docstring).

    ``answer_s`` and ``per_turn_s`` were measured where a stored turn averaged ``turn_tokens``
    (None: they do not depend on it); a suite whose turns are longer (LTM's filler grows with
    the span) adds ``answer_s_per_turn_token`` to an answer for each token more (recall returns
    turns: the prompt grows), and scales the ``token_share`` of ``per_turn_s`` that reading the
    turn costs (``at``)."""

    answer_s: float
    per_turn_s: float = 0.0
    reads_history: bool = False  # pays the history it reads (``history_reading``)
    turn_tokens: float | None = None
    answer_s_per_turn_token: float = 0.0
    token_share: float = 0.0

    def at(self, turn_tokens: float | None) -> tuple[float, float]:
        """(seconds an answer, seconds a stored turn) where stored turns average
        ``turn_tokens`` (None: as measured)."""
        if turn_tokens is None or self.turn_tokens is None:
            return self.answer_s, self.per_turn_s
        ratio = turn_tokens / self.turn_tokens
        return (self.answer_s + self.answer_s_per_turn_token * (turn_tokens - self.turn_tokens),
                self.per_turn_s * (1 - self.token_share + self.token_share * ratio))


JUDGE_CALL_S = 1.05
REUSED_PREFIX_ANSWER_S = 6.31
# the 1.5B reading a prompt on 2 quiet cores, seconds a token at position p: a + b p
# (benchmarks/results/prefill_position.json, flash attention off as the 1.5B runs)
PREFILL_S_AT_0 = 0.0295
PREFILL_S_PER_POSITION = 2.45e-6
LOCOMO_RATES = {
    "vanilla": CellRates(0.451), "oracle": CellRates(1.424),
    "full_context": CellRates(REUSED_PREFIX_ANSWER_S, reads_history=True),
    "rag": CellRates(3.087, 0.017), "episodic": CellRates(4.117, 0.017),
    "episodic_summary": CellRates(4.062, 0.73), "sleep": CellRates(6.249, 0.754),
    "hybrid": CellRates(3.303, 2.41),
}


ANSWER_S_PER_PROMPT_TOKEN = 1.23 * 0.0186


def fitted_answer_s(prompt_tokens: float, completion_tokens: float) -> float:
    """Seconds of one 1.5B answer on this machine: grid_estimate's fit (see the docstring)."""
    return 1.23 * (-1.54 + 0.045 * completion_tokens) + ANSWER_S_PER_PROMPT_TOKEN * prompt_tokens


HISTORY_SCALE = {"ltm": 1.17, "persona": 1.02, "locomo": 1.0}  # estimate -> the model's tokens
SCORER_S = {"ltm": 0.26, "persona": 0.0}
ANSWER_TOKENS = {"ltm": 26.8, "persona": 1.0}
MEAN_PROMPT = {  # measured mean answering prompt per condition (grid_estimate, standard grid)
    "ltm": {"vanilla": 81, "oracle": 208, "rag": 445, "episodic": 536,
            "episodic_summary": 640, "sleep": 913, "hybrid": 481},
    "persona": {"vanilla": 153, "oracle": 234, "rag": 480, "episodic": 560,
                "episodic_summary": 671, "sleep": 964, "hybrid": 562}}
PER_TURN_S = {
    "ltm": {"rag": 0.023, "episodic": 0.019, "episodic_summary": 0.60, "sleep": 0.80,
            "hybrid": 0.29},
    "persona": {"rag": 0.015, "episodic": 0.012, "episodic_summary": round(0.60 * 2.19 / 2.43, 3),
                "sleep": round(0.80 * 2.40 / 4.79, 3), "hybrid": round(0.29 * 4.48 / 1.27, 3)}}


# LTM's stored turns grow with the span (its filler: 17.7 tokens a turn at 1k, 252 at 32k, the
# plan's estimate, ``mean_turn_tokens``); the rates above were measured at 1k. Fitted on the
# scaling grid's complete cells (2026-12-04, ``benchmarks/fit_turn_sizes.py``): answer prompt
# tokens added per token of a stored turn (least squares over spans: rag 403 + 1.45 x tokens,
# episodic 398 + 4.70 x, hybrid 440 + 1.91 x; sleep from the standard grid's 913 at 1k and the
# scaling grid's 2,100 at 32k), and the share of a memory's seconds per turn at 1k that grows with
# the turn (seconds per turn = a + b x tokens over spans: rag 0.12, episodic 0.13; hybrid's
# cells were mostly served from the cache, so its share is not measured and stays 0).
RATE_TURN_TOKENS = {"ltm": 17.7}
PROMPT_PER_TURN_TOKEN = {"ltm": {"rag": 1.45, "episodic": 4.70, "hybrid": 1.91, "sleep": 5.07}}
TOKEN_SHARE = {"ltm": {"rag": 0.12, "episodic": 0.13}}


def generated_rates(suite: str) -> dict[str, CellRates]:
    """A generated suite's rates by condition, from the constants above."""
    per_token = PROMPT_PER_TURN_TOKEN.get(suite, {})
    rates = {c: CellRates(round(fitted_answer_s(p, ANSWER_TOKENS[suite]) + SCORER_S[suite], 3),
                          PER_TURN_S[suite].get(c, 0.0), turn_tokens=RATE_TURN_TOKENS.get(suite),
                          answer_s_per_turn_token=round(
                              ANSWER_S_PER_PROMPT_TOKEN * per_token.get(c, 0.0), 4),
                          token_share=TOKEN_SHARE.get(suite, {}).get(c, 0.0))
             for c, p in MEAN_PROMPT[suite].items()}
    rates["full_context"] = CellRates(REUSED_PREFIX_ANSWER_S + SCORER_S[suite],
                                      reads_history=True)
    return rates


# suite -> (rates by condition, judge calls per answered question)
SUITE_RATES: dict[str, tuple[dict[str, CellRates], int]] = {
    "locomo": (LOCOMO_RATES, 2), "ltm": (generated_rates("ltm"), 0),
    "persona": (generated_rates("persona"), 0)}


def prefill_seconds(start: int, end: int) -> float:
    """Seconds the 1.5B takes to read context positions ``start``..``end`` (the docstring's
    position model: the integral of a + b p)."""
    return PREFILL_S_AT_0 * (end - start) + PREFILL_S_PER_POSITION * (end * end - start * start) / 2


def history_reading(turns: list[tuple[int, bool]], budget: int) -> tuple[int, float]:
    """(tokens, seconds) full_context evaluates over one conversation of (tokens, answered)
    turns.

    An answer evaluates what its prompt does not share with the last one: the turns since
    then, at the positions they take, or the whole history after a block cut (the history
    passing ``budget`` keeps half of it, and the new prefix is read again). Turns cut before
    any answer are never read.
    """
    kept = read_upto = evaluated = 0
    seconds = 0.0
    for tokens, answered in turns:
        if answered:
            evaluated += kept - read_upto
            seconds += prefill_seconds(read_upto, kept)
            read_upto = kept
        if kept + tokens > budget:
            kept, read_upto = min(kept, budget // 2), 0
        kept += tokens
    return evaluated, seconds


def cell_seconds(suite: str, condition: str, *, stored_turns: int, answered: int,
                 history_s: float = 0.0, turn_tokens: float | None = None) -> float | None:
    """Projected seconds of one cell (None: no measured rates for this suite or condition).

    Args:
        stored_turns: the turns the cell replays into memory (every conversation's).
        answered: the questions it answers (and its judges judge).
        history_s: the seconds full_context takes to read its history (``history_reading``).
        turn_tokens: the tokens a stored turn averages (``mean_turn_tokens``; None: as where
            the rates were measured).
    """
    rates, judges = SUITE_RATES.get(suite, ({}, 0))
    own = rates.get(condition)
    if own is None:
        return None
    answer_s, per_turn_s = own.at(turn_tokens)
    return (stored_turns * per_turn_s + answered * (answer_s + judges * JUDGE_CALL_S)
            + (history_s if own.reads_history else 0.0))


def mean_turn_tokens(suite: Any, events: list[Any]) -> float:
    """The tokens a turn stored from ``events`` averages (text and reply; the suites' estimate
    scaled to the model's tokenizer, ``HISTORY_SCALE``)."""
    from memlab.bench.schedule import estimate_tokens

    stored = [e for e in events if e.kind != "question"]
    scale = HISTORY_SCALE.get(suite.name, 1.0)
    return scale * sum(estimate_tokens(e.text) + estimate_tokens(e.reply or "")
                       for e in stored) / max(len(stored), 1)


def rates_text(suite: str) -> str:
    """The rates a suite's projection uses, as ``--plan`` states them ("" when none)."""
    rates, judges = SUITE_RATES.get(suite, ({}, 0))
    if not rates:
        return ""
    parts = [f"{name} {r.answer_s:g}"
             + (f" + {r.per_turn_s:g}/turn" if r.per_turn_s else "")
             + (f" + history read at {PREFILL_S_AT_0:g} s + {PREFILL_S_PER_POSITION:g} s x "
                "position a token" if r.reads_history else "")
             for name, r in rates.items()]
    growing = [f"{name} {r.answer_s_per_turn_token:g} s an answer"
               + (f" and {r.per_turn_s * r.token_share / r.turn_tokens:.2g} s a stored turn"
                  if r.token_share and r.turn_tokens else "")
               for name, r in rates.items() if r.answer_s_per_turn_token or r.token_share]
    if growing:
        reference = next(r.turn_tokens for r in rates.values() if r.turn_tokens)
        parts.append(f"where a stored turn averages more than {reference:g} tokens, for each "
                     f"token more: {', '.join(growing)} (the scaling grid's cells)")
    if suite != "locomo":
        return (f"seconds per answer (+ per stored turn) from the standard grid's calls and "
                f"the prefix-reuse measurements: {', '.join(parts)}")
    return (f"seconds per answer (+ per stored turn), measured on conv-26 on 2 quiet cores: "
            f"{', '.join(parts)}; {judges} judge calls per answer at {JUDGE_CALL_S:g} s")


def full_context_reading(suite: Any, span: int, events: list[Any],
                         answered: list[Any]) -> tuple[int, int, int, float]:
    """(window, longest conversation's tokens, tokens evaluated, seconds reading them) of
    full_context over ``events``, of which it answers ``answered``.

    Each user's conversation (``SuiteEvent.user_id``: LoCoMo's ten) has its own agent and
    history, read on its own. The window is the one ``memlab.lab`` gives full_context (the
    32,768 maximum where any turn may be asked about, else ``window_for_cut_history``); turns
    are counted with the suites' estimate scaled to the model's tokenizer (``HISTORY_SCALE``),
    each with its chat format.
    """
    from memlab.bench.schedule import estimate_tokens
    from memlab.bench.spec import MAX_WINDOW
    from memlab.lab import window_for_cut_history
    from memlab.memory.full_context import FullContextConfig

    config = FullContextConfig()
    window = MAX_WINDOW if suite.whole_history else window_for_cut_history(span)
    scale = HISTORY_SCALE.get(suite.name, 1.0)
    asked = {id(e) for e in answered}
    conversations: dict[Any, list[tuple[int, bool]]] = {}
    for e in events:
        # a question joins the history only when it is answered and stored (memlab.bench.runner)
        kept = e.kind != "question" or (e.store and id(e) in asked)
        tokens = (int(scale * (estimate_tokens(e.text) + estimate_tokens(e.reply or "")))
                  + config.turn_overhead_tokens) if kept else 0
        conversations.setdefault(e.user_id, []).append((tokens, id(e) in asked))
    readings = [history_reading(turns, window - config.reserve_tokens)
                for turns in conversations.values()]
    return (window, max(sum(t for t, _ in turns) for turns in conversations.values()),
            sum(tokens for tokens, _ in readings), sum(seconds for _, seconds in readings))
