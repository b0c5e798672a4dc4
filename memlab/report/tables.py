"""Write the paper's tables into ``figures/tables/``: CSV (numbers), LaTeX and markdown (shown).

The paper's own tables (one row per suite, span and condition unless said otherwise):

- ``overview``: accuracy, evidence recall, tokens, latency and model calls per answer;
- ``accuracy``: accuracy on the answered tests, its interval, n and the model-limited LTM types
  averaged in;
- ``evidence_recall``: evidence recall over every evidence question, and how the evidence
  arrived (verbatim, through a derived memory, the answer anywhere in the prompt);
- ``paired_accuracy`` / ``paired_recall``: each condition minus each reference arm on the same
  questions (``memlab.report.paired``);
- ``ltm_ceilings``: the oracle's accuracy per LTM test type, model-limited types flagged;
- ``answer_forms``: the free-text answers that restate the question or abstain
  (``memlab.report.answer_forms``), which a score cannot tell from wrong ones;
- ``failures``: where wrong answers come from, evidence missing from the prompt or given and
  not used (``memlab.report.failures``), when the runs measured evidence recall;
- ``persona_choices``: which option persona's answers chose, the right one or an outdated,
  never-stated or contradicting one (``memlab.report.choices``), when persona was answered;
- ``crossover``, when some suite ran at several spans (the ``scaling`` grid): where each memory
  first beats full_context (``memlab.report.scaling``);
- ``peers`` / ``peers_paired`` / ``peers_paired_recall`` / ``memories_paired``, when the
  results hold a complete mem0, LangMem or graphiti run: every run of the peers and of rag,
  hybrid and sleep per cell, each peer minus each of those baselines on the same tests and on
  the same evidence pieces, and those baselines against each other (``memlab.report.peers``);

and the bench's tables (:mod:`memlab.bench.tables`: Table 1, Table 2 with what the forced
sleep cycle did, the LTM scores, persona accuracy by question type, costs). A CSV holds the
numbers (proportions with ``_low``/``_high``/``_n``); LaTeX and markdown show them as a reader
wants them: percentages, the 95% interval as ``low-high`` and n.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from memlab.errors import ConfigError
from memlab.report import accuracy, answer_forms, data, paired, peers, recall, scaling, summary
from memlab.report.cells import fixed, p_text, shown
from memlab.report.choices import choices, choices_shown
from memlab.report.failures import failures, failures_shown

BENCH_TABLES = ("table1", "table2", "ltm_scores", "persona_by_type", "costs")
FORMATS = ("csv", "tex", "md")


def bench_table(name: str) -> Callable[[Path], pd.DataFrame] | None:
    """``memlab.bench.tables.<name>`` (a function of the results folder), None if absent."""
    try:
        module = importlib.import_module("memlab.bench.tables")
    except ImportError:
        return None
    return getattr(module, name, None)


def _frames(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    scores, turns = data.scores_frame(results_dir), data.turns_frame(results_dir)
    if scores.empty:
        raise ConfigError(f"results_dir {str(results_dir)!r}: no complete run with scores")
    return scores, turns


def overview_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``summary.overview`` as the paper shows it."""
    out = shown(frame, "accuracy", "accuracy (%)", "95% CI", "n")
    out = shown(out, "recall", "evidence recall (%)", "recall 95% CI", "questions")
    for column, digits in (("prompt_tokens", 0), ("evaluated_tokens", 0), ("memory_tokens", 0),
                           ("latency_p50_s", 2),
                           ("latency_p95_s", 2), ("model_calls", 0)):
        out[column] = fixed(out[column], digits)
    return out.rename(columns={"prompt_tokens": "prompt tokens",
                               "evaluated_tokens": "tokens evaluated",
                               "memory_tokens": "memory tokens",
                               "latency_p50_s": "latency p50 (s)",
                               "latency_p95_s": "latency p95 (s)",
                               "model_calls": "model calls"})


def overview(results_dir: str | Path) -> pd.DataFrame:
    """Per suite, span and condition: ``accuracy (%)``, its ``95% CI`` and ``n`` answered
    tests; ``evidence recall (%)``, ``recall 95% CI`` and ``questions``; prompt tokens, tokens
    evaluated (not reused from a prefix) and memory tokens per answer, ``answers``, latency
    p50/p95 (s) and model calls."""
    return overview_shown(summary.overview(*_frames(results_dir)))


def accuracy_shown(frame: pd.DataFrame) -> pd.DataFrame:
    out = shown(frame, "accuracy", "accuracy (%)", "95% CI", "n answered")
    return out.rename(columns={"interval": "interval method",
                               "unanswered": "evidence-only tests",
                               "model_limited_types": "model-limited types averaged in"})


def recall_shown(frame: pd.DataFrame) -> pd.DataFrame:
    out = shown(frame, "recall", "evidence recall (%)", "95% CI", "questions")
    for field, name in (("direct", "verbatim"), ("derived", "derived"),
                        ("answer_in_prompt", "answer in prompt")):
        out = shown(out, field, f"{name} (%)", f"{name} 95% CI", f"{field}_pieces")
    pieces = out.pop("direct_pieces")
    out = out.drop(columns=["derived_pieces", "answer_in_prompt_pieces"])
    out.insert(list(out.columns).index("questions") + 1, "evidence pieces", pieces)
    return out.rename(columns={"answered": "answered questions"})


def paired_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """A paired comparison table in percentage points, with its interval and p-values."""
    out = frame.rename(columns={"difference": "diff", "low": "diff_low", "high": "diff_high",
                                "n_pairs": "diff_n"})
    out = shown(out, "diff", "difference (pp)", "95% CI", "n pairs")
    for column in ("p_value", "p_holm"):
        out[column] = [p_text(p) for p in out[column]]
    return out.rename(columns={"p_value": "p", "p_holm": "Holm p",
                               "condition_better": "condition better",
                               "reference_better": "reference better",
                               "method": "test"})


def change_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``paired.change_comparisons`` as the paper shows it: before and after in %, the paired
    difference in percentage points with its interval, p-values."""
    out = paired_shown(frame.rename(columns={"after_better": "condition_better",
                                             "before_better": "reference_better"}))
    for column in ("before", "after"):
        out[column] = fixed(100 * frame[column].astype(float), 1)
    return out.rename(columns={"before": "before (%)", "after": "after (%)",
                               "condition better": "after better",
                               "reference better": "before better"})


def ceilings_shown(frame: pd.DataFrame) -> pd.DataFrame:
    out = shown(frame, "ceiling", "oracle accuracy (%)", "95% CI", "n")
    return out.rename(columns={"model_limited": "model-limited"})


def paper_tables(results_dir: str | Path) -> dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]:
    """Every table of the paper: name -> (numbers, shown; None: shown as the numbers)."""
    scores, turns = _frames(results_dir)
    frames = {"overview": (summary.overview(scores, turns), overview_shown),
              "accuracy": (accuracy.accuracy(scores), accuracy_shown),
              "evidence_recall": (recall.evidence_recall(turns), recall_shown),
              "paired_accuracy": (paired.accuracy_comparisons(scores), paired_shown),
              "paired_recall": (paired.recall_comparisons(turns), paired_shown),
              "ltm_ceilings": (accuracy.ceilings(scores), ceilings_shown),
              "answer_forms": (answer_forms.answer_forms(turns), answer_forms.answer_forms_shown)}
    tables = {name: (frame, show(frame)) for name, (frame, show) in frames.items()}
    split = failures(scores)  # where wrong answers come from, once recall was measured
    if not split.empty:
        tables["failures"] = (split, failures_shown(split))
    chosen = choices(scores)  # which kind of option persona's answers chose
    if not chosen.empty:
        tables["persona_choices"] = (chosen, choices_shown(chosen))
    if scaling.has_several_spans(scores):  # the span-scaling experiment's crossover table
        tables["crossover"] = (scaling.crossover(frames["paired_accuracy"][0], scores=scores), None)
    for name in BENCH_TABLES:
        function = bench_table(name)
        if function is not None:
            frame = function(Path(results_dir))
            tables[name] = (frame, None)
    return tables | peers.peer_tables(results_dir)


def write_table(frame: pd.DataFrame, name: str, out_dir: str | Path,
                display: pd.DataFrame | None = None) -> list[Path]:
    """Write ``frame`` as ``name``.csv and ``display`` (default: ``frame``) as ``name``.tex and
    ``name``.md into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a shown table holds its numbers as text already: markdown must not re-read them
    numbers = {"floatfmt": ".3f"} if display is None else {"disable_numparse": True}
    frame, display = _plain(frame), _plain(frame if display is None else display)
    keep_index = not isinstance(frame.index, pd.RangeIndex)
    paths = [out / f"{name}.{ext}" for ext in FORMATS]
    frame.to_csv(paths[0], index=keep_index)
    paths[1].write_text(display.to_latex(index=keep_index, float_format="%.3f",
                                         na_rep="--", escape=True))
    paths[2].write_text(display.to_markdown(index=keep_index, **numbers) + "\n")
    return paths


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as text (so every format writes their values)."""
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    return frame


def write_tables(results_dir: str | Path, out_dir: str | Path = "figures/tables",
                 frames: dict | None = None) -> dict:
    """Write every table of ``paper_tables`` (or of ``frames``, its result computed already)
    into ``out_dir``.

    Returns:
        table name -> [csv, tex, md] paths.
    """
    frames = paper_tables(results_dir) if frames is None else frames
    return {name: write_table(frame, name, out_dir, display)
            for name, (frame, display) in frames.items()}
