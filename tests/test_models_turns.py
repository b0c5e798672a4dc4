"""DD-02 / DD-03 models: BenchmarkTurnPayload, TurnDocument (QdrantDocument), ConversationHistoryLog."""

import uuid

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models import QdrantDocument
from memlab.models.turns import BenchmarkTurnPayload, ConversationHistoryLog, TurnDocument


def reject(model: type[BaseModel], data: dict, *fragments: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


SAMPLES = {
    "BenchmarkTurnPayload": BenchmarkTurnPayload(
        history="User: Hi\nAI: Hello!", message="Can you tell me more about that?"
    ),
    "TurnDocument": TurnDocument(
        content="User: What is your name?\nAI: My name is AI.",
        turn_number=42,
        timestamp="2025-09-14T18:30:00.123Z",
    ),
    "ConversationHistoryLog": ConversationHistoryLog(
        conversation_id="c1", raw_text="User: What is your name?\nAI: My name is AI."
    ),
}


def test_payload_fields_required():
    reject(BenchmarkTurnPayload, {"history": ""}, "message", "Field required")
    reject(BenchmarkTurnPayload, {"message": "hi"}, "history", "Field required")


def test_qdrant_document_alias_and_collection():
    assert QdrantDocument is TurnDocument
    assert TurnDocument.collection_name == "goodai_ltm_full_history"


def test_turn_document_id_is_uuid():
    doc = TurnDocument(content="x", turn_number=0)
    assert uuid.UUID(doc.id)
    reject(TurnDocument, {"id": "turn-1", "content": "x", "turn_number": 0}, "id", "UUID")


def test_turn_number_integer_non_negative():
    reject(
        TurnDocument, {"content": "x", "turn_number": -1}, "turn_number", "greater than or equal"
    )
    reject(TurnDocument, {"content": "x", "turn_number": "many"}, "turn_number", "integer")
    reject(TurnDocument, {"turn_number": 1}, "content", "Field required")


def test_history_log_storage_key_and_append():
    log = ConversationHistoryLog(conversation_id="conv9", raw_text="")
    assert log.storage_key == "full_history:conv9"
    log.append_turn("What is your name?", "My name is AI.")
    log.append_turn("Thanks", "You're welcome")
    assert log.raw_text == (
        "User: What is your name?\nAI: My name is AI.\nUser: Thanks\nAI: You're welcome"
    )


def test_history_log_requires_fields():
    reject(ConversationHistoryLog, {"conversation_id": "c"}, "raw_text", "Field required")
    reject(
        ConversationHistoryLog,
        {"conversation_id": " ", "raw_text": ""},
        "conversation_id",
        "whitespace",
    )


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (BenchmarkTurnPayload, '{"history": [], "message": "m"}', ("history", "valid string")),
    (
        TurnDocument,
        '{"content": "x", "turn_number": 1, "timestamp": "noon"}',
        ("timestamp", "datetime"),
    ),
    (
        ConversationHistoryLog,
        '{"conversation_id": "c", "raw_text": null}',
        ("raw_text", "valid string"),
    ),
    (TurnDocument, "[1, 2", ("Invalid JSON",)),
]
