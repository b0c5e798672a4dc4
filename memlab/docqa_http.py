"""Document QA over HTTP: a FastAPI router the agent server mounts (seed 001's "via API").

``POST {prefix}/ask`` takes ``{"text": ..., "user_id": ..., "session_id": ...}``, runs the
Query through PENDING -> PROCESSING -> COMPLETED | FAILED and answers with the QueryResult:
HTTP 200 with ``query.status`` COMPLETED (``response`` holds the AgentResponse) or FAILED
(``error`` says why). A body that breaks a seed rule (text 1-1000 characters, not blank) gets
HTTP 422 whose ``detail`` names the field and the rule. ``GET {prefix}`` says how many chunks
are ingested. Ingesting stays on the command line (``memlab docqa ingest``): a route that reads
server paths is not offered.

Example:
    >>> from fastapi import FastAPI  # doctest: +SKIP
    >>> app = FastAPI(); app.include_router(docqa_router(qa))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ValidationError

from memlab.docqa import DocumentQA
from memlab.errors import fields_message
from memlab.models.retrieval import Query


class AskBody(BaseModel):
    """The request: the question, and who asks in which conversation."""

    text: str
    user_id: str | None = None
    session_id: str | None = None


def docqa_router(qa: DocumentQA, *, prefix: str = "/docqa") -> APIRouter:
    """Routes asking ``qa`` questions: ``POST {prefix}/ask`` and ``GET {prefix}``."""
    router = APIRouter(prefix=prefix, tags=["document QA (seed 001)"])

    @router.get("")
    def status() -> dict[str, Any]:
        return {"chunks": qa.store.count(), "k": qa.k}

    @router.post("/ask")
    def ask(body: AskBody) -> dict[str, Any]:
        try:
            query = Query(text=body.text, user_id=body.user_id, session_id=body.session_id)
        except ValidationError as exc:
            raise HTTPException(422, detail=fields_message(exc.errors(), whole="body")) from None
        return qa.ask(query).model_dump(mode="json")

    return router
