"""Helpers shared by the model modules: UTC timestamps, ids and string rules.

Every timestamp in memlab's models is timezone-aware UTC. A naive datetime (as the seeds'
``datetime.utcnow`` produces) is read as UTC; an aware one is converted to UTC. JSON carries
ISO 8601 with a trailing ``Z``.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Annotated

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
