"""hybrid (DD-01): operating memory + a ConsolidationAgent + long-term distilled facts.

Each turn the agent writes its scratchpad and stages promotion candidates in its
PersonalMemoryState (operating memory, key ``personal_state:{agent_id}``); the ConsolidationAgent
promotes confident candidates into the DistilledFactStore, where a newer fact on the same subject
supersedes the older one; a request to forget retires the facts it covers (hybrid_forget).
recall = scratchpad + relevant current facts + recent turns.
SharedWorkspaceState events (open, write, join, resolve/cancel) are archived into the same
long-term store through the operating memory's archiving hook.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from memlab.memory._backends import RunFolder, open_operating_memory, resolve_embedder
from memlab.memory.base import Exchange, MemoryContext, MemoryItem, MemorySize, MemorySystem
from memlab.memory.hybrid_extract import CUE, extract_candidates, subject_key
from memlab.memory.hybrid_facts import ConsolidationAgent, DistilledFact, DistilledFactStore
from memlab.memory.hybrid_forget import choose_forgotten, is_forget_request
from memlab.models import new_id
from memlab.models.operating import EventStatus, PersonalMemoryState, SharedWorkspaceState


class HybridConfig(BaseModel):
    """Settings of the hybrid condition."""

    promote_threshold: float = Field(0.7, ge=0, le=1,
                                     description="candidate confidence needed for promotion")
    max_pending: int = Field(20, ge=0, description="unpromoted candidates kept staged")
    top_k_facts: int = Field(5, ge=1, description="distilled facts recalled per query")
    recent_turns: int = Field(3, ge=0, description="last turns kept in the scratchpad and sent")
    extraction_gate: Literal["every_turn", "cue"] = Field(
        "cue", description="cue: only exchanges whose user message speaks in the first person "
        "(I, my, we, remember...) go to the LLM extractor; every_turn: each exchange does (on the "
        "quick LTM grid every_turn cost 192 s of extraction against 65 s of answering)")
    extract_max_tokens: int = Field(192, ge=16, description="reply limit of the extractor")
    check_candidates: bool = Field(
        True, description="drop LLM candidates sharing no word with the user's message and let "
        "a first-person rule candidate ('my X is Y') replace a weaker one on the same subject")
    subject_similarity: float | None = Field(
        0.88, ge=0, le=1, description="MiniLM cosine similarity of two normalised subjects at "
        "which a new fact supersedes the current one (None: identical subjects only). Measured "
        "with MiniLM: favourite film/movie 0.96, favourite colour/favorite color 0.94, but "
        "wife/husband name 0.87 and sister/brother name 0.77, hence 0.88 rather than 0.8")
    forget_requests: bool = Field(
        True, description="honour the user's requests to forget ('Forget every name I have "
        "given you', 'please clear my shopping list'): the memory model names which of the "
        "closest current facts a request covers, and those are no longer recalled")
    forget_candidates: int = Field(
        6, ge=1, description="current facts closest to a request that the memory model is asked "
        "about (benchmarks/bench_forget.py: at 12 the 0.5B model wrongly forgot 13 of 125 facts; "
        "the LTM reset messages' own facts ranked 3rd or better)")
    consolidate_every: int = Field(1, ge=1, description="ConsolidationAgent runs every N turns")
    redis_url: str | None = Field(None, description="operating memory server (else MEMLAB_REDIS_URL)")


class HybridMemory(MemorySystem):
    """The full system of DD-01 for one agent and user."""

    key = "hybrid"
    Config = HybridConfig

    def __init__(self, *args, operating=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.embedder = resolve_embedder(self.embedder)
        self.folder = RunFolder(self.workdir)
        self.agent_id = self.scope.key
        self._owns_operating = operating is None
        self.operating = operating or open_operating_memory(self.config.redis_url,
                                                            namespace=self.namespace)
        self.operating.set_archive_hook(self.archive_workspace)
        self.facts = DistilledFactStore(self.folder.path, self.scope.key, self.embedder,
                                        subject_similarity=self.config.subject_similarity,
                                        namespace=self.namespace)
        self.consolidator = ConsolidationAgent(self.facts,
                                               promote_threshold=self.config.promote_threshold,
                                               max_pending=self.config.max_pending)
        self.extractions: dict[str, int] = {"llm": 0, "rules": 0, "none": 0}
        self.failures: list[str] = []
        self.forgetting = {"forget_requests": 0, "facts_forgotten": 0}

    # ------------------------------------------------------------------ personal state
    def state(self) -> PersonalMemoryState:
        """This agent's PersonalMemoryState (a fresh one before the first turn)."""
        return (self.operating.get_personal_state(self.agent_id)
                or PersonalMemoryState(agent_id=self.agent_id))

    def observe(self, exchange: Exchange) -> None:
        state = self.state()
        if self.config.forget_requests and is_forget_request(exchange.user):
            self._forget(state, exchange)
        gated = self.config.extraction_gate == "cue" and not CUE.search(exchange.user)
        candidates, extractor, failure = ([], "none", None) if gated else extract_candidates(
            self.llm, exchange, max_tokens=self.config.extract_max_tokens,
            check=self.config.check_candidates)
        self.extractions[extractor] += 1
        if failure:
            self.failures.append(f"turn {exchange.turn_number}: {failure}")
        for i, candidate in enumerate(candidates):
            key = f"t{exchange.turn_number:07d}-{i:02d}"
            state.promotion_candidates[key] = {
                **candidate.model_dump(), "id": new_id(),
                "turn_number": exchange.turn_number, "timestamp": exchange.timestamp.isoformat()}
        self._write_scratchpad(state, exchange, candidates, extractor)
        if exchange.turn_number % self.config.consolidate_every == 0:
            self.consolidator.run(state)
        self.operating.save_personal_state(state)

    def _forget(self, state: PersonalMemoryState, exchange: Exchange) -> None:
        """Retire the current facts the user's request covers, with their scratchpad notes and
        staged candidates on the same subjects."""
        shown = [fact for fact, _ in self.facts.relevant(exchange.user, self.config.forget_candidates)
                 if fact.kind == "fact"]
        chosen, failure = choose_forgotten(self.llm, exchange.user, [f.content for f in shown])
        self.forgetting["forget_requests"] += 1
        if failure:
            self.failures.append(f"turn {exchange.turn_number} (forget): {failure}")
        forgotten = [shown[i] for i in chosen]
        self.facts.forget([f.id for f in forgotten], exchange.turn_number)
        self.forgetting["facts_forgotten"] += len(forgotten)
        contents, subjects = {f.content for f in forgotten}, {f.subject for f in forgotten}
        pad = state.scratchpad
        notes = {k: v for k, v in pad.get("notes", {}).items() if v not in contents}
        pad["note_turns"] = {k: t for k, t in pad.get("note_turns", {}).items() if k in notes}
        pad["notes"] = notes
        state.promotion_candidates = {
            key: staged for key, staged in state.promotion_candidates.items()
            if (subject_key(staged["subject"]) or staged["subject"]) not in subjects}

    def _write_scratchpad(self, state: PersonalMemoryState, exchange: Exchange,
                          candidates: list, extractor: str) -> None:
        pad = state.scratchpad
        recent = pad.get("recent_turns", []) + [exchange.model_dump(mode="json")]
        notes = dict(pad.get("notes", {}))  # subject -> latest note: a newer one replaces it
        note_turns = dict(pad.get("note_turns", {}))  # subject -> turn the note came from
        for candidate in candidates:
            key = subject_key(candidate.subject)
            notes.pop(key, None)
            notes[key] = candidate.content
            note_turns[key] = exchange.turn_number
        notes = dict(list(notes.items())[-5:])
        state.scratchpad = {"turn_number": exchange.turn_number, "extractor": extractor,
                            "notes": notes,
                            "note_turns": {k: note_turns[k] for k in notes if k in note_turns},
                            "recent_turns": recent[-self.config.recent_turns:]
                            if self.config.recent_turns else []}

    def stats(self) -> dict[str, Any]:
        """Extractions by extractor, LLM failures (the turns fell back to rules, or forgot
        nothing), facts written and the user's requests to forget."""
        return {"extractions": dict(self.extractions), "failed_turns": len(self.failures),
                "failures": self.failures[:20], "memories_written": self.facts.count(),
                **self.forgetting}

    def recall(self, query: str) -> MemoryContext:
        pad = self.state().scratchpad
        items = []
        if pad.get("notes"):
            turns = sorted(set(pad.get("note_turns", {}).values()))
            items.append(MemoryItem(id=f"scratchpad:{self.agent_id}", kind="scratchpad",
                                    text="Notes: " + "; ".join(pad["notes"].values()),
                                    metadata={"turn_numbers": turns}))
        for fact, similarity in self.facts.relevant(query, self.config.top_k_facts):
            turns = [fact.turn_number] if fact.source != "workspace" else []
            items.append(MemoryItem(id=fact.id, kind=fact.kind, text=fact.content,
                                    score=similarity, timestamp=fact.timestamp,
                                    metadata={"subject": fact.subject,
                                                                "turn_numbers": turns}))
        history = [Exchange.model_validate(t) for t in pad.get("recent_turns", [])]
        return MemoryContext(items=items, history=history)

    def size(self) -> MemorySize:
        """The current facts (archived workspace events among them; superseded and forgotten
        ones stay stored but are never recalled, so are not counted) and what the scratchpad
        in operating memory keeps for recall: each note and each recent turn. Staged promotion
        candidates are not counted: recall never shows them."""
        facts = [fact.content for fact in self.facts.all() if self.facts.recallable(fact)]
        pad = self.state().scratchpad
        recent = [Exchange.model_validate(t).render() for t in pad.get("recent_turns", [])]
        return MemorySize.of(facts + list(pad.get("notes", {}).values()) + recent)

    # ------------------------------------------------------------------ shared workspaces
    def open_event(self, shared_data: dict[str, Any] | None = None,
                   event_id: str | None = None) -> SharedWorkspaceState:
        """Open a collaborative event with this agent as first participant."""
        fields: dict[str, Any] = {"status": EventStatus.ACTIVE, "shared_data": shared_data or {},
                                  "participating_agents": [self.agent_id]}
        if event_id:
            fields["event_id"] = event_id
        return self.operating.save_workspace(SharedWorkspaceState(**fields))

    def write_shared(self, event_id: str, key: str, value: Any) -> SharedWorkspaceState:
        """Atomically write one shared_data entry as this agent."""
        def write(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.shared_data = {**ws.shared_data, key: value}
            ws.add_participant(self.agent_id)
            return ws
        return self.operating.update_workspace(event_id, write)

    def add_participant(self, event_id: str, agent_id: str) -> SharedWorkspaceState:
        def join(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.add_participant(agent_id)
            return ws
        return self.operating.update_workspace(event_id, join)

    def resolve_event(self, event_id: str) -> SharedWorkspaceState:
        """Mark the event resolved: it is archived into long-term memory and leaves operating memory."""
        return self._finish(event_id, EventStatus.RESOLVED)

    def cancel_event(self, event_id: str) -> SharedWorkspaceState:
        return self._finish(event_id, EventStatus.CANCELLED)

    def _finish(self, event_id: str, status: EventStatus) -> SharedWorkspaceState:
        def finish(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.status = status
            return ws
        return self.operating.update_workspace(event_id, finish)

    def archive_workspace(self, workspace: SharedWorkspaceState) -> None:
        """The archiving hook: a terminal workspace becomes an "event" fact in long-term memory."""
        content = (f"Event {workspace.event_id} {workspace.status.value}; data: "
                   f"{json.dumps(workspace.shared_data, sort_keys=True, default=str)}; "
                   f"agents: {', '.join(workspace.participating_agents)}")
        self.facts.add_fact(DistilledFact(
            id=new_id(), subject=f"event {workspace.event_id}", content=content,
            confidence=1.0, kind="event", source="workspace", timestamp=workspace.last_updated))

    def close(self) -> None:
        self.facts.close()
        if self._owns_operating:
            self.operating.close()
        self.folder.cleanup()
