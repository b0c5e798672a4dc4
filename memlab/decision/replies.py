"""What the debate asks the LLM to return at each turn, as pydantic models for ``complete_json``.

Each model is built for its round (the criteria, majors and advisors known at that point), so
its JSON schema names every key and every allowed value: a local model's grammar then cannot
write a wrong pair, a missing score or a value off the Saaty scale, and a remote model gets the
same schema as its response format. What a grammar cannot enforce (unique names) is checked on
validation and re-asked with the error. Payload fields come before the spoken ``content``, and
every string is bounded, so a small model cannot talk until its token budget runs out.

Round 2 replies hold one judgement per pair (which criterion matters more, and how much); the
seed's comparison matrix (``{"A vs B": v}``, A the favoured side) is derived from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from memlab.models._decision_rules import SCALE_VALUES, check_scale, check_unique, split_pair_key
from memlab.models.decision import (
    Criterion,
    Round3DirectorDecision,
    pair_key,
)

CONTENT_CHARS = 240
NAME_CHARS = 40
NOTE_CHARS = 120


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value.strip()


def _no_separator(value: str) -> str:
    if " vs " in value:
        raise ValueError("must not contain ' vs ' (it separates comparison keys)")
    return value


Content = Annotated[str, Field(min_length=1, max_length=CONTENT_CHARS,
                               description="your argument, 1-3 sentences"),
                    AfterValidator(_not_blank)]
Note = Annotated[str, Field(max_length=NOTE_CHARS)]
Score = Annotated[float, Field(json_schema_extra={"enum": list(SCALE_VALUES)}),
                  AfterValidator(lambda v: check_scale(v, "score"))]
CriterionName = Annotated[str, Field(min_length=1, max_length=NAME_CHARS),
                          AfterValidator(_not_blank), AfterValidator(_no_separator)]


class Reply(BaseModel):
    """Base of every turn reply: unknown keys are an error (and not in the schema)."""

    model_config = ConfigDict(extra="forbid")


class TurnReply(Reply):
    """A critique: just the argument."""

    content: Content


def _one_of(values: list[str]) -> Any:
    """A string type whose schema enumerates ``values`` (validated too)."""
    allowed = list(dict.fromkeys(values))

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"must be one of {allowed}, got {value!r}")
        return value

    return Annotated[str, Field(json_schema_extra={"enum": allowed}), AfterValidator(check)]


def _model(name: str, base: type[Reply], **fields: Any) -> type[Any]:
    return create_model(name, __base__=base, **fields)


def _keyed(name: str, keys: list[str], value_type: Any) -> type[Reply]:
    """An object with exactly ``keys`` (any strings: stored as aliases of ``k0``, ``k1``...)."""
    fields = {f"k{i}": (value_type, Field(alias=key)) for i, key in enumerate(keys)}
    return create_model(name, __base__=Reply, **fields)


def keyed_items(obj: BaseModel) -> list[tuple[str, Any]]:
    """``(key, value)`` pairs of an object built by :func:`_keyed`, in key order."""
    return [(field.alias or name, getattr(obj, name))
            for name, field in type(obj).model_fields.items()]


# --- round 1: criteria -------------------------------------------------------------------------
class CriterionDraft(Reply):
    name: CriterionName
    description: Note = ""
    type: Literal["benefit", "cost"] = "benefit"


class CriteriaProposal(Reply):
    """Round 1 proposal or defense; ``criteria`` comes first (built by :func:`proposal_model`)."""

    def drafts(self) -> list[CriterionDraft]:
        return list(self.criteria)  # type: ignore[attr-defined]


def proposal_model(max_criteria: int) -> type[CriteriaProposal]:
    """A proposal of 1..``max_criteria`` criteria, then the argument."""
    return _model("CriteriaProposal", CriteriaProposal,
                  criteria=(list[CriterionDraft], Field(min_length=1, max_length=max_criteria)),
                  content=(Content, ...))


class CriteriaDecision(Reply):
    """Round 1 director decision (built by :func:`criteria_decision_model`)."""

    def to_criteria(self, proposed: dict[str, Criterion]) -> list[Criterion]:
        """The selection as seed Criteria, description and type taken from the proposal."""
        chosen = []
        for pick in self.selected_criteria:  # type: ignore[attr-defined]
            known = proposed.get(pick.name)
            chosen.append(Criterion(
                name=pick.name, description=known.description if known else "",
                type=known.type if known else "benefit", source_agent=pick.source_agent,
                reasoning=pick.reasoning))
        return chosen


def criteria_decision_model(max_criteria: int, proposed: list[str],
                            advisors: list[str]) -> type[CriteriaDecision]:
    """Exactly ``max_criteria`` uniquely named criteria, each from an advisor.

    Names are limited to the ``proposed`` ones when the advisors proposed enough of them.
    """
    distinct = list(dict.fromkeys(proposed))
    name_type = _one_of(distinct) if len(distinct) >= max_criteria else CriterionName
    pick = create_model("SelectedCriterion", __base__=Reply, name=(name_type, ...),
                        source_agent=(_one_of(advisors), ...), reasoning=(Note, ""))

    def unique(picks: list[Any]) -> list[Any]:
        check_unique([p.name for p in picks], "selected_criteria names")
        return picks

    picks = Annotated[list[pick], Field(min_length=max_criteria, max_length=max_criteria),
                      AfterValidator(unique)]
    return _model("CriteriaDecision", CriteriaDecision, selected_criteria=(picks, ...),
                  content=(Content, ...))


# --- round 2: pairwise comparisons -------------------------------------------------------------
class PairwiseReply(Reply):
    """A round 2 reply (built by :func:`comparison_model`): one judgement per pair."""

    @property
    def comparison_matrix(self) -> dict[str, float]:
        """The seed's matrix: ``{"Favoured vs Other": intensity}``, one key per pair."""
        matrix = {}
        for key, judgement in keyed_items(self.judgements):  # type: ignore[attr-defined]
            a, b = split_pair_key(key)
            first, second = (a, b) if judgement.more_important == a else (b, a)
            matrix[pair_key(first, second)] = judgement.intensity
        return matrix


def comparison_model(criteria: list[str], director: bool = False,
                     pairs: list[str] | None = None) -> type[PairwiseReply]:
    """A reply judging exactly the nC2 pairs of ``criteria`` (``"A vs B"`` in criteria order).

    With ``pairs`` (``"A vs B"`` keys in either order) only those pairs are judged, with no
    argument (a CR retry of the Director: :func:`memlab.decision.prompts.cr_retry_message`).
    """
    keys = [pair_key(a, b) for i, a in enumerate(criteria) for b in criteria[i + 1:]]
    if pairs is not None:
        wanted = {frozenset(split_pair_key(k)) for k in pairs}
        keys = [k for k in keys if frozenset(split_pair_key(k)) in wanted]
    judgements = {key: create_model(
        "Judgement", __base__=Reply, more_important=(_one_of(list(split_pair_key(key))), ...),
        intensity=(Score, Field(description="1 equal ... 9 absolutely more important")))
        for key in keys}
    fields = {f"k{i}": (model, Field(alias=key)) for i, (key, model) in
              enumerate(judgements.items())}
    extra = {} if pairs is not None else {
        "content": (Content, ...), **({"reasoning": (Note, "")} if director else {})}
    return _model("PairwiseReply", PairwiseReply,
                  judgements=(create_model("Judgements", __base__=Reply, **fields), ...),
                  **extra)


# --- round 3: decision matrix ------------------------------------------------------------------
class ScoresReply(Reply):
    """A round 3 reply (built by :func:`decision_model`): for each criterion, a score per major.

    The reply is asked criterion by criterion, the majors side by side, after the reply's text:
    asked major by major (the seed's ``decision_matrix`` layout), the 0.5B and 1.5B models wrote
    the first major's row and copied it to the others (every major the same score on every
    criterion: a three-way TOPSIS tie on the sample input, on both tiers).
    """

    @property
    def decision_matrix(self) -> dict[str, dict[str, float]]:
        """The seed's layout: major -> criterion -> score."""
        by_criterion = {criterion: dict(keyed_items(row))
                        for criterion, row in keyed_items(self.scores)}  # type: ignore[attr-defined]
        majors = next(iter(by_criterion.values()), {})
        return {major: {c: row[major] for c, row in by_criterion.items()} for major in majors}

    def to_decision(self) -> Round3DirectorDecision:
        return Round3DirectorDecision(decision_matrix=self.decision_matrix,
                                      reasoning=getattr(self, "reasoning", "") or self.content)


def decision_model(majors: list[str], criteria: list[str],
                   director: bool = False) -> type[ScoresReply]:
    """A reply comparing the majors on each criterion: ``content`` (and for the Director
    ``reasoning``) first, then ``scores``: criterion -> major -> a score on the 1-9 scale."""
    row = _keyed("MajorScores", majors, Score)
    extra = {"reasoning": (Note, "")} if director else {}
    return _model("ScoresReply", ScoresReply, content=(Content, ...), **extra,
                  scores=(_keyed("ByCriterion", criteria, row), ...))
