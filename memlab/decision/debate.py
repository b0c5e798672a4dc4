"""The prioritisation debate of seed 003: three 13-turn rounds, then TOPSIS.

Round 1 selects criteria, round 2 compares them pairwise (AHP, with CR retries), round 3 scores
every major on every criterion, round 4 ranks the majors by TOPSIS. Every turn is parsed with
``complete_json`` into the round's reply model, whose schema constrains the model's output
(see :mod:`memlab.decision.replies`); an invalid reply is re-asked at most ``json_retries``
times and the re-asks are counted. Turns are appended to a SharedWorkspaceState event in
operating memory. Rounds 1-3 write the files the seed names, round 4 a final ranking; a debate
run again with the same session id resumes after its last round file.

Example:
    >>> from memlab.llm import get_llm  # doctest: +SKIP
    >>> state = DecisionDebate(get_llm(), output_dir="output").run(user_input)  # doctest: +SKIP
    >>> [r.alternative for r in state.final_ranking]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memlab.config import get_settings
from memlab.decision.ahp import ahp_weights
from memlab.decision.consistency import DIRECTOR_PHASE, CRRetries, InconsistentJudgementsError
from memlab.decision.outputs import DebateStats, load_rounds, write_final, write_json
from memlab.decision.personas import DIRECTOR, director_prompt, generate_personas
from memlab.decision.prompts import diversity_feedback, round_context, turn_message
from memlab.decision.replies import (
    TurnReply,
    comparison_model,
    criteria_decision_model,
    decision_model,
    proposal_model,
)
from memlab.decision.topsis import topsis
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json_reply
from memlab.models.decision import (
    AgentPersona,
    ConversationState,
    Criterion,
    DebateTurn,
    DebateTurnType,
    UserInput,
    repeated_scores,
    round_output_filename,
)
from memlab.models.operating import EventStatus, SharedWorkspaceState
from memlab.stores.kv import InProcessKV
from memlab.stores.operating import OperatingMemory

log = logging.getLogger(__name__)

__all__ = ["DecisionDebate", "InconsistentJudgementsError", "TurnInfo", "proposed_criteria",
           "run_debate", "turn_payload"]


class TurnInfo(BaseModel):
    """What one turn took: wall time, model calls, JSON re-asks."""

    seconds: float
    calls: int
    reasks: int


TurnCallback = Callable[[int, DebateTurn, TurnInfo], None]


class DecisionDebate:
    """Runs the four rounds for one UserInput.

    Args:
        llm: the chat model every agent and the Director speak through.
        output_dir: folder of the round files.
        operating: operating memory holding the debate's SharedWorkspaceState; an in-process one
            (which archives the finished event to ``output_dir``) when omitted.
        on_turn: called with ``(round, turn, info)`` after every turn (progress).
        max_tokens: completion budget per turn.
        json_retries: re-asks per turn when the reply is not valid for the turn's model.
        diversity_retries: re-asks of the round 3 Director when a score is used more than 3
            times (the seed recommends, not requires, diversity: the last try is kept).
        cr_repair: when round 2's CR is still above cr_threshold after cr_max_retries, repair
            the Director's matrix (recorded as ``cr_repair``) instead of raising
            InconsistentJudgementsError; default ``MEMLAB_DECISION_CR_REPAIR`` (on).
    """

    def __init__(self, llm: LLMClient, *, output_dir: str | Path,
                 operating: OperatingMemory | None = None, on_turn: TurnCallback | None = None,
                 max_tokens: int = 512, json_retries: int = 2, diversity_retries: int = 1,
                 cr_repair: bool | None = None):
        self.llm, self.output_dir = llm, Path(output_dir)
        self.cr_repair = get_settings().decision_cr_repair if cr_repair is None else cr_repair
        self.operating = operating or OperatingMemory(InProcessKV(), archive_hook=self._archive)
        self.on_turn, self.max_tokens, self.json_retries = on_turn, max_tokens, json_retries
        self.diversity_retries = diversity_retries
        self.event_id = ""
        self.stats = DebateStats()
        self._turn_calls = self._turn_reasks = 0

    # --- the workflow ------------------------------------------------------------------------
    def run(self, user_input: UserInput | dict[str, Any], session_id: str | None = None
            ) -> ConversationState:
        """Debate rounds 1-3 (after any already in ``output_dir``), rank by TOPSIS, write files.

        Raises:
            pydantic.ValidationError: ``user_input`` breaks a seed rule (names the field).
            ConfigError: round files of ``session_id`` exist for another input.
            StructuredOutputError: a turn's reply stayed invalid after ``json_retries``.
            InconsistentJudgementsError: round 2 CR stayed above the threshold (and
                ``cr_repair`` is off, or the repair could not bring it within).
        """
        user = UserInput.model_validate(user_input)
        state, done = (None, 0) if session_id is None else load_rounds(
            self.output_dir, session_id, user)
        if state is None:
            extra = {"session_id": session_id} if session_id else {}
            state = ConversationState(user_input=user, **extra)
            state.agent_personas = generate_personas(user)
        self.stats = DebateStats(resumed_after_round=done)
        self._open_event(state)
        for number, round_fn in ((1, self.round1), (2, self.round2), (3, self.round3)):
            if number > done:
                start = time.perf_counter()
                round_fn(state)
                self.stats.round(number).seconds = round(time.perf_counter() - start, 2)
        self.round4(state)
        self._close_event(state)
        return state

    def round1(self, state: ConversationState) -> None:
        """Criteria selection; writes ``round1_test_{session_id}.json``."""
        turns, decision = self._debate(state, 1)
        state.round1_debate_turns = turns
        state.selected_criteria = decision.to_criteria(proposed_criteria(turns))
        self._write(1, state.round1_output(), state)

    def round2(self, state: ConversationState) -> None:
        """AHP pairwise comparison with CR retries (then a recorded repair when allowed);
        writes ``round2_test_{session_id}.json``."""
        turns, decision = self._debate(state, 2)
        decision = self._cr_retries(state).within_threshold(state, decision)
        result = ahp_weights(state.criteria_names, decision.comparison_matrix)
        state.round2_debate_turns = turns
        state.comparison_matrix = decision.comparison_matrix
        state.criteria_weights = result.criteria_weights
        state.consistency_ratio = result.consistency_ratio
        state.eigenvalue_max = result.eigenvalue_max
        state.round2_director_decision = decision.to_decision()
        self._write(2, state.round2_output(), state)

    def round3(self, state: ConversationState) -> None:
        """Decision matrix; writes ``round3_test_{session_id}.json``."""
        turns, decision = self._debate(state, 3)
        state.round3_debate_turns = turns
        state.decision_matrix = decision.decision_matrix
        state.round3_director_decision = decision.to_decision()
        self._write(3, state.round3_output(), state)

    def round4(self, state: ConversationState) -> None:
        """TOPSIS ranking of the majors with the AHP weights; writes the final ranking file."""
        cost = {c.name for c in state.selected_criteria if c.type == "cost"}
        outcome = topsis(state.decision_matrix, state.criteria_weights, cost_criteria=cost)
        state.normalized_matrix = outcome.normalized_matrix
        state.weighted_matrix = outcome.weighted_matrix
        state.ideal_solution = outcome.ideal_solution
        state.anti_ideal_solution = outcome.anti_ideal_solution
        state.topsis_results = outcome.topsis_results
        state.final_ranking = outcome.final_ranking
        path = write_final(self.output_dir, state, self.stats)
        self._share(state, final_ranking=[r.model_dump(mode="json") for r in state.final_ranking],
                    final_ranking_file=str(path))

    # --- one 13-turn debate --------------------------------------------------------------------
    def _debate(self, state: ConversationState, round_no: int) -> tuple[list[DebateTurn], Any]:
        turns: list[DebateTurn] = []
        context = round_context(round_no, state.user_input, state.criteria_names,
                                state.criteria_weights)
        personas = state.agent_personas
        for phase, lead in enumerate(personas, 1):
            label = f"Phase {phase}: {lead.name} leads"
            others = [p for p in personas if p is not lead]
            plan = [(lead, DebateTurnType.PROPOSAL, None)]
            plan += [(o, DebateTurnType.CRITIQUE, lead.name) for o in others]
            plan += [(lead, DebateTurnType.DEFENSE, [o.name for o in others])]
            for speaker, kind, target in plan:
                start = time.perf_counter()
                reply = self._speak(state, round_no, label, speaker, kind, target, context, turns)
                self._record(state, round_no, turns, label, speaker.name, kind, target, reply,
                             start)
        label, start = DIRECTOR_PHASE, time.perf_counter()
        reply = self._speak(state, round_no, label, None, DebateTurnType.FINAL_DECISION,
                            None, context, turns)
        self._record(state, round_no, turns, label, DIRECTOR, DebateTurnType.FINAL_DECISION,
                     None, reply, start)
        return turns, reply

    def _speak(self, state: ConversationState, round_no: int, label: str,
               speaker: AgentPersona | None, kind: DebateTurnType, target: Any, context: str,
               turns: list[DebateTurn]) -> Any:
        targets = [target] if isinstance(target, str) else list(target or [])
        system = speaker.system_prompt if speaker else director_prompt(state.user_input)
        text = turn_message(round_no, len(turns) + 1, label, kind, targets, context, turns,
                            state.user_input.settings.max_criteria)
        messages = [Message(role="system", content=system), Message(role="user", content=text)]
        model = self._reply_model(state, round_no, kind, turns)
        director = kind is DebateTurnType.FINAL_DECISION
        if round_no == 2 and director:
            return self._cr_retries(state).decide(state, messages, model)
        if round_no == 3 and director:
            return self._diverse_decision(messages, model)
        return self._ask(round_no, messages, model)

    def _ask(self, round_no: int, messages: list[Message], model: type[BaseModel]) -> Any:
        reply = complete_json_reply(self.llm, messages, model, max_retries=self.json_retries,
                                    max_tokens=self.max_tokens, compact=True)
        stats = self.stats.round(round_no)
        stats.calls += reply.attempts
        stats.reasks += reply.reasks
        self._turn_calls += reply.attempts
        self._turn_reasks += reply.reasks
        return reply.value

    def _reply_model(self, state: ConversationState, round_no: int, kind: DebateTurnType,
                     turns: list[DebateTurn]) -> type[BaseModel]:
        if kind is DebateTurnType.CRITIQUE:
            return TurnReply
        director = kind is DebateTurnType.FINAL_DECISION
        if round_no == 1:
            max_criteria = state.user_input.settings.max_criteria
            if not director:
                return proposal_model(max_criteria)
            return criteria_decision_model(max_criteria, list(proposed_criteria(turns)),
                                           [p.name for p in state.agent_personas])
        if round_no == 2:
            return comparison_model(state.criteria_names, director=director)
        return decision_model(state.alternatives, state.criteria_names, director=director)

    def _cr_retries(self, state: ConversationState) -> CRRetries:
        return CRRetries(ask=lambda messages, model: self._ask(2, messages, model),
                         stats=self.stats, share=lambda **values: self._share(state, **values),
                         repair=self.cr_repair)

    def _diverse_decision(self, messages: list[Message], model: type[BaseModel]) -> Any:
        """The round 3 decision, re-asked while a score repeats more than 3 times (bounded)."""
        for attempt in range(self.diversity_retries + 1):
            reply = self._ask(3, messages, model)
            repeats = repeated_scores(reply.decision_matrix)
            self.stats.repeated_scores.append(repeats)
            if not repeats:
                return reply
            if attempt == self.diversity_retries:
                log.warning("decision_matrix: scores used more than 3 times: %s", repeats)
                return reply
            messages = [*messages, Message(role="assistant", content=reply.model_dump_json(
                by_alias=True)), Message(role="user", content=diversity_feedback(repeats))]
        raise AssertionError("unreachable")  # the loop returns on its last attempt

    def _record(self, state: ConversationState, round_no: int, turns: list[DebateTurn],
                label: str, speaker: str, kind: DebateTurnType, target: Any, reply: Any,
                start: float) -> None:
        turn = DebateTurn(turn=len(turns) + 1, phase=label, speaker=speaker, type=kind,
                          content=reply.content, target=target,
                          **turn_payload(round_no, speaker, reply, turns))
        turns.append(turn)
        self._append_turn(round_no, turn)
        info = TurnInfo(seconds=round(time.perf_counter() - start, 2), calls=self._turn_calls,
                        reasks=self._turn_reasks)
        self._turn_calls = self._turn_reasks = 0
        if self.on_turn is not None:
            self.on_turn(round_no, turn, info)

    # --- operating memory and files ------------------------------------------------------------
    def _open_event(self, state: ConversationState) -> None:
        names = [p.name for p in state.agent_personas] + [DIRECTOR]
        workspace = SharedWorkspaceState(
            status=EventStatus.ACTIVE, participating_agents=names,
            shared_data={"session_id": state.session_id, "topic": "major prioritisation",
                         "alternatives": state.alternatives,
                         "resumed_after_round": self.stats.resumed_after_round,
                         "agent_personas": [p.model_dump() for p in state.agent_personas]})
        self.event_id = self.operating.save_workspace(workspace).event_id

    def _append_turn(self, round_no: int, turn: DebateTurn) -> None:
        key = f"round{round_no}_debate_turns"

        def add(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.shared_data = {**ws.shared_data,
                              key: [*ws.shared_data.get(key, []), turn.model_dump(mode="json")]}
            ws.add_participant(turn.speaker)
            return ws

        self.operating.update_workspace(self.event_id, add)

    def _share(self, state: ConversationState, **values: Any) -> None:
        def put(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.shared_data = {**ws.shared_data, **json.loads(json.dumps(values))}
            return ws

        self.operating.update_workspace(self.event_id, put)

    def _close_event(self, state: ConversationState) -> None:
        """Resolve the event when operating memory can archive it (else leave it active)."""
        if self.operating.archive_hook is None:
            return

        def resolve(ws: SharedWorkspaceState) -> SharedWorkspaceState:
            ws.status = EventStatus.RESOLVED
            return ws

        self.operating.update_workspace(self.event_id, resolve)

    def _archive(self, workspace: SharedWorkspaceState) -> None:
        write_json(self.output_dir / f"workspace_{workspace.event_id}.json",
                   workspace.model_dump_json(indent=2))

    def _write(self, round_no: int, output: BaseModel, state: ConversationState) -> Path:
        path = self.output_dir / round_output_filename(round_no, state.session_id)
        write_json(path, output.model_dump_json(indent=2))
        self._share(state, **{f"round{round_no}_output": str(path)})
        return path


def proposed_criteria(turns: list[DebateTurn]) -> dict[str, Criterion]:
    """Criteria proposed so far in round 1 by name (a later proposal of a name wins)."""
    return {c.name: c for t in turns for c in (t.selected_criteria or [])}


def turn_payload(round_no: int, speaker: str, reply: Any, turns: list[DebateTurn]
                 ) -> dict[str, Any]:
    """The round's payload field of a DebateTurn from the reply (none for a critique)."""
    if round_no == 1 and hasattr(reply, "drafts"):
        return {"selected_criteria": [Criterion(**c.model_dump(), source_agent=speaker)
                                      for c in reply.drafts()]}
    if round_no == 1 and hasattr(reply, "to_criteria"):
        return {"selected_criteria": reply.to_criteria(proposed_criteria(turns))}
    if round_no == 2 and hasattr(reply, "comparison_matrix"):
        return {"comparison_matrix": reply.comparison_matrix}
    if round_no == 3 and hasattr(reply, "decision_matrix"):
        return {"decision_matrix": reply.decision_matrix}
    return {}


def run_debate(llm: LLMClient, user_input: UserInput | dict[str, Any], output_dir: str | Path,
               **kwargs: Any) -> ConversationState:
    """Shortcut: ``DecisionDebate(llm, output_dir=output_dir, **kwargs).run(user_input)``."""
    return DecisionDebate(llm, output_dir=output_dir, **kwargs).run(user_input)
