"""Seed 001: the document retrieval agent (ingest, cited answers, the query state machine).

:mod:`memlab.docqa.ingest` splits documents into chunks and VectorEmbeddings,
:mod:`memlab.docqa.agent` answers Queries from them, and :mod:`memlab.docqa.http` is the
FastAPI router the agent server mounts (imported from there, so that importing this package
does not import FastAPI).
"""

from memlab.docqa.agent import (
    AnswerDraft,
    ConversationLog,
    DocumentQA,
    IngestReport,
    QueryResult,
    answer_messages,
    cite,
    to_retrieved_chunk,
)
from memlab.docqa.ingest import (
    DocumentChunk,
    chunk_document,
    embed_chunks,
    read_documents,
    split_pages,
    split_paragraphs,
)

__all__ = ["AnswerDraft", "ConversationLog", "DocumentChunk", "DocumentQA", "IngestReport",
           "QueryResult", "answer_messages", "chunk_document", "cite", "embed_chunks",
           "read_documents", "split_pages", "split_paragraphs", "to_retrieved_chunk"]
