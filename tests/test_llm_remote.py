"""Gemini and OpenAI-compatible adapters against a loopback server speaking each wire format."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memlab.config import get_settings
from memlab.errors import ConfigError, LLMAuthError, LLMError, LLMRateLimitError, LLMTimeoutError
from memlab.llm.factory import get_llm
from memlab.llm.gemini import GeminiLLM
from memlab.llm.openai_compat import OpenAICompatLLM

USER = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}]


class LoopbackServer:
    """An HTTP server on 127.0.0.1 answering from a script of ``(status, body, delay_s)``.

    The last scripted answer repeats. Every request is recorded as ``(path, headers, json)``.
    """

    def __init__(self) -> None:
        self.script: list[tuple[int, dict, float]] = []
        self.requests: list[tuple[str, dict[str, str], dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append((self.path, dict(self.headers), body))
                index = min(len(server.requests), len(server.script)) - 1
                status, answer, delay = server.script[index]
                time.sleep(delay)
                payload = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def answer(self, *items: tuple[int, dict] | tuple[int, dict, float]) -> None:
        self.script = [(*item, 0.0) if len(item) == 2 else item for item in items]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = LoopbackServer()
    yield srv
    srv.close()


@pytest.fixture
def settings(tmp_path, monkeypatch):
    for var in ("MEMLAB_OPENAI_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return get_settings(cache_dir=tmp_path, llm_cache=False, max_retries=2)


# --- OpenAI-compatible wire format -------------------------------------------------------------

def openai_ok(text: str = "Paris.", prompt: int = 21, completion: int = 3) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "qwen",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


def openai_error(status: int) -> dict:
    return {"error": {"message": f"status {status}", "type": "error", "code": status}}


def openai_llm(server, settings, **kw) -> OpenAICompatLLM:
    return OpenAICompatLLM(model="qwen", base_url=server.url, settings=settings,
                           retry_base_delay_s=0.01, **kw)


def test_openai_request_shape_and_usage(server, settings, monkeypatch) -> None:
    monkeypatch.setenv("MEMLAB_OPENAI_API_KEY", "sk-test-123")
    server.answer((200, openai_ok()))
    result = openai_llm(server, settings).complete(USER, max_tokens=12, stop=["\n"])
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test-123"
    assert body["model"] == "qwen" and body["messages"] == USER
    assert body["max_tokens"] == 12 and body["temperature"] == 0.0 and body["stop"] == ["\n"]
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("Paris.", 21, 3)
    assert result.provider == "openai" and not result.cached


def test_openai_base_url_with_v1_and_json_schema(server, settings) -> None:
    server.answer((200, openai_ok('{"a": 1}')))
    llm = OpenAICompatLLM(model="qwen", base_url=server.url + "/v1/", settings=settings)
    llm.complete(USER, json_schema={"type": "object"})
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions" and "Authorization" not in headers
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}


@pytest.mark.parametrize("status", [429, 503])
def test_openai_retries_rate_limits(server, settings, status) -> None:
    server.answer((status, openai_error(status)), (status, openai_error(status)),
                  (200, openai_ok()))
    assert openai_llm(server, settings).complete(USER).text == "Paris."
    assert len(server.requests) == 3


def test_openai_rate_limit_after_last_retry(server, settings) -> None:
    server.answer((429, openai_error(429)))
    with pytest.raises(LLMRateLimitError, match="429"):
        openai_llm(server, settings).complete(USER)
    assert len(server.requests) == 3  # first call + max_retries=2


@pytest.mark.parametrize("status", [401, 403])
def test_openai_auth_error_is_not_retried(server, settings, status) -> None:
    server.answer((status, openai_error(status)))
    with pytest.raises(LLMAuthError, match="API key"):
        openai_llm(server, settings).complete(USER)
    assert len(server.requests) == 1


def test_openai_bad_request_is_a_plain_llm_error(server, settings) -> None:
    server.answer((400, openai_error(400)))
    with pytest.raises(LLMError, match="HTTP 400") as info:
        openai_llm(server, settings).complete(USER)
    assert type(info.value) is LLMError and len(server.requests) == 1


def test_openai_timeout(server, settings) -> None:
    server.answer((200, openai_ok(), 1.0))
    llm = openai_llm(server, settings, timeout_s=0.2, max_retries=1)
    start = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match="0.2 s"):
        llm.complete(USER)
    assert time.perf_counter() - start < 1.5
    assert len(server.requests) == 2


def test_openai_option_scores_from_top_logprobs(server, settings) -> None:
    answer = openai_ok("Par", 30, 1)
    answer["choices"][0]["logprobs"] = {"content": [{"token": "Par", "logprob": -0.1,
        "top_logprobs": [{"token": "Par", "logprob": -0.1}, {"token": " Ber", "logprob": -2.5}]}]}
    server.answer((200, answer))
    llm = openai_llm(server, settings, logprobs=True)
    scores = llm.score_options(USER, ["Paris", "Berlin", "Rome"])
    assert scores[0] == -0.1 and scores[1] == -2.5 and scores[2] < scores[1]
    body = server.requests[0][2]
    assert body["logprobs"] is True and body["max_tokens"] == 1


def test_openai_cache_key_and_file_hold_no_api_key(server, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-key")
    server.answer((200, openai_ok()))
    llm = get_llm("openai", llm_model="qwen", openai_base_url=server.url, cache_dir=tmp_path)
    first, second = llm.complete(USER), llm.complete(USER)
    assert second.cached and second.text == first.text and len(server.requests) == 1
    rows = sqlite3.connect(tmp_path / "llm_cache.sqlite").execute("SELECT * FROM responses")
    assert "sk-very-secret-key" not in json.dumps(rows.fetchall())


def test_openai_missing_base_url_says_what_to_set(settings) -> None:
    with pytest.raises(ConfigError, match="MEMLAB_OPENAI_BASE_URL"):
        OpenAICompatLLM(model="qwen", settings=settings)


# --- Gemini wire format (generativelanguage REST, as the google-genai SDK sees it) ------------

def gemini_ok(text: str = "Paris.") -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 2,
                              "totalTokenCount": 13},
            "modelVersion": "gemini-2.5-flash", "responseId": "abc"}


def gemini_error(status: int, name: str) -> dict:
    return {"error": {"code": status, "message": f"status {status}", "status": name}}


@pytest.fixture
def gemini(server, settings, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-key")
    return GeminiLLM(base_url=server.url, settings=settings, retry_base_delay_s=0.01)


def test_gemini_request_shape_and_usage(server, gemini) -> None:
    server.answer((200, gemini_ok()))
    result = gemini.complete(USER + [{"role": "assistant", "content": "Paris."},
                                     {"role": "user", "content": "And Spain?"}], max_tokens=9)
    path, headers, body = server.requests[0]
    assert path.endswith("/models/gemini-2.5-flash:generateContent")
    assert headers["x-goog-api-key"] == "gm-test-key"
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [{"text": "Capital of France?"}]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    config = body["generationConfig"]
    assert config["maxOutputTokens"] == 9 and config["temperature"] == 0.0
    thinking = config["thinkingConfig"]  # the SDK spells this field either way
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 0
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("Paris.", 11, 2)


def test_gemini_json_and_choices_constraints(server, gemini) -> None:
    server.answer((200, gemini_ok('{"a": 1}')))
    gemini.complete(USER, json_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    gemini.complete(USER, choices=["A", "B"])
    json_config = server.requests[0][2]["generationConfig"]
    enum_config = server.requests[1][2]["generationConfig"]
    assert json_config["responseMimeType"] == "application/json"
    assert json_config["responseJsonSchema"]["properties"] == {"a": {"type": "integer"}}
    assert enum_config["responseMimeType"] == "text/x.enum"
    assert enum_config["responseSchema"]["enum"] == ["A", "B"]


@pytest.mark.parametrize("status,name", [(429, "RESOURCE_EXHAUSTED"), (503, "UNAVAILABLE")])
def test_gemini_retries_then_succeeds(server, gemini, status, name) -> None:
    server.answer((status, gemini_error(status, name)), (200, gemini_ok()))
    assert gemini.complete(USER).text == "Paris."
    assert len(server.requests) == 2


def test_gemini_rate_limit_after_last_retry(server, gemini) -> None:
    server.answer((429, gemini_error(429, "RESOURCE_EXHAUSTED")))
    with pytest.raises(LLMRateLimitError, match="429"):
        gemini.complete(USER)
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [401, 403])
def test_gemini_auth_error_is_not_retried(server, gemini, status) -> None:
    server.answer((status, gemini_error(status, "PERMISSION_DENIED")))
    with pytest.raises(LLMAuthError):
        gemini.complete(USER)
    assert len(server.requests) == 1


def test_gemini_timeout(server, settings, monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "gm-test-key")
    server.answer((200, gemini_ok(), 1.0))
    llm = GeminiLLM(base_url=server.url, settings=settings, timeout_s=0.2, max_retries=1,
                    retry_base_delay_s=0.01)
    with pytest.raises(LLMTimeoutError):
        llm.complete(USER)
    assert len(server.requests) == 2


def test_gemini_missing_key_says_what_to_set(settings) -> None:
    with pytest.raises(LLMAuthError, match="GEMINI_API_KEY"):
        get_llm("gemini", settings=settings)
