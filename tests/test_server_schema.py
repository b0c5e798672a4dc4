"""Schemathesis, driven by the server's own OpenAPI schema, finds no 5xx on valid and invalid
inputs of every operation. Valid inputs also pass every default check but positive-data
acceptance (a session's ``options`` are valid per condition, which a JSON schema cannot say),
and half of those that name a session name a live one, so turns, observes, sleeps, deletes and
memory views run on real memory, not only on 404s."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from memory_fakes import memory_llm
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from memlab.config import get_settings
from memlab.embed.hashing import HashingEmbedder
from memlab.server import SessionManager, create_app

EXAMPLES = 30  # per operation and mode
TOKEN = {"Authorization": "Bearer fuzz-token"}  # with a token, so its checks are fuzzed too


@pytest.fixture
def app(tmp_path):
    manager = SessionManager(tmp_path, condition="episodic", llm=memory_llm("fine"),
                             embedder=HashingEmbedder())
    return create_app(manager, settings=get_settings(api_token="fuzz-token"))


def operations(app) -> list:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return [result.ok() for result in schema.get_all_operations()]


def fuzz(app, mode: GenerationMode, check_case) -> list[int]:
    """Run ``check_case`` on EXAMPLES generated cases of every operation; their statuses."""
    statuses: list[int] = []
    for operation in operations(app):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case):
            statuses.append(check_case(case).status_code)

        try:
            check()
        except Unsatisfiable:  # nothing to break (GET /health has no input)
            assert mode == GenerationMode.NEGATIVE
    return statuses


def test_valid_inputs_get_no_5xx_and_answers_that_match_the_schema(app):
    client = TestClient(app, headers=TOKEN)
    live = {"id": client.post("/sessions", json={}).json()["id"], "cases": 0}

    def check_case(case):
        params = case.path_parameters or {}
        live["cases"] += 1
        if "session_id" in params and live["cases"] % 2 == 0:
            if client.get(f"/sessions/{live['id']}").status_code == 404:  # a fuzzed DELETE
                live["id"] = client.post("/sessions", json={}).json()["id"]
            params["session_id"] = live["id"]
        return case.call_and_validate(headers=TOKEN, excluded_checks=[positive_data_acceptance])

    statuses = fuzz(app, GenerationMode.POSITIVE, check_case)
    assert len(statuses) >= EXAMPLES and max(statuses) < 500
    assert {200, 201, 204} <= set(statuses)  # real work was done, not only refusals


def test_invalid_inputs_get_no_5xx(app):
    from schemathesis.checks import not_a_server_error

    statuses = fuzz(app, GenerationMode.NEGATIVE,
                    lambda case: case.call_and_validate(checks=[not_a_server_error]))
    assert len(statuses) >= EXAMPLES and max(statuses) < 500
