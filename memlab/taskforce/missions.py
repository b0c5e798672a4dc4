"""Mission sets: small Taskforce missions with checks, to measure how often the agent succeeds.

A set is a JSON file (``data/taskforce/missions.json``) of :class:`Mission` entries; its
``workspace`` folder beside it holds the files the missions start from. :func:`check_mission`
decides success from what the session produced, never from the agent's own claim alone: the
session must complete, its final answer must hold the expected fact, and a file mission's file
must hold its text.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from memlab.errors import ConfigError, fields_message


class Mission(BaseModel):
    """One mission and what must be true after it."""

    id: str = Field(min_length=1)
    kind: Literal["arithmetic", "file", "lookup"]
    mission: str = Field(min_length=1, max_length=1000)
    answer_contains: list[str] = Field(default_factory=list,
                                       description="any of these in the session's results")
    file: str | None = Field(None, description="a workspace file the mission must write")
    file_contains: str | None = None

    @model_validator(mode="after")
    def _has_a_check(self) -> Mission:
        if not self.answer_contains and not self.file:
            raise ValueError("a mission needs answer_contains or file (with file_contains)")
        if bool(self.file) != bool(self.file_contains):
            raise ValueError("file and file_contains go together")
        return self


class MissionSet(BaseModel):
    about: str = ""
    missions: list[Mission] = Field(min_length=1)
    workspace: Path | None = Field(None, description="starting files (set by load)")


class MissionCheck(BaseModel):
    """The verdict on one mission's session."""

    id: str
    succeeded: bool
    reason: str


def load_missions(path: str | Path) -> MissionSet:
    """Read and validate a mission set; its starting files are ``<folder>/workspace``.

    Raises:
        ConfigError: missing, not JSON, or a mission breaks a rule (names file and field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        missions = MissionSet.model_validate(data)
    except FileNotFoundError:
        raise ConfigError(f"missions: no file at {path}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"{path}: {fields_message(exc.errors())}") from None
    ids = [m.id for m in missions.missions]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: mission ids must be unique, got {ids}")
    folder = path.parent / "workspace"
    missions.workspace = folder if folder.is_dir() else None
    return missions


def prepare_workspace(missions: MissionSet, workspace: str | Path) -> Path:
    """Fill ``workspace`` with the set's starting files (an existing file is replaced)."""
    target = Path(workspace)
    target.mkdir(parents=True, exist_ok=True)
    if missions.workspace is not None:
        shutil.copytree(missions.workspace, target, dirs_exist_ok=True)
    return target


def check_mission(mission: Mission, completed: bool, final_answer: Any,
                  workspace: str | Path) -> MissionCheck:
    """Did the session complete with every check of ``mission`` holding? Answers are checked
    on the session's final answer (its last step's result), not on intermediate results such
    as a retrieved passage."""
    if not completed:
        return MissionCheck(id=mission.id, succeeded=False, reason="session did not complete")
    results = str(final_answer)
    if mission.answer_contains and not any(found(s, results) for s in mission.answer_contains):
        return MissionCheck(id=mission.id, succeeded=False,
                            reason=f"results {results[:120]!r} contain none of "
                                   f"{mission.answer_contains}")
    if mission.file:
        path = Path(workspace) / mission.file
        text = path.read_text(encoding="utf-8") if path.is_file() else None
        if text is None or mission.file_contains.lower() not in text.lower():
            return MissionCheck(id=mission.id, succeeded=False,
                                reason=f"{mission.file} lacks {mission.file_contains!r}")
    return MissionCheck(id=mission.id, succeeded=True, reason="all checks hold")


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def found(expected: str, text: str) -> bool:
    """Is ``expected`` in ``text``? A number must appear as a number of equal value ("36"
    matches "36.0", not "0.36" or "360"); other text case-insensitively as a substring."""
    if NUMBER.fullmatch(expected.strip()):
        return any(float(n) == float(expected) for n in NUMBER.findall(text.replace(",", "")))
    return expected.lower() in text.lower()
