"""The agent server's routes (in-process, FakeLLM + hashing embedder): sessions, turns, observe,
sleep, reset, memory, the seed's /turn, errors named, token, deadline, restart from journals."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from memory_fakes import memory_llm

from memlab.config import get_settings
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.memory.base import CONDITIONS
from memlab.server import SessionManager, create_app
from memlab.userfiles import OWNED_MARK


def open_client(workdir, llm=None, condition="rag", **settings):
    manager = SessionManager(workdir, condition=condition, llm=llm or FakeLLM(default="hello"),
                             embedder=HashingEmbedder())
    app = create_app(manager, settings=get_settings(**settings))
    return TestClient(app), manager


@pytest.fixture
def client(tmp_path):
    test_client, manager = open_client(tmp_path)
    with test_client:
        yield test_client


def new_session(client, **body) -> str:
    answer = client.post("/sessions", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def journal(workdir, session_id) -> list[dict]:
    path = workdir / "sessions" / session_id / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_turn_answers_stores_and_journals_with_the_clients_timestamp(client, tmp_path):
    sid = new_session(client, user_id="ana")
    answer = client.post(f"/sessions/{sid}/turn", json={
        "message": "My PIN is 4711.", "history": "ignored", "timestamp": "2024-05-01T10:00:00"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["reply"] == "hello" and body["session_id"] == sid and body["turn_number"] == 1
    assert body["prompt_tokens"] > 0 and body["prompt_tokens_user"] > 0
    record = journal(tmp_path, sid)[0]
    assert (record["kind"], record["user"], record["assistant"]) == ("turn", "My PIN is 4711.",
                                                                    "hello")
    assert record["timestamp"].startswith("2024-05-01T10:00:00")
    stored = client.app.state.server.manager.get(sid).agent.memory.recall("PIN").history
    assert stored[-1].timestamp == datetime(2024, 5, 1, 10, tzinfo=UTC)  # reached memory


def test_observe_stores_without_calling_the_model(tmp_path):
    llm = FakeLLM(default="never")
    test_client, manager = open_client(tmp_path, llm=llm)
    with test_client as client:
        sid = new_session(client)
        answer = client.post(f"/sessions/{sid}/observe", json={
            "user": "Filler question?", "assistant": "Filler answer.",
            "timestamp": "2030-01-02T03:04:05+02:00"})
        assert answer.status_code == 200 and answer.json()["turn_number"] == 1
        assert llm.history == []
        view = client.get(f"/sessions/{sid}/memory").json()
        assert view["stored"][0]["assistant"] == "Filler answer."
        assert view["stored"][0]["timestamp"].startswith("2030-01-02T01:04:05")


def test_max_tokens_of_a_turn_reaches_the_model(tmp_path):
    llm = FakeLLM(default="x")
    test_client, _ = open_client(tmp_path, llm=llm)
    with test_client as client:
        sid = new_session(client, max_tokens=77)
        client.post(f"/sessions/{sid}/turn", json={"message": "a"})
        client.post(f"/sessions/{sid}/turn", json={"message": "b", "max_tokens": 300})
    assert [p["max_tokens"] for p in llm.params] == [77, 300]


def test_memory_view_recalls_for_a_query_and_delete_forgets(client, tmp_path):
    sid = new_session(client)
    client.post(f"/sessions/{sid}/turn", json={"message": "My dog is called Rex."})
    view = client.get(f"/sessions/{sid}/memory", params={"query": "dog name"}).json()
    assert view["session"]["turns"] == 1 and view["query"] == "dog name"
    assert any("Rex" in item["text"] for item in view["recalled"])
    assert client.delete(f"/sessions/{sid}").status_code == 204
    assert not (tmp_path / "sessions" / sid).exists()
    gone = client.post(f"/sessions/{sid}/turn", json={"message": "hi"})
    assert gone.status_code == 404 and sid in gone.json()["error"]


def test_sleep_runs_the_conditions_cycle(tmp_path):
    test_client, _ = open_client(tmp_path, llm=memory_llm("fine"), condition="sleep")
    with test_client as client:
        sid = new_session(client)
        for i in range(4):
            client.post(f"/sessions/{sid}/observe", json={"user": f"I grow orchids {i}.",
                                                          "assistant": "Lovely."})
        stats = client.post(f"/sessions/{sid}/sleep").json()["cycle_stats"]
        assert stats is not None and stats["episodes_replayed"] > 0
        vanilla = new_session(client, condition="vanilla")
        assert client.post(f"/sessions/{vanilla}/sleep").json()["cycle_stats"] is None


def test_the_seeds_turn_payload_is_served_on_a_default_session(client):
    answer = client.post("/turn", content=b'{"history": "", "message": "Hi, I am Ana."}',
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 200 and answer.json()["session_id"] == "default"
    assert client.post("/turn", json={"history": "", "message": "again"}).json()[
        "turn_number"] == 2


@pytest.mark.parametrize("path, body, field", [
    ("/turn", b'{"history": ""}', "field 'body.message'"),
    ("/turn", b'{"history": "", "message": 5}', "field 'body.message'"),
    ("/turn", b'{"message": "hi"}', "field 'body.history'"),
    ("/turn", b'{"history": "", "message": "hi", "extra": 1}', "field 'body.extra'"),
    ("/turn", b"not json", "field 'body."),
    ("/sessions", b'{"condition": "sleeep"}', "field 'condition': unknown memory condition"),
    ("/sessions", b'{"options": {"top_k": 0}}', "field 'options.top_k'"),
    ("/sessions", b'{"options": {"redis_url": "redis://elsewhere"}}', "options.redis_url"),
    ("/sessions", b'{"user_id": "  "}', "field 'body.user_id'"),
    ("/sessions", b'{"max_tokens": 0}', "field 'body.max_tokens'"),
])
def test_bad_bodies_get_422_naming_the_field(client, path, body, field):
    answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422 and field in answer.json()["error"]


@pytest.mark.parametrize("body, field", [
    ({"message": "x", "timestamp": "0001-01-01T00:00:00+05:00"}, "body.timestamp"),
    ({"message": "x", "timestamp": "3100-01-01T00:00:00"}, "body.timestamp"),
    ({"message": "\ud800"}, "body.message"),
])
def test_unstorable_turns_are_refused(client, body, field):
    sid = new_session(client)
    answer = client.post(f"/sessions/{sid}/turn",
                         content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 422 and field in answer.json()["error"]
    assert client.get(f"/sessions/{sid}").json()["turns"] == 0


def test_unknown_and_malformed_session_ids_get_404_or_422(client):
    assert client.post("/sessions/nosuch/turn", json={"message": "x"}).status_code == 404
    assert client.post("/sessions/a.b/turn", json={"message": "x"}).status_code == 422


def test_body_over_the_limit_gets_413(tmp_path):
    test_client, _ = open_client(tmp_path, server_max_body_bytes=2048)
    with test_client as client:
        answer = client.post("/turn", json={"history": "x" * 5000, "message": "hi"})
        assert answer.status_code == 413 and "2048" in answer.json()["error"]


def test_bearer_token_is_required_when_set(tmp_path):
    test_client, _ = open_client(tmp_path, api_token="s3cret")
    with test_client as client:
        assert client.get("/health").status_code == 200
        refused = client.post("/sessions", json={})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        wrong = {"Authorization": "Bearer nope"}
        assert client.post("/sessions", json={}, headers=wrong).status_code == 401
        right = {"Authorization": "Bearer s3cret"}
        assert client.post("/sessions", json={}, headers=right).status_code == 201


def test_a_turn_past_the_deadline_gets_504_and_is_not_stored(tmp_path):
    release = threading.Event()

    def slow(_messages):
        release.wait(5)
        return "late"

    test_client, manager = open_client(tmp_path, llm=FakeLLM([slow]), server_deadline_s=0.3)
    with test_client as client:
        sid = new_session(client)
        answer = client.post(f"/sessions/{sid}/turn", json={"message": "remember 99"})
        assert answer.status_code == 504 and "nothing was stored" in answer.json()["error"]
        release.set()
        deadline = time.monotonic() + 5
        while manager.get(sid).lock.locked() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get(f"/sessions/{sid}").json()["turns"] == 0
        assert client.get(f"/sessions/{sid}/memory").json()["stored"] == []


def test_a_failed_model_call_gets_502_and_stores_nothing(tmp_path):
    from memlab.errors import LLMTimeoutError

    def failing(_messages):
        raise LLMTimeoutError("no answer in 60 s")

    test_client, _ = open_client(tmp_path, llm=FakeLLM([failing]))
    with test_client as client:
        sid = new_session(client)
        answer = client.post(f"/sessions/{sid}/turn", json={"message": "x"})
        assert answer.status_code == 502 and "LLMTimeoutError" in answer.json()["error"]
        assert client.get(f"/sessions/{sid}").json()["turns"] == 0


@pytest.mark.parametrize("condition", CONDITIONS)
def test_a_restarted_server_rebuilds_each_session_from_its_journal(tmp_path, condition):
    test_client, _ = open_client(tmp_path, llm=memory_llm("fine"), condition=condition)
    with test_client as client:
        sid = new_session(client)
        client.post(f"/sessions/{sid}/turn", json={"message": "My cat is called Tiger."})
        for i in range(6):
            client.post(f"/sessions/{sid}/observe", json={"user": f"Rivers, part {i}.",
                                                          "assistant": "Rivers flow."})
        before = client.get(f"/sessions/{sid}/memory", params={"query": "cat name"}).json()
    test_client, _ = open_client(tmp_path, llm=memory_llm("fine"), condition=condition)
    with test_client as client:  # a new process on the same folder
        after = client.get(f"/sessions/{sid}/memory", params={"query": "cat name"}).json()
    assert after["session"]["turns"] == before["session"]["turns"] == 7
    assert after["stored"] == before["stored"]
    assert [i["text"] for i in after["recalled"]] == [i["text"] for i in before["recalled"]]


def test_a_blank_api_token_means_no_token_not_an_empty_password():
    assert get_settings(api_token="  ").api_token is None
    assert get_settings(api_token="s3cret").api_token.get_secret_value() == "s3cret"


def test_a_turn_given_up_while_waiting_for_its_session_is_never_generated(tmp_path):
    release = threading.Event()

    def slow(_messages):
        release.wait(5)
        return "late"

    llm = FakeLLM([slow])
    test_client, manager = open_client(tmp_path, llm=llm, condition="vanilla",
                                       server_deadline_s=1.0)
    with test_client as client:
        sid = new_session(client)
        answers = []
        first = threading.Thread(target=lambda: answers.append(
            client.post(f"/sessions/{sid}/turn", json={"message": "one"}).status_code))
        first.start()
        time.sleep(0.1)  # the first turn holds the session while the model runs
        answers.append(client.post(f"/sessions/{sid}/turn", json={"message": "two"}).status_code)
        first.join(5)
        release.set()
        deadline = time.monotonic() + 5
        while manager.get(sid).lock.locked() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # the second worker takes the lock, sees it was given up, returns
    assert answers == [504, 504] and len(llm.history) == 1


def test_a_default_session_folder_left_half_deleted_is_not_revived(tmp_path):
    (tmp_path / "sessions" / "default").mkdir(parents=True)  # a crash between unlink and rmtree
    (tmp_path / "sessions" / "default" / OWNED_MARK).touch()  # memlab made the folder
    (tmp_path / "sessions" / "default" / "journal.jsonl").write_text(
        '{"kind": "turn", "turn_number": 1, "user": "old", "assistant": "x", '
        '"timestamp": "2024-01-01T00:00:00+00:00"}\n')
    test_client, _ = open_client(tmp_path, condition="vanilla")
    with test_client as client:
        assert client.post("/turn", json={"history": "", "message": "new"}).json()[
            "turn_number"] == 1
        assert [s["user"] for s in client.get("/sessions/default/memory").json()["stored"]] == [
            "new"]
