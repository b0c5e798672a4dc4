"""Seed 002 models: Episode, ConsolidatedMemory, Schema, CompressionResult, CycleStats."""

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models.sleep import (
    CompressionResult,
    ConsolidatedMemory,
    CycleStats,
    Episode,
    Schema,
    SleepPhase,
)


def reject(model: type[BaseModel], data: dict, *fragments: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


SAMPLES = {
    "Episode": Episode(
        content="User: I love jazz\nAI: Noted!",
        context={"persona": "p1"},
        importance=0.8,
        novelty=0.3,
        tags=["music"],
    ),
    "ConsolidatedMemory": ConsolidatedMemory(
        summary="The user loves jazz.",
        source_episode_ids=["e1", "e2"],
        key_concepts=["jazz"],
        themes=["music"],
        confidence=0.9,
    ),
    "Schema": Schema(
        name="music taste",
        description="what the user listens to",
        core_concepts=["jazz"],
        related_memory_ids=["m1"],
        examples=["likes Coltrane"],
        confidence=0.7,
    ),
    "CompressionResult": CompressionResult(
        summary="s", key_concepts=["a"], themes=["t"], relationships=["a -> b"], confidence=0.6
    ),
    "CycleStats": CycleStats(
        episodes_replayed=4,
        memories_created=2,
        schemas_created=1,
        episodes_forgotten=1,
        failures=["compression of e3: timeout"],
        phase_durations_s={SleepPhase.REPLAY: 0.01, SleepPhase.COMPRESSION: 1.5},
        llm_calls=3,
        prompt_tokens=900,
        completion_tokens=120,
    ),
}


def test_episode_defaults_and_ids():
    a, b = Episode(content="x"), Episode(content="y")
    assert a.id != b.id and a.access_count == 0 and not a.consolidated and not a.forgotten


def test_episode_mark_accessed():
    ep = Episode(content="x")
    ep.mark_accessed()
    assert ep.access_count == 1 and ep.last_accessed is not None


@pytest.mark.parametrize("field", ["importance", "novelty"])
def test_episode_scores_between_0_and_1(field):
    assert getattr(Episode(content="x", **{field: 1.0}), field) == 1.0
    reject(Episode, {"content": "x", field: 1.5}, field, "less than or equal to 1")
    reject(Episode, {"content": "x", field: -0.1}, field, "greater than or equal to 0")


def test_access_count_non_negative():
    reject(Episode, {"content": "x", "access_count": -1}, "access_count", "greater than or equal")


def test_episode_content_not_blank():
    reject(Episode, {"content": " \n"}, "content", "whitespace")


def test_consolidated_summary_required_and_confidence_range():
    reject(ConsolidatedMemory, {}, "summary", "Field required")
    reject(
        ConsolidatedMemory, {"summary": "s", "importance": 2}, "importance", "less than or equal"
    )
    reject(
        ConsolidatedMemory, {"summary": "s", "confidence": 2}, "confidence", "less than or equal"
    )


def test_schema_name_and_confidence():
    reject(Schema, {"name": "", "description": "d"}, "name", "whitespace")
    reject(Schema, {"name": "n", "description": "d", "confidence": -1}, "confidence", "greater")


def test_compression_result_parses_llm_json_with_extra_keys():
    raw = '{"summary": "s", "key_concepts": ["a"], "mood": "happy", "confidence": 0.4}'
    result = CompressionResult.model_validate_json(raw)
    assert result.summary == "s" and result.confidence == 0.4


def test_compression_result_rules():
    reject(CompressionResult, {"summary": "  "}, "summary", "whitespace")
    reject(CompressionResult, {"summary": "s", "confidence": 1.2}, "confidence", "less than")
    reject(CompressionResult, {"summary": "s", "themes": "x"}, "themes", "valid list")


def test_cycle_stats_counts_non_negative():
    for field in [
        "episodes_replayed",
        "memories_created",
        "schemas_created",
        "schemas_updated",
        "episodes_forgotten",
        "prompt_tokens",
        "completion_tokens",
        "llm_calls",
    ]:
        reject(CycleStats, {field: -1}, field, "greater than or equal to 0")


def test_cycle_stats_phase_durations():
    stats = CycleStats(phase_durations_s={"replay": 1.0, "decay": 0.5})
    assert stats.duration_s == 1.5 and stats.ok
    reject(CycleStats, {"phase_durations_s": {"dreaming": 1.0}}, "phase_durations_s", "replay")
    reject(CycleStats, {"phase_durations_s": {"replay": -1.0}}, "phase_durations_s", ">= 0")
    assert not CycleStats(failures=["x"]).ok


def test_cycle_stats_dump_is_plain_json_dict():
    dumped = SAMPLES["CycleStats"].model_dump(mode="json")
    assert dumped["phase_durations_s"] == {"replay": 0.01, "compression": 1.5}


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (Episode, '{"content": "x", "importance": "high"}', ("importance", "valid number")),
    (ConsolidatedMemory, '{"summary": "s", "key_concepts": "a"}', ("key_concepts", "list")),
    (Schema, '{"name": "n"}', ("description", "Field required")),
    (CompressionResult, '{"summary": 3}', ("summary", "valid string")),
    (CycleStats, '{"episodes_replayed": 1.5}', ("episodes_replayed", "integer")),
    (CycleStats, "{", ("Invalid JSON",)),
]
