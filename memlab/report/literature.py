"""The published benchmarks' tables, in the memory papers' style, from runs of memlab.

LoCoMo as Mem0 reports it: per condition and question category (single-hop, multi-hop,
open-domain, temporal; adversarial apart), F1, BLEU-1 and Mem0's lenient judge J, with the
strict judge's verdict beside it (``J_strict``: the answer must state the gold fact) and, for
runs that record it, the matched one (``J_matched``: a rule's verdict where one decides, else
the strict judge's; ``judges.matched_verdict``), beside what memlab
adds to their table: evidence recall, prompt tokens per question and p50/p95 latency of the
memory search and of the whole answer. LongMemEval as its paper reports it: judged accuracy by
question type, task-averaged and overall accuracy and abstention accuracy.

Every proportion (J, accuracy, evidence recall) carries its n and a Wilson interval, every mean
(F1, BLEU-1, tokens) a t interval (``memlab.stats``). J and accuracy count only the questions
the model answered; evidence recall counts every question (an evidence-only run has it too), as
the share of evidence turns that reached the prompt. ``paired_comparisons`` tests each condition
against a reference on the same questions (exact McNemar, Holm-corrected).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt

from memlab import stats
from memlab.errors import ConfigError
from memlab.report import data, judge_labels, style, tables

LOCOMO_ORDER = ("single_hop", "multi_hop", "open_domain", "temporal", "overall", "adversarial")
LONGMEMEVAL_ORDER = ("single-session-user", "single-session-assistant",
                     "single-session-preference", "multi-session", "knowledge-update",
                     "temporal-reasoning", "overall", "task-averaged", "abstention")
QUESTION_COLUMNS = ["condition", "run_id", "test_id", "test_type", "answered", "score",
                    "j_strict", "j_matched", "f1", "bleu1", "reply", "reached", "evidence",
                    "prompt_tokens", "search_s", "total_s", "abstention", "question", "gold"]
VERDICTS = ("j_strict", "j_matched")  # LoCoMo's 0/1 verdicts beside ``score`` (Mem0's J)


def questions_frame(results_dir: str | Path, suite: str) -> pd.DataFrame:
    """One row per question of every complete ``suite`` run under ``results_dir``.

    Columns: condition, run_id, test_id, test_type (category / question type), answered, score
    (``verdict``: J, accuracy, or declined; NaN when not judged), j_strict (LoCoMo's strict
    judge; NaN without one), j_matched (LoCoMo's matched verdict; NaN without one, as in runs
    recorded before it), f1, bleu1 (LoCoMo), reply (the answer as given), reached
    and evidence
    (evidence turns reached / named), prompt_tokens, search_s (memory recall) and total_s
    (recall + answer; NaN when the answer came from the response cache: its time is a lookup,
    not an answer), abstention (LongMemEval), question (as asked) and gold (the answer the
    data set gives; None where its metadata holds none).
    """
    scores, turns = data.scores_frame(results_dir), data.turns_frame(results_dir)
    if scores.empty or suite not in set(scores["suite"]):
        raise ConfigError(f"results_dir {str(results_dir)!r}: no complete {suite} run")
    scores = scores[(scores["suite"] == suite) & (scores["phase"] == "main")]
    asked = turns[(turns["suite"] == suite) & (turns["phase"] == "main")
                  & (turns["kind"] == "question")]
    rows = scores.merge(asked, on=["run_id", "test_id"], suffixes=("", "_turn"))
    meta = rows["metadata"].map(lambda m: m if isinstance(m, dict) else {})
    records = rows["evidence"].map(lambda r: r if isinstance(r, list) else [])
    out = pd.DataFrame({
        "condition": rows["condition"], "run_id": rows["run_id"], "test_id": rows["test_id"],
        "test_type": rows["test_type"], "answered": rows["answered"].fillna(True).astype(bool),
        "score": meta.map(verdict).astype(float),
        "j_strict": meta.map(lambda m: _outcome(m, "j_strict")),
        "j_matched": meta.map(lambda m: _outcome(m, "j_matched")),
        "f1": meta.map(lambda m: m.get("f1")), "reply": rows["reply"],
        "bleu1": meta.map(lambda m: m.get("bleu1")),
        "reached": records.map(lambda r: sum(bool(x.get("reached")) for x in r)),
        "evidence": records.map(len), "prompt_tokens": rows["prompt_tokens"].astype(float),
        "search_s": rows["memory_latency_s"].astype(float),
        "total_s": (rows["memory_latency_s"].astype(float) + rows["llm_latency_s"].astype(float)
                    ).where(~rows["cached"].fillna(False).astype(bool)),
        "abstention": meta.map(lambda m: bool(m.get("abstention", False))),
        "question": rows["text"], "gold": meta.map(lambda m: m.get("answer"))})
    return data.order_conditions(out[QUESTION_COLUMNS])


def _outcome(metadata: dict, key: str) -> float:
    """The 0/1 verdict ``key`` of a question's score metadata; NaN when it has none."""
    return np.nan if metadata.get(key) is None else float(bool(metadata[key]))


def verdict(metadata: dict) -> float:
    """A question's 0/1 outcome from its score metadata: the judge's J (LoCoMo 1-4), the
    declines rule (adversarial), the judged accuracy (LongMemEval); NaN when not judged."""
    value = next((metadata[k] for k in ("j", "declined", "correct") if k in metadata), None)
    return np.nan if value is None else float(bool(value))


def _cell(rows: pd.DataFrame) -> dict:
    """The measures of one table cell (a condition and a group of its questions)."""
    answered = rows[rows["answered"]]
    score = stats.proportion(answered["score"])
    strict = stats.proportion(answered["j_strict"])
    matched = stats.proportion(answered["j_matched"])
    recall = stats.proportion_ci(int(rows["reached"].sum()), int(rows["evidence"].sum()))
    f1 = stats.mean_ci(answered["f1"].dropna().astype(float), bounds=(0, 1))
    b1 = stats.mean_ci(answered["bleu1"].dropna().astype(float), bounds=(0, 1))
    tokens = stats.mean_ci(rows["prompt_tokens"])  # an unanswered prompt is counted too
    cell = {"n": len(answered), "questions": len(rows)}
    for name, value in (("J", score), ("J_strict", strict), ("J_matched", matched),
                        ("F1", f1), ("B1", b1), ("evidence_recall", recall),
                        ("tokens", tokens)):
        cell |= {name: value.estimate, f"{name}_low": value.low, f"{name}_high": value.high}
    cell["evidence_n"] = recall.n
    for column, name, own in (("search_s", "search", rows), ("total_s", "total", answered)):
        seconds = own[column].dropna().to_numpy(dtype=float)
        p50, p95 = np.percentile(seconds, [50, 95]) if seconds.size else (np.nan, np.nan)
        cell |= {f"{name}_p50_s": p50, f"{name}_p95_s": p95}
    return cell


def _table(questions: pd.DataFrame, groups: dict[str, pd.Series], order: tuple) -> pd.DataFrame:
    rows = []
    for condition, own in questions.groupby("condition", observed=True, sort=True):
        for group, member in groups.items():
            chosen = own[member.loc[own.index]]
            if len(chosen):
                rows.append({"condition": condition, "group": group, **_cell(chosen)})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    if frame["J_matched"].isna().all():  # no run records it (LongMemEval, older LoCoMo runs)
        frame = frame.drop(columns=["J_matched", "J_matched_low", "J_matched_high"])
    frame["group"] = pd.Categorical(frame["group"], categories=order, ordered=True)
    return data.order_conditions(frame).sort_values(["condition", "group"]).reset_index(drop=True)


def locomo_table(questions: pd.DataFrame) -> pd.DataFrame:
    """Per condition and category (``group``; ``overall`` = categories 1-4, Mem0's headline):
    n answered, J (Mem0's lenient judge), J_strict (the strict one), J_matched (the matched
    verdict; only when a run records it), F1, B1 (each with
    ``_low``/``_high``), evidence recall (its n in
    ``evidence_n``), prompt tokens and memory-search p50/p95 seconds (every question: an
    evidence-only prompt is built and counted too), total p50/p95 seconds (answered ones
    not served from the response cache; empty when every answer was).
    For ``adversarial``, J is the share of answers that decline (LoCoMo's rule) and F1/B1
    are empty."""
    groups = {name: questions["test_type"] == name for name in LOCOMO_ORDER
              if name not in ("overall",)}
    groups["overall"] = questions["test_type"] != "adversarial"
    return _table(questions, groups, LOCOMO_ORDER)


# The Mem0 paper's LoCoMo rows (Chhikara et al. 2025, arXiv:2504.19413; categories 1-4, 1,540
# questions; gpt-4o-mini answers and judges with Mem0's J prompt, the mean of 10 runs): system,
# J (%), context tokens per query and p95 seconds per query (search and answer). J as the paper
# prints it (Mem0 (graph) and OpenAI memory as mem0's own write-up of it, "AI agent memory
# benchmark", gives them); tokens and p95 where the paper or that write-up (which rounds: "~2K
# tokens", "1.4 s") states them, None where neither does.
MEM0_PAPER = (
    ("full context", 72.9, 26_031, None),
    ("Mem0 (graph)", 68.5, 4_000, 2.6),
    ("Mem0", 66.9, 1_764, 1.4),
    ("Zep", 66.0, None, None),
    ("best RAG", 61.0, None, None),
    ("LangMem", 58.1, 130, 60.0),
    ("OpenAI memory", 52.9, 5_000, 0.9),
)
PUBLISHED_COLUMNS = ["system", "source", "answering model", "judge", "n", "J", "J 95% CI",
                     "J strict", "J matched", "tokens per query", "p95 s per query"]


def beside_mem0(table: pd.DataFrame, models: dict[str, str]) -> pd.DataFrame:
    """memlab's LoCoMo rows beside the Mem0 paper's (``MEM0_PAPER``): per system, who answered
    and who judged, n answered, J (Mem0's prompt; memlab's with its 95% Wilson interval), the
    strict and matched verdicts (memlab only), mean prompt tokens per question and p95 seconds
    per answered question (memory search and answer). ``table`` is ``locomo_table``'s,
    ``models`` each condition's answering model (the judge is the same model in memlab's runs).
    A comparison of shape (what each keeps, at what cost), not of scores: the models differ."""
    rows = []
    for row in table[table["group"] == "overall"].to_dict("records"):
        model = models.get(str(row["condition"]), "?")
        rows.append({
            "system": style.label(row["condition"]), "source": "memlab", "answering model": model,
            "judge": model, "n": int(row["n"]), "J": round(100 * row["J"], 1),
            "J 95% CI": stats.interval_text(100 * row["J_low"], 100 * row["J_high"]),
            "J strict": round(100 * row["J_strict"], 1),
            "J matched": (round(100 * row["J_matched"], 1) if "J_matched" in row
                          and pd.notna(row["J_matched"]) else np.nan),
            "tokens per query": round(row["tokens"]),
            "p95 s per query": round(row["total_p95_s"], 2)})
    for system, j, tokens, p95 in MEM0_PAPER:
        rows.append({"system": system, "source": "Mem0 paper", "answering model": "gpt-4o-mini",
                     "judge": "gpt-4o-mini", "n": 1540, "J": j, "J 95% CI": "--",
                     "J strict": np.nan, "J matched": np.nan, "tokens per query": tokens,
                     "p95 s per query": p95})
    return pd.DataFrame(rows, columns=PUBLISHED_COLUMNS)


def beside_mem0_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``beside_mem0``'s table as printed: whole tokens, one decimal, ``--`` where a source
    states nothing."""
    out = frame.copy()
    formats = {"J": "{:.1f}", "J strict": "{:.1f}", "J matched": "{:.1f}",
               "tokens per query": "{:,.0f}", "p95 s per query": "{:.2f}"}
    for column, form in formats.items():
        out[column] = [form.format(v) if pd.notna(v) else "--" for v in frame[column]]
    return out


def longmemeval_table(questions: pd.DataFrame) -> pd.DataFrame:
    """Per condition and question type: judged accuracy (``J``) with its interval, evidence
    recall, tokens and latency; ``overall`` (every question), ``abstention`` (the ``_abs``
    questions) and ``task-averaged`` (the mean of the six types' accuracies, LongMemEval's
    headline; no interval)."""
    groups = {name: questions["test_type"] == name for name in LONGMEMEVAL_ORDER[:6]}
    groups |= {"overall": questions["test_type"].notna(), "abstention": questions["abstention"]}
    frame = _table(questions, groups, LONGMEMEVAL_ORDER)
    if frame.empty:
        return frame
    types = frame[frame["group"].isin(LONGMEMEVAL_ORDER[:6])]
    averaged = types.groupby("condition", observed=True)["J"].mean().rename("J").reset_index()
    averaged["group"] = "task-averaged"
    frame = pd.concat([frame, averaged], ignore_index=True)
    frame["group"] = pd.Categorical(frame["group"], categories=LONGMEMEVAL_ORDER, ordered=True)
    return data.order_conditions(frame).sort_values(["condition", "group"]).reset_index(drop=True)


def paired_comparisons(questions: pd.DataFrame, reference: str = "full_context",
                       group: str | None = None, measure: str = "score") -> pd.DataFrame:
    """Each condition against ``reference`` on the questions both answered (adversarial
    questions left out): difference (``second - first`` = condition - reference) with its
    interval and p, Holm-corrected over the conditions. ``measure``: ``score`` (J or accuracy)
    or ``j_strict`` / ``j_matched`` (LoCoMo's strict judge, its matched verdict; all three 0/1:
    Newcombe's interval, exact McNemar) or ``f1`` / ``bleu1`` (LoCoMo, fractional:
    paired bootstrap, sign-flip test); ``condition_only`` / ``reference_only`` count the
    questions only one side got right (the 0/1 measures only)."""
    if measure not in ("score", *VERDICTS, "f1", "bleu1"):
        raise ConfigError(f"paired comparisons: measure {measure!r} is not score, j_strict, "
                          "j_matched, f1 or bleu1")
    scored = questions[questions["answered"] & (questions["test_type"] != "adversarial")]
    if group is not None:
        scored = scored[scored["test_type"] == group]
    wide = scored.assign(value=scored[measure].astype(float)).pivot_table(
        index="test_id", columns="condition", values="value", aggfunc="first", observed=True)
    if reference not in wide:
        raise ConfigError(f"paired comparisons: no answered questions of {reference!r}")
    rows = []
    for condition in [c for c in wide.columns if c != reference]:
        pair = wide[[reference, condition]].dropna()
        if measure in ("score", *VERDICTS):
            test = stats.mcnemar(pair[reference], pair[condition])
            only = {"condition_only": test.second_only, "reference_only": test.first_only}
        else:
            test, only = stats.paired_bootstrap(pair[reference], pair[condition]), {}
        rows.append({"condition": condition, "reference": reference, "measure": measure,
                     "n": test.n, "difference": test.estimate, "low": test.low,
                     "high": test.high, "p": test.p_value} | only)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["p_holm"] = stats.holm(frame["p"])
    return data.order_conditions(frame)


LOCOMO_MEASURES = ("score", *VERDICTS, "f1")  # J, J strict, J matched, F1


def versus_vanilla(questions: pd.DataFrame) -> pd.DataFrame:
    """Each condition against ``vanilla`` (no memory) under each LoCoMo measure (Mem0's J, the
    strict judge, J matched, F1), Holm-corrected within each measure: whether a memory, or the
    evidence alone (oracle), beats nothing depends on the judge. Empty without vanilla answers."""
    if not questions.loc[questions["condition"] == "vanilla", "answered"].any():
        return pd.DataFrame()
    frames = [paired_comparisons(questions, "vanilla", measure=measure)
              for measure in LOCOMO_MEASURES if questions[measure].notna().any()]
    return pd.concat(frames, ignore_index=True)


def reference_condition(questions: pd.DataFrame,
                        preferred: tuple[str, ...] = ("full_context", "oracle", "vanilla")
                        ) -> str | None:
    """The first of ``preferred`` with answered questions (an evidence-only run answers none),
    the reference of the paired comparisons; None when there is none."""
    answered = set(questions.loc[questions["answered"], "condition"].astype(str))
    return next((c for c in preferred if c in answered), None)


def display(table: pd.DataFrame,
            percent: tuple[str, ...] = ("J", "J_strict", "J_matched", "F1", "B1",
                                        "evidence_recall")) -> pd.DataFrame:
    """The table as the paper prints it: percentages with ``low-high`` intervals, tokens and
    latencies rounded."""
    out = table[["condition", "group", "n"]].copy()
    for name in percent:
        if name in table and table[name].notna().any():
            out[name] = (100 * table[name]).round(1)
            out[f"{name} 95% CI"] = [stats.interval_text(100 * lo, 100 * hi) for lo, hi in
                                     zip(table[f"{name}_low"], table[f"{name}_high"],
                                         strict=True)]
    out["evidence n"] = table["evidence_n"]
    out["tokens"] = table["tokens"].round(0)
    for name in ("search_p50_s", "search_p95_s", "total_p50_s", "total_p95_s"):
        out[name] = table[name].round(3)
    return out


def plot_literature(table: pd.DataFrame, title: str) -> plt.Figure:
    """Mem0's figure and memlab's measure beside it: J per group and condition (bars, 95%
    intervals), evidence recall per condition over every question (the measure that needs no
    judge), and overall J against prompt tokens per question (log scale: full_context's
    history is tens of times the others' prompts)."""
    style.apply_style()
    fig, (bars, recall, cost) = plt.subplots(1, 3, figsize=(16, 4.4), width_ratios=(2.2, 1, 1),
                                             layout="constrained")
    shown = table[~table["group"].isin(("task-averaged",))].dropna(subset=["J_low"])
    conditions = list(dict.fromkeys(shown["condition"]))
    groups = [g for g in shown["group"].cat.categories if g in set(shown["group"])]
    width, palette = 0.8 / max(len(conditions), 1), style.colours()
    for k, condition in enumerate(conditions):
        own = shown[shown["condition"] == condition].set_index("group").reindex(groups)
        x = np.arange(len(groups)) + k * width
        errors = np.vstack([(own["J"] - own["J_low"]).clip(lower=0),
                            (own["J_high"] - own["J"]).clip(lower=0)]) * 100
        bars.bar(x, 100 * own["J"], width, yerr=errors, capsize=2,
                 color=palette.get(condition), label=style.label(condition))
        overall = own.loc[groups[-1]] if "overall" not in groups else own.loc["overall"]
        recall.barh(k, 100 * overall["evidence_recall"], color=palette.get(condition),
                    xerr=[[100 * max(0.0, overall["evidence_recall"]
                                     - overall["evidence_recall_low"])],
                          [100 * max(0.0, overall["evidence_recall_high"]
                                     - overall["evidence_recall"])]], capsize=2)
        cost.errorbar(overall["tokens"], 100 * overall["J"], fmt="o",
                      yerr=[[100 * (overall["J"] - overall["J_low"])],
                            [100 * (overall["J_high"] - overall["J"])]],
                      color=palette.get(condition))
    n = int(shown["n"].max()) if len(shown) else 0
    bars.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups, rotation=20)
    bars.set(ylabel="J / accuracy (%)", ylim=(0, 100), title=f"{title}: answered (n <= {n})")
    recall.set_yticks(range(len(conditions)), [style.label(c) for c in conditions])
    recall.invert_yaxis()
    recall.set(xlabel="evidence recall (%)", xlim=(0, 100), title="evidence reaching the prompt")
    cost.set(xlabel="prompt tokens per question", ylabel="overall (%)", ylim=(0, 100),
             xscale="log", title="accuracy vs cost")
    fig.legend(*bars.get_legend_handles_labels(), loc="upper center",
               ncol=min(len(conditions), 8), bbox_to_anchor=(0.5, -0.02))
    return fig


BUILDERS = {"locomo": (locomo_table, "LoCoMo"), "longmemeval": (longmemeval_table, "LongMemEval")}


def _published(results_dir: str | Path) -> list[str]:
    """The published suites (LoCoMo, LongMemEval) with a complete run under ``results_dir``."""
    runs = data.runs_frame(results_dir)
    present = set(runs["suite"]) if "suite" in runs else set()
    return [suite for suite in BUILDERS if suite in present]


def literature_tables(results_dir: str | Path, labels: pd.DataFrame | None = None,
                      heldout: pd.DataFrame | None = None
                      ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]:
    """For each published suite with complete runs, name -> (numbers, shown; None: shown as
    the numbers): ``<suite>_table`` (``locomo_table`` / ``longmemeval_table``), the paired
    comparisons with the reference condition (``<suite>_paired``; for LoCoMo also per judge
    and F1: ``locomo_paired_j_strict``, ``_j_matched``, ``_f1``; each condition against
    vanilla under all four when the reference is another: ``locomo_paired_vanilla``) and, for
    LoCoMo, its rows beside the Mem0 paper's (``locomo_mem0``: ``beside_mem0``) and the judges
    (``locomo_judges``: ``judge_labels.judges_table`` against ``labels``, a ``read_labels``
    frame, when given; ``locomo_labelled``: ``judge_labels.labelled_scores``, when some of
    the labels label the runs' answers; ``locomo_judges_heldout``: the judges against the
    ``heldout`` labels, when some of them label the runs' answers). {} when there is none."""
    out: dict[str, tuple[pd.DataFrame, pd.DataFrame | None]] = {}
    for suite in _published(results_dir):
        questions = questions_frame(results_dir, suite)
        table = BUILDERS[suite][0](questions)
        out[f"{suite}_table"] = (table, display(table))
        reference = reference_condition(questions)
        if reference:
            out[f"{suite}_paired"] = (paired_comparisons(questions, reference), None)
            if suite == "locomo":  # F1 separates conditions where a lenient judge does not
                for measure in (*VERDICTS, "f1"):
                    if questions[measure].notna().any():
                        out[f"{suite}_paired_{measure}"] = (
                            paired_comparisons(questions, reference, measure=measure), None)
                if reference != "vanilla" and len(against := versus_vanilla(questions)):
                    out["locomo_paired_vanilla"] = (against, None)
        if suite == "locomo":
            runs = data.runs_frame(results_dir)
            models = dict(zip(runs["condition"].astype(str), runs["model"].astype(str),
                              strict=True))
            beside = beside_mem0(table, models)
            out["locomo_mem0"] = (beside, beside_mem0_shown(beside))
            judges = judge_labels.judges_table(questions, labels)
            out["locomo_judges"] = (judges, judge_labels.judges_shown(judges))
            scored = (judge_labels.labelled_scores(questions, labels) if labels is not None
                      else pd.DataFrame())
            if len(scored):
                out["locomo_labelled"] = (scored, judge_labels.labelled_shown(scored))
            if heldout is not None and len(judge_labels.matching(heldout, questions)):
                held = judge_labels.judges_table(questions, heldout)
                out["locomo_judges_heldout"] = (held, judge_labels.judges_shown(held))
    return out


def literature_figures(results_dir: str | Path, labels: pd.DataFrame | None = None
                       ) -> dict[str, plt.Figure]:
    """``<suite>_figure`` (``plot_literature``) for each published suite with complete runs,
    and ``locomo_judges`` (``plot_labelled``) when some ``labels`` label LoCoMo answers."""
    figures = {}
    for suite in _published(results_dir):
        questions = questions_frame(results_dir, suite)
        figures[f"{suite}_figure"] = plot_literature(BUILDERS[suite][0](questions),
                                                     BUILDERS[suite][1])
        if suite == "locomo" and labels is not None:
            scored = judge_labels.labelled_scores(questions, labels)
            if len(scored):
                figures["locomo_judges"] = plot_labelled(scored)
    return figures


def plot_labelled(table: pd.DataFrame) -> plt.Figure:
    """What the judge does to a LoCoMo number: per condition (groups), the share of its
    labelled answers right by hand and the share each judge accepts (bars, 95% Wilson
    intervals); ``judge_labels.labelled_scores``'s table."""
    style.apply_style()
    measures = [(name, title) for name, title in (("hand", "hand labels"),
                                                  *judge_labels.JUDGES.items())
                if name in table]
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(table), 4.2))
    width = 0.8 / len(measures)
    shades = ["0.25", *[plt.get_cmap("Blues")(0.4 + 0.2 * i) for i in range(len(measures) - 1)]]
    for i, ((name, title), shade) in enumerate(zip(measures, shades, strict=True)):
        x = np.arange(len(table)) + (i - (len(measures) - 1) / 2) * width
        value = 100 * table[name].to_numpy(dtype=float)
        errors = [value - 100 * table[f"{name}_low"].to_numpy(dtype=float),
                  100 * table[f"{name}_high"].to_numpy(dtype=float) - value]
        ax.bar(x, value, width, color=shade, label=title, yerr=errors, capsize=3,
               error_kw={"elinewidth": 1})
    ax.set_xticks(range(len(table)),
                  [f"{style.label(c)}\nn = {n}" for c, n in zip(table["condition"],
                                                                table["hand_n"], strict=True)])
    ax.set(ylabel="answers judged right (%)", ylim=(0, 100),
           title="LoCoMo: the hand labels and each judge on the same answers")
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    return fig


def write_literature(results_dir: str | Path, out_dir: str | Path = "figures",
                     labels: pd.DataFrame | None = None) -> dict:
    """``literature_tables`` into ``out_dir/tables`` (CSV the numbers, LaTeX and markdown as
    shown) and ``literature_figures`` into ``out_dir`` (PNG + PDF). Returns the written paths
    by name."""
    written: dict[str, list[Path]] = {
        name: tables.write_table(frame, name, Path(out_dir) / "tables", display=shown)
        for name, (frame, shown) in literature_tables(results_dir, labels).items()}
    for name, figure in literature_figures(results_dir, labels).items():
        written[name] = style.save(figure, name, out_dir)
    return written
