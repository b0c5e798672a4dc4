"""hybrid: the long-term store of distilled facts and the ConsolidationAgent that fills it (DD-01).

A newer fact about the same subject supersedes the older one: both stay stored, linked by
``supersedes`` / ``superseded_by``; recall only searches current facts. "Same subject" means
the same normalised subject (``subject_key``) or, failing that, the current fact whose subject
embeds closest to the new one, at or above ``subject_similarity`` (the new fact then takes over
the older subject, so a chain keeps one key). A fact the user asked to forget
(:mod:`memlab.memory.hybrid_forget`) stays stored with ``forgotten_turn`` and is neither
recalled nor current on its subject. Archived shared
workspaces land here too (kind "event"). Facts live where the sleep stores' records live
(:mod:`memlab.stores.records`: SQL rows, vectors in chroma written in batches, searched in
process), so a promotion costs no vector-database round trip.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from memlab.memory.hybrid_extract import PromotionCandidate, subject_key
from memlab.models.operating import PersonalMemoryState
from memlab.stores.records import ScopedRecordStore

if TYPE_CHECKING:
    from memlab.embed.base import Embedder


class DistilledFact(BaseModel):
    """One fact in long-term memory."""

    id: str
    subject: str = Field(description="normalised subject (the supersession key)")
    content: str
    confidence: float = Field(ge=0.0, le=1.0)
    kind: Literal["fact", "event"] = "fact"
    source: str = Field("llm", description="llm, rules or workspace")
    turn_number: int = 0
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    supersedes: str = Field("", description="id of the fact this one replaced")
    superseded_by: str = Field("", description="id of the newer fact ('' while current)")
    forgotten_turn: int | None = Field(None, description="turn of the user's request to forget "
                                       "it (None while not forgotten)")

    @property
    def current(self) -> bool:
        """Neither superseded nor forgotten: recalled, and the fact on its subject."""
        return not self.superseded_by and self.forgotten_turn is None


class DistilledFactStore(ScopedRecordStore[DistilledFact]):
    """Distilled facts of one scope; only current facts are recalled.

    Args:
        workdir: the run folder (see :class:`ScopedRecordStore` for the other arguments).
        scope: whose facts these are.
        embedder: for similarity search (of contents, and of subjects for supersession).
        subject_similarity: cosine similarity of two subjects at which a new fact supersedes
            the current one (None: only identical normalised subjects supersede).
    """

    table = "distilled_facts"
    model = DistilledFact

    def __init__(self, workdir: str | Path, scope: str, embedder: Embedder, *,
                 subject_similarity: float | None = None, **kwargs: Any):
        self.subject_similarity = subject_similarity
        super().__init__(workdir, scope, embedder, **kwargs)

    def text_of(self, record: DistilledFact) -> str:
        return record.content

    def recallable(self, record: DistilledFact) -> bool:
        return record.current

    def reload(self) -> None:
        super().reload()
        self._current = {f.subject: f.id for f in self._records if f.current}
        self._subjects: list[str] | None = None  # subject index, rebuilt on first use
        self._subject_vectors = np.zeros((0, self.embedder.dim), np.float32)

    def current_id(self, subject: str) -> str | None:
        """Id of the current fact on ``subject`` (normalised), if any."""
        return self._current.get(subject)

    def _subject_index(self) -> tuple[list[str], np.ndarray]:
        """Subjects of current facts (kind "fact") and their vectors, built once per load and
        after a fact is forgotten (a superseding fact takes its subject over)."""
        if self._subjects is None:
            subjects = [s for s, fid in self._current.items()
                        if self._records[self._row_of[fid]].kind == "fact"]
            vectors = (self.embedder.embed(subjects) if subjects
                       else np.zeros((0, self.embedder.dim), np.float32))
            self._subjects, self._subject_vectors = subjects, np.asarray(vectors, np.float32)
        return self._subjects, self._subject_vectors[: len(self._subjects)]

    def _index_subject(self, subject: str, vector: np.ndarray | None) -> None:
        subjects, _ = self._subject_index()
        if subject in self._current:
            return
        if vector is None:
            vector = self.embedder.embed([subject])[0]
        if len(subjects) == len(self._subject_vectors):  # grow by doubling
            grown = np.zeros((max(16, 2 * len(subjects)), self.embedder.dim), np.float32)
            grown[: len(subjects)] = self._subject_vectors[: len(subjects)]
            self._subject_vectors = grown
        self._subject_vectors[len(subjects)] = vector
        subjects.append(subject)

    def similar_subject(self, subject: str) -> tuple[str | None, np.ndarray]:
        """The current fact subject closest to ``subject`` at or above ``subject_similarity``
        (None when there is none) and the vector of ``subject``."""
        subjects, matrix = self._subject_index()
        vector = self.embedder.embed([subject])[0]
        if not subjects:
            return None, vector
        sims = matrix @ vector
        best = int(np.argmax(sims))
        return (subjects[best] if sims[best] >= self.subject_similarity else None), vector

    def add_fact(self, fact: DistilledFact) -> DistilledFact:
        """Store ``fact``; the current fact on its subject (exact, else similar), if any, is
        superseded (kept, with ``superseded_by``)."""
        with self._lock:
            old_id, vector = self.current_id(fact.subject), None
            if old_id is None and fact.kind == "fact" and self.subject_similarity is not None:
                match, vector = self.similar_subject(fact.subject)
                if match is not None:
                    fact = fact.model_copy(update={"subject": match})
                    old_id = self.current_id(match)
            if old_id and old_id != fact.id:
                fact = fact.model_copy(update={"supersedes": old_id})
            self._insert([fact])
            if fact.supersedes:
                self._modify([old_id], lambda old: setattr(old, "superseded_by", fact.id))
            elif fact.kind == "fact" and self.subject_similarity is not None:
                self._index_subject(fact.subject, vector)
            self._current[fact.subject] = fact.id
            return fact

    def forget(self, fact_ids: list[str], turn: int) -> list[str]:
        """Forget the current facts among ``fact_ids`` (the user asked at ``turn``): kept, no
        longer recalled or current on their subjects; returns the ids forgotten."""
        with self._lock:
            ids = [i for i in fact_ids if (f := self.get(i)) is not None and f.current]
            changed = self._modify(ids, lambda fact: setattr(fact, "forgotten_turn", turn))
            for fact_id in changed:
                subject = self._records[self._row_of[fact_id]].subject
                if self._current.get(subject) == fact_id:
                    del self._current[subject]
            if changed:
                self._subjects = None  # rebuilt without the forgotten subjects
            return changed

    def relevant(self, query: str, k: int) -> list[tuple[DistilledFact, float]]:
        """Current (not superseded) facts most similar to ``query``, best first."""
        return self.search(query, k) if self.count() else []

    def history(self, fact_id: str) -> list[DistilledFact]:
        """The fact and every fact it superseded, newest first (follows ``supersedes``)."""
        chain, seen = [], set()
        fact = self.get(fact_id)
        while fact is not None and fact.id not in seen:
            chain.append(fact)
            seen.add(fact.id)
            fact = self.get(fact.supersedes) if fact.supersedes else None
        return chain


class ConsolidationAgent:
    """Promotes staged candidates of a PersonalMemoryState into the distilled-fact store.

    Args:
        store: the long-term store.
        promote_threshold: candidates with at least this confidence are promoted.
        max_pending: candidates below the threshold kept staged (oldest dropped first).
    """

    def __init__(self, store: DistilledFactStore, *, promote_threshold: float = 0.7,
                 max_pending: int = 20):
        self.store = store
        self.promote_threshold = promote_threshold
        self.max_pending = max_pending

    def run(self, state: PersonalMemoryState) -> list[DistilledFact]:
        """Promote, in staging order, every candidate at or above the threshold; mutates ``state``."""
        promoted, pending = [], {}
        for key in sorted(state.promotion_candidates):
            staged = state.promotion_candidates[key]
            candidate = PromotionCandidate.model_validate(
                {k: staged[k] for k in ("subject", "content", "confidence", "extractor")})
            if candidate.confidence < self.promote_threshold:
                pending[key] = staged
                continue
            fact = DistilledFact(
                id=staged["id"], subject=subject_key(candidate.subject) or candidate.subject,
                content=candidate.content, confidence=candidate.confidence,
                source=candidate.extractor, turn_number=staged.get("turn_number", 0),
                timestamp=staged.get("timestamp") or datetime.now(UTC))
            promoted.append(self.store.add_fact(fact))
        keep = sorted(pending)[-self.max_pending:] if self.max_pending else []
        state.promotion_candidates = {key: pending[key] for key in keep}
        return promoted
