"""Phase 3 of the sleep cycle: schema formation (seed 002 induce_schema).

Consolidated memories are grouped when they share key concepts or their embeddings are close;
each group is named and described by the LLM and stored as a Schema (related_memory_ids,
examples, confidence). A group that matches an existing schema updates it instead of adding a
duplicate.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import MEMORY_MAX_CHARS, MEMORY_MAX_ITEMS, complete_json
from memlab.models.sleep import ConsolidatedMemory, Schema

if TYPE_CHECKING:
    from memlab.embed.base import Embedder
    from memlab.stores.schemas import SchemaStore

SCHEMA_PROMPT = (
    "You find the general pattern behind related memories of one user. Give the pattern a short "
    "name (2-5 words), a one-sentence description of what these memories have in common, and "
    "your confidence (0..1) that it is a real, recurring pattern."
)


class SchemaDraft(BaseModel):
    """What the LLM returns for one group."""

    name: str = Field(min_length=1)
    description: str = ""
    confidence: float = Field(0.5, ge=0.0, le=1.0)


class InductionConfig(BaseModel):
    """Grouping and matching thresholds of schema formation."""

    min_group_size: int = Field(2, ge=2, description="memories a group needs to become a schema")
    min_shared_concepts: int = Field(1, ge=1, description="shared key concepts that link two memories")
    similarity_threshold: float = Field(0.6, ge=0, le=1,
                                        description="cosine similarity that links two memories")
    max_memories: int = Field(200, ge=2, description="most recent memories considered per cycle")
    match_overlap: float = Field(0.5, ge=0, le=1, description="share of a group's memories "
                                 "already in a schema for the group to update that schema")
    max_examples: int = Field(3, ge=0, description="example summaries kept on a schema")
    core_concepts: int = Field(5, ge=1, description="core concepts kept on a schema")
    max_tokens: int = Field(160, ge=16, description="reply limit of one naming call")
    max_retries: int = Field(1, ge=0, description="complete_json re-asks")


class InductionResult(BaseModel):
    created: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)


def _concepts(memory: ConsolidatedMemory) -> list[str]:
    """A memory's key concepts, normalised, without duplicates, in the memory's order."""
    return list(dict.fromkeys(" ".join(c.lower().split()) for c in memory.key_concepts
                              if c.strip()))


def group_related_memories(memories: list[ConsolidatedMemory], embedder: Embedder | None, *,
                           config: InductionConfig | None = None) -> list[list[ConsolidatedMemory]]:
    """Connected groups of memories linked by shared concepts or embedding similarity."""
    cfg = config or InductionConfig()
    n = len(memories)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    concepts = [set(_concepts(m)) for m in memories]
    sims = None
    if embedder is not None and n > 1:
        vectors = embedder.embed([m.summary for m in memories])
        sims = vectors @ vectors.T
    for i in range(n):
        for j in range(i + 1, n):
            linked = len(concepts[i] & concepts[j]) >= cfg.min_shared_concepts
            if not linked and sims is not None:
                linked = bool(sims[i, j] >= cfg.similarity_threshold)
            if linked:
                parent[root(i)] = root(j)
    groups: dict[int, list[ConsolidatedMemory]] = {}
    for i, memory in enumerate(memories):
        groups.setdefault(root(i), []).append(memory)
    return [g for g in groups.values() if len(g) >= cfg.min_group_size]


def core_concepts_of(group: list[ConsolidatedMemory], limit: int) -> list[str]:
    """Concepts by how many memories of the group carry them (shared ones first; equal counts
    in order of first mention, not in a set's order, which varies with PYTHONHASHSEED)."""
    counts = Counter(c for memory in group for c in _concepts(memory))
    return [c for c, _ in counts.most_common(limit)]


def find_matching_schema(group: list[ConsolidatedMemory], schemas: list[Schema],
                         overlap: float) -> Schema | None:
    """The existing schema that already holds at least ``overlap`` of the group's memories."""
    ids = {m.id for m in group}
    best, best_share = None, 0.0
    for schema in schemas:
        share = len(ids & set(schema.related_memory_ids)) / len(ids)
        if share >= overlap and share > best_share:
            best, best_share = schema, share
    return best


def induce_schema(group: list[ConsolidatedMemory], llm: LLMClient, store: SchemaStore, *,
                  config: InductionConfig | None = None) -> tuple[str, str]:
    """Create (LLM-named) or update the schema of one group.

    Returns:
        (schema id, "created" | "updated" | "unchanged").

    Raises:
        StructuredOutputError / LLMError: naming a new group failed (nothing is stored).
    """
    cfg = config or InductionConfig()
    concepts = core_concepts_of(group, cfg.core_concepts)
    examples = [m.summary for m in group][: cfg.max_examples]
    existing = find_matching_schema(group, store.all(), cfg.match_overlap)
    if existing is not None:
        merged_ids = list(dict.fromkeys([*existing.related_memory_ids, *(m.id for m in group)]))
        if merged_ids == existing.related_memory_ids:
            return existing.id, "unchanged"
        store.update_schema(
            existing.id, related_memory_ids=merged_ids,
            core_concepts=list(dict.fromkeys([*existing.core_concepts, *concepts]))[
                : cfg.core_concepts],
            examples=list(dict.fromkeys([*existing.examples, *examples]))[: cfg.max_examples],
            confidence=min(1.0, existing.confidence + 0.05))
        return existing.id, "updated"
    text = "\n".join(f"- {m.summary} (concepts: {', '.join(m.key_concepts)})" for m in group[:12])
    draft = complete_json(llm, [Message(role="system", content=SCHEMA_PROMPT),
                                Message(role="user", content=text)], SchemaDraft,
                          max_tokens=cfg.max_tokens, max_retries=cfg.max_retries,
                          max_items=MEMORY_MAX_ITEMS, max_chars=MEMORY_MAX_CHARS)
    schema = Schema(name=draft.name.strip() or "pattern", description=draft.description,
                    core_concepts=concepts, related_memory_ids=[m.id for m in group],
                    examples=examples, confidence=draft.confidence)
    return store.add_schema(schema), "created"


def induce_schemas(memories: list[ConsolidatedMemory], llm: LLMClient, store: SchemaStore,
                   embedder: Embedder | None, *,
                   config: InductionConfig | None = None) -> InductionResult:
    """Group the most recent memories and induce one schema per group; never raises for a group."""
    from memlab.errors import LLMError

    cfg = config or InductionConfig()
    result = InductionResult()
    recent = sorted(memories, key=lambda m: m.timestamp)[-cfg.max_memories:]
    for group in group_related_memories(recent, embedder, config=cfg):
        try:
            schema_id, status = induce_schema(group, llm, store, config=cfg)
        except LLMError as exc:
            result.failures.append(f"schema_formation: group of {len(group)} memories: "
                                   f"{type(exc).__name__}: {exc}")
            continue
        if status == "created":
            result.created.append(schema_id)
        elif status == "updated":
            result.updated.append(schema_id)
    return result


__all__ = ["InductionConfig", "InductionResult", "SCHEMA_PROMPT", "SchemaDraft",
           "core_concepts_of", "find_matching_schema", "group_related_memories", "induce_schema",
           "induce_schemas"]
