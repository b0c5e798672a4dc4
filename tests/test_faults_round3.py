"""Issue 42, items 10-12 (server parts): state a crash can tear (a docqa conversation log, a
session's ``session.json`` and journal) is repaired at a torn tail and named with its line when
damaged inside, without the server's paths reaching the HTTP client; the seed's ``POST /turn``
refuses a lone surrogate as the session route does; ``/docqa/ask`` with nothing ingested is 409.
FakeLLM and the hashing embedder throughout."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from faults_helpers import digest, memlab_cli, visible_lines
from test_server import new_session, open_client

from memlab.config import get_settings
from memlab.docqa import ConversationLog, DocumentQA
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.models.retrieval import QueryStatus
from memlab.server import SessionManager, create_app, extra_routers

SAMPLE = Path(__file__).parent.parent / "data" / "docqa"
ANSWER = json.dumps({"answer": "An IMU in the pelvis and ankle force sensors.", "cited": [1]})
EXCHANGE = {"session_id": "s1", "question": "Which sensors keep balance?",
            "answer": "An IMU and ankle force sensors."}


def exchange_line(**changes) -> bytes:
    return (json.dumps({**EXCHANGE, **changes}) + "\n").encode()


def ingested_qa(workdir: Path, replies=(ANSWER,)) -> DocumentQA:
    qa = DocumentQA.from_settings(FakeLLM(list(replies)), HashingEmbedder(), workdir)
    qa.ingest(SAMPLE)
    return qa


# --- item 10: the docqa conversation log ------------------------------------------------------
def test_a_torn_conversation_log_tail_is_cut_and_the_session_goes_on(tmp_path, caplog):
    qa = ingested_qa(tmp_path)
    log_path = qa.conversations._path("s1")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(exchange_line() + b'{"session_id": "s1", "question": "And the ha')
    with caplog.at_level(logging.WARNING):
        result = qa.ask("Where is the first one mounted?", session_id="s1")
    assert result.query.status is QueryStatus.COMPLETED, result.error
    assert str(log_path) in caplog.text and "torn tail" in caplog.text
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [line["question"] for line in lines] == [EXCHANGE["question"],
                                                   "Where is the first one mounted?"]


@pytest.mark.parametrize("damage, rule", [
    (b'{"session_id": "s1", "question": "And the ha\n', "line 2 (byte offset"),
    (exchange_line(answer=None), "line 2: an exchange needs the texts"),
])
def test_a_conversation_log_damaged_inside_is_named_and_left_unchanged(tmp_path, damage, rule):
    qa = ingested_qa(tmp_path)
    log_path = qa.conversations._path("s1")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(exchange_line() + damage + exchange_line())
    before = log_path.read_bytes()
    with pytest.raises(ConfigError) as raised:
        qa.ask("Where is the first one mounted?", session_id="s1")
    assert str(log_path) in str(raised.value) and rule in str(raised.value)
    assert log_path.read_bytes() == before and qa.llm.calls == 0


def test_docqa_ask_names_the_damaged_log_and_line_and_exits_2(tmp_path):
    workdir = tmp_path / "docqa"
    DocumentQA.from_settings(None, HashingEmbedder(), workdir).ingest(SAMPLE)
    log_path = ConversationLog(workdir / "conversations")._path("s1")
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(exchange_line() + b"\x00\x00{not json\n" + exchange_line())
    before = digest(log_path.parent)
    done = memlab_cli("docqa", "ask", "Where is the first one mounted?", "--session", "s1",
                      "--workdir", str(workdir), "--llm", "fake", "--embedder", "hashing")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = visible_lines(done.stderr)
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert str(log_path) in lines[0] and "line 2" in lines[0]
    assert digest(log_path.parent) == before


# --- item 10 and 12: a session's files after a restart ----------------------------------------
def session_with_turns(workdir: Path, turns: int = 2) -> str:
    test_client, _ = open_client(workdir)
    with test_client as client:
        sid = new_session(client, user_id="ana")
        for n in range(turns):
            assert client.post(f"/sessions/{sid}/turn",
                               json={"message": f"Fact {n}."}).status_code == 200
    return sid


def damaged_reply(workdir: Path, sid: str, caplog) -> tuple[dict, int]:
    folder = workdir / "sessions" / sid
    before = digest(folder)
    test_client, _ = open_client(workdir)
    with test_client as client, caplog.at_level(logging.ERROR):
        answer = client.post(f"/sessions/{sid}/turn", json={"message": "Again?"})
        again = client.get(f"/sessions/{sid}")
    assert digest(folder) == before  # nothing changed: not the journal, not session.json
    assert again.status_code == answer.status_code
    body = answer.json()
    assert set(body) == {"error"} and str(workdir) not in body["error"]  # item 12
    assert str(folder) in caplog.text  # the server's log keeps the path
    return body, answer.status_code


@pytest.mark.parametrize("content, rule", [
    (b'{"id": "x", "condition": "rag", "user_i', "session.json: Unterminated string"),
    (b"[1, 2]", "session.json: not a JSON object"),
    (b'{"id": "x", "condition": "rag"}', "session.json: field 'user_id'"),
    (b"\xff\xfe", "session.json: 'utf-8' codec"),
])
def test_a_damaged_session_json_is_503_naming_the_file_not_a_500(tmp_path, caplog, content,
                                                                   rule):
    sid = session_with_turns(tmp_path)
    (tmp_path / "sessions" / sid / "session.json").write_bytes(content)
    body, status = damaged_reply(tmp_path, sid, caplog)
    assert status == 503 and f"session {sid!r}: {rule}" in body["error"]


@pytest.mark.parametrize("change, rule", [
    (lambda r: {k: v for k, v in r.items() if k != "timestamp"}, "field 'timestamp': Field required"),
    (lambda r: {**r, "timestamp": "yesterday"}, "field 'timestamp'"),
    (lambda r: {**r, "kind": "dance"}, "field 'kind'"),
    (lambda r: {k: v for k, v in r.items() if k != "turn_number"}, "field 'turn_number'"),
])
@pytest.mark.parametrize("where", ["first", "last"])
def test_a_journal_record_missing_a_field_is_503_naming_the_line(tmp_path, caplog, change,
                                                                  rule, where):
    sid = session_with_turns(tmp_path)
    path = tmp_path / "sessions" / sid / "journal.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    n = 0 if where == "first" else len(records) - 1
    records[n] = change(records[n])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    body, status = damaged_reply(tmp_path, sid, caplog)
    assert status == 503
    assert f"session {sid!r}: journal.jsonl: line {n + 1}: {rule}" in body["error"]


def test_a_journal_line_damaged_inside_is_503_without_the_servers_path(tmp_path, caplog):
    sid = session_with_turns(tmp_path)
    path = tmp_path / "sessions" / sid / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"kind": "turn", "us\n' + lines[1])
    body, status = damaged_reply(tmp_path, sid, caplog)
    assert status == 503 and "journal.jsonl: line 2 (byte offset" in body["error"]
    assert "not a torn tail" in body["error"]


def test_a_torn_journal_tail_is_cut_and_the_session_restored(tmp_path, caplog):
    sid = session_with_turns(tmp_path, turns=3)
    path = tmp_path / "sessions" / sid / "journal.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"kind": "turn", "turn_number": 4, "user": "Fa')
    test_client, _ = open_client(tmp_path)
    with test_client as client, caplog.at_level(logging.WARNING):
        info = client.get(f"/sessions/{sid}")
        assert info.status_code == 200 and info.json()["turns"] == 3
        assert client.post(f"/sessions/{sid}/turn", json={"message": "Next."}).status_code == 200
    assert "torn tail" in caplog.text
    kept = path.read_bytes()
    assert kept.startswith(good) and [json.loads(x)["turn_number"]
                                      for x in kept.splitlines()] == [1, 2, 3, 4]


# --- item 11: the seed's POST /turn -----------------------------------------------------------
@pytest.mark.parametrize("field", ["message", "history"])
def test_the_seed_turn_refuses_a_lone_surrogate_as_the_session_route_does(tmp_path, field):
    llm = FakeLLM(default="hello")
    test_client, _ = open_client(tmp_path, llm=llm)
    body = {"history": "", "message": "hi", field: "caf\ud800"}
    raw, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
    with test_client as client:
        seed = client.post("/turn", content=raw, headers=headers)
        sid = new_session(client)
        session = client.post(f"/sessions/{sid}/turn", content=raw, headers=headers)
    assert seed.status_code == session.status_code == 422, seed.text
    assert f"body.{field}" in seed.json()["error"] and "UTF-8" in seed.json()["error"]
    assert llm.calls == 0


# --- item 12: /docqa/ask with nothing ingested, or a damaged log, on the agent server -----------
def docqa_server(tmp_path: Path, llm: FakeLLM) -> TestClient:
    embedder = HashingEmbedder()
    manager = SessionManager(tmp_path / "serve", condition="rag", llm=llm, embedder=embedder)
    app = create_app(manager, settings=get_settings(),
                     routers=extra_routers(llm=llm, embedder=embedder, workdir=tmp_path / "serve",
                                           docs=tmp_path / "docs"))
    return TestClient(app)


def test_docqa_ask_with_nothing_ingested_is_409_saying_so(tmp_path):
    llm = FakeLLM([ANSWER])
    with docqa_server(tmp_path, llm) as http:
        reply = http.post("/docqa/ask", json={"text": "Which sensors keep balance?"})
    assert reply.status_code == 409, reply.text
    assert "no document is ingested" in reply.json()["error"]
    assert str(tmp_path) not in reply.text and llm.calls == 0


def test_docqa_ask_with_a_damaged_log_is_503_without_the_servers_path(tmp_path, caplog):
    DocumentQA.from_settings(None, HashingEmbedder(), tmp_path / "docs").ingest(SAMPLE)
    log_path = ConversationLog(tmp_path / "docs" / "conversations")._path("s1")
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(exchange_line() + b"{torn\n" + exchange_line())
    llm = FakeLLM([ANSWER])
    with docqa_server(tmp_path, llm) as http, caplog.at_level(logging.ERROR):
        reply = http.post("/docqa/ask", json={"text": "And then?", "session_id": "s1"})
    assert reply.status_code == 503, reply.text
    assert "line 2" in reply.json()["error"] and str(tmp_path) not in reply.text
    assert str(log_path) in caplog.text and llm.calls == 0
