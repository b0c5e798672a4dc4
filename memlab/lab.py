"""The front door: build a run's suite, models and agent; run it; talk to an agent by hand.

``memlab run``, the grid's notebooks, the server and JupyterLab users all come through here, so a
run is described once (``RunSpec``) and built once. Read-only views of finished runs live in
``memlab.report.views`` and are re-exported, so a notebook needs only ``from memlab import lab``.

Example:
    >>> from memlab import lab
    >>> spec = lab.RunSpec(suite="persona", condition="rag", span=1000, llm="fake",
    ...                    embedder="hashing")
    >>> spec.run_id
    'persona-rag-1000-s0'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from memlab.bench.base import SUITES, Suite
from memlab.bench.spec import MAX_WINDOW, RunSpec, window_for_span
from memlab.config import get_settings
from memlab.memory.base import MEMORIES, Scope
from memlab.report.views import (  # noqa: F401 - re-exported for notebooks
    consolidated_memories,
    costs,
    run_summary,
    schemas_formed,
    schemas_used,
    scores_by_type,
    sleep_stats,
    table2,
    transcripts,
)
from memlab.userfiles import writable_folder

LOCAL_TIERS = ("0.5b", "1.5b", "135m")


def make_llm(llm: str | None = None, model: str | None = None, **kwargs: Any):
    """The answering model: provider ``llm`` (default ``MEMLAB_LLM``), ``model`` within it.

    Args:
        model: for ``local`` a packaged tier (0.5b, 1.5b, 135m) or a GGUF path; for a remote
            provider its model name; None: the configured default.
        **kwargs: Settings fields (``n_ctx=8192``) or provider keywords (``memlab.llm.get_llm``).
    """
    from memlab.llm import get_llm

    name = llm or get_settings().llm
    if model is not None:
        if name == "local":
            kwargs["local_size" if model in LOCAL_TIERS else "local_model"] = model
        else:
            kwargs["llm_model"] = model
    return get_llm(name, **kwargs)


def make_models(spec: RunSpec, window: int | None = None) -> tuple[Any, Any]:
    """The answering model (window sized to the run, or ``window``) and the memory's own model
    of ``spec`` (window: the configured one, or what the condition needs,
    ``memory_context_window``).

    The memory model is the answering client itself when both name the same model.
    """
    settings = get_settings()
    answering = make_llm(spec.llm, spec.llm_model, n_ctx=window or spec.window)
    provider = spec.memory_llm or settings.memory_llm or spec.llm
    model = spec.memory_llm_model or settings.memory_llm_model
    if model is None:
        model = "0.5b" if provider == "local" else spec.llm_model
    needs = MEMORIES.resolve(spec.condition).memory_context_window or 0
    if provider == spec.llm and model == spec.llm_model and answering.context_window >= needs:
        return answering, answering
    return answering, make_llm(provider, model, n_ctx=max(settings.n_ctx, needs))


def make_embedder(embedder: str | None = None):
    """The embedder by registry key (default ``MEMLAB_EMBEDDER``)."""
    from memlab.embed.base import get_embedder

    return get_embedder(embedder or get_settings().embedder)


def build_suite(spec: RunSpec, llm: Any = None) -> Suite:
    """The suite ``spec`` names at its span and seed, counting tokens with ``llm``."""
    return SUITES.resolve(spec.suite).build(span=spec.span, seed=spec.seed, llm=llm,
                                            options=spec.suite_options)


def run(spec: RunSpec, results_dir: str | Path | None = None, *, llm: Any = None,
        embedder: Any = None, progress: bool = True, replay_only: bool = False) -> Path:
    """Run ``spec`` (resuming a killed run, skipping a complete one); its folder.

    Args:
        results_dir: parent of the run folder ``<results_dir>/<spec.run_id>/`` (default
            ``MEMLAB_RESULTS_DIR`` or ``results``).
        llm, embedder: already-built models to use instead of building the spec's (``llm``
            then makes the memory's calls too).
        replay_only: answer every model call from the run folder's journal, none from a model
            (``memlab.rebuild``).
    """
    from memlab.bench.runner import run as run_spec

    memory_llm = llm
    built = llm is None  # a model the caller gives is used as it is
    if built:
        llm, memory_llm = make_models(spec)
    suite = build_suite(spec, llm)
    if built:
        needed = answering_window(spec, suite, llm)
        if needed > llm.context_window:  # the conversation came out longer than its span
            llm, memory_llm = make_models(spec, window=needed)
            # built again on the run's client: a suite's judge (LTM's jokes, restaurant) is
            # the client it was built with, and only the run's client records its calls in
            # the run's journal (a judge left on the first client answered outside it, so a
            # replay of the records could not score those tests)
            suite = build_suite(spec, llm)
    embedder = embedder or make_embedder(spec.embedder)
    return run_spec(spec, suite=suite, llm=llm, memory_llm=memory_llm,
                    embedder=embedder, results_dir=results_dir, progress=progress,
                    replay_only=replay_only)


def answering_window(spec: RunSpec, suite: Suite, llm: Any) -> int:
    """The answering model's window for ``spec`` on ``suite``: ``spec.window``, or for a
    condition whose history must fit it (full_context) without a window of its own, what
    holds its history: the whole stored conversation where any turn may be asked about
    (``Suite.whole_history``), else the span after a block cut."""
    if spec.n_ctx is not None or not MEMORIES.resolve(spec.condition).sized_to_answering_model:
        return spec.window
    needed = (window_for_conversation(suite, llm) if suite.whole_history
              else window_for_cut_history(spec.span))
    return max(spec.window, needed)


def window_for_cut_history(span: int) -> int:
    """full_context's window on a suite whose evidence lies within ``span`` tokens (LTM).

    full_context cuts its history in blocks (``FullContextConfig.cut_block``) so the prompt's
    prefix survives many answers; after a cut it holds ``1 - cut_block`` of its budget, which
    must still hold the span in chat format (a quarter more, as ``window_for_span`` allows).
    A window of the span alone cut a 4k-span history to 2,560 tokens, losing the evidence of
    every test older than that until the history grew back. Beyond ``MAX_WINDOW`` it cuts
    into the span (recorded per answer as ``truncated_turns``).
    """
    from memlab.memory.full_context import FullContextConfig

    config = FullContextConfig()
    budget = -(-(span + span // 4) // (1 - config.cut_block))
    need = int(budget) + config.reserve_tokens
    return min(MAX_WINDOW, max(window_for_span(span), -(-need // 1024) * 1024))


def window_for_conversation(suite: Suite, llm: Any, *, reply_tokens: int = 128) -> int:
    """The window that holds ``suite``'s whole stored conversation as a chat history:
    ``window_for_span`` of its longest conversation (a suite of several users: each its own
    history) in ``llm``'s tokenizer, each exchange with its chat-format
    overhead (``FullContextConfig.turn_overhead_tokens``) and, where the model writes the
    reply, ``reply_tokens`` (the Agent's reply limit).

    A span counts the conversation's text; a persona history at span 4,000 holds about 250
    exchanges, whose chat format adds 2,000 tokens, so a window sized to the span alone cut
    its oldest turns in every full_context answer. Used for suites whose questions may need
    any turn (``Suite.whole_history``).
    """
    from memlab.memory.full_context import FullContextConfig

    overhead = FullContextConfig().turn_overhead_tokens
    per_user: dict[str | None, int] = {}  # each conversation is its own full_context history
    for event in suite.events():
        if event.store:
            per_user[event.user_id] = per_user.get(event.user_id, 0) + (
                llm.count_tokens(event.text) + overhead
                + (reply_tokens if event.reply is None else llm.count_tokens(event.reply)))
    return window_for_span(max(per_user.values(), default=0))


def run_condition(condition: str, suite: str, span: int, seed: int = 0, *,
                  out_dir: str | Path = "results", progress: bool = True,
                  **fields: Any) -> Path:
    """``run`` from a notebook's parameters (each checked, the wrong one named).

    Args:
        **fields: the other RunSpec fields (``llm``, ``llm_model``, ``memory_llm_model``,
            ``embedder``, ``suite_options``, ``answered``, ``probes_sleep``...); a None
            ``llm`` / ``embedder`` takes the configured one.
    """
    settings = get_settings()
    fields["llm"] = fields.get("llm") or settings.llm
    fields["embedder"] = fields.get("embedder") or settings.embedder
    spec = RunSpec.parse({"condition": condition, "suite": suite, "span": span, "seed": seed,
                          **fields}, "parameters")
    return run(spec, out_dir, progress=progress)


# ---------------------------------------------------------------- an agent by hand
def make_agent(condition: str = "sleep", *, llm: Any, embedder: Any,
               workdir: str | Path = "results/tour", user_id: str = "tour-user"):
    """An Agent of ``condition`` for ``user_id``, with its stores in ``workdir``.

    On servers (``MEMLAB_REDIS_URL``, ``MEMLAB_CHROMA_URL``, ``MEMLAB_SQL_URL``) its memory lives
    under a namespace derived from ``workdir``: reopened on the same folder it finds its memory,
    and another folder never shares it.
    """
    from memlab.agent import Agent

    MEMORIES.resolve(condition)  # UnknownBackendError (a ConfigError) lists the conditions
    writable_folder(workdir, "agent workdir")
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


# ---------------------------------------------------------------- seeds 001, 003, 004
DOCQA_DIR = "results/docqa"
TASKFORCE_DIR = "results/taskforce"


def make_docqa(workdir: str | Path = DOCQA_DIR, *, llm: Any = None, embedder: Any = None,
               collection: str = "book", k: int = 4):
    """Document QA (seed 001) over the chunks ingested into ``workdir`` (chroma there, or
    ``MEMLAB_CHROMA_URL``). Without ``llm`` it ingests and retrieves but cannot answer;
    ``embedder`` is built from settings when None."""
    from memlab.docqa import DocumentQA

    return DocumentQA.from_settings(llm, embedder or make_embedder(), workdir,
                                    collection=collection, k=k)


def make_taskforce(workdir: str | Path = TASKFORCE_DIR, *, llm: Any = None, embedder: Any = None,
                   docs: Any = None, ask: Any = None, **kwargs: Any):
    """The Taskforce agent (seed 004) with its SQL store in ``workdir`` (or
    ``MEMLAB_SQL_URL``) and its six tools; file tools work in ``<workdir>/workspace``.

    Args:
        docs: a DocumentQA whose ingested documents ``search_documents`` searches (None: the
            search covers the workspace's text files instead).
        ask: answers ``ask_user`` (None: no user is available).
        **kwargs: TaskforceAgent options (``max_steps_per_item``...).
    """
    from memlab.taskforce import TaskforceAgent, TaskforceRepository, Toolbox

    embedder = embedder or make_embedder()
    repo = TaskforceRepository.open(workdir, embedder=embedder)
    toolbox = Toolbox.default(Path(workdir) / "workspace",
                              retrieve=docs.retrieve if docs is not None else None, ask=ask)
    return TaskforceAgent(llm or make_llm(), repo, toolbox, **kwargs)


def shipped_data(name: str) -> Path:
    """A file or folder of the checkout's ``data/`` (the sample documents, debate input and
    mission set).

    Raises:
        ConfigError: not there (they ship with the source, not inside the wheel).
    """
    from memlab.errors import ConfigError

    path = Path(__file__).resolve().parent.parent / "data" / name
    if not path.exists():
        raise ConfigError(f"data/{name} ships with memlab's source checkout, not the wheel; "
                          "pass a path of your own")
    return path


def taskforce_session(agent: Any, mission: str | None = None, *, session_id: str | None = None,
                      user_id: str | None = None):
    """Run ``mission`` as a new session, or finish the stopped session ``session_id``, or
    (when it already finished) reload it; its SessionResult."""
    from memlab.models.taskforce import SessionStatus

    if session_id is None:
        return agent.run(mission, user_id=user_id)
    session = agent.repo.get_session(session_id)
    if session is not None and session.status in (SessionStatus.COMPLETED, SessionStatus.FAILED):
        return agent.load(session_id)
    return agent.resume(session_id)


def decide(input_path: str | Path, output_dir: str | Path = "results/decision", *,
           llm: Any = None, session_id: str | None = None, on_turn: Any = None,
           cr_repair: bool | None = None):
    """The prioritisation debate (seed 003) on a UserInput JSON file; the final state.

    Round files and the final ranking go to ``output_dir``; a ``session_id`` whose round files
    are there resumes after the last one. ``cr_repair=False`` stops when round 2's CR stays
    above the threshold (default: ``MEMLAB_DECISION_CR_REPAIR``, on: repaired and recorded).
    """
    from memlab.decision.debate import DecisionDebate
    from memlab.decision.outputs import read_user_input

    user = read_user_input(input_path)
    debate = DecisionDebate(llm or make_llm(), output_dir=output_dir, on_turn=on_turn,
                            cr_repair=cr_repair)
    return debate.run(user, session_id=session_id)


__all__ = ["RunSpec", "build_suite", "chat", "decide", "make_docqa", "make_taskforce",
           "shipped_data", "taskforce_session", "consolidated_memories", "costs", "cycle_view",
           "make_agent", "make_embedder", "make_llm", "recall_view", "run", "run_condition",
           "run_summary", "schemas_formed", "schemas_used", "scores_by_type", "sleep_stats",
           "table2", "transcripts"]
