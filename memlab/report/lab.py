"""What the notebooks call: run one condition, then views of its scores, transcripts and costs.

Every notebook cell is one call into this module (notebooks stay thin), so everything a notebook
shows is reachable from a test. Parameters are checked first: a wrong one raises ConfigError
naming the parameter and what it accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from memlab.errors import ConfigError
from memlab.memory.base import CONDITIONS
from memlab.report import data, summary

SUITE_NAMES = ("ltm", "persona")
LLM_NAMES = ("local", "gemini", "openai", "fake")
EMBEDDER_NAMES = ("minilm", "hashing")


def check_parameters(*, condition: str, suite: str, span: int, seed: int, llm: str,
                     embedder: str) -> None:
    """Raise ConfigError naming the first parameter that is not acceptable."""
    for name, value, known in (("condition", condition, CONDITIONS), ("suite", suite, SUITE_NAMES),
                               ("llm", llm, LLM_NAMES), ("embedder", embedder, EMBEDDER_NAMES)):
        if value not in known:
            raise ConfigError(f"parameter {name}={value!r} is not one of: {', '.join(known)}")
    if not isinstance(span, int) or isinstance(span, bool) or span <= 0:
        raise ConfigError(f"parameter span={span!r} must be a positive number of tokens")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"parameter seed={seed!r} must be a non-negative integer")


def make_llm(llm: str = "local", **kwargs: Any):
    """The answering model by provider key (``memlab.llm.get_llm``)."""
    from memlab import llm as llm_module

    get_llm = getattr(llm_module, "get_llm", None)
    if get_llm is None:  # before the LLM layer's factory exists: the bare registry
        return llm_module.LLMS.create(llm, **kwargs)
    return get_llm(llm, **kwargs)


def make_embedder(embedder: str = "minilm"):
    from memlab.embed.base import get_embedder

    return get_embedder(embedder)


def build_suite(suite: str, *, span: int, seed: int = 0, llm: Any = None,
                options: dict[str, Any] | None = None):
    """The generated suite ``suite`` at ``span`` tokens (memory span / context length)."""
    options = dict(options or {})
    counter = getattr(llm, "count_tokens", None)
    if suite == "ltm":
        from memlab.bench.suites.ltm import LTMSuite

        return LTMSuite(memory_span=span, seed=seed, count_tokens=counter, judge=llm, **options)
    if suite == "persona":
        from memlab.bench.suites.persona import PersonaSuite

        return PersonaSuite(target_tokens=span, seed=seed, count_tokens=counter, **options)
    raise ConfigError(f"parameter suite={suite!r} is not one of: {', '.join(SUITE_NAMES)}")


def run_condition(condition: str, suite: str, span: int, seed: int = 0, llm: str = "local",
                  embedder: str = "minilm", out_dir: str | Path = "results",
                  run_id: str | None = None, suite_options: dict[str, Any] | None = None,
                  probes_sleep: bool = False, progress: bool = True) -> Path:
    """Run one condition on one suite (resuming or skipping a run that exists); its folder.

    The run lands in ``<out_dir>/<run_id>/`` (default run_id: ``<suite>-<condition>-<span>-s<seed>``).
    """
    check_parameters(condition=condition, suite=suite, span=span, seed=seed, llm=llm,
                     embedder=embedder)
    from memlab.bench.runner import run

    client = make_llm(llm)
    the_suite = build_suite(suite, span=span, seed=seed, llm=client, options=suite_options)
    run_id = run_id or f"{suite}-{condition}-{span}-s{seed}"
    return Path(run(the_suite, condition, llm=client, embedder=make_embedder(embedder),
                    results_dir=out_dir, run_id=run_id, seed=seed, probes_sleep=probes_sleep,
                    progress=progress))


def _run_frames(run_dir: str | Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    run_dir = Path(run_dir)
    manifest = data.load_manifests(run_dir, complete_only=False)
    if not manifest:
        raise ConfigError(f"run_dir {str(run_dir)!r}: no manifest.json")
    turns = pd.DataFrame(data.read_jsonl(run_dir / "turns.jsonl"))
    scores = pd.DataFrame(data.read_jsonl(run_dir / "scores.jsonl"))
    if len(scores):
        scores["fraction"] = scores["score"] / scores["max_score"]
    return manifest[0], turns, scores


def run_summary(run_dir: str | Path) -> pd.Series:
    """Condition, suite, span, status, and the headline score of one run."""
    manifest, turns, scores = _run_frames(run_dir)
    main = scores[scores["phase"] == "main"] if len(scores) else scores
    per_type = main.groupby("test_type")["fraction"].mean() if len(main) else pd.Series()
    return pd.Series({
        "run_id": manifest.get("run_id"), "condition": manifest.get("condition"),
        "suite": manifest.get("suite"), "span (tokens)": data.span_of(manifest),
        "status": manifest.get("status"), "llm": (manifest.get("llm") or {}).get("model"),
        "tests": len(main), "accuracy (%)": round(100 * main["fraction"].mean(), 1)
        if len(main) else None,
        "suite score (sum of type means)": round(per_type.sum(), 3),
        "test types": len(per_type), "model calls paid": (manifest.get("counts") or {}).get(
            "llm_calls_paid")})


def scores_by_type(run_dir: str | Path, phase: str = "main") -> pd.DataFrame:
    """Per test type: number of tests, mean score (%) and its 95% CI."""
    _, _, scores = _run_frames(run_dir)
    if scores.empty:
        return pd.DataFrame(columns=["test_type", "n", "score (%)", "95% CI"])
    rows = []
    for test_type, group in scores[scores["phase"] == phase].groupby("test_type"):
        mean, half, n = summary.mean_ci(100 * group["fraction"])
        rows.append({"test_type": test_type, "n": n, "score (%)": round(mean, 1),
                     "95% CI": round(half, 1)})
    return pd.DataFrame(rows)


def transcripts(run_dir: str | Path, n: int = 3, phase: str = "main") -> pd.DataFrame:
    """The first ``n`` answered questions with their reply, score and the memories behind them.

    ``memories`` are the earlier turns whose content reached the prompt (``memory_events``),
    rendered as ``#index User: ... / AI: ...``; ``schemas`` the schema texts in the prompt.
    """
    _, turns, scores = _run_frames(run_dir)
    if turns.empty:
        return pd.DataFrame()
    by_index = {t["index"]: t for t in turns[turns["phase"] == "main"].to_dict("records")}
    score_of = ({} if scores.empty else
                scores[scores["phase"] == phase].groupby("test_id")["fraction"].mean().to_dict())
    asked = turns[(turns["kind"] == "question") & (turns["phase"] == phase)].head(n)
    rows = []
    for turn in asked.to_dict("records"):
        memories = [f"#{i} User: {by_index[i]['text'][:80]} / AI: {by_index[i]['reply'][:60]}"
                    for i in turn.get("memory_events") or [] if i in by_index]
        rows.append({"index": turn["index"], "test_type": turn.get("test_type"),
                     "question": turn["text"][:200], "reply": (turn.get("reply") or "")[:200],
                     "test score": score_of.get(turn.get("test_id")),
                     "memory kinds": ", ".join(turn.get("memory_kinds") or []),
                     "memories": "\n".join(memories) or "(none)",
                     "schemas": "\n".join(turn.get("memory_schemas") or []) or "(none)"})
    return pd.DataFrame(rows)


COST_COLUMNS = ("prompt_tokens", "prompt_tokens_system", "prompt_tokens_memory",
                "prompt_tokens_history", "prompt_tokens_user", "completion_tokens",
                "memory_latency_s", "llm_latency_s")


def costs(run_dir: str | Path) -> pd.DataFrame:
    """Mean tokens and latency per answered turn, by phase and kind (needle / question)."""
    _, turns, _ = _run_frames(run_dir)
    if turns.empty:
        return pd.DataFrame()
    answered = turns[turns["kind"].isin(data.ANSWERED)]
    table = answered.groupby(["phase", "kind"])[list(COST_COLUMNS)].mean().round(3)
    table["answers"] = answered.groupby(["phase", "kind"]).size()
    table["cached"] = answered.groupby(["phase", "kind"])["cached"].sum()
    return table


def table2(run_dir: str | Path) -> pd.DataFrame:
    """Pre/post sleep accuracy (%) and delta per probe of one run (Table 2 protocol)."""
    _, _, scores = _run_frames(run_dir)
    if scores.empty:
        return pd.DataFrame()
    return summary.table2_from_scores(scores).round(1)


def sleep_stats(run_dir: str | Path) -> pd.Series:
    """What the forced sleep cycle did (CycleStats counts, from the manifest)."""
    manifest, _, _ = _run_frames(run_dir)
    stats = manifest.get("sleep_stats") or {}
    keep = ("episodes_considered", "episodes_replayed", "memories_created", "schemas_created",
            "schemas_updated", "episodes_forgotten", "llm_calls", "prompt_tokens",
            "completion_tokens", "failures")
    return pd.Series({k: stats.get(k) for k in keep}, dtype=object)


def schemas_used(run_dir: str | Path) -> pd.DataFrame:
    """Each schema text that reached a post-sleep prompt, with how many answers it served."""
    _, turns, _ = _run_frames(run_dir)
    if turns.empty or "memory_schemas" not in turns:
        return pd.DataFrame(columns=["schema", "answers"])
    post = turns[turns["phase"] == "post_sleep"].explode("memory_schemas").dropna(
        subset=["memory_schemas"])
    counts = post.groupby("memory_schemas").size().sort_values(ascending=False)
    return counts.rename("answers").rename_axis("schema").reset_index()


# ---------------------------------------------------------------- the tour (an agent by hand)
def make_agent(condition: str = "sleep", *, llm: Any, embedder: Any,
               workdir: str | Path = "results/tour", user_id: str = "tour-user"):
    """An Agent of ``condition`` with its stores in ``workdir``."""
    from memlab.agent import Agent
    from memlab.memory.base import MEMORIES, Scope

    if condition not in CONDITIONS:
        raise ConfigError(f"parameter condition={condition!r} is not one of: "
                          f"{', '.join(CONDITIONS)}")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    memory = MEMORIES.create(condition, scope=Scope(user_id=user_id, agent_id=condition),
                             llm=llm, embedder=embedder, workdir=Path(workdir))
    return Agent(memory, llm)


def chat(agent: Any, messages: list[str]) -> pd.DataFrame:
    """Send each message through ``agent.interact``; one row per turn with what it cost."""
    rows = []
    for text in messages:
        trace = agent.interact(text)
        rows.append({"user": text, "reply": trace.reply, "prompt tokens": trace.prompt_tokens,
                     "memory tokens": trace.prompt_tokens_memory,
                     "memories used": ", ".join(trace.memory_kinds) or "(none)",
                     "llm s": round(trace.llm_latency_s, 3),
                     "memory s": round(trace.memory_latency_s, 4)})
    return pd.DataFrame(rows)


def recall_view(agent: Any, query: str) -> pd.DataFrame:
    """What the agent's memory would put into the prompt for ``query`` (kind, id, text)."""
    context = agent.memory.recall(query)
    rows = [{"kind": item.kind, "id": item.id, "score": item.score, "text": item.text}
            for item in context.items]
    rows += [{"kind": "history turn", "id": f"turn:{ex.turn_number}", "score": None,
              "text": ex.render()} for ex in context.history]
    return pd.DataFrame(rows, columns=["kind", "id", "score", "text"])


def cycle_view(stats: Any) -> pd.Series:
    """A CycleStats (or None: this condition has no sleep cycle) as a readable series."""
    if stats is None:
        return pd.Series({"sleep": "this condition has no sleep cycle"})
    return pd.Series(stats.model_dump(mode="json"), dtype=object)


# ---------------------------------------------------------------- the sleep stores of a run
def _stored(run_dir: str | Path, table: str) -> list[dict[str, Any]]:
    """Records of one sleep-store table, from every SQLite file in the run's store folder."""
    import json
    import sqlite3

    rows: list[dict[str, Any]] = []
    for path in sorted((Path(run_dir) / "store").rglob("*.sqlite")):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            exists = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                (table,)).fetchone()
            if exists:
                rows += [json.loads(r[0]) for r in
                         db.execute(f"SELECT data FROM {table} ORDER BY seq")]  # noqa: S608
    return rows


def consolidated_memories(run_dir: str | Path) -> pd.DataFrame:
    """The ConsolidatedMemory records the run's sleep cycles wrote (summary, concepts, sources)."""
    from memlab.stores.consolidated import ConsolidatedMemoryStore

    rows = [{"summary": r.get("summary"), "key_concepts": ", ".join(r.get("key_concepts") or []),
             "themes": ", ".join(r.get("themes") or []), "confidence": r.get("confidence"),
             "source episodes": len(r.get("source_episode_ids") or []),
             "access_count": r.get("access_count")}
            for r in _stored(run_dir, ConsolidatedMemoryStore.table)]
    return pd.DataFrame(rows, columns=["summary", "key_concepts", "themes", "confidence",
                                       "source episodes", "access_count"])


def schemas_formed(run_dir: str | Path) -> pd.DataFrame:
    """The Schema records induced by the run's sleep cycles (name, concepts, support)."""
    from memlab.stores.schemas import SchemaStore

    rows = [{"name": r.get("name"), "description": r.get("description"),
             "core_concepts": ", ".join(r.get("core_concepts") or []),
             "related memories": len(r.get("related_memory_ids") or []),
             "confidence": r.get("confidence")}
            for r in _stored(run_dir, SchemaStore.table)]
    return pd.DataFrame(rows, columns=["name", "description", "core_concepts",
                                       "related memories", "confidence"])
