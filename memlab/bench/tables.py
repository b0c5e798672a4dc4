"""Seed 002's tables (and the suites' score tables) from a results folder, as pandas DataFrames.

Every function takes the results folder (parent of ``<run_id>/`` folders; complete runs only)
and pools the runs of one suite and condition (all sizes and seeds): the main phase of the
ordinary runs (a Table 2 run, ``-probes``, answers the same questions under another protocol and
feeds Table 2 only), and only the questions the model answered (an evidence-only question is
never counted wrong; its cost is not an answer's). Every cell comes with its
count ``n`` and 95% CI (``*_ci_low``/``*_ci_high``, from ``memlab.stats``): Wilson for
proportions, Student-t for means, exact McNemar with Newcombe's interval for paired differences;
missing cells are NaN. ``export`` writes the seed's files (``results_<ts>.json``,
``table1_<ts>.csv``, ``table2_<ts>.csv``) plus markdown and LaTeX versions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from memlab import stats
from memlab.bench import metrics
from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import read_manifest
from memlab.bench.scoring import check_scores
from memlab.errors import ConfigError

PROBE_PHASES = ("pre_sleep", "post_sleep")


@dataclass
class RunData:
    """One run folder read back."""

    run_id: str
    manifest: dict[str, Any]
    turns: list[dict[str, Any]]
    scores: list[dict[str, Any]]

    @property
    def key(self) -> tuple[str, str]:
        return self.manifest.get("suite", "?"), self.manifest.get("condition", "?")

    @property
    def probes(self) -> bool:
        return probes_run(self.manifest)

    def scores_of(self, phase: str) -> list[dict[str, Any]]:
        """The answered tests' scores of ``phase`` (none of a Table 2 run's main phase)."""
        if phase == "main" and self.probes:
            return []
        return [s for s in self.scores if s.get("phase") == phase
                and metrics.answered_value(s.get("answered"))]


def probes_run(manifest: dict[str, Any]) -> bool:
    """Whether a run followed Table 2's protocol (its spec's ``probes_sleep``)."""
    return bool((manifest.get("spec") or {}).get("probes_sleep")
                or str(manifest.get("run_id", "")).endswith("-probes"))


def load_runs(results_dir: str | Path, *, include_incomplete: bool = False) -> list[RunData]:
    """Every run folder under ``results_dir`` (complete ones unless asked otherwise)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ConfigError(f"results_dir {str(root)!r}: not a folder")
    runs = []
    for path in sorted(p.parent for p in root.glob("*/manifest.json")):
        manifest = read_manifest(path)
        if manifest.get("status") != "complete" and not include_incomplete:
            continue
        scores = read_jsonl(path / "scores.jsonl")
        check_scores(path / "scores.jsonl", scores)
        runs.append(RunData(path.name, manifest, read_jsonl(path / "turns.jsonl"), scores))
    return runs


def _groups(runs: list[RunData]) -> dict[tuple[str, str], list[RunData]]:
    out: dict[tuple[str, str], list[RunData]] = {}
    for run in runs:
        out.setdefault(run.key, []).append(run)
    return out


def _cell(prefix: str, value: metrics.MetricValue) -> dict[str, Any]:
    return {prefix: value.value, f"{prefix}_n": value.n, f"{prefix}_ci_low": value.ci_low,
            f"{prefix}_ci_high": value.ci_high}


def _pooled(runs: list[RunData], fn: metrics.MetricFn, phase: str,
            embedder: Any) -> dict[tuple[str, int], float]:
    """Outcomes of every run, keyed by (run_id, question index); the main phase of ordinary
    runs only (see the module docstring)."""
    return {(run.run_id, index): value for run in runs if phase != "main" or not run.probes
            for index, value in fn(run.turns, phase, embedder).items()}


def table1(results_dir: str | Path, *, embedder: Any = None) -> pd.DataFrame:
    """Table 1 (task-based memory): one row per suite and condition, main phase.

    Columns: suite, condition, runs; for each of long_horizon_qa, semantic_match,
    multi_session_continuity, hallucination_rate: ``<m>``, ``<m>_n``, ``<m>_ci_low``,
    ``<m>_ci_high`` (proportions, Wilson CI; definitions in ``memlab.bench.metrics``); then the
    cost per answer: prompt_tokens, completion_tokens, latency_s (means over answered turns).
    For a suite without multiple-choice questions (LTM), long_horizon_qa is the mean test score
    fraction from scores.jsonl (``stats.score_ci``: Wilson when every score is 0 or 1, else a t
    interval clipped to [0, 1]). Table 2 runs are left out (``runs`` counts the others).
    """
    rows = []
    ordinary = [r for r in load_runs(results_dir) if not r.probes]
    for (suite, condition), runs in sorted(_groups(ordinary).items()):
        row: dict[str, Any] = {"suite": suite, "condition": condition, "runs": len(runs)}
        for name, fn in metrics.TABLE1.items():
            outcomes = _pooled(runs, fn, "main", embedder)
            value = metrics.summarise(name, outcomes.values(), phase="main")
            if name == "long_horizon_qa" and not outcomes:
                fractions = [s["score"] / s["max_score"] for r in runs
                             for s in r.scores_of("main")]
                value = metrics.summarise(name, fractions, phase="main", kind="score")
            row.update(_cell(name, value))
        answers = _answers(runs)
        for column in ("prompt_tokens", "completion_tokens", "latency_s"):
            row[column] = answers[column].mean() if len(answers) else math.nan
        rows.append(row)
    columns = ["suite", "condition", "runs"] + [
        f"{m}{s}" for m in metrics.TABLE1 for s in ("", "_n", "_ci_low", "_ci_high")] + [
        "prompt_tokens", "completion_tokens", "latency_s"]
    return pd.DataFrame(rows, columns=columns)


def table2(results_dir: str | Path, *, embedder: Any = None,
           condition: str = "sleep") -> pd.DataFrame:
    """Table 2 (cognitive probes): one row per suite and probe metric, for ``condition``.

    Columns: suite, metric, then ``pre``, ``post`` and ``delta`` each with ``_n``, ``_ci_low``,
    ``_ci_high``, and ``delta_p``. pre/post are proportions over the probes asked before/after
    the forced sleep cycle (Wilson CI); delta is the paired difference post - pre over the same
    probes (Newcombe's interval) and delta_p its exact McNemar p-value (the paired bootstrap for
    fractional outcomes). Metrics: delayed_recall, cue_based_recall, cross_episode_integration,
    schema_utilisation, schema_generalisation (see ``memlab.bench.metrics``); accuracy metrics
    count answered probes only.

    Beside them, what the forced cycles did, summed over the suite's Table 2 runs (their
    manifests' ``sleep_stats``; ``CYCLE_COLUMNS``): unconsolidated episodes at the start,
    episodes replayed (consolidated unless their batch failed: ``cycle_failures`` counts failed
    steps), memories and schemas formed, episodes forgotten.
    """
    rows = []
    for (suite, cond), runs in sorted(_groups(load_runs(results_dir)).items()):
        runs = [r for r in runs if any(t["phase"] == "post_sleep" for t in r.turns)]
        if cond != condition or not runs:
            continue
        for name, fn in metrics.TABLE2.items():
            pre = _pooled(runs, fn, "pre_sleep", embedder)
            post = _pooled(runs, fn, "post_sleep", embedder)
            row = {"suite": suite, "condition": cond, "metric": name}
            row.update(_cell("pre", metrics.summarise(name, pre.values())))
            row.update(_cell("post", metrics.summarise(name, post.values())))
            change = metrics.delta(name, pre, post)
            row.update(_cell("delta", change) | {"delta_p": change.p_value})
            rows.append(row | cycle_totals(runs))
    return pd.DataFrame(rows, columns=_table2_columns())


# CycleStats counts shown beside Table 2 (column name -> CycleStats field)
CYCLE_COLUMNS = {"episodes_considered": "episodes_considered",
                 "episodes_replayed": "episodes_replayed", "memories_formed": "memories_created",
                 "schemas_formed": "schemas_created", "episodes_forgotten": "episodes_forgotten"}


def cycle_totals(runs: list[RunData]) -> dict[str, int]:
    """The forced cycles' counts summed over ``runs`` (``CYCLE_COLUMNS``, ``cycles`` and
    ``cycle_failures``); a run without ``sleep_stats`` adds nothing."""
    cycles = [r.manifest["sleep_stats"] for r in runs if r.manifest.get("sleep_stats")]
    totals = {column: sum(int(c.get(field) or 0) for c in cycles)
              for column, field in CYCLE_COLUMNS.items()}
    return {"cycles": len(cycles), **totals,
            "cycle_failures": sum(len(c.get("failures") or []) for c in cycles)}


def _table2_columns() -> list[str]:
    cols = ["suite", "condition", "metric"]
    for p in ("pre", "post", "delta"):
        cols += [p, f"{p}_n", f"{p}_ci_low", f"{p}_ci_high"]
    return cols + ["delta_p", "cycles", *CYCLE_COLUMNS, "cycle_failures"]


def ltm_scores(results_dir: str | Path, *, suite: str = "ltm",
               phase: str = "main") -> pd.DataFrame:
    """The LTM score table: per condition, each test type's mean score and the total.

    Columns: condition, test_type ("total" for the suite score), score, n, ci_low, ci_high,
    max_score. A type's score is the mean score fraction of its tests (``stats.score_ci``); the
    total is the sum over types of those means, out of the number of types
    (``stats.sum_of_means_ci``: the types' standard errors added in quadrature). Answered
    tests only.
    """
    rows = []
    for (name, condition), runs in sorted(_groups(load_runs(results_dir)).items()):
        if name != suite:
            continue
        frame = pd.DataFrame([s for r in runs for s in r.scores_of(phase)])
        if frame.empty:
            continue
        frame["fraction"] = frame["score"] / frame["max_score"]
        groups = sorted(frame.groupby("test_type"))
        for test_type, group in groups:
            cell = metrics.summarise(test_type, group["fraction"], kind="score")
            rows.append({"condition": condition, "test_type": test_type, "score": cell.value,
                         "n": cell.n, "ci_low": cell.ci_low, "ci_high": cell.ci_high,
                         "max_score": 1.0})
        total = stats.sum_of_means_ci(group["fraction"] for _, group in groups)
        rows.append({"condition": condition, "test_type": "total", "score": total.estimate,
                     "n": total.n, "ci_low": total.low, "ci_high": total.high,
                     "max_score": float(len(groups))})
    return pd.DataFrame(rows, columns=["condition", "test_type", "score", "n", "ci_low",
                                       "ci_high", "max_score"])


def persona_by_type(results_dir: str | Path, *, suite: str = "persona", phase: str = "main",
                    embedder: Any = None) -> pd.DataFrame:
    """Persona accuracy by question type: per condition and test_type (plus "all").

    Columns: condition, test_type, accuracy, n, ci_low, ci_high (Wilson), answered by option
    choice as in ``metrics.long_horizon_qa``.
    """
    rows = []
    for (name, condition), runs in sorted(_groups(load_runs(results_dir)).items()):
        if name != suite:
            continue
        by_type: dict[str, list[float]] = {}
        for run in runs:
            if phase == "main" and run.probes:
                continue
            outcomes = metrics.long_horizon_qa(run.turns, phase, embedder)
            types = {t["index"]: t.get("test_type") or "?" for t in run.turns
                     if t["phase"] == phase}
            for index, value in outcomes.items():
                by_type.setdefault(types[index], []).append(value)
                by_type.setdefault("all", []).append(value)
        for test_type, values in sorted(by_type.items()):
            cell = metrics.summarise(test_type, values)
            rows.append({"condition": condition, "test_type": test_type, "accuracy": cell.value,
                         "n": cell.n, "ci_low": cell.ci_low, "ci_high": cell.ci_high})
    return pd.DataFrame(rows, columns=["condition", "test_type", "accuracy", "n", "ci_low",
                                       "ci_high"])


def _answers(runs: list[RunData]) -> pd.DataFrame:
    """Answered turns (needles and questions the model answered, every phase) with their
    costs."""
    rows = [t for r in runs for t in r.turns if t["kind"] != "filler" and not t.get("error")
            and metrics.is_answered(t)]
    frame = pd.DataFrame(rows, columns=["prompt_tokens", "completion_tokens", "llm_latency_s",
                                        "memory_latency_s", "prompt_tokens_memory", "cached"])
    frame["latency_s"] = frame["llm_latency_s"] + frame["memory_latency_s"]
    return frame


def costs(results_dir: str | Path) -> pd.DataFrame:
    """Cost per answer: one row per suite and condition.

    Columns: suite, condition, answers (n), llm_calls_paid (whole runs, incl. sleep/extraction),
    then for each of prompt_tokens, prompt_tokens_memory, completion_tokens, latency_s
    (llm + memory), llm_latency_s, memory_latency_s: the mean per answer with ``_ci_low`` and
    ``_ci_high`` (t interval); cached_share (answers served from the response cache).
    """
    rows = []
    for (suite, condition), runs in sorted(_groups(load_runs(results_dir)).items()):
        frame = _answers(runs)
        row: dict[str, Any] = {"suite": suite, "condition": condition, "answers": len(frame),
                               "llm_calls_paid": sum(r.manifest.get("counts", {}).get(
                                   "llm_calls_paid", 0) for r in runs)}
        for column in ("prompt_tokens", "prompt_tokens_memory", "completion_tokens",
                       "latency_s", "llm_latency_s", "memory_latency_s"):
            cell = stats.mean_ci(frame[column].astype(float))
            row.update({column: frame[column].mean() if len(frame) else math.nan,
                        f"{column}_ci_low": cell.low, f"{column}_ci_high": cell.high})
        row["cached_share"] = frame["cached"].astype(float).mean() if len(frame) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def export(results_dir: str | Path, out_dir: str | Path | None = None, *,
           embedder: Any = None, timestamp: str | None = None) -> dict[str, Path]:
    """Write results_<ts>.json, table1_<ts>.csv/.md/.tex, table2_<ts>.csv/.md/.tex and the
    ltm_scores / persona_by_type / costs CSVs into ``out_dir`` (default: ``results_dir``)."""
    stamp = timestamp or datetime.now(UTC).strftime("%Y%m%d_%H%M%S")
    out = Path(out_dir or results_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {"table1": table1(results_dir, embedder=embedder),
              "table2": table2(results_dir, embedder=embedder),
              "ltm_scores": ltm_scores(results_dir),
              "persona_by_type": persona_by_type(results_dir, embedder=embedder),
              "costs": costs(results_dir)}
    paths: dict[str, Path] = {}
    for name, frame in tables.items():
        paths[name] = out / f"{name}_{stamp}.csv"
        frame.to_csv(paths[name], index=False)
        if name in ("table1", "table2"):
            (out / f"{name}_{stamp}.md").write_text(
                frame.to_markdown(index=False, floatfmt=".3f") + "\n")
            (out / f"{name}_{stamp}.tex").write_text(
                frame.to_latex(index=False, float_format="%.3f", na_rep="--"))
    runs = [{"run_id": r.run_id, **{k: r.manifest.get(k) for k in (
        "condition", "suite", "suite_params", "seed", "llm", "git_commit", "counts")}}
        for r in load_runs(results_dir)]
    payload = {"created_at": stamp, "runs": runs,
               **{name: json.loads(frame.to_json(orient="records")) for name, frame in
                  tables.items()}}
    paths["results"] = out / f"results_{stamp}.json"
    paths["results"].write_text(json.dumps(payload, indent=2))
    return paths
