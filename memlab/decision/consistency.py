"""Round 2's consistency check: the Director's CR retries, then (when allowed) a recorded repair.

The seed asks for ``consistency_ratio <= cr_threshold`` and at most ``cr_max_retries`` retries.
A retry asks the Director for only the two judgements furthest from the ratios of its own
weights (:func:`memlab.decision.prompts.cr_retry_message`), without its previous reply in
the prompt: shown that reply, the 0.5B model at temperature 0 copied it on every retry (CR
0.2531 four times in benchmarks/results/debate.json before this change). A retry that gives
back a matrix already tried ends the retries (the same question would get the same answer).

When the retries leave CR above the threshold, the Director's best attempt is repaired by
:func:`memlab.decision.ahp.repair_consistency` (Saaty's revision of the most inconsistent
judgement toward its weights' ratio), and the repair is recorded in the round 2 file
(``round2_director_decision.cr_repair``) and the final ranking's stats. With ``repair`` off
(``MEMLAB_DECISION_CR_REPAIR=0``, ``memlab decide --strict-cr``) the debate stops instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from memlab.decision.ahp import (
    AHPResult,
    ahp_weights,
    most_inconsistent_pairs,
    repair_consistency,
    replace_judgements,
)
from memlab.decision.outputs import DebateStats
from memlab.decision.prompts import cr_retry_message, turn_header
from memlab.decision.replies import comparison_model
from memlab.errors import MemlabError
from memlab.llm.base import Message
from memlab.models.decision import (
    DEBATE_TURNS,
    ConversationState,
    CRRepair,
    DebateTurnType,
    Round2DirectorDecision,
)

log = logging.getLogger(__name__)

DIRECTOR_PHASE = "Phase 4: Director's final decision"


class InconsistentJudgementsError(MemlabError):
    """Round 2 could not reach CR <= cr_threshold within cr_max_retries; ``ratios`` lists each try."""

    def __init__(self, message: str, ratios: list[float]):
        super().__init__(message)
        self.ratios = ratios


class ComparisonDecision(BaseModel):
    """Round 2's decision: the Director's matrix with the lowest CR of its attempts (``attempt``
    1 is its first reply), and the repair made to it when one was needed and allowed."""

    comparison_matrix: dict[str, float]
    content: str
    reasoning: str = ""
    attempt: int = 1
    cr_repair: CRRepair | None = None

    def to_decision(self) -> Round2DirectorDecision:
        return Round2DirectorDecision(comparison_matrix=self.comparison_matrix,
                                      reasoning=self.reasoning or self.content,
                                      cr_repair=self.cr_repair)


class CRRetries:
    """The round 2 Director's CR retries and repair for one debate.

    Args:
        ask: ``ask(messages, reply_model)`` -> the validated reply (counted by the caller).
        stats: the debate's stats; CR per attempt, a repeat and a repair are noted there.
        share: ``share(**values)`` puts values in the debate's shared workspace.
        repair: repair the matrix when the retries leave CR too high (else raise).
    """

    def __init__(self, ask: Callable[[list[Message], type[BaseModel]], Any], *,
                 stats: DebateStats, share: Callable[..., None], repair: bool):
        self.ask, self.stats, self.share, self.repair = ask, stats, share, repair

    def decide(self, state: ConversationState, messages: list[Message],
               model: type[BaseModel]) -> ComparisonDecision:
        """The Director's matrix, its least consistent pairs re-asked up to cr_max_retries times.

        Retrying stops at CR <= cr_threshold or at a matrix already tried; the attempt with the
        lowest CR (the first of equals) is the decision.
        """
        settings, names = state.user_input.settings, state.criteria_names
        first = self.ask(messages, model)
        tried, ratios = [first.comparison_matrix], []
        for retry in range(settings.cr_max_retries + 1):
            result = ahp_weights(names, tried[-1])
            ratios.append(result.consistency_ratio)
            self.stats.cr_attempts = list(ratios)
            self.stats.cr_stopped_on_repeat = tried[-1] in tried[:-1]
            self.share(round2_cr_attempts=ratios)
            if (result.is_consistent(settings.cr_threshold) or self.stats.cr_stopped_on_repeat
                    or retry == settings.cr_max_retries):
                break
            tried.append(self.rejudge(state, messages[0], tried[-1], result))
        best = ratios.index(min(ratios))
        return ComparisonDecision(comparison_matrix=tried[best], content=first.content,
                                  reasoning=getattr(first, "reasoning", ""), attempt=best + 1)

    def rejudge(self, state: ConversationState, system: Message, matrix: dict[str, float],
                result: AHPResult) -> dict[str, float]:
        """One CR retry: the Director judges its two least consistent pairs again."""
        pairs = most_inconsistent_pairs(result)
        header = turn_header(2, DEBATE_TURNS, DIRECTOR_PHASE, DebateTurnType.FINAL_DECISION)
        text = cr_retry_message(header, matrix, result, pairs,
                                state.user_input.settings.cr_threshold)
        reply = self.ask([system, Message(role="user", content=text)],
                         comparison_model(state.criteria_names, pairs=pairs))
        return replace_judgements(matrix, reply.comparison_matrix)

    def within_threshold(self, state: ConversationState, decision: ComparisonDecision
                         ) -> ComparisonDecision:
        """``decision`` when its CR is within cr_threshold, else repaired (and recorded).

        Raises:
            InconsistentJudgementsError: ``repair`` is off, or the repair fell short.
        """
        names, threshold = state.criteria_names, state.user_input.settings.cr_threshold
        given = ahp_weights(names, decision.comparison_matrix)
        if given.is_consistent(threshold):
            return decision
        ratios = self.stats.cr_attempts
        repeated = "; a retry repeated a matrix already tried" * self.stats.cr_stopped_on_repeat
        stopped = (f"consistency_ratio: stayed above cr_threshold {threshold} after "
                   f"{len(ratios) - 1} retries (CR per attempt: "
                   f"{[round(r, 4) for r in ratios]}{repeated})")
        if not self.repair:
            raise InconsistentJudgementsError(stopped, ratios)
        matrix, repaired, changed = repair_consistency(names, decision.comparison_matrix,
                                                       threshold)
        if not repaired.is_consistent(threshold):
            raise InconsistentJudgementsError(
                f"{stopped}; the repair reached only CR {repaired.consistency_ratio:.4f}", ratios)
        repair = CRRepair(attempt=decision.attempt, cr_before=given.consistency_ratio,
                          cr_after=repaired.consistency_ratio,
                          director_matrix=decision.comparison_matrix, changed=changed)
        log.warning("%s: repaired %d judgement(s) of attempt %d, CR now %.4f", stopped,
                    len(changed), decision.attempt, repaired.consistency_ratio)
        self.stats.cr_repair = repair
        self.share(round2_cr_repair=repair.model_dump(mode="json"))
        return decision.model_copy(update={"comparison_matrix": matrix, "cr_repair": repair})
