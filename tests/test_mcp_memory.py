"""Memory over MCP, both ways, on loopback and offline: ``memlab mcp`` serving rag, the ``mcp``
condition using it (the round trip is exact), users and sessions kept apart, stdio, and an
independent MCP memory written here with the SDK under other tool names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_fakes import FOREIGN_OPTIONS, memlab_mcp, serve_foreign, stdio_command

from memlab import cli
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import MEMORIES, Exchange, Scope
from memlab.network import loopback_only
from memlab.testing.contract import CHECKS, NotApplicable

pytest.importorskip("mcp")
RUN = ("-s", "ltm", "--span", "600", "--llm", "fake", "--embedder", "hashing")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``memlab mcp -c rag`` (fake model, hashing embedder) for the module; its URL."""
    with memlab_mcp(tmp_path_factory.mktemp("mcp")) as url:
        yield url


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(condition: str, out: Path, *options: str) -> Path:
    args = ["run", "-c", condition, *RUN, "--out", str(out)]
    for option in options:
        args += ["-o", option]
    assert cli.main(args) == 0
    return out / f"ltm-{condition}-600-s0"


def mcp_memory(config: dict, user: str = "ana", workdir: Path | None = None, **kwargs):
    return MEMORIES.create("mcp", scope=Scope(user_id=user), config=config, workdir=workdir,
                           **kwargs)


def test_the_round_trip_is_exact_rag_served_over_mcp_runs_as_rag(served, tmp_path):
    rag = run("rag", tmp_path / "runs")
    over_mcp = run("mcp", tmp_path / "runs", f"url={served}")
    turns, again = records(rag / "turns.jsonl"), records(over_mcp / "turns.jsonl")
    assert len(turns) == len(again) == 451
    prompts = [(t.get("prompt_sha"), t["reply"], t["memory_kinds"]) for t in turns]
    assert prompts == [(t.get("prompt_sha"), t["reply"], t["memory_kinds"]) for t in again]
    assert sum(t["prompt_tokens_memory"] > 0 for t in turns) > 100  # memory reached the prompts
    scores, scored = records(rag / "scores.jsonl"), records(over_mcp / "scores.jsonl")
    measured = [(s["test_id"], s["score"], s["evidence_recall"]) for s in scores]
    assert measured == [(s["test_id"], s["score"], s["evidence_recall"]) for s in scored]
    recalls = {s["evidence_recall"] for s in scores}
    assert 0.0 in recalls and 1.0 in recalls  # provenance came back over MCP: recall varies
    manifest = json.loads((over_mcp / "manifest.json").read_text())
    assert manifest["spec"]["memory_options"] == {"url": served}
    assert "memory_options" not in json.loads((rag / "manifest.json").read_text())["spec"]


def test_users_and_sessions_are_kept_apart_and_forget_resets(served):
    url = {"url": served}
    with loopback_only() as blocked:
        ana = mcp_memory(url | {"session": "s1"}, user="ana")
        ana.observe(Exchange(user="My PIN is 4711.", assistant="Noted.", turn_number=1))
        ana.observe(Exchange(user="I like tea.", assistant="Fine.", turn_number=2))
        other_session = mcp_memory(url | {"session": "s2"}, user="ana")
        bob = mcp_memory(url | {"session": "s1"}, user="bob")
        assert "4711" in " ".join(e.user for e in ana.recall("PIN").history)
        for memory in (other_session, bob):
            context = memory.recall("What is my PIN?")
            assert context.items == [] and context.history == []
        reopened = mcp_memory(url | {"session": "s1"}, user="ana")  # a run reopening resets
        assert reopened.recall("PIN").history == []
        ana.close()
        for memory in (other_session, bob, reopened):
            memory.close()
    assert blocked == []


def test_a_server_whose_numbering_disagrees_is_an_environment_error(served):
    from memlab.memory.mcp_client import McpServerError

    memory = mcp_memory({"url": served, "session": "skewed"})
    try:
        with pytest.raises(McpServerError, match="stored turn 5 as turn 1"):
            memory.observe(Exchange(user="a", assistant="b", turn_number=5))
    finally:
        memory.close()


def test_stdio_transport_serves_memlab_memory_to_the_mcp_condition(tmp_path):
    command = stdio_command(tmp_path)
    memory = mcp_memory({"command": command, "timeout": 120}, workdir=tmp_path / "client")
    local = MEMORIES.create("rag", scope=Scope(user_id="ana"), embedder=HashingEmbedder(),
                            workdir=tmp_path / "local")
    try:
        for i, text in enumerate(["My dog is Rex.", "I live in Lyon.", "I play chess.",
                                  "My sister is Ana.", "I drink coffee."], start=1):
            exchange = Exchange(user=text, assistant="Noted.", turn_number=i)
            memory.observe(exchange)
            local.observe(exchange)
        remote, here = memory.recall("Where do I live?"), local.recall("Where do I live?")
        assert [i.text for i in remote.items] == [i.text for i in here.items]
        assert [i.source_turns for i in remote.items] == [i.source_turns for i in here.items]
        assert [e.user for e in remote.history] == ["My sister is Ana.", "I drink coffee."]
    finally:
        memory.close()
        local.close()
    assert (tmp_path / "served-stdio" / "sessions").is_dir()
    assert "on stdio" in (tmp_path / "client" / "mcp-server.log").read_text()
    assert memory.connection.thread.is_alive() is False  # close() stopped the loop's thread


def test_an_independent_mcp_memory_with_other_tool_names(tmp_path):
    with serve_foreign() as (url, notes), loopback_only() as blocked:
        memory = mcp_memory({"url": url, **FOREIGN_OPTIONS})
        memory.observe(Exchange(user="My cat is called Miso.", assistant="Cute.", turn_number=7))
        memory.observe(Exchange(user="Trains leave at nine.", assistant="Ok.", turn_number=8))
        assert notes == [("User: My cat is called Miso.\nAI: Cute.", 7),
                         ("User: Trains leave at nine.\nAI: Ok.", 8)]
        items = memory.recall("what is my cat called").items
        assert items[0].text.startswith("User: My cat") and items[0].source_turns == [7]
        memory.close()
        again = mcp_memory({"url": url, **FOREIGN_OPTIONS})  # opening wipes: a fresh memory
        assert notes == [] and again.recall("cat").items == []
        again.close()
    assert blocked == []


def test_memlab_run_benchmarks_the_independent_memory(tmp_path):
    with serve_foreign() as (url, notes):
        folder = run("mcp", tmp_path / "runs", f"url={url}",
                     *(f"{key}={value}" for key, value in FOREIGN_OPTIONS.items()))
    scores = records(folder / "scores.jsonl")
    assert len(scores) == 27 and max(s["evidence_recall"] for s in scores) > 0
    assert len(notes) > 100  # every exchange of the conversation reached the foreign memory


def test_a_tool_argument_breaking_a_rule_is_named_in_the_tools_error(served):
    from memlab.memory.mcp_client import McpServerError

    memory = mcp_memory({"url": served, "session": "rules"})
    try:
        with pytest.raises(McpServerError, match="tool 'observe' failed: .*field 'timestamp':"
                                                 " must lie between 1900-01-01 and 2999-12-31"):
            memory.connection.call_tool("observe", {"user_message": "a",
                                                    "assistant_message": "b",
                                                    "timestamp": "1800-01-01T00:00:00"})
    finally:
        memory.close()


def test_memlab_mcp_on_a_taken_port_exits_2_naming_it(tmp_path, capsys):
    from memlab.server.run import bind

    taken = bind("127.0.0.1", 0)
    try:
        port = str(taken.getsockname()[1])
        status = cli.main(["mcp", "--port", port, "--llm", "fake", "--embedder", "hashing",
                           "--workdir", str(tmp_path / "served")])
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert status == 2 and f"--port {port}: cannot listen" in err and err.count("\n") == 1


@pytest.mark.parametrize("check", CHECKS)
def test_the_mcp_condition_keeps_the_memory_contract(served, tmp_path, check):
    """The shipped contract suite (docs/plugins.md) run on the ``mcp`` condition, its memory
    served by ``memlab mcp -c rag``: scopes, provenance and resume hold across the bridge."""
    def make(scope: Scope, workdir: Path, namespace: str):
        return MEMORIES.create("mcp", scope=scope, config={"url": served}, workdir=workdir,
                               namespace=namespace, embedder=HashingEmbedder())

    try:
        CHECKS[check](make, tmp_path)
    except NotApplicable as exc:
        pytest.skip(str(exc))
