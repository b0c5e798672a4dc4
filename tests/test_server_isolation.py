"""Two sessions of one condition on one server never see each other's memory (issue 17).

Both sessions belong to the same user and agent ids, so only the session separates them; a
secret is planted in one, the other asks for it, before and after a server restart, on every
condition, and (services) with operating memory on a shared Redis.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from memory_fakes import memory_llm

from memlab.config import get_settings
from memlab.embed.hashing import HashingEmbedder
from memlab.memory.base import CONDITIONS
from memlab.server import SessionManager, create_app

SECRETS = ("PINEAPPLE", "WALNUT")
QUESTION = "What is my secret code word?"


def open_server(workdir):
    manager = SessionManager(workdir, condition="rag", llm=memory_llm("fine"),
                             embedder=HashingEmbedder())
    return TestClient(create_app(manager, settings=get_settings())), manager


def prompt_of(manager, session_id) -> str:
    return "\n".join(m.content for m in manager.get(session_id).agent.last_messages)


def recalled(client, session_id) -> str:
    view = client.get(f"/sessions/{session_id}/memory", params={"query": QUESTION}).json()
    return "\n".join(item["text"] for item in view["recalled"])


def converse(client, ids) -> None:
    """Interleaved, as two users of one deployment would talk: needles answered, filler
    observed, then a sleep cycle."""
    for turn in range(8):
        for session_id, secret in zip(ids, SECRETS, strict=True):
            if turn == 1:
                body = {"message": f"My secret code word is {secret}."}
                assert client.post(f"/sessions/{session_id}/turn", json=body).status_code == 200
            else:
                body = {"user": f"Tell me about rivers, part {turn}.", "assistant": "Rivers flow."}
                assert client.post(f"/sessions/{session_id}/observe", json=body).status_code == 200
    for session_id in ids:
        assert client.post(f"/sessions/{session_id}/sleep").status_code == 200


def check_isolation(client, manager, condition, ids) -> None:
    for session_id, secret, other in zip(ids, SECRETS, SECRETS[::-1], strict=True):
        assert client.post(f"/sessions/{session_id}/turn", json={"message": QUESTION}
                           ).status_code == 200
        prompt = prompt_of(manager, session_id)
        assert other not in prompt and other not in recalled(client, session_id)
        if condition not in ("vanilla", "oracle"):  # the oracle recalls only named evidence
            assert secret in prompt  # each session does remember its own secret


def run_isolation(tmp_path, condition) -> None:
    test_client, manager = open_server(tmp_path)
    with test_client as client:
        body = {"condition": condition, "user_id": "same-user", "agent_id": "same-agent"}
        ids = [client.post("/sessions", json=body).json()["id"] for _ in SECRETS]
        converse(client, ids)
        check_isolation(client, manager, condition, ids)
    test_client, manager = open_server(tmp_path)  # restarted: sessions rebuilt from journals
    with test_client as client:
        check_isolation(client, manager, condition, ids)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_sessions_never_see_each_others_memory(tmp_path, condition):
    run_isolation(tmp_path, condition)


@pytest.mark.services
@pytest.mark.parametrize("condition", ["full_context", "hybrid"])
def test_sessions_stay_apart_on_a_shared_redis(tmp_path, condition, redis_server, monkeypatch):
    monkeypatch.setenv("MEMLAB_REDIS_URL", redis_server.url)
    run_isolation(tmp_path, condition)
