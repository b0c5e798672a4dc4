"""The prioritisation debate of seed 003: three 13-turn rounds, then TOPSIS.

Round 1 selects criteria, round 2 compares them pairwise (AHP, with CR retries), round 3 scores
every major on every criterion, round 4 ranks the majors by TOPSIS. Every turn is parsed with
``complete_json`` into the round's reply model (invalid output is re-asked) and appended to a
SharedWorkspaceState event in operating memory. Each of rounds 1-3 writes the file the seed
names (``round{n}_test_{session_id}.json``), validated by its output model.

Example:
    >>> from memlab.llm import get_llm  # doctest: +SKIP
    >>> state = DecisionDebate(get_llm(), output_dir="output").run(user_input)  # doctest: +SKIP
    >>> [r.alternative for r in state.final_ranking]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memlab.decision.ahp import ahp_weights, most_inconsistent_pairs
from memlab.decision.personas import DIRECTOR, director_prompt, generate_personas
from memlab.decision.prompts import cr_feedback, round_context, turn_message
from memlab.decision.replies import (
    CriteriaProposal,
    TurnReply,
    comparison_model,
    criteria_decision_model,
    decision_model,
)
from memlab.decision.topsis import topsis
from memlab.errors import MemlabError
from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import complete_json
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

TurnCallback = Callable[[int, DebateTurn], None]
_PAYLOAD_FIELD = {1: "selected_criteria", 2: "comparison_matrix", 3: "decision_matrix"}


class InconsistentJudgementsError(MemlabError):
    """Round 2 could not reach CR <= cr_threshold within cr_max_retries; ``ratios`` lists each try."""

    def __init__(self, message: str, ratios: list[float]):
        super().__init__(message)
        self.ratios = ratios


class DecisionDebate:
    """Runs the four rounds for one UserInput.

    Args:
        llm: the chat model every agent and the Director speak through.
        output_dir: folder of the round files.
        operating: operating memory holding the debate's SharedWorkspaceState; an in-process one
            (which archives the finished event to ``output_dir``) when omitted.
        on_turn: called with ``(round, turn)`` after every turn (streaming progress).
        max_tokens: completion budget per turn.
        json_retries: re-asks per turn when the reply is not valid JSON for the turn's model.
    """

    def __init__(self, llm: LLMClient, *, output_dir: str | Path,
                 operating: OperatingMemory | None = None, on_turn: TurnCallback | None = None,
                 max_tokens: int = 768, json_retries: int = 2):
        self.llm, self.output_dir = llm, Path(output_dir)
        self.operating = operating or OperatingMemory(InProcessKV(), archive_hook=self._archive)
        self.on_turn, self.max_tokens, self.json_retries = on_turn, max_tokens, json_retries
        self.event_id = ""

    # --- the workflow ------------------------------------------------------------------------
    def run(self, user_input: UserInput | dict[str, Any], session_id: str | None = None
            ) -> ConversationState:
        """Debate rounds 1-3, rank by TOPSIS, write the round files; returns the final state.

        Raises:
            pydantic.ValidationError: ``user_input`` breaks a seed rule (names the field).
            StructuredOutputError: a turn's reply stayed invalid after ``json_retries``.
            InconsistentJudgementsError: round 2 CR stayed above the threshold.
        """
        user = UserInput.model_validate(user_input)
        extra = {"session_id": session_id} if session_id else {}
        state = ConversationState(user_input=user, **extra)
        state.agent_personas = generate_personas(user)
        self._open_event(state)
        self.round1(state)
        self.round2(state)
        self.round3(state)
        self.round4(state)
        self._close_event(state)
        return state

    def round1(self, state: ConversationState) -> None:
        """Criteria selection; writes ``round1_test_{session_id}.json``."""
        turns, decision = self._debate(state, 1)
        state.round1_debate_turns = turns
        state.selected_criteria = [c.to_criterion() for c in decision.selected_criteria]
        self._write(1, state.round1_output(), state)

    def round2(self, state: ConversationState) -> None:
        """AHP pairwise comparison with CR retries; writes ``round2_test_{session_id}.json``."""
        turns, decision = self._debate(state, 2)
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
        repeats = repeated_scores(state.decision_matrix)
        if repeats:  # the seed only recommends score diversity; note it, do not fail
            log.warning("decision_matrix: scores used more than 3 times: %s", repeats)
        self._write(3, state.round3_output(), state)

    def round4(self, state: ConversationState) -> None:
        """TOPSIS ranking of the majors with the AHP weights."""
        cost = {c.name for c in state.selected_criteria if c.type == "cost"}
        outcome = topsis(state.decision_matrix, state.criteria_weights, cost_criteria=cost)
        state.normalized_matrix = outcome.normalized_matrix
        state.weighted_matrix = outcome.weighted_matrix
        state.ideal_solution = outcome.ideal_solution
        state.anti_ideal_solution = outcome.anti_ideal_solution
        state.topsis_results = outcome.topsis_results
        state.final_ranking = outcome.final_ranking
        self._share(state, final_ranking=[r.model_dump(mode="json") for r in state.final_ranking])

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
                reply = self._speak(state, round_no, len(turns) + 1, label, speaker, kind,
                                    target, context, turns)
                self._record(state, round_no, turns, label, speaker.name, kind, target, reply)
        label = "Phase 4: Director's final decision"
        reply = self._speak(state, round_no, 13, label, None, DebateTurnType.FINAL_DECISION,
                            None, context, turns)
        self._record(state, round_no, turns, label, DIRECTOR, DebateTurnType.FINAL_DECISION,
                     None, reply)
        return turns, reply

    def _speak(self, state: ConversationState, round_no: int, turn: int, label: str,
               speaker: AgentPersona | None, kind: DebateTurnType, target: Any, context: str,
               turns: list[DebateTurn]) -> Any:
        targets = [target] if isinstance(target, str) else list(target or [])
        system = speaker.system_prompt if speaker else director_prompt(state.user_input)
        text = turn_message(round_no, turn, label, kind, targets, context, turns,
                            state.user_input.settings.max_criteria)
        messages = [Message(role="system", content=system), Message(role="user", content=text)]
        model = self._reply_model(state, round_no, kind)
        if round_no == 2 and kind is DebateTurnType.FINAL_DECISION:
            return self._consistent_decision(state, messages, model)
        return self._ask(messages, model)

    def _ask(self, messages: list[Message], model: type[BaseModel]) -> Any:
        return complete_json(self.llm, messages, model, max_retries=self.json_retries,
                             max_tokens=self.max_tokens)

    def _reply_model(self, state: ConversationState, round_no: int,
                     kind: DebateTurnType) -> type[BaseModel]:
        if kind is DebateTurnType.CRITIQUE:
            return TurnReply
        director = kind is DebateTurnType.FINAL_DECISION
        if round_no == 1:
            settings = state.user_input.settings
            return criteria_decision_model(settings.max_criteria) if director else CriteriaProposal
        if round_no == 2:
            return comparison_model(state.criteria_names, director=director)
        return decision_model(state.alternatives, state.criteria_names, director=director)

    def _consistent_decision(self, state: ConversationState, messages: list[Message],
                             model: type[BaseModel]) -> Any:
        """Ask the Director until CR <= cr_threshold, re-asking up to cr_max_retries times."""
        settings = state.user_input.settings
        ratios: list[float] = []
        for _attempt in range(settings.cr_max_retries + 1):
            reply = self._ask(messages, model)
            result = ahp_weights(state.criteria_names, reply.comparison_matrix)
            ratios.append(result.consistency_ratio)
            self._share(state, round2_cr_attempts=ratios)
            if result.is_consistent(settings.cr_threshold):
                return reply
            feedback = cr_feedback(result.consistency_ratio, settings.cr_threshold,
                                   most_inconsistent_pairs(result))
            messages = [*messages, Message(role="assistant", content=reply.model_dump_json()),
                        Message(role="user", content=feedback)]
        raise InconsistentJudgementsError(
            f"consistency_ratio: stayed above cr_threshold {settings.cr_threshold} after "
            f"{settings.cr_max_retries} retries (CR per attempt: "
            f"{[round(r, 4) for r in ratios]})", ratios)

    def _record(self, state: ConversationState, round_no: int, turns: list[DebateTurn],
                label: str, speaker: str, kind: DebateTurnType, target: Any, reply: Any) -> None:
        payload: dict[str, Any] = {}
        if round_no == 1 and hasattr(reply, "criteria"):
            payload["selected_criteria"] = [
                Criterion(**c.model_dump(), source_agent=speaker) for c in reply.criteria]
        elif hasattr(reply, _PAYLOAD_FIELD[round_no]):
            value = getattr(reply, _PAYLOAD_FIELD[round_no])
            payload[_PAYLOAD_FIELD[round_no]] = (
                [c.to_criterion() for c in value] if round_no == 1 else value)
        turn = DebateTurn(turn=len(turns) + 1, phase=label, speaker=speaker, type=kind,
                          content=reply.content, target=target, **payload)
        turns.append(turn)
        self._append_turn(round_no, turn)
        if self.on_turn is not None:
            self.on_turn(round_no, turn)
        elif state.user_input.settings.enable_streaming:
            log.info("round %d turn %d %s (%s): %s", round_no, turn.turn, turn.speaker,
                     turn.type.value, turn.content)

    # --- operating memory and files ------------------------------------------------------------
    def _open_event(self, state: ConversationState) -> None:
        names = [p.name for p in state.agent_personas] + [DIRECTOR]
        workspace = SharedWorkspaceState(
            status=EventStatus.ACTIVE, participating_agents=names,
            shared_data={"session_id": state.session_id, "topic": "major prioritisation",
                         "alternatives": state.alternatives,
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
        _write_json(self.output_dir / f"workspace_{workspace.event_id}.json",
                    workspace.model_dump_json(indent=2))

    def _write(self, round_no: int, output: BaseModel, state: ConversationState) -> Path:
        path = self.output_dir / round_output_filename(round_no, state.session_id)
        _write_json(path, output.model_dump_json(indent=2))
        self._share(state, **{f"round{round_no}_output": str(path)})
        return path


def _write_json(path: Path, text: str) -> None:
    """Write atomically: a crash leaves either the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_debate(llm: LLMClient, user_input: UserInput | dict[str, Any], output_dir: str | Path,
               **kwargs: Any) -> ConversationState:
    """Shortcut: ``DecisionDebate(llm, output_dir=output_dir, **kwargs).run(user_input)``."""
    return DecisionDebate(llm, output_dir=output_dir, **kwargs).run(user_input)
