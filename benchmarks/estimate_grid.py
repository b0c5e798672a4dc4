"""Project how long a grid (``full`` by default) takes on this machine (2 cores, no GPU) and on
an OpenAI-compatible GPU server, from the measured runs of a finished grid.

Measured (grid_costs.py): per model, seconds per call = a + b * prompt tokens + c * completion
tokens, fitted on the calls that ran; per suite and condition, the memory's seconds and
memory-model tokens per stored turn and the mean answering prompt; per suite, completion tokens
per answer and the scorer's calls per question. Projected (grid_targets.py): every cell of the
target grid, its suite built offline, counted in stored turns and answers, with full_context's
prompts computed by full_context itself. 2 cores: the cells' seconds handed to the grid's local
pool as ``memlab grid`` does. GPU server: the projected tokens over assumed throughputs.

Run: .venv/bin/python benchmarks/estimate_grid.py --results DIR [--spec full]
     [--out benchmarks/results/grid_estimate.json] [--prefill-tps 20000] [--decode-tps 1500]
     [--needle-reply-tokens 64]
DIR: a finished grid's results folder, e.g. the standard grid's (``memlab paper --spec
standard`` writes results/standard/; it measures every condition on both generated suites).
Only complete cells are read; nothing is written there.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from grid_costs import (  # noqa: E402
    CellCost,
    LatencyFit,
    condition_key,
    effective_s,
    fit_models,
    read_cells,
)
from grid_report import build_report, hours, size_check, size_ratio, summary  # noqa: E402
from grid_targets import Target, build_suite, size_target  # noqa: E402
from seeds_common import RESULTS, machine  # noqa: E402

from memlab.bench.spec import RunSpec  # noqa: E402
from memlab.cli.common import OneLineParser, positive_int  # noqa: E402
from memlab.errors import ConfigError  # noqa: E402
from memlab.grid import by_expected_cost, default_workers  # noqa: E402
from memlab.gridspec import load_spec  # noqa: E402

# A 1.5B model served by vLLM on one data-centre GPU (A100/H100 class), bf16. Prefill is
# compute-bound at ~3 GFLOP a token (2 x parameters): 20k tokens/s is 60 TFLOP/s, a fifth of an
# A100's 312 (an H100 has 3x that). Decode is bound by reading the weights (~3 GB) every step:
# one stream makes ~150-300 tokens/s, and the aggregate grows with the concurrent streams, so
# 1.5k tokens/s needs ~8 cells running at once (``memlab grid --workers 8`` against the
# server). The 0.5B memory model is priced the same (it is faster: the estimate errs long).
PREFILL_TPS = 20_000
DECODE_TPS = 1_500
# The model's reply to a needle (the full grid lets it write them; the measured grid scripted
# them, so there is no measurement): half the Agent's 128-token reply limit.
NEEDLE_REPLY_TOKENS = 64
# Stand-ins for a condition no complete cell measured yet (a grid still running), each the
# nearest in cost: vanilla and oracle store without a model and answer from a short prompt
# (rag's is longer: the stand-in errs long); rag embeds every turn as episodic does.
PROXIES = {"vanilla": "rag", "oracle": "rag", "rag": "episodic", "sleep/probes": "sleep"}


@dataclass
class Rates:
    """One condition on one suite, summed over its measured cells."""

    cells: list[str] = field(default_factory=list)
    stored: int = 0
    memory_model_s: float = 0.0  # the memory model's calls (cached ones as the fit expects)
    memory_local_s: float = 0.0  # the rest: embeddings, stores (stays on the client machine)
    memory_calls: int = 0
    memory_prompt_tokens: int = 0
    memory_completion_tokens: int = 0
    answers: int = 0
    answer_prompt_tokens: int = 0
    answer_evaluated_tokens: int = 0  # of those, evaluated (all, where a call does not say)
    halves_s: list[float] = field(default_factory=lambda: [0.0, 0.0])  # see ``add_cell``

    def per_turn(self, value: float) -> float:
        return value / self.stored if self.stored else 0.0

    @property
    def memory_s_per_turn(self) -> float:
        return self.per_turn(self.memory_model_s + self.memory_local_s)

    @property
    def prompt_tokens_mean(self) -> float:
        return self.answer_prompt_tokens / self.answers if self.answers else 0.0

    @property
    def evaluated_tokens_mean(self) -> float:
        return self.answer_evaluated_tokens / self.answers if self.answers else 0.0

    @property
    def growth(self) -> float | None:
        """Memory seconds per stored turn in the second half of the cells' turns over the
        first half's (about 1: the cost does not grow with the store)."""
        first, second = self.halves_s
        return round(second / first, 2) if first > 0 else None

    def add_cell(self, cell: CellCost, fits: dict[str, LatencyFit]) -> None:
        by_step = {step: s for step, s in cell.memory_s.items() if step != "sleep"}
        for call in cell.memory_calls:
            priced = effective_s(call, fits)
            self.memory_model_s += priced
            if call.cached and call.step in by_step:  # recorded as ~0 s inside the step
                by_step[call.step] += priced
        recorded_calls = sum(c.latency_s for c in cell.memory_calls)
        self.memory_local_s += max(0.0, sum(cell.memory_s.values()) - recorded_calls)
        self.memory_calls += len(cell.memory_calls)
        self.memory_prompt_tokens += sum(c.prompt_tokens for c in cell.memory_calls)
        self.memory_completion_tokens += sum(c.completion_tokens for c in cell.memory_calls)
        self.cells.append(cell.run_id)
        self.stored += cell.stored
        self.answers += len(cell.answers)
        self.answer_prompt_tokens += sum(a.prompt_tokens for a in cell.answers)
        self.answer_evaluated_tokens += sum(a.tokens_in for a in cell.answers)
        if cell.stored_steps:  # the first half: steps before the middle stored turn
            middle = list(by_step).index(cell.stored_steps[len(cell.stored_steps) // 2])
            for position, seconds in enumerate(by_step.values()):
                self.halves_s[position >= middle] += seconds


@dataclass
class SuiteStats:
    """What one suite's measured cells share across conditions."""

    completion_tokens: float  # mean tokens of an answer
    scoring_s_per_question: float
    scoring_tokens_per_question: tuple[float, float]  # prompt, completion
    history_scale: float  # full_context's history in the model's tokens / the estimate
    prompt_overhead: float  # full_context's prompt minus its history


def measure(cells: list[CellCost], fits: dict[str, LatencyFit]
            ) -> tuple[dict[tuple[str, str], Rates], dict[str, SuiteStats]]:
    """Per (suite, condition) rates and per suite stats of the measured cells."""
    rates: dict[tuple[str, str], Rates] = {}
    for cell in cells:
        rates.setdefault((cell.suite, cell.condition), Rates()).add_cell(cell, fits)
    stats = {}
    for suite in sorted({c.suite for c in cells}):
        own = [c for c in cells if c.suite == suite]
        answers = [a for c in own for a in c.answers]
        scoring = [s for c in own for s in c.scoring_calls]
        questions = max(1, sum(c.questions for c in own))
        checks = [h for c in own for h in c.history_check]
        estimate = sum(h[2] for h in checks)
        stats[suite] = SuiteStats(
            completion_tokens=sum(a.completion_tokens for a in answers) / max(1, len(answers)),
            scoring_s_per_question=sum(effective_s(s, fits) for s in scoring) / questions,
            scoring_tokens_per_question=(sum(s.prompt_tokens for s in scoring) / questions,
                                         sum(s.completion_tokens for s in scoring) / questions),
            history_scale=sum(h[1] for h in checks) / estimate if estimate else 1.0,
            prompt_overhead=(sum(h[0] - h[1] for h in checks) / len(checks) if checks else 0.0))
    return rates, stats


def reused_answer_s(cells: list[CellCost]) -> float | None:
    """Measured mean seconds of an answer that reused the previous prompt (None: none ran)."""
    ran = [a.latency_s for c in cells for a in c.answers if a.reused and not a.cached]
    return sum(ran) / len(ran) if ran else None


def rates_for(rates: dict[tuple[str, str], Rates], suite: str, key: str) -> tuple[Rates, str]:
    """The rates of ``key`` on ``suite``, else on another measured suite, else (a grid still
    running) those of its ``PROXIES`` stand-in; and where they come from ("suite/condition")."""
    for wanted in (key, PROXIES.get(key)):
        if (suite, wanted) in rates:
            return rates[(suite, wanted)], f"{suite}/{wanted}"
        for (other, measured), found in sorted(rates.items()):
            if measured == wanted:
                return found, f"{other}/{wanted}"
    raise ConfigError(f"condition {key!r} has no complete cell in the measured grid: "
                      "nothing to project it from")


def cell_cost(target: Target, rates: Rates, stats: SuiteStats, fit: LatencyFit,
              reused_s: float, size_checks: list[dict]) -> dict:
    """Projected seconds (2 cores, the measured pool) and tokens of one target cell; also
    with each answer scaled by the measured/fitted ratio of its prompt size."""
    answers_s = [reused_s if a.reused else fit.expected_s(a.evaluated, a.completion_tokens)
                 for a in target.answers]
    scaled = sum(s if a.reused else s * size_ratio(size_checks, a.prompt_tokens)
                 for s, a in zip(answers_s, target.answers, strict=True))
    seconds = {
        "answers_s": sum(answers_s),
        "memory_s": target.stored * rates.memory_s_per_turn,
        "scoring_s": target.questions * stats.scoring_s_per_question}
    scoring_prompt, scoring_completion = stats.scoring_tokens_per_question
    return {
        "run_id": target.cell.run_id, "suite": target.cell.suite, "span": target.cell.span,
        "condition": target.key, "window": target.window, "stored_turns": target.stored,
        "answers": len(target.answers), "questions": target.questions,
        "needle_replies": target.needles, "total_s": sum(seconds.values()), **seconds,
        "total_s_size_calibrated": sum(seconds.values()) - seconds["answers_s"] + scaled,
        "answer_prompt_tokens": sum(a.prompt_tokens for a in target.answers),
        "answer_prompt_tokens_max": max((a.prompt_tokens for a in target.answers), default=0),
        "answer_evaluated_tokens": sum(a.evaluated for a in target.answers),
        "answer_completion_tokens": sum(a.completion_tokens for a in target.answers),
        "reused_prefix_answers": sum(a.reused for a in target.answers),
        "memory_prompt_tokens": target.stored * rates.per_turn(rates.memory_prompt_tokens),
        "memory_completion_tokens": target.stored * rates.per_turn(
            rates.memory_completion_tokens),
        "scoring_prompt_tokens": target.questions * scoring_prompt,
        "scoring_completion_tokens": target.questions * scoring_completion,
        "memory_local_s": target.stored * rates.per_turn(rates.memory_local_s),
    }


def pool_wall_s(seconds: list[float], workers: int) -> float:
    """When ``workers`` processes finish cells handed out in this order, each taking the next
    cell as soon as it is free (as the grid's process pool does)."""
    free = [0.0] * max(1, workers)
    for cost in seconds:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def gpu_projection(costs: list[dict], prefill_tps: float, decode_tps: float,
                   local_workers: int) -> dict:
    """The model calls as tokens over the assumed throughputs, plus the memories' own work
    (embeddings, stores), which stays on this machine's cores."""
    prompt = sum(c["answer_prompt_tokens"] + c["memory_prompt_tokens"]
                 + c["scoring_prompt_tokens"] for c in costs)
    completion = sum(c["answer_completion_tokens"] + c["memory_completion_tokens"]
                     + c["scoring_completion_tokens"] for c in costs)
    model_s = prompt / prefill_tps + completion / decode_tps
    local_s = sum(c["memory_local_s"] for c in costs) / local_workers
    return {"prompt_tokens": round(prompt), "completion_tokens": round(completion),
            "answer_prompt_tokens": round(sum(c["answer_prompt_tokens"] for c in costs)),
            "answer_completion_tokens": round(sum(c["answer_completion_tokens"]
                                                  for c in costs)),
            "memory_model_prompt_tokens": round(sum(c["memory_prompt_tokens"] for c in costs)),
            "memory_model_completion_tokens": round(sum(c["memory_completion_tokens"]
                                                        for c in costs)),
            "assumed_prefill_tokens_per_s": prefill_tps,
            "assumed_decode_tokens_per_s": decode_tps,
            "model_s": round(model_s), "local_cpu_s": round(local_s),
            "wall_h": round((model_s + local_s) / 3600, 2)}


@dataclass
class Projection:
    """What the measured cells give (fits, rates, stats) and the projected cells' costs, in
    the pool's order."""

    fits: dict[str, LatencyFit]
    rates: dict[tuple[str, str], Rates]
    stats: dict[str, SuiteStats]
    reused_s: float | None  # measured mean of an answer that reused the previous prompt
    answering_model: str
    needle_tokens: int
    size_checks: list[dict] = field(default_factory=list)  # grid_report.size_check
    costs: list[dict] = field(default_factory=list)
    workers: int = 1
    back_test: dict = field(default_factory=dict)


def project(spec_name: str, cells: list[CellCost], needle_tokens: int) -> Projection:
    """Every cell of grid ``spec_name`` priced with the rates of the measured ``cells``.

    Raises:
        ConfigError: the target grid uses other models, or a suite or condition that has no
            complete measured cell.
    """
    spec = load_spec(spec_name)
    measured_models = {c.models for c in cells}
    if measured_models != {(spec.llm_model, spec.memory_llm_model)}:
        raise ConfigError(f"grid {spec.name!r} answers with {spec.llm_model} (memory: "
                          f"{spec.memory_llm_model}); the measured cells used "
                          f"{sorted(measured_models, key=str)}: their latencies do not carry over")
    fits = fit_models(cells)
    rates, stats = measure(cells, fits)
    answering = cells[0].model_files[0]
    p = Projection(fits=fits, rates=rates, stats=stats, reused_s=reused_answer_s(cells),
                   answering_model=answering, needle_tokens=needle_tokens,
                   size_checks=size_check(cells, fits[answering]))
    targets = by_expected_cost(spec.cells())
    p.workers = default_workers(targets)
    suites: dict = {}
    p.costs = [price(cell, p, suites) for cell in targets]
    p.back_test = back_test(cells, p, suites)
    return p


def price(cell: RunSpec, p: Projection, suites: dict) -> dict:
    """One cell sized on its suite (``suites``: those built so far) and priced."""
    if cell.suite not in p.stats:
        raise ConfigError(f"suite {cell.suite!r} has no complete cell in the measured grid")
    own, source = rates_for(p.rates, cell.suite, condition_key(cell.condition,
                                                                cell.probes_sleep))
    suite = p.stats[cell.suite]
    fit = p.fits[p.answering_model]
    target = size_target(cell, build_suite(cell, suites), prompt_tokens=own.prompt_tokens_mean,
                         evaluated_tokens=own.evaluated_tokens_mean,
                         completion_tokens=suite.completion_tokens,
                         needle_tokens=p.needle_tokens, history_scale=suite.history_scale,
                         prompt_overhead=suite.prompt_overhead)
    reused_s = p.reused_s if p.reused_s is not None else fit.expected_s(
        suite.prompt_overhead, suite.completion_tokens)  # none measured: the message alone
    return cell_cost(target, own, suite, fit, reused_s, p.size_checks) | {"rates_from": source}


def back_test(cells: list[CellCost], p: Projection, suites: dict) -> dict:
    """The measured cells projected as if they had not run, beside what they cost (cached
    calls priced as the projection prices them). In-sample: it checks the sizing and the
    answer model, not the extrapolation to other spans."""
    fit = p.fits[p.answering_model]
    rows: dict[str, dict] = {}
    for cell in cells:
        memory = Rates()
        memory.add_cell(cell, p.fits)
        answers = sum(a.latency_s if not a.cached else p.reused_s if a.reused and p.reused_s
                      else fit.expected_s(a.tokens_in, a.completion_tokens)
                      for a in cell.answers)
        measured = (answers + memory.memory_model_s + memory.memory_local_s
                    + sum(effective_s(s, p.fits) for s in cell.scoring_calls))
        row = rows.setdefault(f"{cell.suite}/{cell.condition}",
                              {"cells": 0, "measured_s": 0.0, "projected_s": 0.0})
        row["cells"] += 1
        row["measured_s"] += measured
        row["projected_s"] += price(RunSpec.parse(cell.spec), p, suites)["total_s"]
    total = {k: sum(r[k] for r in rows.values()) for k in ("cells", "measured_s", "projected_s")}
    return {key: {"cells": r["cells"], "measured_h": hours(r["measured_s"]),
                  "projected_h": hours(r["projected_s"]),
                  "projected_over_measured": round(r["projected_s"] / r["measured_s"], 2)}
            for key, r in sorted(rows.items()) + [("all", total)]}


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def estimate(args: argparse.Namespace) -> dict:
    """The results file's content for the parsed arguments.

    Raises:
        ConfigError: ``--results`` is not a folder or holds no complete cell, or the grid
            cannot be projected from it (see ``project``).
    """
    if not args.results.is_dir():
        raise ConfigError(f"--results {str(args.results)!r}: not a folder")
    cells, others = read_cells(args.results)
    if not cells:
        raise ConfigError(f"--results {str(args.results)!r}: no complete cell (a run folder "
                          "whose manifest.json says \"complete\")")
    projection = project(args.spec, cells, args.needle_reply_tokens)
    walls = {kind: pool_wall_s([c[key] for c in projection.costs], projection.workers)
             for kind, key in (("linear", "total_s"),
                               ("size_calibrated", "total_s_size_calibrated"))}
    gpu = gpu_projection(projection.costs, args.prefill_tps, args.decode_tps,
                         projection.workers)
    return build_report(projection, cells, others, spec=args.spec, results=str(args.results),
                        walls=walls, gpu=gpu)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="estimate_grid.py", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True,
                        help="a finished grid's results folder, one run folder per cell (e.g. "
                             "the standard grid's results/standard); only complete cells are "
                             "read")
    parser.add_argument("--spec", default="full",
                        help="the grid to project: quick, standard, full, peers or a YAML spec")
    parser.add_argument("--out", type=Path, default=RESULTS / "grid_estimate.json")
    parser.add_argument("--prefill-tps", type=positive_float, default=PREFILL_TPS,
                        help="GPU server: prompt tokens per second (assumed)")
    parser.add_argument("--decode-tps", type=positive_float, default=DECODE_TPS,
                        help="GPU server: completion tokens per second, all streams (assumed)")
    parser.add_argument("--needle-reply-tokens", type=positive_int, default=NEEDLE_REPLY_TOKENS,
                        help="length of the model's reply to a needle (not measured)")
    args = parser.parse_args(argv)
    try:
        report = estimate(args)
    except ConfigError as exc:
        print(f"estimate_grid.py: error: {exc}", file=sys.stderr)
        return 2
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**report, "machine": machine()}, indent=2) + "\n",
                            encoding="utf-8")
    except OSError as exc:
        print(f"estimate_grid.py: error: --out {str(args.out)!r}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    print(summary(report))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
