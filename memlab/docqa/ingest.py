"""Ingesting documents for document QA (seed 001): pages, chunks, VectorEmbeddings.

A document (a text, a .txt/.md file, or a folder of them) is split into pages at page markers
(a line such as ``--- page 3 ---`` or ``[page 3]``, or a form feed) and into chunks of a few
paragraphs, each carrying its ``source_document``, ``page_number``, ``document_id`` and
``chunk_index``. :func:`embed_chunks` turns them into the seed's VectorEmbeddings (one
dimensionality per collection, checked).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memlab.embed.base import Embedder
from memlab.errors import ConfigError
from memlab.models.retrieval import EmbeddingCollection, VectorEmbedding
from memlab.userfiles import read_text

PAGE_MARKER = re.compile(r"^\s*(?:-{2,}\s*)?\[?\s*page\s+(\d+)\s*\]?(?:\s*-{2,})?\s*$",
                         re.IGNORECASE | re.MULTILINE)
DOCUMENT_SUFFIXES = (".txt", ".md")
MIN_CHUNK_CHARS = 10  # RetrievedChunk.content is 10-5000 characters
MAX_CHUNK_CHARS = 700


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
    """``[(source_document, text)]`` of a .txt/.md file or of every one under a folder.

    Raises:
        ConfigError: no such file or folder, no documents in it, or a document that cannot be
            read as UTF-8 text (naming it and the first bad byte).
    """
    root = Path(path)
    if root.is_file():
        return [(root.name, read_text(root, "document"))]
    if not root.is_dir():
        raise ConfigError(f"document: {str(root)!r} is neither a file nor a folder")
    files = sorted(p for p in root.rglob("*") if p.suffix in DOCUMENT_SUFFIXES and p.is_file())
    if not files:
        raise ConfigError(f"document: no {'/'.join(DOCUMENT_SUFFIXES)} files under {str(root)!r}")
    return [(str(p.relative_to(root)), read_text(p, "document")) for p in files]


def embed_chunks(chunks: list[DocumentChunk], embedder: Embedder,
                 collection: str) -> EmbeddingCollection:
    """The VectorEmbedding of every chunk (its id is the chunk's), one dimensionality.

    Raises:
        ValueError: a vector's dimension differs from the others (the seed's rule).
    """
    vectors = embedder.embed([c.content for c in chunks])
    return EmbeddingCollection(name=collection, embeddings=[
        VectorEmbedding(id=c.id, text_content=c.content, vector=[float(x) for x in vector],
                        document_id=c.document_id, chunk_index=c.chunk_index)
        for c, vector in zip(chunks, vectors, strict=True)])
