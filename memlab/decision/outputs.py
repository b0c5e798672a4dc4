"""The debate's files: the seed's round files, the final ranking, and resuming from them.

Rounds 1-3 write ``round{n}_test_{session_id}.json`` (the seed's names and fields); round 4
writes ``final_ranking_{session_id}.json`` (TOPSIS matrices, ranking, and what the debate cost:
re-asks, CR attempts, score-diversity checks). Every file is written atomically. A debate run
again with the same ``session_id`` and the same input continues after its last round file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from memlab.errors import ConfigError, fields_message
from memlab.models.decision import (
    ConversationState,
    CRRepair,
    Round1Output,
    Round2Output,
    Round3Output,
    TopsisResult,
    UserInput,
    round_output_filename,
)
from memlab.userfiles import load_json

ROUND_OUTPUTS: dict[int, type[BaseModel]] = {1: Round1Output, 2: Round2Output, 3: Round3Output}


class RoundStats(BaseModel):
    """What one round cost: model calls, JSON re-asks, wall time."""

    calls: int = 0
    reasks: int = 0
    seconds: float = 0.0


class DebateStats(BaseModel):
    """What the whole debate cost, and the checks the seed only recommends."""

    rounds: dict[int, RoundStats] = Field(default_factory=dict)
    cr_attempts: list[float] = Field(default_factory=list, description="CR of each Director try")
    cr_stopped_on_repeat: bool = Field(
        False, description="a CR retry gave back a matrix already tried, so retrying stopped")
    cr_repair: CRRepair | None = Field(
        None, description="the repair of the Director's matrix when retries left CR too high")
    repeated_scores: list[dict[float, int]] = Field(
        default_factory=list, description="scores used > 3 times, per Director round 3 try")
    resumed_after_round: int = 0

    def round(self, number: int) -> RoundStats:
        return self.rounds.setdefault(number, RoundStats())


class FinalRanking(BaseModel):
    """``final_ranking_{session_id}.json``: round 4 and the debate's costs."""

    session_id: str
    alternatives: list[str]
    criteria_weights: dict[str, float]
    consistency_ratio: float
    decision_matrix: dict[str, dict[str, float]]
    normalized_matrix: dict[str, dict[str, float]]
    weighted_matrix: dict[str, dict[str, float]]
    ideal_solution: dict[str, float]
    anti_ideal_solution: dict[str, float]
    final_ranking: list[TopsisResult]
    stats: DebateStats


def final_ranking_filename(session_id: str) -> str:
    return f"final_ranking_{session_id}.json"


def write_json(path: Path, text: str) -> None:
    """Write atomically: a crash leaves either the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_final(output_dir: Path, state: ConversationState, stats: DebateStats) -> Path:
    final = FinalRanking(
        session_id=state.session_id, alternatives=state.alternatives,
        criteria_weights=state.criteria_weights, consistency_ratio=state.consistency_ratio or 0.0,
        decision_matrix=state.decision_matrix, normalized_matrix=state.normalized_matrix,
        weighted_matrix=state.weighted_matrix, ideal_solution=state.ideal_solution,
        anti_ideal_solution=state.anti_ideal_solution, final_ranking=state.final_ranking,
        stats=stats)
    path = output_dir / final_ranking_filename(state.session_id)
    write_json(path, final.model_dump_json(indent=2))
    return path


def read_user_input(path: str | Path) -> UserInput:
    """A UserInput JSON file, validated by the seed's rules.

    Raises:
        ConfigError: missing, not UTF-8 JSON (or nested too deeply to read), or a rule
            fails (names the file and the field).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"input: no file at {path}")
    try:
        return UserInput.model_validate(load_json(path, "input"))
    except ValidationError as exc:
        raise ConfigError(f"{path}: {fields_message(exc.errors())}") from None


def read_round(path: Path, number: int) -> dict[str, Any]:
    """A round file, validated by its output model.

    Raises:
        ConfigError: not JSON, or a seed rule fails (names the file and the field).
    """
    data = load_json(path, f"round {number} file")
    try:
        ROUND_OUTPUTS[number].model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {fields_message(exc.errors())}") from None
    return data


def load_rounds(output_dir: Path, session_id: str, user: UserInput
                ) -> tuple[ConversationState | None, int]:
    """The state after the last round file of ``session_id`` in ``output_dir``, and its number.

    Returns ``(None, 0)`` when no round file exists. Round files must be consecutive (1, 2, 3).

    Raises:
        ConfigError: the files were written for another input, or one breaks a seed rule.
    """
    merged: dict[str, Any] = {}
    done = 0
    for number in (1, 2, 3):
        path = output_dir / round_output_filename(number, session_id)
        if not path.exists():
            break
        data = read_round(path, number)
        if UserInput.model_validate(data["user_input"]) != user:
            raise ConfigError(f"session_id: {path.name} was written for another user input; "
                              "use a new session id (or the same input) to resume")
        merged.update(data)
        done = number
    if not done:
        return None, 0
    return ConversationState.model_validate({**merged, "session_id": session_id}), done
