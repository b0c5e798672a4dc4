"""The peers table: mem0, LangMem and graphiti against memlab's rag, hybrid and sleep on the same
questions.

Reads finished runs (``manifest.json``, ``turns.jsonl``, ``scores.jsonl``, ``calls.jsonl``) under
a results folder and, optionally, ``benchmarks/results/peers.json`` (search latency at 1k/10k
stored memories). Runs are compared within a cell: the same suite, span and memory model, its
seeds pooled (the standard size runs seeds 0-2: a test is then its seed and test id).

Per condition and cell (``peer_rows``, its runs of each seed pooled): answered tests and accuracy
with its interval (``stats.score_ci``: Wilson for 0/1 scores, a clipped t interval for GoodAI's fractional LTM scores); evidence recall by
answer text (the share of evidence pieces whose answer reached the prompt: the one measure that
applies to a memory without provenance, so every condition is judged by it here); prompt tokens
per answer; LLM calls and memory seconds (mean and median) per stored turn (every statement
turn: persona's filler, LTM's filler and needles; the calls of their steps less the answer of a
turn the model replied to; a call the response cache served, which took no time, counted at the
mean of the run's paid memory calls: ``stored_turn_seconds``); recall latency p50/p95 over the
questions (``recall_seconds``);
parse failures and failed turns, and replies cut at the token limit (peers: from the manifest's
``memory_stats``; runs made before it was counted show none). ``paired`` adds each peer's
accuracy difference from each baseline on the tests both answered (exact McNemar, Newcombe
interval, Holm-corrected within the cell), ``paired_recall`` the same on evidence recall by
answer (per evidence piece), and ``baselines_paired`` memlab's memories against each other
(hybrid - rag, sleep - rag, sleep - hybrid).

The paper (``memlab.report.write_paper``) adds ``peer_tables`` to its tables and draws
``forest_frame`` as its ``peers`` figure whenever the results folder holds a complete mem0 or
LangMem run (``has_peers``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import cycle_seconds
from memlab.bench.tables import probes_run
from memlab.llm.weights import PACKAGED_MODELS
from memlab.memory.base import PEERS
from memlab.report.data import run_dirs as runs_under
from memlab.stats import holm, mcnemar, paired_bootstrap, proportion, score_ci

BASELINES = ("rag", "hybrid", "sleep")
CELL = ["suite", "span", "memory_model"]  # a cell pools its seeds


def run_folders(results_dir: str | Path) -> list[Path]:
    """Folders under ``results_dir`` (any depth) holding a complete run (not a Table 2 run: it
    answers the same questions as its cell's sleep run and feeds Table 2 only)."""
    found = []
    if not Path(results_dir).is_dir():
        return found
    for folder in runs_under(results_dir):
        manifest = json.loads((folder / "manifest.json").read_text())
        if (manifest.get("status") == "complete" and not probes_run(manifest)
                and (folder / "scores.jsonl").exists()):
            found.append(folder)
    return found


def answered_scores(run_dir: Path) -> dict[str, float]:
    """test id -> score in [0, 1] of the tests answered in the main phase."""
    out = {}
    for line in read_jsonl(run_dir / "scores.jsonl"):
        if line.get("phase") == "main" and line.get("answered", True):
            out[str(line["test_id"])] = float(line["score"]) / float(line.get("max_score") or 1)
    return out


def pooled_scores(run_dirs: list[Path] | tuple[Path, ...]) -> dict[str, float]:
    """``answered_scores`` of the runs of one condition and cell, one per seed, each test id
    qualified by its run's seed (``"s1/colours-2"``): seeds may reuse test ids."""
    out = {}
    for run_dir in run_dirs:
        seed = json.loads((Path(run_dir) / "manifest.json").read_text())["seed"]
        out |= {f"s{seed}/{test}": v for test, v in answered_scores(Path(run_dir)).items()}
    return out


def recall_seconds(turn: dict[str, Any]) -> float | None:
    """The memory search a question waited for: ``recall_latency_s``; in runs made before it
    was recorded, ``memory_latency_s`` of a question that was not stored (of a stored one it
    includes the store)."""
    if "recall_latency_s" in turn:
        return turn["recall_latency_s"]
    return None if turn.get("store") else turn.get("memory_latency_s")


def memory_seconds(turn: dict[str, Any]) -> float:
    """What storing a turn cost: ``memory_latency_s`` plus the sleep cycle it set off, if any
    (sleep consolidates after the turn, outside the turn's own memory latency)."""
    return turn["memory_latency_s"] + cycle_seconds(turn.get("cycle_stats"))


def _memory_calls(turns: list[dict], calls: list[dict]) -> int:
    # stored turns: every statement the conversation feeds the memory (persona's filler, LTM's
    # filler and needles); their steps' calls are memory calls, but for the answer of a turn the
    # model replied to (LTM's needles outside scripted replies)
    observed = [t for t in turns if t.get("kind") != "question" and t.get("phase") == "main"]
    steps = {f"main:{t['index']}" for t in observed}
    return sum(1 for c in calls if c.get("step") in steps) - sum(
        1 for t in observed if t.get("prompt_tokens"))


def stored_turn_seconds(turns: list[dict], calls: list[dict]) -> tuple[list[float], int] | None:
    """Each stored turn's ``memory_seconds``, a memory call the response cache served (which
    took no time) counted at the mean latency of the run's paid memory calls; and how many were
    so counted. None when the cache served some and the run paid none to go by.

    A stored turn the model replied to (its answer is a call of the same step) adds its served
    calls at nothing and its paid ones to no mean: its step's calls are not all memory calls.
    """
    by_step: dict[str, list[dict]] = {}
    for call in calls:
        by_step.setdefault(str(call.get("step")), []).append(call)
    observed = [t for t in turns if t.get("kind") != "question" and t.get("phase") == "main"]
    steps = [[] if t.get("prompt_tokens") else by_step.get(f"main:{t['index']}", [])
             for t in observed]
    paid = [latency for step in steps for c in step if c.get("paid") is not False
            and (latency := (c.get("completion") or {}).get("latency_s")) is not None]
    served = [sum(c.get("paid") is False for c in step) for step in steps]
    if sum(served) and not paid:
        return None
    mean = sum(paid) / len(paid) if paid else 0.0
    return [memory_seconds(t) + n * mean for t, n in zip(observed, served, strict=True)], sum(
        served)


def _sum(values: list[Any]) -> Any:
    """The sum of the values present; None when none is (runs recorded before it was counted)."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _cost_fields(runs: list[tuple[list[dict], list[dict], dict[str, Any]]]) -> dict[str, Any]:
    """Cost columns over ``runs`` (each its main-phase turns, its calls, its memory_stats)."""
    turns = [t for run_turns, _, _ in runs for t in run_turns]
    observed = [t for t in turns if t.get("kind") != "question" and t.get("phase") == "main"]
    memory_calls = sum(_memory_calls(run_turns, calls) for run_turns, calls, _ in runs)
    per_turn = memory_calls / len(observed) if observed else None
    timed = [x for run_turns, calls, _ in runs
             if (x := stored_turn_seconds(run_turns, calls)) is not None]
    seconds = [s for run_seconds, _ in timed for s in run_seconds]
    waits = [recall_seconds(t) for t in turns if t.get("kind") == "question"]
    recall_ms = [1000 * s for s in waits if s is not None]
    stats = [s for _, _, s in runs]
    llm = [s.get("llm") or {} for s in stats]
    failures = _sum([(lm.get("parse_failures", 0) + s.get("failed_turns", 0)) if s else None
                     for s, lm in zip(stats, llm, strict=True)])
    return {
        "stored_turns": len(observed),
        "llm_calls_per_stored_turn": per_turn,
        # mean: the memory's cost per turn; median: a typical turn, unmoved by the few turns that
        # waited out a paused or shared machine (a paused grid's turn counts the pause)
        "memory_s_per_stored_turn": float(np.mean(seconds)) if seconds else None,
        "memory_s_per_stored_turn_p50": float(np.median(seconds)) if seconds else None,
        "timed_runs": len(timed), "runs": len(runs),
        "cache_served_calls": sum(imputed for _, imputed in timed),
        "recall_p50_ms": float(np.percentile(recall_ms, 50)) if recall_ms else None,
        "recall_p95_ms": float(np.percentile(recall_ms, 95)) if recall_ms else None,
        "parse_failures": failures,
        "cut_replies": _sum([lm.get("cut_replies") for lm in llm]),
        "memories_written": _sum([s.get("memories_written") for s in stats]),
    }


def run_row(run_dir: Path) -> dict[str, Any]:
    """One run's row of the peers table (see the module docstring)."""
    return condition_row([run_dir])


def condition_row(run_dirs: list[Path]) -> dict[str, Any]:
    """The row of one condition in one cell: its runs (one per seed) pooled."""
    manifests = [json.loads((Path(d) / "manifest.json").read_text()) for d in run_dirs]
    manifest = manifests[0]
    per_run = [[t for t in read_jsonl(Path(d) / "turns.jsonl") if t.get("phase") == "main"]
               for d in run_dirs]
    turns = [t for run_turns in per_run for t in run_turns]
    scores = pooled_scores(run_dirs)
    accuracy = score_ci(list(scores.values())) if scores else None
    pieces = [float(bool(e.get("answer_in_prompt"))) for t in turns
              if t.get("kind") == "question" for e in t.get("evidence") or []]
    recall = proportion(pieces)
    answers = [t["prompt_tokens"] for t in turns if t.get("kind") == "question"
               and t.get("answered", True) and not t.get("error")]
    return {
        "condition": manifest["condition"], "suite": manifest["suite"],
        "span": manifest["span"], "seeds": ", ".join(str(m["seed"]) for m in manifests),
        "memory_model": (manifest.get("memory_llm") or {}).get("model"),
        "answered_tests": len(scores),
        "accuracy": float(np.mean(list(scores.values()))) if scores else None,
        "accuracy_low": accuracy.low if accuracy else None,
        "accuracy_high": accuracy.high if accuracy else None,
        "evidence_pieces": recall.n, "evidence_by_answer": recall.estimate,
        "evidence_low": recall.low, "evidence_high": recall.high,
        "prompt_tokens_per_answer": float(np.mean(answers)) if answers else None,
        **_cost_fields([(run_turns, read_jsonl(Path(d) / "calls.jsonl"),
                         m.get("memory_stats") or {})
                        for run_turns, d, m in zip(per_run, run_dirs, manifests, strict=True)]),
        "run_dirs": tuple(str(d) for d in run_dirs),
    }


def peer_rows(results_dir: str | Path, conditions: tuple[str, ...] = PEERS + BASELINES
              ) -> pd.DataFrame:
    """One row per condition and cell (its complete runs of each seed pooled) of ``conditions``
    under ``results_dir``."""
    groups: dict[tuple, list[tuple[int, Path]]] = {}
    for folder in run_folders(results_dir):
        m = json.loads((folder / "manifest.json").read_text())
        key = (m["condition"], m["suite"], m["span"], (m.get("memory_llm") or {}).get("model"))
        groups.setdefault(key, []).append((int(m["seed"]), folder))
    rows = [condition_row([folder for _, folder in sorted(runs)]) for runs in groups.values()]
    frame = pd.DataFrame(rows, columns=None if rows else ["condition", *CELL])
    return frame[frame["condition"].isin(conditions)].reset_index(drop=True)


def has_peers(rows: pd.DataFrame) -> bool:
    """Whether ``rows`` (``peer_rows``) hold a run of mem0, LangMem or graphiti."""
    return bool(rows["condition"].isin(PEERS).any())


def paired(rows: pd.DataFrame, baselines: tuple[str, ...] = BASELINES) -> pd.DataFrame:
    """Each peer against each baseline of its cell on the tests both answered (its seeds
    pooled): difference (peer - baseline), its 95% interval, p and Holm-adjusted p within the
    cell."""
    return _paired(rows, _peer_pairs(baselines), pooled_scores)


def paired_recall(rows: pd.DataFrame, baselines: tuple[str, ...] = BASELINES) -> pd.DataFrame:
    """``paired`` on evidence recall by answer: each peer against each baseline of its cell on
    the evidence pieces of the questions both were asked (``evidence_pieces``), each piece 1
    when its answer reached the prompt."""
    return _paired(rows, _peer_pairs(baselines), evidence_pieces)


def baselines_paired(rows: pd.DataFrame, baselines: tuple[str, ...] = BASELINES
                     ) -> pd.DataFrame:
    """memlab's memories against each other in a cell, on the tests both answered: each
    baseline minus each one before it (hybrid - rag, sleep - rag, sleep - hybrid), Holm within
    the cell; in the columns of ``paired`` (``peer`` the first of the two)."""
    pairs = [(later, earlier) for i, earlier in enumerate(baselines)
             for later in baselines[i + 1:]]
    return _paired(rows, pairs, pooled_scores)


def _peer_pairs(baselines: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(peer, base) for peer in PEERS for base in baselines]


def evidence_pieces(run_dirs: list[Path] | tuple[Path, ...]) -> dict[str, float]:
    """Per evidence piece of the main phase's questions (``"s1/17/0"``: seed, turn, piece), 1.0
    when its answer reached the prompt (``answer_in_prompt``), else 0.0."""
    out = {}
    for run_dir in run_dirs:
        seed = json.loads((Path(run_dir) / "manifest.json").read_text())["seed"]
        for turn in read_jsonl(Path(run_dir) / "turns.jsonl"):
            if turn.get("phase") == "main" and turn.get("kind") == "question":
                out |= {f"s{seed}/{turn['index']}/{i}": float(bool(e.get("answer_in_prompt")))
                        for i, e in enumerate(turn.get("evidence") or [])}
    return out


def _paired(rows: pd.DataFrame, pairs: list[tuple[str, str]],
            outcomes: Callable[[tuple[str, ...]], dict[str, float]]) -> pd.DataFrame:
    """Each (first, second) of ``pairs`` present in a cell compared on the keys of
    ``outcomes`` both hold (exact McNemar with Newcombe's interval for 0/1 outcomes, else the
    paired bootstrap): first - second, Holm within the cell."""
    out = []
    for _, cell in rows.groupby(CELL, dropna=False):
        by_condition = {r.condition: r for r in cell.itertuples()}
        present = [(a, b) for a, b in pairs if a in by_condition and b in by_condition]
        values = {c: outcomes(by_condition[c].run_dirs) for c in {c for p in present for c in p}}
        family = []
        for first_name, second_name in present:
            mine, theirs = values[first_name], values[second_name]
            shared = sorted(set(mine) & set(theirs))
            first, second = [theirs[t] for t in shared], [mine[t] for t in shared]
            binary = all(v in (0.0, 1.0) for v in first + second)
            test = mcnemar(first, second) if binary else paired_bootstrap(first, second)
            family.append({**{k: getattr(by_condition[first_name], k) for k in CELL},
                           "seeds": _shared_seeds(shared), "peer": first_name,
                           "baseline": second_name, "pairs": test.n,
                           "difference": test.estimate, "low": test.low, "high": test.high,
                           "p": test.p_value, "method": test.method})
        for row, adjusted in zip(family, holm([r["p"] for r in family]), strict=True):
            out.append({**row, "p_holm": adjusted})
    return pd.DataFrame(out)


def _shared_seeds(tests: list[str]) -> str:
    """The seeds of seed-qualified test ids (``pooled_scores``), as ``"0, 1, 2"``."""
    return ", ".join(sorted({t.split("/", 1)[0][1:] for t in tests}, key=int))


def search_latency(bench_json: str | Path) -> pd.DataFrame:
    """Search p50/p95 (ms) per condition and store size from ``bench_peers.py``'s results."""
    data = json.loads(Path(bench_json).read_text())
    frame = pd.DataFrame(data.get("search", []))
    if frame.empty:
        return frame
    return frame.pivot_table(index="condition", columns="stored",
                             values=["search_p50_ms", "search_p95_ms"])


def model_label(name: Any) -> Any:
    """A packaged model's tier for its file name ("1.5B" for qwen2.5-coder-1.5b-instruct-q4_k_m),
    any other name as it is."""
    return {m.name: m.size.upper() for m in PACKAGED_MODELS.values()}.get(name, name)


def _pct(value: Any, low: Any = None, high: Any = None) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "--"
    text = f"{100 * value:.0f}%"
    return text if low is None or np.isnan(low) else f"{text} ({100 * low:.0f}-{100 * high:.0f})"


def _num(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "--"
    return f"{value:,.{digits}f}"


def rows_shown(rows: pd.DataFrame) -> pd.DataFrame:
    """``peer_rows`` as a reader sees them: percentages with their 95% interval, n, costs."""
    return pd.DataFrame([{
        "suite": r.suite, "memory model": model_label(r.memory_model), "seeds": r.seeds,
        "condition": r.condition,
        "accuracy (95% CI)": _pct(r.accuracy, r.accuracy_low, r.accuracy_high),
        "n": r.answered_tests,
        "evidence by answer (95% CI)": _pct(r.evidence_by_answer, r.evidence_low,
                                            r.evidence_high),
        "evidence pieces": r.evidence_pieces,
        "prompt tokens / answer": _num(r.prompt_tokens_per_answer, 0),
        "LLM calls / stored turn": _num(r.llm_calls_per_stored_turn, 2),
        "memory s / stored turn (mean / median)": f"{_num(r.memory_s_per_stored_turn, 2)} / "
                                                  f"{_num(r.memory_s_per_stored_turn_p50, 2)}"
                                                  + _timed(r),
        "recall p50 / p95 ms": f"{_num(r.recall_p50_ms)} / {_num(r.recall_p95_ms)}",
        "parse failures / replies cut": f"{_num(r.parse_failures, 0)} / {_num(r.cut_replies, 0)}",
    } for r in rows.itertuples()], columns=ROWS_SHOWN)


def _timed(row: Any) -> str:
    """What a row's seconds stand on, when not every call was paid (``stored_turn_seconds``)."""
    timed, runs = getattr(row, "timed_runs", None), getattr(row, "runs", None)
    served = getattr(row, "cache_served_calls", None)
    notes = []
    if served is not None and not pd.isna(served) and served:
        notes.append(f"{int(served)} cache-served call{'s' if served != 1 else ''} at the paid "
                     "calls' mean")
    if timed is not None and not pd.isna(timed) and timed != runs:
        notes.append(f"{int(timed)} of {int(runs)} runs timed: in the others the cache served "
                     "every memory call")
    return f" ({'; '.join(notes)})" if notes else ""


ROWS_SHOWN = ["suite", "memory model", "seeds", "condition", "accuracy (95% CI)", "n",
              "evidence by answer (95% CI)", "evidence pieces", "prompt tokens / answer",
              "LLM calls / stored turn", "memory s / stored turn (mean / median)",
              "recall p50 / p95 ms", "parse failures / replies cut"]


def pairs_shown(pairs: pd.DataFrame, unit: str = "pairs", label: str = "peer - baseline",
                digits: int = 0) -> pd.DataFrame:
    """``paired`` (or ``paired_recall``, ``baselines_paired``) as a reader sees it: the
    difference in percentage points with its interval, to ``digits`` decimals; ``unit`` names
    what was paired, ``label`` the two conditions."""
    def points(value: float, sign: str = "") -> str:
        return f"{100 * value:{sign}.{digits}f}"

    return pd.DataFrame([{
        "suite": p.suite, "memory model": model_label(p.memory_model), "seeds": p.seeds,
        label: f"{p.peer} - {p.baseline}", unit: p.pairs,
        "difference (95% CI)": f"{points(p.difference, '+')} pp ({points(p.low)} to "
                               f"{points(p.high)})",
        "p": f"{p.p:.2f}", "p (Holm)": f"{p.p_holm:.2f}",
    } for p in pairs.itertuples()], columns=["suite", "memory model", "seeds", label, unit,
                                              "difference (95% CI)", "p", "p (Holm)"])


def _pipe_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(["| " + " | ".join(frame.columns) + " |", "|---" * len(frame.columns) + "|",
                      *lines]) + "\n"


def peers_markdown(rows: pd.DataFrame, pairs: pd.DataFrame) -> str:
    """The peers table as markdown: one line per run, then the paired differences."""
    text = _pipe_table(rows_shown(rows))
    return text if pairs.empty else text + "\n" + _pipe_table(pairs_shown(pairs))


def peer_tables(results_dir: str | Path) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """The paper's peers tables, name -> (numbers, shown): ``peers`` (``peer_rows``),
    ``peers_paired`` (``paired``), ``peers_paired_recall`` (``paired_recall``) and
    ``memories_paired`` (``baselines_paired``); none when ``results_dir`` holds no mem0,
    LangMem or graphiti run."""
    rows = peer_rows(results_dir)
    return _tables(rows) if has_peers(rows) else {}


def _tables(rows: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    pairs, recall, memories = paired(rows), paired_recall(rows), baselines_paired(rows)
    return {"peers": (rows.drop(columns=["run_dirs"], errors="ignore"), rows_shown(rows)),
            "peers_paired": (pairs, pairs_shown(pairs)),
            "peers_paired_recall": (recall, pairs_shown(recall, "evidence pieces", digits=1)),
            "memories_paired": (memories, pairs_shown(memories, label="memory - memory",
                                                      digits=1))}


def forest_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """``paired`` in the columns ``forest.plot_forest`` draws: each peer a condition, each
    baseline a reference, the cell's memory model and seeds noted in its panel titles."""
    frame = pairs.rename(columns={"peer": "condition", "baseline": "reference",
                                  "pairs": "n_pairs"})
    if frame.empty:
        return frame
    notes = [f"memory model {model_label(m)}, seed{'s' if ',' in str(s) else ''} {s}"
             for m, s in zip(frame["memory_model"], frame["seeds"], strict=True)]
    return frame.assign(note=notes)


def write_peers_table(results_dir: str | Path, out_dir: str | Path) -> dict[str, Path]:
    """peers.csv, peers_paired.csv and peers.md under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = peer_rows(results_dir)
    tables = _tables(rows)
    paths = {"rows": out / "peers.csv", "paired": out / "peers_paired.csv",
             "markdown": out / "peers.md"}
    tables["peers"][0].to_csv(paths["rows"], index=False)
    tables["peers_paired"][0].to_csv(paths["paired"], index=False)
    paths["markdown"].write_text(peers_markdown(rows, tables["peers_paired"][0]),
                                 encoding="utf-8")
    return paths
