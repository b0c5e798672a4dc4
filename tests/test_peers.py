"""The peer conditions (mem0, LangMem, graphiti) on FakeLLM and the hashing embedder: the LangChain
adapters, isolation between users, the loopback-only network guard, mem0's folder, failure
counting, and kill -9 + resume through the runner.

Run as a script (``python tests/test_peers.py RESULTS_DIR CONDITION HANG_AT_CALL``) it is the
child process the kill test starts and kills.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from peer_fakes import peer_llm, peer_reply  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from memlab.agent import Agent  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.errors import LLMError  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.memory.base import CONDITIONS, MEMORIES, PEERS, Exchange, Scope  # noqa: E402
from memlab.network import NetworkBlockedError, is_loopback, loopback_only  # noqa: E402


def make_peer(key, scope, workdir, llm=None, **extra):
    return MEMORIES.create(key, scope=scope, llm=llm or peer_llm(),
                           embedder=HashingEmbedder(dim=384), workdir=workdir, **extra)


# ---------------------------------------------------------------------------- the adapters
class Note(BaseModel):
    """A note to keep."""

    content: str


class Patch(BaseModel):
    """Edits to a document."""

    edits: list[str]


def test_chat_model_tool_call_is_constrained_json_and_parsed():
    from memlab.llm.langchain_chat import MemlabChatModel

    llm = FakeLLM(['{"tool_calls": [{"name": "Note", "arguments": {"content": "cat Pixel"}}]}'])
    chat = MemlabChatModel(llm=llm)
    reply = chat.bind_tools([Note], tool_choice="any").invoke("remember my cat Pixel")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("Note", {"content": "cat Pixel"})]
    schema = llm.params[0]["json_schema"]
    calls = schema["properties"]["tool_calls"]
    assert calls["minItems"] == 1 and calls["items"]["properties"]["name"] == {"const": "Note"}
    assert chat.stats.calls == 1 and chat.stats.parse_failures == 0


def test_tools_open_the_system_message_and_the_reply_schema_is_not_shown():
    """Tools first, as chat templates put them: every call of a tool set then shares its prompt
    prefix with the last one (the local model reuses it). The grammar enforces the reply's
    schema; showing a second copy of it is what the 1.5B model looped on."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from memlab.llm.langchain_chat import MemlabChatModel

    llm = FakeLLM(['{"tool_calls": [{"name": "Note", "arguments": {"content": "cat Pixel"}}]}'])
    bound = MemlabChatModel(llm=llm).bind_tools([Note, Patch], tool_choice="any")
    bound.invoke([SystemMessage("Existing notes: none."), HumanMessage("remember my cat Pixel")])
    bound.invoke([SystemMessage("Existing notes: cat Pixel."), HumanMessage("I like tea")])
    first, second = (h[0].content for h in llm.history)
    assert first.startswith("You can call these tools:\n- Note: A note to keep.")
    assert first.endswith("Existing notes: none.") and "Call at least one tool." in first
    tools = first[: first.index("Existing notes")]
    assert second.startswith(tools) and [m.role for m in llm.history[1]] == ["system", "user"]
    assert llm.history[1][-1].content == "I like tea"
    assert "maxItems" not in tools and "tool_calls" in tools  # the shape by example only


def test_tool_arguments_are_bounded_as_memlabs_own_memory_calls():
    from memlab.llm.langchain_chat import MemlabChatModel
    from memlab.llm.structured import MEMORY_MAX_CHARS, MEMORY_MAX_ITEMS

    llm = FakeLLM(['{"tool_calls": [{"name": "Patch", "arguments": {"edits": ["a"]}}]}'])
    MemlabChatModel(llm=llm).bind_tools([Patch], tool_choice="any").invoke("edit it")
    edits = llm.params[0]["json_schema"]["properties"]["tool_calls"]["items"]["properties"][
        "arguments"]["properties"]["edits"]
    assert edits["maxItems"] == MEMORY_MAX_ITEMS  # a looping model stops at 8 patches
    assert edits["items"]["maxLength"] == MEMORY_MAX_CHARS


class LoopingLLM(FakeLLM):
    """Replies as the 1.5B model did to LangMem's PatchDoc: a string cut by ``stop_on_loop``."""

    def _complete(self, messages, **params):
        done = super()._complete(messages, **params)
        return done.model_copy(update={"looped": bool(params.get("stop_on_loop"))})


def test_tool_calls_stop_on_a_loop_and_count_it_as_a_failure():
    from memlab.llm.langchain_chat import MemlabChatModel

    llm = LoopingLLM(['{"tool_calls": [{"name": "Patch", "arguments": {"edits": ["/0/0/0/0/0'])
    chat = MemlabChatModel(llm=llm)
    reply = chat.bind_tools([Patch], tool_choice="any").invoke("edit it")
    assert llm.params[0]["stop_on_loop"] is True and reply.tool_calls == []
    assert chat.stats.parse_failures == 1 and "looped" in chat.stats.failures[0]
    chat.invoke("plain text")  # replies without tools (mem0's) keep their cache keys
    assert "stop_on_loop" not in llm.params[1]


class LimitLLM(FakeLLM):
    """Replies as the 1.5B model did to some of LangMem's calls: cut at the token limit."""

    def _complete(self, messages, **params):
        done = super()._complete(messages, **params)
        return done.model_copy(update={"completion_tokens": params["max_tokens"]})


def test_a_reply_cut_at_the_token_limit_keeps_its_whole_calls_and_is_counted():
    from memlab.llm.langchain_chat import MemlabChatModel

    cut = ('{"tool_calls": [{"name": "Note", "arguments": {"content": "cat Pixel"}}, '
           '{"name": "Note", "arguments": {"content": "I also want to make sure')
    chat = MemlabChatModel(llm=LimitLLM([cut]), max_tokens=40)
    reply = chat.bind_tools([Note], tool_choice="any").invoke("remember my cat Pixel")
    assert reply.tool_calls[0]["args"] == {"content": "cat Pixel"}
    assert chat.stats.cut_replies == 1 and chat.stats.parse_failures == 0
    whole = MemlabChatModel(llm=FakeLLM(['{"tool_calls": []}']), max_tokens=40)
    whole.bind_tools([Note]).invoke("hello")
    assert whole.stats.cut_replies == 0


def test_chat_model_counts_a_bad_reply_and_returns_it_as_text():
    from memlab.llm.langchain_chat import MemlabChatModel

    chat = MemlabChatModel(llm=FakeLLM(["Sorry, I cannot {not json",
                                        '{"tool_calls": [{"name": "Nope", "arguments": {}}]}']))
    bound = chat.bind_tools([Note], tool_choice="auto")
    first, second = bound.invoke("hi"), bound.invoke("hi again")
    assert first.tool_calls == [] and "cannot" in first.content
    assert second.tool_calls == []
    assert chat.stats.parse_failures == 2 and len(chat.stats.failures) == 2


def test_mem0_extraction_prompt_is_mem0s_own_with_its_fields_and_line_breaks(tmp_path):
    """memlab's appended schema made the 1.5B model answer '{"memory":[]}' to every exchange
    of a persona run: mem0's prompt states the format itself."""
    llm = peer_llm()
    memory = make_peer("mem0", Scope(user_id="u1"), tmp_path, llm=llm)
    memory.observe(Exchange(user="My cat is called Pixel.", assistant="Nice!", turn_number=1))
    memory.close()
    (messages, params), = [(m, p) for m, p in zip(llm.history, llm.params, strict=True)
                           if "## New Messages" in m[-1].content]
    assert "Reply with only a JSON object" not in messages[-1].content
    assert params["json_newlines"] is True
    fact = params["json_schema"]["$defs"]["Mem0Fact"]
    assert list(fact["properties"])[:3] == ["id", "text", "attributed_to"]
    assert fact["required"] == ["id", "text", "attributed_to"]


def test_mem0_prompt_dates_are_the_conversations_clock_not_the_machines(tmp_path):
    """mem0 wrote the machine's date into every extraction prompt: the prompts of a run (and
    the response cache's keys) changed with the day it ran on."""
    import datetime as dt

    import mem0.configs.prompts as mem0_prompts

    llm = peer_llm()
    memory = make_peer("mem0", Scope(user_id="u1"), tmp_path, llm=llm)
    when = dt.datetime(2024, 1, 8, 19, 0)  # naive, as the suites' clocks are
    memory.observe(Exchange(user="My cat is called Pixel.", assistant="Nice!", turn_number=1,
                            timestamp=when))
    memory.close()
    prompt, = [m[-1].content for m in llm.history if "## New Messages" in m[-1].content]
    assert "## Observation Date\n2024-01-08" in prompt
    assert "## Current Date\n2024-01-08" in prompt
    assert dt.datetime.now(dt.UTC).date().isoformat() not in prompt
    assert mem0_prompts.datetime is dt.datetime  # restored after the call


def test_tool_call_ids_are_stable_for_the_same_reply():
    from memlab.llm.langchain_chat import MemlabChatModel

    reply = '{"tool_calls": [{"name": "Note", "arguments": {"content": "x"}}]}'
    ids = [MemlabChatModel(llm=FakeLLM([reply])).bind_tools([Note]).invoke("a").tool_calls[0]["id"]
           for _ in range(2)]
    assert ids[0] == ids[1]


def test_langchain_embeddings_are_memlab_vectors():
    from memlab.embed.langchain_embeddings import MemlabEmbeddings

    embedder = HashingEmbedder(dim=64)
    wrapped = MemlabEmbeddings(embedder)
    assert wrapped.embed_query("my cat Pixel") == pytest.approx(
        embedder.embed_one("my cat Pixel").tolist())
    assert len(wrapped.embed_documents(["a", "b c"])) == 2


def test_peers_are_registered_but_not_in_the_default_grid():
    from memlab.gridspec import GridSpec

    assert set(PEERS) == {"mem0", "langmem", "graphiti"} <= set(MEMORIES.names())
    assert not set(PEERS) & set(CONDITIONS)
    assert not set(PEERS) & set(GridSpec(name="x", spans={"persona": [1000]}).conditions)
    # graphiti's facts name their source episodes, hence turns; mem0's and LangMem's do not
    assert [MEMORIES.resolve(k).keeps_provenance for k in PEERS] == [False, False, True]


KIND = {"mem0": "memory", "langmem": "memory", "graphiti": "fact"}


@pytest.mark.parametrize("key", PEERS)
def test_peer_stores_and_recalls_through_the_library(tmp_path, key):
    memory = make_peer(key, Scope(user_id="u1"), tmp_path)
    memory.observe(Exchange(user="My cat is called Pixel.", assistant="Nice!", turn_number=1))
    memory.observe(Exchange(user="I live in Lisbon.", assistant="Lovely.", turn_number=2))
    context = memory.recall("What is my cat called?")
    texts = [item.text for item in context.items]
    assert any("Pixel" in t for t in texts) and all(i.kind == KIND[key] for i in context.items)
    assert [ex.turn_number for ex in context.history] == [1, 2]
    stats = memory.stats()
    assert stats["stored_turns"] == 2 and stats["memories_written"] >= 2
    assert stats["llm"]["calls"] >= 2 and stats["failed_turns"] == 0
    assert stats["search_seconds_p50"] > 0
    memory.close()


# ---------------------------------------------------------------------------- isolation
SECRETS = ("PINEAPPLE", "WALNUT")


@pytest.mark.parametrize("key", PEERS)
def test_a_secret_of_one_user_never_reaches_the_other_users_prompt(tmp_path, key):
    """Two users of one deployment: one folder (mem0's chroma and history db) or one LangGraph
    store (langmem); turns interleaved."""
    extra = {}
    if key == "langmem":
        from langgraph.store.memory import InMemoryStore

        from memlab.embed.langchain_embeddings import MemlabEmbeddings

        extra["store"] = InMemoryStore(index={"dims": 384,
                                              "embed": MemlabEmbeddings(HashingEmbedder(dim=384))})
    scopes = (Scope(user_id="alice"), Scope(user_id="bob"))
    llm = peer_llm()
    agents = [Agent(make_peer(key, s, tmp_path, llm=llm, **extra), llm) for s in scopes]
    for turn in range(4):
        for agent, secret in zip(agents, SECRETS, strict=True):
            text = f"My secret code word is {secret}." if turn == 1 else f"Rivers, part {turn}."
            agent.observe(text, "Noted.")
    for agent in agents:
        agent.observe("Tell me about lakes.", "Lakes are still.")  # the secret leaves history
    for agent, secret, other in zip(agents, SECRETS, SECRETS[::-1], strict=True):
        agent.interact("What is my secret code word?")
        prompt = "\n".join(m.content for m in agent.last_messages)
        assert secret in prompt and other not in prompt
        agent.memory.close()


# ---------------------------------------------------------------------------- network audit
def test_the_guard_blocks_a_connection_outside_loopback_and_allows_loopback():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with loopback_only() as blocked, socket.create_connection(server.getsockname(), 2):
            pass
        assert blocked == []
    with loopback_only() as blocked, pytest.raises(NetworkBlockedError):
        socket.create_connection(("192.0.2.1", 80), timeout=2)  # TEST-NET-1: never routed
    assert blocked and "192.0.2.1" in blocked[0]
    socket.getaddrinfo("localhost", 80)  # outside a block nothing is refused


SOCKET_EVENTS: list[tuple[str, object]] = []


def _record(event, args):
    if event in {"socket.connect", "socket.sendto"}:
        SOCKET_EVENTS.append((event, args[1]))
    elif event == "socket.getaddrinfo":
        SOCKET_EVENTS.append((event, args[0]))


@pytest.fixture
def socket_events():
    """Every socket connect / sendto / name lookup of the process from now on (an audit hook
    of the test's own, installed once: audit hooks cannot be removed)."""
    if not getattr(_record, "installed", False):
        sys.addaudithook(_record)
        _record.installed = True
    SOCKET_EVENTS.clear()
    return SOCKET_EVENTS


def outside_loopback(events) -> list:
    hosts = [(e, t[0] if isinstance(t, tuple) else t) for e, t in events]
    return [(e, h) for e, h in hosts if isinstance(h, str) and not is_loopback(h)]


def test_the_recorder_sees_a_connection_outside_loopback(socket_events):
    with pytest.raises(OSError):  # TEST-NET-1 is never routed: refused or timed out
        socket.create_connection(("192.0.2.1", 9), timeout=0.2)
    assert ("socket.connect", "192.0.2.1") in outside_loopback(socket_events)


@pytest.mark.parametrize("key", PEERS)
def test_a_peer_run_opens_no_connection_outside_loopback(tmp_path, key, socket_events):
    """The condition's set-up, adds and searches, every socket event of the process recorded
    (besides the condition's own guard, which would refuse them)."""
    with loopback_only() as blocked:
        memory = make_peer(key, Scope(user_id="u1"), tmp_path)
        for turn in range(3):
            memory.observe(Exchange(user=f"I like tea number {turn}.", assistant="Ok.",
                                    turn_number=turn + 1))
        memory.recall("what do I like?")
        memory.close()
    assert outside_loopback(socket_events) == [] and blocked == []


def test_mem0_writes_nothing_outside_the_run_folder_and_keeps_telemetry_off(tmp_path):
    """A fresh process with HOME in tmp: no ~/.mem0, mem0's folder inside the run folder."""
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from pathlib import Path\n"
        "from peer_fakes import peer_llm\n"
        "from memlab.embed.hashing import HashingEmbedder\n"
        "from memlab.memory.base import MEMORIES, Exchange, Scope\n"
        "m = MEMORIES.create('mem0', scope=Scope(user_id='u'), llm=peer_llm(),\n"
        "                    embedder=HashingEmbedder(dim=384), workdir=Path(sys.argv[1]))\n"
        "m.observe(Exchange(user='I like tea.', assistant='Ok.', turn_number=1))\n"
        "import os; from mem0.memory import telemetry\n"
        "print(os.environ['MEM0_DIR'], telemetry.MEM0_TELEMETRY)\n")
    home, run = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEM0_")}
    out = subprocess.run([sys.executable, "-c", code, str(run)], cwd=ROOT, env={**env, "HOME": str(home)},
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out == [str(run / "mem0"), "False"]
    assert not (home / ".mem0").exists() and (run / "mem0").is_dir()


# ---------------------------------------------------------------------------- failures
@pytest.mark.parametrize("key", PEERS)
def test_a_failing_or_garbled_model_is_counted_not_fatal(tmp_path, key):
    calls = {"n": 0}

    def flaky(messages):
        calls["n"] += 1
        if calls["n"] == 1:
            raise LLMError("model gone")
        if calls["n"] == 2:
            return "Sorry {not json"
        return peer_reply(messages)

    memory = make_peer(key, Scope(user_id="u1"), tmp_path, llm=FakeLLM([flaky]))
    for turn in range(3):
        memory.observe(Exchange(user=f"I like tea number {turn}.", assistant="Ok.",
                                turn_number=turn + 1))
    stats = memory.stats()
    assert stats["stored_turns"] == 3 and stats["failed_turns"] >= 1
    assert "model gone" in stats["failures"][0] and stats["llm"]["parse_failures"] >= 1
    assert memory.recall("what tea do I like?").items  # the third turn was stored
    memory.close()


# ---------------------------------------------------------------------------- kill -9 + resume
def _child(results_dir: str, condition: str, hang_at_call: int) -> None:
    """The runner's tiny suite under a peer; hangs inside model call ``hang_at_call``."""
    from test_runner import TinySuite, tiny_spec

    from memlab.bench.runner import run

    calls = {"n": 0}

    def reply(messages):
        calls["n"] += 1
        if calls["n"] == hang_at_call:
            Path(results_dir, "HANG").write_text("1")
            time.sleep(600)
        return peer_reply(messages)

    suite = TinySuite(sessions=2, filler=2)
    run(tiny_spec(suite, condition), suite=suite, llm=FakeLLM([reply]),
        embedder=HashingEmbedder(dim=384), results_dir=results_dir, progress=False)


def _run_dir(root: Path, condition: str) -> Path:
    from test_runner import TinySuite, tiny_spec

    return tiny_spec(TinySuite(sessions=2, filler=2), condition).run_dir(root)


@pytest.mark.parametrize("key", PEERS)
def test_kill9_then_resume_pays_no_call_twice(tmp_path, key):
    def child(folder: str, hang: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, __file__, str(tmp_path / folder), key, str(hang)],
                                cwd=ROOT)

    assert child("clean", -1).wait(timeout=180) == 0
    proc, deadline = child("killed", 6), time.time() + 120
    while not (tmp_path / "killed" / "HANG").exists():
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (tmp_path / "killed" / "HANG").unlink()
    killed, clean = _run_dir(tmp_path / "killed", key), _run_dir(tmp_path / "clean", key)
    before = read_jsonl(killed / "calls.jsonl")
    assert len(before) == 5
    assert child("killed", -1).wait(timeout=180) == 0  # resume
    from memlab.bench.runner import strip_timing

    turns = [strip_timing(t) for t in read_jsonl(killed / "turns.jsonl")]
    assert turns == [strip_timing(t) for t in read_jsonl(clean / "turns.jsonl")]
    assert any(t["memory_ids"] for t in turns)
    calls, clean_calls = read_jsonl(killed / "calls.jsonl"), read_jsonl(clean / "calls.jsonl")
    keys = [c["key"] for c in calls]
    # none repeated; on a difference, say which call (step, ordinal, prompt shape) it was
    assert keys == [c["key"] for c in clean_calls], next(
        (f"call {i}: resumed {a['step']}/{a['ordinal']} shape {a['shape'][:8]} reply "
         f"{a['completion']['text'][:60]!r}; clean {b['step']}/{b['ordinal']} shape "
         f"{b['shape'][:8]} reply {b['completion']['text'][:60]!r}"
         for i, (a, b) in enumerate(zip(calls, clean_calls, strict=False)) if a["key"] != b["key"]),
        f"{len(calls)} calls resumed, {len(clean_calls)} clean")
    manifest = json.loads((killed / "manifest.json").read_text())
    clean_manifest = json.loads((clean / "manifest.json").read_text())
    assert manifest["counts"]["llm_calls_paid"] == clean_manifest["counts"]["llm_calls_paid"]
    assert manifest["counts"]["llm_calls_replayed"] == 5
    assert manifest["counts"]["llm_calls_mismatched"] == 0
    assert manifest["counts"]["diverged_turns"] == [] and manifest["status"] == "complete"
    assert manifest["memory_stats"]["llm"] == clean_manifest["memory_stats"]["llm"]


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
