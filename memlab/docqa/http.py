"""Document QA over HTTP: a FastAPI router the agent server mounts (seed 001's "via API").

``POST {prefix}/ask`` takes ``{"text": ..., "user_id": ..., "session_id": ...}``, runs the
Query through PENDING -> PROCESSING -> COMPLETED | FAILED and answers with the QueryResult:
HTTP 200 with ``query.status`` COMPLETED (``response`` holds the AgentResponse) or FAILED
(``error`` says why). A body that breaks a seed rule (text 1-1000 characters, not blank) gets
HTTP 422 whose ``detail`` names the field and the rule; with nothing ingested, 409 saying so; a
damaged conversation log, 503 naming the line (the server's log names the file). ``GET {prefix}`` says how many chunks
are ingested. Ingesting stays on the command line (``memlab docqa ingest``): a route that reads
server paths is not offered.

Example:
    >>> from fastapi import FastAPI  # doctest: +SKIP
    >>> app = FastAPI(); app.include_router(docqa_router(qa))  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ValidationError

from memlab.docqa.agent import DocumentQA
from memlab.errors import DamagedFileError, fields_message
from memlab.models.retrieval import Query

log = logging.getLogger(__name__)
NOTHING_INGESTED = ("no document is ingested: run `memlab docqa ingest PATH --workdir DOCS` "
                    "with DOCS the folder this server answers from (`memlab serve --docs`)")


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
        if qa.store.count() == 0:
            raise HTTPException(409, detail=NOTHING_INGESTED)
        try:
            return qa.ask(query).model_dump(mode="json")
        except DamagedFileError as exc:
            log.error("%s", exc)  # the path stays in the server's log, out of the reply
            raise HTTPException(503, detail=f"session {body.session_id!r}: the conversation "
                                            f"log is damaged ({exc.detail})") from None

    return router
