"""Deadlines: a server that accepts connections and never answers costs a bounded time, and the
typed error names the URL (and, for model calls, the overall budget)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from memlab.config import get_settings
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import CallBudgetExceededError, LLMTimeoutError, StoreUnavailableError
from memlab.llm.gemini import GeminiLLM
from memlab.llm.openai_compat import OpenAICompatLLM
from memlab.stores.kv import RedisKV
from memlab.stores.vector import ChromaVectorStore

SLACK_S = 3.0  # generous: two shared cores


class SilentServer:
    """Accepts every TCP connection on loopback, reads nothing, answers nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)
            self.accepted += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def settings(tmp_path, monkeypatch):
    for var in ("MEMLAB_OPENAI_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return get_settings(cache_dir=tmp_path, llm_cache=False)


def timed(fn):
    start = time.monotonic()
    with pytest.raises(Exception) as info:
        fn()
    return time.monotonic() - start, info.value


def test_openai_compat_stops_at_the_call_budget_and_names_url_and_budget(silent, settings):
    llm = OpenAICompatLLM(model="qwen", base_url=silent.url, settings=settings, timeout_s=0.4,
                          max_retries=50, retry_base_delay_s=0.01, call_budget_s=1.5)
    elapsed, error = timed(lambda: llm.complete([{"role": "user", "content": "hi"}]))
    assert isinstance(error, CallBudgetExceededError)
    assert f"{silent.url}/v1/chat/completions" in str(error) and "1.5 s" in str(error)
    assert "call_budget_s" in str(error)
    assert 1.0 <= elapsed < 1.5 + SLACK_S
    assert silent.accepted >= 2  # it did retry inside the budget


def test_openai_compat_budget_comes_from_settings(silent, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CALL_BUDGET_S", "0.8")
    monkeypatch.setenv("MEMLAB_REQUEST_TIMEOUT_S", "0.3")
    llm = OpenAICompatLLM(model="qwen", base_url=silent.url, max_retries=50,
                          retry_base_delay_s=0.01, settings=get_settings(cache_dir=tmp_path,
                                                                         llm_cache=False))
    assert (llm.timeout_s, llm.call_budget_s) == (0.3, 0.8)
    elapsed, error = timed(lambda: llm.complete([{"role": "user", "content": "hi"}]))
    assert isinstance(error, CallBudgetExceededError) and "0.8 s" in str(error)
    assert elapsed < 0.8 + SLACK_S


def test_openai_compat_single_attempt_timeout_is_a_timeout_naming_the_url(silent, settings):
    llm = OpenAICompatLLM(model="qwen", base_url=silent.url, settings=settings, timeout_s=0.3,
                          max_retries=0, call_budget_s=60)
    elapsed, error = timed(lambda: llm.complete([{"role": "user", "content": "hi"}]))
    assert type(error) is LLMTimeoutError and silent.url in str(error)
    assert elapsed < 0.3 + SLACK_S


def test_gemini_stops_at_the_call_budget_and_names_url_and_budget(silent, settings, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-key")
    llm = GeminiLLM(base_url=silent.url, settings=settings, timeout_s=0.4, max_retries=50,
                    retry_base_delay_s=0.01, call_budget_s=1.5)
    elapsed, error = timed(lambda: llm.complete([{"role": "user", "content": "hi"}]))
    assert isinstance(error, CallBudgetExceededError)
    assert silent.url in str(error) and "1.5 s" in str(error)
    assert 1.0 <= elapsed < 1.5 + SLACK_S


def test_redis_silent_server_fails_within_its_deadline(silent):
    kv = RedisKV(silent.url.replace("http://", "redis://"), timeout_s=0.4)
    elapsed, error = timed(lambda: kv.get("k"))
    assert isinstance(error, StoreUnavailableError)
    assert f"127.0.0.1:{silent.port}" in str(error) and "0.4 s" in str(error)
    assert elapsed < 2 * 0.4 + SLACK_S  # one reconnect at most
    kv.close()


def test_redis_timeout_comes_from_settings(monkeypatch, silent):
    monkeypatch.setenv("MEMLAB_STORE_TIMEOUT_S", "0.25")
    kv = RedisKV(silent.url.replace("http://", "redis://"))
    assert kv.timeout_s == 0.25
    elapsed, error = timed(lambda: kv.set("k", "v"))
    assert isinstance(error, StoreUnavailableError) and elapsed < 0.5 + SLACK_S
    kv.close()


def test_chroma_silent_server_fails_within_its_deadline(silent):
    elapsed, error = timed(lambda: ChromaVectorStore("alice", HashingEmbedder(), url=silent.url,
                                                     timeout_s=0.5))
    assert isinstance(error, StoreUnavailableError)
    assert silent.url in str(error) and "0.5 s" in str(error)
    assert elapsed < 0.5 + SLACK_S


def test_chroma_timeout_comes_from_settings(monkeypatch, silent):
    monkeypatch.setenv("MEMLAB_STORE_TIMEOUT_S", "0.3")
    elapsed, error = timed(lambda: ChromaVectorStore("alice", HashingEmbedder(), url=silent.url))
    assert isinstance(error, StoreUnavailableError) and "0.3 s" in str(error)
    assert elapsed < 0.3 + SLACK_S


class SilencingProxy(SilentServer):
    """Relays loopback TCP to ``upstream`` until :meth:`silence`; from then on drops all bytes
    (a server that stops answering in the middle of a run)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port, self.silenced = upstream_port, threading.Event()
        super().__init__()

    def silence(self) -> None:
        self.silenced.set()

    def _accept(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self.held += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if not self.silenced.is_set():
                    target.sendall(data)
        except OSError:
            pass


def test_chroma_server_that_stops_answering_mid_run_fails_within_the_deadline(chroma_server):
    proxy = SilencingProxy(int(chroma_server.url.rsplit(":", 1)[1]))
    try:
        store = ChromaVectorStore("alice", HashingEmbedder(), url=proxy.url, timeout_s=0.7)
        store.add(["d1"], ["the river is wide"])
        assert [hit.id for hit in store.query("river", k=1)] == ["d1"]
        proxy.silence()
        elapsed, error = timed(lambda: store.query("river", k=1))
        assert isinstance(error, StoreUnavailableError) and proxy.url in str(error)
        assert elapsed < 0.7 + SLACK_S
    finally:
        proxy.close()
