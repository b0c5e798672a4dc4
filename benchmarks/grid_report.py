"""estimate_grid.py's results file and printed summary: the projection, the measurements it
rests on, and every assumption, stated with the numbers it uses."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from grid_costs import CellCost, LatencyFit

GROWTH_FLAG = 1.3  # per-turn memory cost this much higher in a cell's second half: it grows
MATERIAL_S = 0.1  # seconds per stored turn below which growth is not worth naming
NEEDLE_REPLY_LIMIT = 128  # the Agent's reply limit
PROMPT_BINS = (0, 1000, 2000, 3000, 5000)  # answer prompt sizes the fit is checked on


def hours(seconds: float) -> float:
    return round(seconds / 3600, 2)


def totals_by(costs: list[dict], *keys: str) -> list[dict]:
    """Cells, projected 2-core cell hours and answers, summed per value of ``keys``."""
    groups: dict[tuple, dict] = {}
    for cost in costs:
        row = groups.setdefault(tuple(cost[k] for k in keys),
                                {**{k: cost[k] for k in keys}, "cells": 0, "total_s": 0.0,
                                 "answers_s": 0.0, "memory_s": 0.0, "answers": 0})
        row["cells"] += 1
        for name in ("total_s", "answers_s", "memory_s", "answers"):
            row[name] += cost[name]
    return [{**{k: v for k, v in row.items() if not k.endswith("_s")},
             **{k.replace("_s", "_h"): hours(v) for k, v in row.items() if k.endswith("_s")}}
            for row in groups.values()]


def size_check(cells: list[CellCost], fit: LatencyFit) -> list[dict]:
    """Measured against fitted answer seconds per prompt size (``PROMPT_BINS``, the whole
    prompt: the context the evaluated tokens attend to): where prefill outgrows the line."""
    ran = [a for c in cells for a in c.answers if not a.cached and not a.reused]
    rows = []
    for low, high in zip(PROMPT_BINS, PROMPT_BINS[1:] + (None,), strict=True):
        own = [a for a in ran if low <= a.prompt_tokens < (high or float("inf"))]
        if own:
            measured = sum(a.latency_s for a in own) / len(own)
            fitted = sum(fit.expected_s(a.tokens_in, a.completion_tokens)
                         for a in own) / len(own)
            rows.append({"from_tokens": low, "to_tokens": high, "answers": len(own),
                         "measured_mean_s": round(measured, 1), "fitted_mean_s": round(fitted, 1),
                         "measured_over_fitted": round(measured / fitted, 2) if fitted else 1.0})
    return rows


def size_ratio(checks: list[dict], prompt_tokens: int) -> float:
    """The measured/fitted ratio of the size ``prompt_tokens`` falls in (past the largest
    measured size: the largest's)."""
    ratio = 1.0
    for row in checks:
        if prompt_tokens >= row["from_tokens"]:
            ratio = row["measured_over_fitted"]
    return ratio


def cell_speeds(cells: list[CellCost], fit: LatencyFit) -> dict:
    """Per cell, its answers' median seconds over the fit's median: how much other load on the
    machine slowed the cell (1: as fast as the typical call)."""
    ratios = {}
    for cell in cells:
        own = [a.latency_s / fit.median_s(a.tokens_in, a.completion_tokens)
               for a in cell.answers if not a.cached and not a.reused
               and fit.median_s(a.tokens_in, a.completion_tokens) > 0]
        if own:
            ratios[cell.run_id] = round(float(np.median(own)), 2)
    return ratios


def cached_counts(cells: list[CellCost]) -> dict:
    """Calls the response cache answered (they record ~0 s), per kind."""
    kinds = {"answers": [a for c in cells for a in c.answers],
             "memory_model": [m for c in cells for m in c.memory_calls],
             "scoring": [s for c in cells for s in c.scoring_calls]}
    return {kind: {"cached": sum(c.cached for c in calls), "calls": len(calls),
                   "cached_max_latency_s": round(max((c.latency_s for c in calls if c.cached),
                                                     default=0.0), 4)}
            for kind, calls in kinds.items()}


def rates_table(rates: dict) -> list[dict]:
    return [{"suite": suite, "condition": key, "cells": len(r.cells), "stored_turns": r.stored,
             "memory_s_per_turn": round(r.memory_s_per_turn, 3),
             "memory_model_s_per_turn": round(r.per_turn(r.memory_model_s), 3),
             "memory_local_s_per_turn": round(r.per_turn(r.memory_local_s), 4),
             "memory_calls_per_turn": round(r.per_turn(r.memory_calls), 3),
             "memory_prompt_tokens_per_turn": round(r.per_turn(r.memory_prompt_tokens), 1),
             "memory_completion_tokens_per_turn": round(r.per_turn(
                 r.memory_completion_tokens), 1),
             "answer_prompt_tokens_mean": round(r.prompt_tokens_mean),
             "memory_cost_growth_second_half_over_first": r.growth}
            for (suite, key), r in sorted(rates.items())]


def growing(rates: dict) -> list[str]:
    """Suite/condition pairs whose memory cost per stored turn grows with the store."""
    return [f"{suite}/{key} x{r.growth}" for (suite, key), r in sorted(rates.items())
            if r.growth and r.growth >= GROWTH_FLAG and r.memory_s_per_turn >= MATERIAL_S]


def assumptions(p: Any, cells: list[CellCost], walls: dict, gpu: dict) -> list[str]:
    """Every assumption of the projection, with the numbers it uses."""
    return (_answer_assumptions(p, cells, walls) + _memory_assumptions(p, cells)
            + _grid_assumptions(p, walls, gpu))


def _answer_assumptions(p: Any, cells: list[CellCost], walls: dict) -> list[str]:
    fit = p.fits[p.answering_model]
    speeds = sorted(cell_speeds(cells, fit).values()) or [1.0]
    biggest = p.size_checks[-1] if p.size_checks else {}
    longest = max((c["answer_prompt_tokens_max"] for c in p.costs), default=0)
    needles = sum(c["needle_replies"] for c in p.costs)
    scales = ", ".join(f"{s} x{st.history_scale:.2f} (+{st.prompt_overhead:.0f} tokens besides "
                       "the history)" for s, st in p.stats.items())
    return [
        "A cell costs its answering calls + its memory's work per stored turn + the scorer's "
        "calls, from the latencies the runs recorded per call and per turn; the manifests' "
        "started_at/finished_at span interrupted attempts and are not used. Kernel start-up "
        "and model loading (seconds per cell) are not counted.",
        f"Answering call (1.5B on 1 thread) = {fit.a:.2f} + {fit.b:.4f} s x prompt tokens "
        "evaluated (those the call records as reused from llama.cpp's cache left out; all of "
        f"them in runs that record none) + "
        f"{fit.c:.3f} s x completion tokens: a median regression over {fit.n} calls that ran "
        f"(prompts {fit.prompt_tokens_range[0]}-{fit.prompt_tokens_range[1]} tokens; median "
        f"|residual| {fit.median_abs_residual_s:.1f} s, residual SD {fit.residual_sd_s:.0f} s "
        f"from calls stalled by other load), times {fit.slowdown:.2f} = measured total / fitted "
        "total, so projected totals include the stalls as they occurred. The measured cells "
        f"answered at {speeds[0]}x-{speeds[-1]}x the fit's typical time (median per cell; "
        "other jobs shared the CPU at times, and long prompts run slower than the line): the "
        "projection carries that mix forward.",
        "Prompt processing on a CPU grows faster than linearly with prompt length (attention); "
        f"from {biggest.get('from_tokens')} prompt tokens calls took "
        f"{biggest.get('measured_over_fitted')}x the fit ({biggest.get('answers')} calls, up "
        f"to {fit.prompt_tokens_range[1]} tokens). Projected prompts reach {longest} tokens "
        "(full_context), so the linear fit is a lower bound. Scaling each projected answer by "
        "the measured/fitted ratio of its prompt size (measured.answer_fit_by_prompt_size; "
        "past the largest size, that size's) gives a 2-core wall of "
        f"{hours(walls['size_calibrated'])} h instead of {hours(walls['linear'])} h: closer for "
        "the sizes measured, still a lower bound beyond them. Not measured further: the CPU "
        "is running an experiment.",
        "A full_context answer evaluates what its prompt does not share with the previous "
        "answer's (the clock comes after the history, and memlab parks each prompt family's "
        "state while other calls run): the history added since, plus the prompt besides the "
        "history (over-counted by the system prompt, which is reused); the whole prompt at "
        "the first answer and after a cut. Measured cells recorded before reuse was counted "
        "price an answer at the same shown minute at " + (
            f"their measured mean {p.reused_s:.1f} s." if p.reused_s is not None else
            "the fit (none is in these cells)."),
        "Other conditions' answering prompt: the measured mean per suite and condition, for "
        "questions and the model's needle replies alike (recall returns a fixed number of "
        "items and recent turns, so it does not grow with the span).",
        "full_context's prompts: full_context itself run over each target suite, tokens "
        f"counted with the suites' estimate scaled to the measured histories ({scales}), the "
        "window sized as lab.run sizes it. Where the conversation outgrows the 32,768-token "
        "window (persona 32k), full_context cuts it to half its budget at the first question, "
        f"so the longest projected prompt is {longest} tokens, not a full window.",
        "Answer length: the measured mean per suite "
        f"({', '.join(f'{s} {st.completion_tokens:.1f}' for s, st in p.stats.items())} tokens). "
        f"The model's replies to needles ({needles} in the grid) were scripted in the measured "
        f"grid, so their length is assumed: {p.needle_tokens} tokens (at the {NEEDLE_REPLY_LIMIT}"
        "-token limit the 2-core cell time grows by ~"
        f"{hours(needles * (NEEDLE_REPLY_LIMIT - p.needle_tokens) * fit.c * fit.slowdown)} h).",
    ]


def _memory_assumptions(p: Any, cells: list[CellCost]) -> list[str]:
    spans = {suite: sorted({c.span for c in cells if c.suite == suite}) for suite in p.stats}
    per_turn = {f"{s}/{k}": round(r.memory_s_per_turn, 2) for (s, k), r in sorted(p.rates.items())
                if r.memory_s_per_turn >= MATERIAL_S}
    return [
        "Calls answered by the response cache record ~0 s; memory-model and scoring ones are "
        "priced by their model's fit, answers are projected from the fit anyway; the target "
        "grid is assumed to hit no cache (counts under measured.cached_calls).",
        "Memory cost per stored turn (memory-model calls + embeddings and stores; a Table 2 "
        f"cell's forced sleep included), per suite and condition as measured (spans {spans}), "
        "times the target cell's stored turns, each suite its own (they differ); seconds per "
        f"turn where material: {per_turn}. Growing with the store (second half of a cell's "
        f"turns over the first, >= {GROWTH_FLAG}): {growing(p.rates) or 'none'}; for those, "
        "larger stores cost more per turn than projected (target cells store up to "
        f"{max(c['stored_turns'] for c in p.costs)} turns, the measured ones up to "
        f"{max(c.stored for c in cells)}). The memory model's tokens per stored turn were "
        "measured with scripted needle replies; the model's own replies make a few stored "
        "turns longer.",
    ]


def _grid_assumptions(p: Any, walls: dict, gpu: dict) -> list[str]:
    stand_ins = sorted({f"{c['suite']}/{c['condition']} <- {c['rates_from']}" for c in p.costs
                        if c["rates_from"] != f"{c['suite']}/{c['condition']}"})
    share = walls["linear"] / max(1e-9, sum(c["total_s"] for c in p.costs))
    return [
        f"2 cores: memlab grid's local pool runs {p.workers} worker processes "
        "(grid.default_workers) and gives each model cores // workers = 1 thread "
        "(gridpool.pool_map); the measured grid ran that way, so its latencies already include "
        "two cells sharing the 2 cores. Wall = the pool's finish time over the cells in "
        f"memlab's order (grid.by_expected_cost): {share:.2f} of the sum, not the whole sum.",
        "Suites are built with the token estimate (as gridspec.plan does), not the model's "
        "tokenizer: turn counts differ a little from a real run's.",
        f"Conditions priced from another suite or a stand-in: {stand_ins or 'none'}.",
        "GPU server: the tokens are projected from measurements; the throughputs are assumed "
        f"({gpu['assumed_prefill_tokens_per_s']} prompt and {gpu['assumed_decode_tokens_per_s']}"
        " completion tokens/s aggregate for a 1.5B model under vLLM on one data-centre GPU, "
        "the 0.5B memory model priced the same). The aggregate needs ~8 cells at once "
        "(memlab grid --workers 8 against the server); no prefix caching is assumed; the "
        "memories' own work (embeddings, stores) stays on this machine's 2 cores and is added "
        "without overlap.",
    ]


def build_report(p: Any, cells: list[CellCost], others: list[str], *, spec: str,
                 results: str, walls: dict, gpu: dict) -> dict:
    """The results file's content (``walls``: the 2-core wall seconds, linear and
    size-calibrated)."""
    fit = p.fits[p.answering_model]
    total = sum(c["total_s"] for c in p.costs)
    return {
        "question": f"How long grid {spec!r} takes on this machine (2 cores, no GPU) and on an "
                    "OpenAI-compatible GPU server, projected from a finished grid's runs",
        "spec": spec, "cells": len(p.costs),
        "two_cores": {"cell_hours_sum": hours(total), "workers": p.workers,
                      "threads_per_worker": 1, "wall_hours": hours(walls["linear"]),
                      "wall_days": round(walls["linear"] / 86400, 2),
                      "size_calibrated": {
                          "cell_hours_sum": hours(sum(c["total_s_size_calibrated"]
                                                      for c in p.costs)),
                          "wall_hours": hours(walls["size_calibrated"]),
                          "wall_days": round(walls["size_calibrated"] / 86400, 2)},
                      "by_suite_span": totals_by(p.costs, "suite", "span"),
                      "by_condition": totals_by(p.costs, "condition")},
        "gpu_server": gpu,
        "assumptions": assumptions(p, cells, walls, gpu),
        "measured": {"results": results, "complete_cells": len(cells),
                     "incomplete_skipped": others, "cached_calls": cached_counts(cells),
                     "latency_fits": {model: {**asdict(f), "role": "answering" if model ==
                                              p.answering_model else "memory"}
                                      for model, f in p.fits.items()},
                     "answer_fit_by_prompt_size": p.size_checks,
                     "back_test": p.back_test,
                     "cell_speed_vs_fit": cell_speeds(cells, fit),
                     "reused_prefix_answer_s": p.reused_s and round(p.reused_s, 2),
                     "rates": rates_table(p.rates),
                     "suites": {s: asdict(st) for s, st in p.stats.items()}},
        "cells_projected": [{k: round(v, 1) if isinstance(v, float) else v
                             for k, v in c.items()} for c in p.costs],
    }


def summary(report: dict) -> str:
    """The printed summary."""
    two, gpu = report["two_cores"], report["gpu_server"]
    measured = report["measured"]
    lines = [f"grid {report['spec']}: {report['cells']} cells, projected from "
             f"{measured['complete_cells']} complete cells of {measured['results']} "
             f"({len(measured['incomplete_skipped'])} incomplete skipped)",
             f"2 cores: cells sum to {two['cell_hours_sum']} h; {two['workers']} workers -> "
             f"wall ~{two['wall_hours']} h ({two['wall_days']} days) with the linear fit, "
             f"~{two['size_calibrated']['wall_hours']} h ({two['size_calibrated']['wall_days']} "
             "days) scaled by prompt size; both lower bounds (prefill beyond the measured "
             "prompts grows faster than either)"]
    lines += [f"  {r['suite']} {r['span']}: {r['cells']} cells, {r['total_h']} h "
              f"(answers {r['answers_h']} h, memory {r['memory_h']} h)"
              for r in two["by_suite_span"]]
    lines.append("  by condition: " + ", ".join(
        f"{r['condition']} {r['total_h']} h" for r in sorted(two["by_condition"],
                                                            key=lambda r: -r["total_h"])))
    lines.append(f"GPU server (ASSUMED {gpu['assumed_prefill_tokens_per_s']} prompt / "
                 f"{gpu['assumed_decode_tokens_per_s']} completion tokens/s): "
                 f"{gpu['prompt_tokens']:,} prompt + {gpu['completion_tokens']:,} completion "
                 f"tokens (projected) -> {gpu['model_s']} s of model time + "
                 f"{gpu['local_cpu_s']} s of local memory work = ~{gpu['wall_h']} h")
    back = measured["back_test"]["all"]
    lines.append(f"back-test: the {back['cells']} measured cells, projected the same way, come "
                 f"to {back['projected_h']} h against {back['measured_h']} h measured "
                 "(in-sample; per condition under measured.back_test)")
    cached = measured["cached_calls"]
    lines.append("cached calls in the measured grid (~0 s, priced by the fit): " + ", ".join(
        f"{k} {v['cached']}/{v['calls']}" for k, v in cached.items()))
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in report["assumptions"]]
    return "\n".join(lines)
