"""Document QA (seed 001): ingest a document, answer Queries with cited RetrievedChunks.

A document (a text, a .txt/.md file, or a folder of them) is split into pages at page markers
(a line such as ``--- page 3 ---`` or ``[page 3]``, or a form feed) and into chunks of a few
paragraphs, each stored in the vector store with its ``source_document`` and ``page_number``.
:meth:`DocumentQA.ask` moves the Query PENDING -> PROCESSING -> COMPLETED, or to FAILED with
the error recorded when anything goes wrong, and returns an AgentResponse that cites its sources.

Example:
    >>> qa = DocumentQA.from_settings(get_llm(), get_embedder(), "work")  # doctest: +SKIP
    >>> qa.ingest("data/docqa")  # doctest: +SKIP
    >>> qa.ask("How do humanoid robots keep their balance?").response.sources  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memlab.config import Settings
from memlab.embed.base import Embedder
from memlab.errors import ConfigError
from memlab.llm.base import LLMClient, Message
from memlab.models.retrieval import AgentResponse, Query, QueryStatus, RetrievedChunk
from memlab.stores.base import VectorHit, VectorStore

log = logging.getLogger(__name__)

PAGE_MARKER = re.compile(r"^\s*(?:-{2,}\s*)?\[?\s*page\s+(\d+)\s*\]?(?:\s*-{2,})?\s*$",
                         re.IGNORECASE | re.MULTILINE)
DOCUMENT_SUFFIXES = (".txt", ".md")
MIN_CHUNK_CHARS = 10  # RetrievedChunk.content is 10-5000 characters
MAX_CHUNK_CHARS = 700
CITATION = re.compile(r"\[(\d+)\]")

ANSWER_SYSTEM = (
    "You answer questions about a document using only the numbered excerpts given. Cite the "
    "excerpts you use as [1], [2]. If the excerpts do not contain the answer, say so.")


class DocumentChunk(BaseModel):
    """One stored piece of a document (the text behind one VectorEmbedding)."""

    id: str
    content: str = Field(min_length=MIN_CHUNK_CHARS, max_length=5000)
    source_document: str = Field(min_length=1)
    page_number: int | None = Field(None, ge=0)
    document_id: str
    chunk_index: int = Field(ge=0)

    def metadata(self) -> dict[str, Any]:
        meta = {"source_document": self.source_document, "document_id": self.document_id,
                "chunk_index": self.chunk_index}
        return meta if self.page_number is None else {**meta, "page_number": self.page_number}


class QueryResult(BaseModel):
    """The query in its final state, with the response (COMPLETED) or the error (FAILED)."""

    query: Query
    response: AgentResponse | None = None
    error: str | None = None


# --- chunking -------------------------------------------------------------------------------
def split_pages(text: str) -> list[tuple[int | None, str]]:
    """``[(page_number, page_text)]``; page None before the first marker (or with none at all)."""
    pages: list[tuple[int | None, str]] = []
    for number, block in enumerate(text.split("\f")):
        if "\f" in text:  # form feeds: pages counted from 1
            pages += _split_markers(block, default=number + 1)
        else:
            pages += _split_markers(block, default=None)
    return [(n, body) for n, body in pages if body.strip()]


def _split_markers(text: str, default: int | None) -> list[tuple[int | None, str]]:
    found = list(PAGE_MARKER.finditer(text))
    if not found:
        return [(default, text)]
    pages = [(default, text[: found[0].start()])]
    for marker, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else len(text)
        pages.append((int(marker.group(1)), text[marker.end(): end]))
    return pages


def split_paragraphs(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    """Pack paragraphs into chunks of at most ``max_chars`` (long paragraphs cut at sentences)."""
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        while len(para) > max_chars:
            cut = para.rfind(". ", 0, max_chars) + 1 or max_chars
            pieces.append(para[:cut].strip())
            para = para[cut:].strip()
        if para:
            pieces.append(para)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= max_chars:
            chunks[-1] = f"{chunks[-1]}\n\n{piece}"
        else:
            chunks.append(piece)
    return [c for c in chunks if len(c) >= MIN_CHUNK_CHARS]


def chunk_document(text: str, source_document: str,
                   max_chars: int = MAX_CHUNK_CHARS) -> list[DocumentChunk]:
    """Split one document into chunks carrying its source and page numbers."""
    if not source_document.strip():
        raise ConfigError("source_document: must not be empty")
    document_id = hashlib.blake2b(source_document.encode(), digest_size=8).hexdigest()
    chunks = []
    for page, body in split_pages(text):
        for content in split_paragraphs(body, max_chars):
            index = len(chunks)
            chunks.append(DocumentChunk(id=f"{document_id}:{index}", content=content,
                                        source_document=source_document, page_number=page,
                                        document_id=document_id, chunk_index=index))
    return chunks


def read_documents(path: str | Path) -> list[tuple[str, str]]:
    """``[(source_document, text)]`` of a .txt/.md file or of every one under a folder."""
    root = Path(path)
    if root.is_file():
        return [(root.name, root.read_text(encoding="utf-8"))]
    if not root.is_dir():
        raise ConfigError(f"document: {str(root)!r} is neither a file nor a folder")
    files = sorted(p for p in root.rglob("*") if p.suffix in DOCUMENT_SUFFIXES and p.is_file())
    if not files:
        raise ConfigError(f"document: no {'/'.join(DOCUMENT_SUFFIXES)} files under {str(root)!r}")
    return [(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in files]


# --- answering ------------------------------------------------------------------------------
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


def answer_messages(query: Query, chunks: list[RetrievedChunk]) -> list[Message]:
    excerpts = "\n\n".join(f"[{i}] ({cite(c)}) {c.content}" for i, c in enumerate(chunks, 1))
    return [Message(role="system", content=ANSWER_SYSTEM),
            Message(role="user", content=f"Excerpts:\n{excerpts}\n\nQuestion: {query.text}")]


class DocumentQA:
    """Retrieval agent over ingested documents.

    Args:
        llm: writes the answers.
        store: the vector store holding the chunks (its scope is the collection).
        k: chunks retrieved per query.
        min_similarity: chunks below this similarity are not used.
        max_tokens: answer budget.
    """

    def __init__(self, llm: LLMClient, store: VectorStore, *, k: int = 4,
                 min_similarity: float = 0.0, max_tokens: int = 256):
        if k < 1:
            raise ConfigError(f"k: must be >= 1, got {k}")
        self.llm, self.store, self.k = llm, store, k
        self.min_similarity, self.max_tokens = min_similarity, max_tokens

    @classmethod
    def from_settings(cls, llm: LLMClient, embedder: Embedder, workdir: str | Path, *,
                      collection: str = "book", settings: Settings | None = None,
                      **kwargs: Any) -> DocumentQA:
        """Chroma in ``<workdir>/chroma`` (or ``MEMLAB_CHROMA_URL``), scoped to ``collection``."""
        from memlab.stores.vector import ChromaVectorStore

        store = ChromaVectorStore.from_settings(collection, embedder, workdir, settings,
                                                namespace="docqa")
        return cls(llm, store, **kwargs)

    def ingest(self, path: str | Path | None = None, *, text: str | None = None,
               source_document: str | None = None) -> list[DocumentChunk]:
        """Chunk and store a file, a folder of .txt/.md files, or ``text`` (with its source)."""
        if text is not None:
            documents = [(source_document or "", text)]
        elif path is not None:
            documents = read_documents(path)
        else:
            raise ConfigError("ingest: give a path or text")
        chunks = [c for source, body in documents for c in chunk_document(body, source)]
        if not chunks:
            raise ConfigError("document: no text of at least 10 characters to ingest")
        self.store.add([c.id for c in chunks], [c.content for c in chunks],
                       [c.metadata() for c in chunks])
        return chunks

    def ask(self, query: Query | str, *, user_id: str | None = None,
            session_id: str | None = None) -> QueryResult:
        """Answer ``query``; never raises for a processing error (the query ends FAILED).

        Raises:
            pydantic.ValidationError: the query text or timestamp breaks a seed rule.
            IllegalQueryTransition: the query is not PENDING.
        """
        if isinstance(query, str):
            query = Query(text=query, user_id=user_id, session_id=session_id)
        query.transition_to(QueryStatus.PROCESSING)
        try:
            response = self._answer(query)
        except Exception as exc:  # noqa: BLE001 - the seed: any error moves the query to FAILED
            log.warning("query %s failed: %s", query.id, exc)
            query.transition_to(QueryStatus.FAILED)
            return QueryResult(query=query, error=f"{type(exc).__name__}: {exc}")
        query.transition_to(QueryStatus.COMPLETED)
        return QueryResult(query=query, response=response)

    def retrieve(self, text: str) -> list[RetrievedChunk]:
        """The ``k`` most similar chunks at or above ``min_similarity``, best first."""
        hits = self.store.query(text, k=self.k)
        chunks = [to_retrieved_chunk(h) for h in hits]
        return [c for c in chunks if c.similarity_score >= self.min_similarity]

    def _answer(self, query: Query) -> AgentResponse:
        chunks = self.retrieve(query.text)
        if not chunks:
            raise LookupError(f"no document chunk at similarity >= {self.min_similarity}; "
                              "ingest a document first")
        text = self.llm.complete(answer_messages(query, chunks), max_tokens=self.max_tokens).text
        text = text.strip()[:9000]  # leaves room for the sources within the 10000 limit
        if not text:
            raise ValueError("content: the model returned an empty answer")
        cited = sorted({int(n) for n in CITATION.findall(text) if 1 <= int(n) <= len(chunks)})
        used = [chunks[n - 1] for n in cited] or chunks
        sources = list(dict.fromkeys(cite(c) for c in used))
        content = f"{text}\n\nSources: {'; '.join(sources)}"
        confidence = sum(c.similarity_score for c in used) / len(used)
        return AgentResponse(query_id=query.id, content=content[:10000], retrieved_chunks=chunks,
                             confidence=min(max(confidence, 0.0), 1.0), sources=sources)
