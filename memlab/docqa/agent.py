"""Document QA (seed 001): ingest documents, answer Queries with cited RetrievedChunks.

:meth:`DocumentQA.ingest` splits documents into chunks (:mod:`memlab.docqa.ingest`), embeds
each into a VectorEmbedding (one dimensionality per collection) and stores them.
:meth:`DocumentQA.ask` moves the Query PENDING -> PROCESSING -> COMPLETED, or to FAILED with
the error recorded when anything goes wrong, and returns an AgentResponse that cites its sources.
The model replies with JSON of :class:`AnswerDraft` (constrained by a grammar locally): the
answer, which must itself be 10-10000 characters (the seed's rule for ``content``), and the
numbers of the excerpts it used. A ``session_id`` carries a conversation: its earlier exchanges
are shown to the model and help retrieve the chunks a follow-up question needs.

Example:
    >>> qa = DocumentQA.from_settings(get_llm(), get_embedder(), "work")  # doctest: +SKIP
    >>> qa.ingest("data/docqa")  # doctest: +SKIP
    >>> qa.ask("How do humanoid robots keep their balance?").response.sources  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memlab.bench.runlog import read_numbered
from memlab.config import Settings
from memlab.docqa.ingest import DocumentChunk, chunk_document, embed_chunks, read_documents
from memlab.embed.base import Embedder
from memlab.errors import ConfigError, DamagedFileError, StructuredOutputError
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json_reply
from memlab.models.retrieval import AgentResponse, Query, QueryStatus, RetrievedChunk
from memlab.stores.base import VectorHit, VectorStore

log = logging.getLogger(__name__)

ANSWER_SYSTEM = (
    "You answer questions about a document using only the numbered excerpts given. Answer in "
    "one or two full sentences and list the numbers of the excerpts you used. If the excerpts "
    "do not contain the answer, say so.")
ANSWER_CHARS = 600
HISTORY_EXCHANGES = 3


class AnswerDraft(BaseModel):
    """What the model returns: its answer and the excerpt numbers it cites."""

    model_config = ConfigDict(str_strip_whitespace=True)

    answer: str = Field(min_length=10, max_length=ANSWER_CHARS,
                        description="the answer in full sentences, 10-600 characters")
    cited: list[int] = Field(default_factory=list, description="numbers of the excerpts used")


class QueryResult(BaseModel):
    """The query in its final state, with the response (COMPLETED) or the error (FAILED)."""

    query: Query
    response: AgentResponse | None = None
    error: str | None = None
    reasks: int = Field(0, description="invalid answers re-asked")


class IngestReport(BaseModel):
    """What :meth:`DocumentQA.ingest` stored."""

    documents: list[str]
    chunks: list[DocumentChunk]
    dimension: int


class ConversationLog:
    """The exchanges of each session, one JSON line per exchange in ``folder/<hash>.jsonl``.

    A line torn by a crash mid-append (the file's tail) is cut when the log is next read; a
    damaged line inside raises ``DamagedFileError`` naming the file and the line.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _path(self, session_id: str) -> Path:
        digest = hashlib.blake2b(session_id.encode(), digest_size=12).hexdigest()
        return self.folder / f"{digest}.jsonl"

    def recent(self, session_id: str, n: int = HISTORY_EXCHANGES) -> list[dict[str, str]]:
        """The session's last ``n`` exchanges (``question``, ``answer``).

        Raises:
            DamagedFileError: a line inside is not JSON, or an exchange lacks its texts.
        """
        path = self._path(session_id)
        exchanges = []
        for line, record in read_numbered(path, repair=True)[-n:] if n > 0 else []:
            if not all(isinstance(record.get(key), str) for key in ("question", "answer")):
                raise DamagedFileError(path, f"line {line}: an exchange needs the texts "
                                             f"'question' and 'answer'; fix or remove line {line}")
            exchanges.append({"question": record["question"], "answer": record["answer"]})
        return exchanges

    def append(self, session_id: str, question: str, answer: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"session_id": session_id, "question": question, "answer": answer})
        with self._path(session_id).open("a", encoding="utf-8") as out:
            out.write(line + "\n")


def cite(chunk: RetrievedChunk) -> str:
    page = f", page {chunk.page_number}" if chunk.page_number is not None else ""
    return f"{chunk.source_document}{page}"


def to_retrieved_chunk(hit: VectorHit) -> RetrievedChunk:
    meta = dict(hit.metadata)
    return RetrievedChunk(id=hit.id, content=hit.text,
                          source_document=str(meta.pop("source_document", "unknown")),
                          page_number=meta.pop("page_number", None),
                          similarity_score=hit.similarity or 0.0,
                          metadata={**meta, "embedding_id": hit.id})


def answer_messages(query: Query, chunks: list[RetrievedChunk],
                    history: list[dict[str, str]] | None = None) -> list[Message]:
    excerpts = "\n\n".join(f"[{i}] ({cite(c)}) {c.content}" for i, c in enumerate(chunks, 1))
    earlier = "\n".join(f"Q: {h['question']}\nA: {h['answer']}" for h in history or [])
    context = f"Earlier in this conversation:\n{earlier}\n\n" if earlier else ""
    return [Message(role="system", content=ANSWER_SYSTEM),
            Message(role="user", content=f"{context}Excerpts:\n{excerpts}\n\n"
                                         f"Question: {query.text}")]


class DocumentQA:
    """Retrieval agent over ingested documents.

    Args:
        llm: writes the answers (None: ingest and retrieve only; a question then FAILS).
        store: the vector store holding the chunks (its scope is the collection).
        k: chunks retrieved per query.
        min_similarity: chunks below this similarity are not used.
        max_tokens: answer budget.
        conversations: where session exchanges are kept (None: sessions have no memory).
        json_retries: re-asks of an answer that is not a valid AnswerDraft.
    """

    def __init__(self, llm: LLMClient | None, store: VectorStore, *, k: int = 4,
                 min_similarity: float = 0.0, max_tokens: int = 256,
                 conversations: ConversationLog | None = None, json_retries: int = 1):
        if k < 1:
            raise ConfigError(f"k: must be >= 1, got {k}")
        self.llm, self.store, self.k = llm, store, k
        self.min_similarity, self.max_tokens = min_similarity, max_tokens
        self.conversations, self.json_retries = conversations, json_retries

    @classmethod
    def from_settings(cls, llm: LLMClient | None, embedder: Embedder, workdir: str | Path, *,
                      collection: str = "book", settings: Settings | None = None,
                      **kwargs: Any) -> DocumentQA:
        """Chroma in ``<workdir>/chroma`` (or ``MEMLAB_CHROMA_URL``), scoped to ``collection``;
        conversations in ``<workdir>/conversations``."""
        from memlab.stores.vector import ChromaVectorStore

        store = ChromaVectorStore.from_settings(collection, embedder, workdir, settings,
                                                namespace="docqa")
        kwargs.setdefault("conversations", ConversationLog(Path(workdir) / "conversations"))
        return cls(llm, store, **kwargs)

    def ingest(self, path: str | Path | None = None, *, text: str | None = None,
               source_document: str | None = None) -> IngestReport:
        """Chunk, embed and store a file, a folder of .txt/.md files, or ``text``.

        Raises:
            ConfigError: nothing to ingest, or a path that is neither a file nor a folder.
        """
        if text is not None:
            documents = [(source_document or "", text)]
        elif path is not None:
            documents = read_documents(path)
        else:
            raise ConfigError("ingest: give a path or text")
        chunks = [c for source, body in documents for c in chunk_document(body, source)]
        if not chunks:
            raise ConfigError("document: no text of at least 10 characters to ingest")
        collection = embed_chunks(chunks, self.store.embedder, self.store.scope)
        self.store.add([c.id for c in chunks], [c.content for c in chunks],
                       [c.metadata() for c in chunks],
                       embeddings=[e.vector for e in collection.embeddings])
        return IngestReport(documents=[s for s, _ in documents], chunks=chunks,
                            dimension=collection.dimension or 0)

    def ask(self, query: Query | str, *, user_id: str | None = None,
            session_id: str | None = None) -> QueryResult:
        """Answer ``query``; never raises for a processing error (the query ends FAILED).

        Raises:
            pydantic.ValidationError: the query text or timestamp breaks a seed rule.
            IllegalQueryTransition: the query is not PENDING.
            DamagedFileError: the session's conversation log is damaged (the query stays
                PENDING: it is the stored state, not this query, that is wrong).
        """
        if isinstance(query, str):
            query = Query(text=query, user_id=user_id, session_id=session_id)
        history = (self.conversations.recent(query.session_id)
                   if self.conversations is not None and query.session_id else [])
        query.transition_to(QueryStatus.PROCESSING)
        try:
            response, reasks = self._answer(query, history)
        except Exception as exc:  # noqa: BLE001 - the seed: any error moves the query to FAILED
            log.warning("query %s failed: %s", query.id, exc)
            query.transition_to(QueryStatus.FAILED)
            reasks = len(exc.errors) - 1 if isinstance(exc, StructuredOutputError) else 0
            return QueryResult(query=query, error=f"{type(exc).__name__}: {exc}", reasks=reasks)
        query.transition_to(QueryStatus.COMPLETED)
        if self.conversations is not None and query.session_id:
            self.conversations.append(query.session_id, query.text, response.content)
        return QueryResult(query=query, response=response, reasks=reasks)

    def retrieve(self, text: str, history: list[dict[str, str]] | None = None
                 ) -> list[RetrievedChunk]:
        """The ``k`` most similar chunks at or above ``min_similarity``, best first.

        With ``history``, chunks for the last question joined to this one are merged in (a
        follow-up such as "and its hands?" is found through the question before it).
        """
        hits = self.store.query(text, k=self.k)
        if history:
            hits += self.store.query(f"{history[-1]['question']} {text}", k=self.k)
        best: dict[str, VectorHit] = {}
        for hit in hits:
            if hit.id not in best or (hit.similarity or 0) > (best[hit.id].similarity or 0):
                best[hit.id] = hit
        ranked = sorted(best.values(), key=lambda h: -(h.similarity or 0.0))[: self.k]
        chunks = [to_retrieved_chunk(h) for h in ranked]
        return [c for c in chunks if c.similarity_score >= self.min_similarity]

    def _answer(self, query: Query, history: list[dict[str, str]]
                ) -> tuple[AgentResponse, int]:
        chunks = self.retrieve(query.text, history)
        if self.llm is None:
            raise ConfigError("llm: this DocumentQA has no model; it can only retrieve")
        if not chunks:
            raise LookupError(f"no document chunk at similarity >= {self.min_similarity}; "
                              "ingest a document first")
        reply = complete_json_reply(self.llm, answer_messages(query, chunks, history),
                                    AnswerDraft, max_retries=self.json_retries,
                                    max_tokens=self.max_tokens)
        draft: AnswerDraft = reply.value
        cited = sorted({n for n in draft.cited if 1 <= n <= len(chunks)})
        used = [chunks[n - 1] for n in cited] or chunks
        sources = list(dict.fromkeys(cite(c) for c in used))
        confidence = sum(c.similarity_score for c in used) / len(used)
        response = AgentResponse(query_id=query.id, content=draft.answer,
                                 retrieved_chunks=chunks, sources=sources,
                                 confidence=min(max(confidence, 0.0), 1.0))
        return response, reply.reasks
