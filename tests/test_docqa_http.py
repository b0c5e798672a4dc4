"""The document-QA router mounted on a bare FastAPI app (FakeLLM, hashing embedder, chroma)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memlab.docqa import ConversationLog, DocumentQA
from memlab.docqa.http import docqa_router
from memlab.embed.hashing import HashingEmbedder
from memlab.llm.fake import FakeLLM
from memlab.stores.vector import ChromaVectorStore

SAMPLE = Path(__file__).parent.parent / "data" / "docqa"


@pytest.fixture
def client(tmp_path):
    store = ChromaVectorStore(f"http-{uuid.uuid4().hex[:8]}", HashingEmbedder(),
                              path=tmp_path / "chroma", namespace="docqa")
    replies = [json.dumps({"answer": "An IMU in the pelvis and ankle force sensors.",
                           "cited": [1]})]
    qa = DocumentQA(FakeLLM(replies), store, k=2,
                    conversations=ConversationLog(tmp_path / "conversations"))
    qa.ingest(SAMPLE)
    app = FastAPI()
    app.include_router(docqa_router(qa))
    return TestClient(app), qa


def test_ask_returns_the_completed_query_with_cited_sources(client):
    http, qa = client
    assert http.get("/docqa").json() == {"chunks": qa.store.count(), "k": 2}
    reply = http.post("/docqa/ask", json={"text": "Which sensors keep balance?",
                                          "user_id": "u1", "session_id": "s1"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["query"]["status"] == "COMPLETED" and body["query"]["session_id"] == "s1"
    assert body["response"]["content"] == "An IMU in the pelvis and ankle force sensors."
    assert body["response"]["sources"] and body["error"] is None
    assert body["response"]["query_id"] == body["query"]["id"]
    assert qa.conversations.recent("s1")[0]["question"] == "Which sensors keep balance?"


@pytest.mark.parametrize("payload, field", [
    ({"text": ""}, "text"), ({"text": "   "}, "text"), ({"text": "x" * 1001}, "text"),
    ({}, "text"), ({"text": "ok", "session_id": 5}, "session_id"),
])
def test_bad_body_is_422_naming_the_field(client, payload, field):
    http, qa = client
    reply = http.post("/docqa/ask", json=payload)
    assert reply.status_code == 422
    assert field in json.dumps(reply.json()["detail"])
    assert qa.llm.calls == 0


def test_a_failed_query_is_reported_not_raised(client):
    http, qa = client
    qa.llm.replies = ["no json at all"]
    body = http.post("/docqa/ask", json={"text": "Which sensors keep balance?"}).json()
    assert body["query"]["status"] == "FAILED" and body["response"] is None
    assert "StructuredOutputError" in body["error"]


def test_the_agent_server_mounts_docqa_behind_its_token(tmp_path):
    """``memlab serve``'s app (extra_routers) answers /docqa/ask from the ingested folder,
    and only with the bearer token when one is set."""
    from memlab.config import get_settings
    from memlab.server import SessionManager, create_app, extra_routers

    embedder = HashingEmbedder()
    DocumentQA.from_settings(None, embedder, tmp_path / "docs").ingest(SAMPLE)
    llm = FakeLLM([json.dumps({"answer": "An IMU in the pelvis.", "cited": [1]})])
    manager = SessionManager(tmp_path / "serve", condition="rag", llm=llm, embedder=embedder)
    app = create_app(manager, settings=get_settings(api_token="s3cret"),
                     routers=extra_routers(llm=llm, embedder=embedder, workdir=tmp_path / "serve",
                                           docs=tmp_path / "docs"))
    http = TestClient(app)
    question = {"text": "Which sensors keep balance?"}
    assert http.post("/docqa/ask", json=question).status_code == 401
    reply = http.post("/docqa/ask", json=question, headers={"Authorization": "Bearer s3cret"})
    assert reply.status_code == 200
    assert reply.json()["response"]["content"] == "An IMU in the pelvis."
    assert http.get("/docqa", headers={"Authorization": "Bearer s3cret"}).json()["chunks"] > 0
