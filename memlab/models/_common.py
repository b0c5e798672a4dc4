"""Helpers shared by the model modules: UTC timestamps, ids and string rules.

Every timestamp in memlab's models is timezone-aware UTC. A naive datetime (as the seeds'
``datetime.utcnow`` produces) is read as UTC; an aware one is converted to UTC. JSON carries
ISO 8601 with a trailing ``Z``.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


_ids: random.Random | None = None  # seeded by seed_ids; None: the system's uuid4


def new_id() -> str:
    """Return a fresh UUID4 as a string (reproducible under ``seed_ids``)."""
    if _ids is None:
        return str(uuid.uuid4())
    return str(uuid.UUID(int=_ids.getrandbits(128), version=4))


def seed_ids(key: str | None) -> None:
    """Draw every memlab id from a generator seeded by ``key`` (None: back to random uuid4).

    Only memlab's own ids follow the seed, so libraries that draw uuid4 for themselves (e.g. a
    completion id on a paid model call but not on a cached one) cannot shift the sequence.
    """
    global _ids
    _ids = None if key is None else random.Random(key)


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+05:00 has no UTC datetime
        raise ValueError("is out of range once converted to UTC") from None


UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]
"""An ISO 8601 datetime, always normalised to aware UTC."""


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value


NonBlankStr = Annotated[str, AfterValidator(_not_blank)]
"""A string that has at least one non-whitespace character."""


def _is_uuid(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ValueError(f"must be a UUID string, got {value!r}") from None
    return value


UuidStr = Annotated[str, AfterValidator(_is_uuid)]
"""A string that parses as a UUID."""


class SeedModel(BaseModel):
    """Base of every mutable seed model: unknown fields are rejected, assignments validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class FrozenSeedModel(BaseModel):
    """Base of immutable domain events: assignment raises."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class IllegalStatusTransition(ValueError):
    """A model's ``status`` was moved between states its state machine does not connect."""

    def __init__(self, source: Any, target: Any, allowed: frozenset, rule: str):
        names = ", ".join(sorted(str(s.value) for s in allowed)) or "none"
        super().__init__(f"status: illegal transition {source.value} -> {target.value} "
                         f"(allowed from {source.value}: {names}; rule: {rule})")
        self.source, self.target = source, target


class StatusMachine(SeedModel):
    """A seed model whose ``status`` may only move along ``TRANSITIONS`` (assignment checked).

    Subclasses set ``TRANSITIONS`` (state -> states reachable in one move) and ``RULE`` (the
    machine in words, quoted in the error). Loading a stored model sets any state directly.
    """

    TRANSITIONS: ClassVar[dict[Any, frozenset]] = {}
    RULE: ClassVar[str] = ""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "status":
            current = self.status
            target = type(current)(value)
            if target not in self.TRANSITIONS[current]:
                raise self.illegal(current, target)
        super().__setattr__(name, value)

    def illegal(self, source: Any, target: Any) -> ValueError:
        return IllegalStatusTransition(source, target, self.TRANSITIONS[source], self.RULE)

    def transition_to(self, target: Any) -> StatusMachine:
        """Move to ``target`` if the state machine allows it; returns self.

        Raises:
            IllegalStatusTransition: the move is not in ``TRANSITIONS``.
        """
        self.status = target
        return self
