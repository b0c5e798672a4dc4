"""Everything that changes results is in a run's identity and in the response-cache key: the
OpenAI-compatible server's URL, the prompt, template and grammar versions, the embedder."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest
from faults_helpers import ROOT, ChatServer, digest
from test_runner import TinySuite, fake_reply, run, tiny_spec

from memlab.bench import versions
from memlab.bench.runner import run as run_spec
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.base import Message
from memlab.llm.cache import ResponseCache
from memlab.llm.factory import get_llm
from memlab.llm.fake import FakeLLM
from memlab.llm.local import LocalLLM

USER = [{"role": "user", "content": "What is my favourite colour?"}]


@pytest.fixture
def servers():
    pair = ChatServer("first"), ChatServer("second")
    yield pair
    for server in pair:
        server.close()


def openai(server: ChatServer, cache_dir: Path):
    return get_llm("openai", llm_model="m", openai_base_url=server.url, cache_dir=cache_dir,
                   max_retries=0)


def test_an_answer_cached_from_one_server_is_not_served_for_another(servers, tmp_path):
    first, second = servers
    a = openai(first, tmp_path).complete(USER)
    b = openai(second, tmp_path).complete(USER)  # same model name, same messages, same cache
    assert a.text.startswith("first") and b.text.startswith("second") and not b.cached
    assert (first.requests, second.requests) == (1, 1)
    again = openai(first, tmp_path).complete(USER)
    assert again.cached and again.text == a.text and first.requests == 1


def test_option_scores_are_cached_per_server(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    msgs, options = [Message(role="user", content="which?")], ["a", "b"]
    cache.put_scores("openai", "m", msgs, options, [-1.0, -2.0],
                     identity={"base_url": "http://127.0.0.1:1/v1"})
    assert cache.get_scores("openai", "m", msgs, options,
                            identity={"base_url": "http://127.0.0.1:2/v1"}) is None
    assert cache.get_scores("openai", "m", msgs, options,
                            identity={"base_url": "http://127.0.0.1:1/v1"}) == [-1.0, -2.0]


def run_on(server: ChatServer, tmp_path: Path) -> Path:
    spec = tiny_spec(TinySuite(), "vanilla", llm="openai", llm_model="m")
    return run_spec(spec, suite=TinySuite(), llm=openai(server, tmp_path / "c"),
                    results_dir=tmp_path, progress=False)


def test_a_run_folder_of_one_server_is_refused_for_another(servers, tmp_path):
    first, second = servers
    run_dir = run_on(first, tmp_path)
    assert json.loads((run_dir / "manifest.json").read_text())["llm"]["base_url"] == \
        f"{first.url}/chat/completions"
    before = digest(run_dir)
    port = first.url.split(":")[2].split("/")[0]
    with pytest.raises(ConfigError, match=rf"llm\.base_url: recorded '.*:{port}/v1/chat/"):
        run_on(second, tmp_path)
    assert digest(run_dir) == before and second.requests == 0


@pytest.mark.parametrize("module, name, part, condition", [
    ("memlab.agent", "DEFAULT_SYSTEM_PROMPT", "agent", "vanilla"),
    ("memlab.agent", "MEMORY_HEADER", "agent", "vanilla"),
    ("memlab.memory.hybrid_extract", "EXTRACT_PROMPT", "memory", "episodic_summary"),
    ("memlab.sleep.compress", "COMPRESS_PROMPT", "memory", "episodic_summary"),
    ("memlab.bench.scoring", "JUDGE_PROMPT", "scoring", "vanilla"),
    ("memlab.llm.local", "CHATML_TEMPLATE", "structured", "vanilla"),
])
def test_a_prompt_change_changes_the_run_identity_and_refuses_the_folder(
        module, name, part, condition, tmp_path, monkeypatch):
    import importlib

    run_dir = run(TinySuite(), condition, llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                  progress=False)
    versions_before = versions.prompt_versions()
    target = importlib.import_module(module)
    monkeypatch.setattr(target, name, getattr(target, name) + " Be terse.")
    after = versions.prompt_versions()
    assert after[part] != versions_before[part]
    assert {k for k in after if after[k] != versions_before[k]} == {part}
    with pytest.raises(ConfigError, match=f"prompts.{part}: recorded '{versions_before[part]}'"):
        run(TinySuite(), condition, llm=FakeLLM([fake_reply]), results_dir=tmp_path,
            progress=False)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_a_memory_prompt_change_leaves_a_run_that_sends_none_of_them_resumable(
        tmp_path, monkeypatch):
    """The peers grid's mem0 cell, 56 turns in, was refused when hybrid's extractor prompt
    changed: a condition that never sends memlab's memory prompts does not record them."""
    from memlab.memory import hybrid_extract

    assert "memory" not in versions.prompt_versions("rag")
    assert "memory" in versions.prompt_versions("hybrid") == versions.prompt_versions()
    first = run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                progress=False)
    manifest = first / "manifest.json"
    assert "memory" not in json.loads(manifest.read_text())["prompts"]
    manifest.write_text(manifest.read_text().replace('"complete"', '"running"'))  # killed
    monkeypatch.setattr(hybrid_extract, "EXTRACT_PROMPT", hybrid_extract.EXTRACT_PROMPT + " X")
    again = run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
                progress=False)
    assert again == first
    assert json.loads((again / "manifest.json").read_text())["status"] == "complete"


def test_a_grammar_change_changes_the_structured_version(monkeypatch):
    from memlab.llm import grammars

    before = versions.prompt_versions()["structured"]
    monkeypatch.setattr(grammars, "choices_gbnf", lambda choices: "root ::= " + " | ".join(
        f"'{c}'" for c in choices))
    assert versions.prompt_versions()["structured"] != before


def test_every_prompt_constant_is_in_the_prompt_versions():
    """A new ``*_PROMPT`` / ``*_HEADER`` / ``*_TEMPLATE`` of a module a run uses must be hashed
    into ``versions.PROMPT_TEXTS``, or a run made with another prompt would be reused."""
    texts = "\x00".join(t for part in versions.PROMPT_TEXTS.values() for t in part())
    missing = []
    for folder in ("memlab/agent.py", "memlab/memory", "memlab/sleep", "memlab/bench",
                   "memlab/llm"):
        path = ROOT / folder
        for source in ([path] if path.is_file() else sorted(path.rglob("*.py"))):
            for node in ast.parse(source.read_text()).body:
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and isinstance(node.targets[0], ast.Name)):
                    continue
                name = node.targets[0].id
                if name.endswith(("_PROMPT", "_HEADER", "_TEMPLATE")):
                    module = ".".join(source.relative_to(ROOT).with_suffix("").parts)
                    value = getattr(importlib.import_module(module), name)
                    if value not in texts:
                        missing.append(f"{source.relative_to(ROOT)}:{name}")
    assert missing == []


def test_a_constrained_local_call_is_keyed_by_the_grammar_version():
    local = object.__new__(LocalLLM)  # no model needed to build a cache key
    assert local.cache_identity({"json_schema": None, "choices": None}) == {}
    constrained = local.cache_identity({"json_schema": {"type": "object"}, "choices": None})
    assert constrained == local.cache_identity({"json_schema": None, "choices": ["a", "b"]})
    assert len(constrained["grammar"]) == 16


def test_an_unconstrained_call_keeps_its_cache_key(tmp_path):
    """Adding identity fields must not invalidate every cached answer of a provider without
    any: a FakeLLM call is keyed exactly as before."""
    from memlab.llm.cache import cache_key

    llm = get_llm("fake", cache_dir=tmp_path)
    llm.complete(USER)
    params = {"max_tokens": 256, "temperature": 0.0, "stop": None, "json_schema": None,
              "choices": None}
    key = cache_key("fake", "fake", [Message(**USER[0])], params)
    assert llm.cache._get_value(key) is not None


class WideHashing(HashingEmbedder):
    name = "hashing-512"


def test_a_run_folder_of_one_embedder_is_refused_for_another(tmp_path):
    run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path, progress=False,
        embedder=HashingEmbedder())
    with pytest.raises(ConfigError, match="embedder: recorded 'hashing', now 'hashing-512'"):
        run(TinySuite(), "rag", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
            progress=False, embedder=WideHashing(512))


@pytest.mark.parametrize("suite", ["ltm", "persona"])
def test_a_suite_describes_itself_the_same_before_and_after_its_events(suite):
    """A run's identity is taken before its events are generated; a suite whose description
    changed with generation (persona's history_tokens did) refused every resume of its runs."""
    from memlab.bench.base import SUITES

    def build():
        return SUITES.resolve(suite).build(span=600, seed=0, llm=FakeLLM(), options={})

    fresh, generated = build(), build()
    generated.events()
    assert fresh.describe() == generated.describe()


def test_a_killed_persona_run_resumes(tmp_path):
    from memlab import lab
    from memlab.bench.runlog import read_jsonl
    from memlab.bench.spec import RunSpec

    spec = RunSpec(suite="persona", condition="episodic", span=600, llm="fake",
                   embedder="hashing", suite_options={"n_topics": 1})
    llm = FakeLLM([fake_reply])
    run_dir = run_spec(spec, suite=lab.build_suite(spec, llm), llm=llm,
                       embedder=HashingEmbedder(), results_dir=tmp_path, progress=False)
    turns = (run_dir / "turns.jsonl").read_bytes()
    manifest = run_dir / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"complete"', '"running"'))  # killed
    (run_dir / "turns.jsonl").write_bytes(b"".join(turns.splitlines(keepends=True)[:40]))
    llm = FakeLLM([fake_reply])  # a new process: the suite built afresh
    run_spec(spec, suite=lab.build_suite(spec, llm), llm=llm, embedder=HashingEmbedder(),
             results_dir=tmp_path, progress=False)
    assert json.loads(manifest.read_text())["status"] == "complete"
    assert len(read_jsonl(run_dir / "turns.jsonl")) == len(turns.splitlines())


def test_a_suite_judge_change_refuses_that_suites_runs_only(monkeypatch):
    """LoCoMo's judges are part of LoCoMo runs' identity, not of an LTM or persona run's: a new
    strict-judge prompt must not strand a grid of other suites half way."""
    from memlab.bench.suites import judges

    ltm, locomo = versions.prompt_versions("rag", "ltm"), versions.prompt_versions("rag", "locomo")
    assert "suites" not in ltm and "suites" in locomo
    monkeypatch.setattr(judges, "STRICT_PROMPT", judges.STRICT_PROMPT + " Be terse.")
    assert versions.prompt_versions("rag", "ltm") == ltm
    changed = versions.prompt_versions("rag", "locomo")
    assert {k for k in changed if changed[k] != locomo[k]} == {"suites"}
