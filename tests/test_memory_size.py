"""How big each condition's memory is (issue 45 item 2, memory size vs span): ``MemorySystem.size``
counts what recall could return, grows as more is stored and calls no model; the runner records
it in the manifest (a resumed run: the rebuilt memory's); the span-scaling report draws it.

Each condition is asked, through its config, to recall everything it holds, so that what
``size`` counts can be checked against what recall returns.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from test_memory_contract import installed_peers

from memlab import lab
from memlab.agent import Agent
from memlab.bench.runlog import read_jsonl
from memlab.bench.runner import run as run_suite
from memlab.bench.schedule import estimate_tokens
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import MemlabError
from memlab.memory.base import CONDITIONS, MEMORIES, Exchange, MemorySize, Scope
from memlab.memory.rag import RagMemory
from memlab.report import data, scaling
from memlab.testing.contract import feed
from memlab.testing.fakes import memory_llm, peer_reply

START = datetime(2025, 3, 3, 9, tzinfo=UTC)
SAID = ("My sister is Quenby.", "My car is a green Volvo.", "My dog is Rex the terrier.",
        "My city is Tromso in Norway.", "My job is lighthouse keeper.", "My hobby is knitting.",
        "My bike is a red Bianchi.", "My boss is Ingrid Berg.", "My garden is full of kale.",
        "My teacher was Mr Alder.", "My doctor is Dr Okafor.", "My neighbour is Sven.")
# each condition told to recall everything it holds (its top-k / recent windows opened wide)
RECALL_ALL = {
    "rag": {"top_k": 100, "recent_turns": 0},
    "episodic": {"recent_episodes": 0, "relevant_episodes": 100},
    "episodic_summary": {"recent_episodes": 0, "relevant_episodes": 100, "summarize_every": 4,
                         "keep_recent": 2, "relevant_summaries": 100,
                         "recall_summarised_episodes": True},
    "sleep": {"recent_episodes": 0, "relevant_episodes": 100, "auto_sleep_episodes": 4,
              "relevant_memories": 100, "related_schemas": 100, "schema_min_score": 0.0},
    "hybrid": {"top_k_facts": 100},
}


def exchanges() -> list[Exchange]:
    return [Exchange(user=text, assistant="Noted, thanks.", turn_number=t,
                     timestamp=START + timedelta(hours=t)) for t, text in enumerate(SAID, 1)]


def make(condition: str, tmp_path: Path, llm=None):
    return MEMORIES.create(condition, scope=Scope(user_id="alice"), llm=llm or memory_llm(),
                           embedder=HashingEmbedder(), workdir=tmp_path,
                           namespace="size", config=RECALL_ALL.get(condition))


def recalled(memory, query: str = "Tell me about my family and things") -> MemorySize:
    """What one recall returns, counted as ``size`` counts (hybrid's scratchpad notes one by
    one, as it keeps them, not as the one item recall renders them into)."""
    if memory.uses_evidence:
        memory.set_evidence([ex.turn_number for ex in exchanges()])
    context = memory.recall(query)
    texts = [item.text for item in context.items if item.kind != "scratchpad"]
    if any(item.kind == "scratchpad" for item in context.items):
        texts += list(memory.state().scratchpad["notes"].values())
    return MemorySize.of(texts + [ex.render() for ex in context.history])


@pytest.mark.parametrize("condition", CONDITIONS)
def test_size_grows_with_what_is_stored_and_matches_what_recall_returns(condition, tmp_path):
    llm = memory_llm()
    memory = make(condition, tmp_path, llm)
    try:
        feed(memory, exchanges()[:5])
        early = memory.size()
        feed(memory, exchanges()[5:])
        calls = llm.calls
        late = memory.size()
        assert llm.calls == calls  # counting calls no model
        assert memory.size() == late  # nor changes what it counts
        if condition == "vanilla":
            assert early == late == MemorySize(items=0, tokens=0)
            return
        assert late.items > early.items > 0 and late.tokens > early.tokens > 0
        assert late == recalled(memory)
    finally:
        memory.close()


@pytest.mark.parametrize("condition", ["oracle", "full_context", "rag", "episodic"])
def test_verbatim_memories_count_one_item_per_stored_exchange(condition, tmp_path):
    memory = make(condition, tmp_path)
    try:
        feed(memory, exchanges())
        assert memory.size() == MemorySize(
            items=len(SAID), tokens=sum(estimate_tokens(ex.render()) for ex in exchanges()))
    finally:
        memory.close()


def test_sleep_and_summaries_add_what_they_derive_to_the_episodes(tmp_path):
    """episodic_summary and sleep hold every episode plus the summaries (and schemas) their
    cycles wrote: more items than exchanges stored."""
    for condition in ("episodic_summary", "sleep"):
        memory = make(condition, tmp_path / condition)
        try:
            feed(memory, exchanges())
            assert memory.size().items > len(SAID)
        finally:
            memory.close()


def test_a_forgotten_episode_is_not_counted(tmp_path):
    memory = make("episodic", tmp_path)
    try:
        feed(memory, exchanges())
        first = memory.episodes.get_recent(len(SAID))[-1]
        memory.episodes.mark_forgotten([first.id])
        size = memory.size()
        assert size.items == len(SAID) - 1
        assert size.tokens == sum(estimate_tokens(ex.render()) for ex in exchanges()[1:])
    finally:
        memory.close()


def test_a_superseded_fact_is_not_counted(tmp_path):
    """hybrid: a newer fact on the same subject replaces the older in recall and in the count."""
    memory = make("hybrid", tmp_path)
    try:
        feed(memory, exchanges()[:3])
        before = memory.size()
        feed(memory, [Exchange(user="My dog is Bruno the collie.", assistant="Noted, thanks.",
                               turn_number=4, timestamp=START + timedelta(hours=4))])
        after = memory.size()
        facts = [f for f in memory.facts.all() if f.current]
        assert len(facts) == 3 and memory.facts.count() == 4  # Rex superseded, kept
        assert "Rex" not in " ".join(f.content for f in facts)
        assert after == recalled(memory)
        # the new fact and note replace Rex's; the scratchpad keeps three recent turns
        assert after.items == before.items
    finally:
        memory.close()


@pytest.mark.parametrize("peer", installed_peers())
def test_a_peers_size_is_its_librarys_store_read_without_a_model_call(peer, tmp_path):
    """mem0 and LangMem: every memory the library keeps for the user, as a wide search returns
    them; graphiti: the facts of the user's graph (its entities and episodes are not shown)."""
    llm = memory_llm(peer_reply)
    wide = {"top_k": 100, "recent_turns": 0, **({"threshold": 0.0} if peer == "mem0" else {})}
    memory = MEMORIES.create(peer, scope=Scope(user_id="alice"), llm=llm,
                             embedder=HashingEmbedder(), workdir=tmp_path, namespace="size",
                             config=wide)
    try:
        feed(memory, exchanges()[:3])
        early = memory.size()
        feed(memory, exchanges()[3:6])
        calls = llm.calls
        late = memory.size()
        assert llm.calls == calls and memory.size() == late
        assert late.items > early.items > 0 and late.tokens > early.tokens
        if peer == "graphiti":
            assert late.items == memory.graph_counts()["facts"]
        else:
            found = memory.recall("Tell me about my family and things").items
            assert late == MemorySize.of(item.text for item in found)
    finally:
        memory.close()


# ---------------------------------------------------------------------------- the run manifest
def persona_run(condition: str, tmp_path: Path) -> tuple[dict, list[dict]]:
    spec = lab.RunSpec(suite="persona", condition=condition, span=300, seed=0, llm="fake",
                       embedder="hashing")
    run_dir = lab.run(spec, tmp_path, llm=memory_llm("<final_answer>(a)</final_answer>"),
                      embedder=HashingEmbedder(), progress=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return manifest, read_jsonl(run_dir / "turns.jsonl")


def test_a_run_records_its_memory_size_in_the_manifest(tmp_path):
    manifest, turns = persona_run("rag", tmp_path)
    stored = [t for t in turns if t["store"]]
    assert manifest["status"] == "complete" and len(stored) > 5
    assert manifest["memory_size"]["items"] == len(stored)
    assert manifest["memory_size"]["tokens"] > len(stored)
    vanilla, _ = persona_run("vanilla", tmp_path)
    assert vanilla["memory_size"] == {"items": 0, "tokens": 0}


class StoppingRag(RagMemory):
    """rag that stops the run at its ``stop_at``-th stored exchange (None: never)."""

    stop_at: int | None = None

    def observe(self, exchange: Exchange) -> None:
        if len(self.turns) + 1 == self.stop_at:
            raise MemlabError("stopped for the test")
        super().observe(exchange)


def stopping_factory(condition, *, llm, embedder, workdir, scope, memory_llm=None,
                     namespace=None):
    return Agent(StoppingRag(scope, llm=llm, embedder=embedder, workdir=workdir,
                             namespace=namespace), llm)


def test_a_resumed_run_records_the_size_of_the_memory_its_replay_rebuilt(tmp_path, monkeypatch):
    spec = lab.RunSpec(suite="persona", condition="rag", span=300, seed=0, llm="fake",
                       embedder="hashing")
    llm = memory_llm("<final_answer>(a)</final_answer>")
    suite = lab.build_suite(spec, llm)
    monkeypatch.setattr(StoppingRag, "stop_at", 4)
    with pytest.raises(MemlabError, match="stopped for the test"):
        run_suite(spec, suite=suite, llm=llm, embedder=HashingEmbedder(), results_dir=tmp_path,
                  progress=False, agent_factory=stopping_factory)
    failed = json.loads((spec.run_dir(tmp_path) / "manifest.json").read_text())
    assert failed["status"] == "failed" and failed["memory_size"]["items"] == 3
    monkeypatch.setattr(StoppingRag, "stop_at", None)
    run_dir = run_suite(spec, suite=suite, llm=llm, embedder=HashingEmbedder(),
                        results_dir=tmp_path, progress=False, agent_factory=stopping_factory)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    stored = [t for t in read_jsonl(run_dir / "turns.jsonl") if t["store"]]
    assert manifest["status"] == "complete" and manifest["resumes"] == 1
    assert manifest["memory_size"]["items"] == len(stored) > 3


def test_several_users_memory_sizes_are_recorded_by_user(tmp_path):
    """A suite of several conversations: each user's size is read when its memory closes (the
    first's when the second's conversation starts, the last's at the end of the run)."""
    from test_runner import TinySuite, fake_reply, tiny_spec

    class TwoUsers(TinySuite):
        def events(self):
            return [event.model_copy(update={"user_id": "ana" if event.session_id == "s0"
                                             else "ben"}) for event in super().events()]

    suite = TwoUsers(sessions=3)
    run_dir = run_suite(tiny_spec(suite, "rag"), suite=suite, llm=memory_llm(fake_reply),
                        embedder=HashingEmbedder(), results_dir=tmp_path, progress=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    turns = read_jsonl(run_dir / "turns.jsonl")
    stored = {user: sum(t["store"] for t in turns if t["user_id"] == user)
              for user in ("ana", "ben")}
    assert stored["ben"] == 2 * stored["ana"] > 0
    assert {user: size["items"] for user, size in manifest["memory_size"].items()} == stored


class UncountableRag(RagMemory):
    """rag whose count fails (a store gone at close)."""

    def size(self):
        raise OSError("store gone")


def test_a_count_that_fails_leaves_the_size_out_and_the_run_complete(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="memlab")
    from test_runner import TinySuite, fake_reply, tiny_spec

    def factory(condition, *, llm, embedder, workdir, scope, memory_llm=None, namespace=None):
        return Agent(UncountableRag(scope, llm=llm, embedder=embedder, workdir=workdir,
                                    namespace=namespace), llm)

    suite = TinySuite(sessions=1)
    run_dir = run_suite(tiny_spec(suite, "rag"), suite=suite, llm=memory_llm(fake_reply),
                        embedder=HashingEmbedder(), results_dir=tmp_path, progress=False,
                        agent_factory=factory)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["memory_size"] is None
    assert "could not count the memory" in caplog.text and "store gone" in caplog.text


# ---------------------------------------------------------------------------- the report
def write_manifest(root: Path, condition: str, span: int, **fields) -> None:
    """A complete LTM run's manifest at seed 0 with ``fields`` (``memory_size``, ...) added."""
    manifest = {"run_id": f"ltm-{condition}-{span}-s0", "condition": condition, "suite": "ltm",
                "span": span, "seed": 0, "status": "complete", **fields}
    folder = root / f"{manifest['run_id']}{fields.get('tag', '')}"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_memory_sizes_are_read_from_manifests_per_conversation(tmp_path):
    write_manifest(tmp_path, "rag", 1000, memory_size={"items": 10, "tokens": 400})
    write_manifest(tmp_path, "sleep", 1000, memory_size={
        "alice": {"items": 4, "tokens": 100}, "bob": {"items": 8, "tokens": 300}, "carol": None})
    write_manifest(tmp_path, "episodic", 1000, memory_size=None)  # nothing countable
    write_manifest(tmp_path, "hybrid", 1000)  # recorded before memory_size was
    write_manifest(tmp_path, "rag", 4000, memory_size={"items": 40, "tokens": 1600},
                   status="failed")
    write_manifest(tmp_path, "sleep", 4000, memory_size={"items": 9, "tokens": 90},
                   spec={"probes_sleep": True}, tag="-probes")  # Table 2's: slept first
    sizes = data.memory_sizes(tmp_path).set_index("condition")
    assert sorted(sizes.index) == ["rag", "sleep"]
    assert (sizes.loc["rag", "items"], sizes.loc["rag", "tokens"]) == (10, 400)
    assert (sizes.loc["sleep", "items"], sizes.loc["sleep", "tokens"]) == (6, 200)  # mean of 2
    assert set(sizes["span"]) == {1000}


def _sizes() -> pd.DataFrame:
    rows = [{"suite": "ltm", "span": span, "seed": seed, "condition": condition,
             "items": items * span / 1000, "tokens": 40 * items * span / 1000}
            for span in (1000, 4000) for seed in (0, 1)
            for condition, items in (("vanilla", 0), ("full_context", 12), ("rag", 12),
                                     ("sleep", 15))]
    return data.order_conditions(pd.DataFrame(rows, columns=data.SIZE_COLUMNS))


def test_the_memory_size_figure_draws_items_and_tokens_per_condition_on_log_axes():
    fig = scaling.plot_memory_size_vs_span(_sizes())
    items, tokens = fig.axes
    assert items.get_yscale() == tokens.get_yscale() == "log"
    assert (items.get_ylabel(), tokens.get_ylabel()) == ("Items stored", "Tokens stored")
    drawn = {line.get_label(): list(line.get_ydata()) for line in items.get_lines()}
    assert len(drawn) == 3  # vanilla keeps nothing: no point on a log axis
    assert sorted(max(y) for y in drawn.values()) == [48.0, 48.0, 60.0]
    assert sorted(max(line.get_ydata()) for line in tokens.get_lines()) == [1920, 1920, 2400]


def test_write_scaling_draws_memory_size_only_when_some_run_recorded_it(tmp_path):
    from test_report_scaling import _scores, _turns

    scores = _scores()
    without = scaling.write_scaling(scores, _turns(scores), tmp_path / "a")
    assert "memory_size_vs_span" not in without
    empty = _sizes().iloc[:0]
    assert "memory_size_vs_span" not in scaling.write_scaling(scores, _turns(scores),
                                                              tmp_path / "b", sizes=empty)
    written = scaling.write_scaling(scores, _turns(scores), tmp_path / "c", sizes=_sizes())
    png, pdf = written["memory_size_vs_span"]
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0
