"""complete_json and the JSON repair on the broken output small models produce."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from memlab.errors import LLMError, StructuredOutputError
from memlab.llm.fake import FakeLLM
from memlab.llm.repair import parse_json_lenient, repair_json
from memlab.llm.structured import (
    MEMORY_MAX_CHARS,
    MEMORY_MAX_ITEMS,
    complete_json,
    parse_model,
    prompt_schema,
)


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    tags: list[str] = []


BOB = Person(name="Bob", age=42, tags=["a", "b"])

REPAIRABLE = {
    "clean": '{"name": "Bob", "age": 42, "tags": ["a", "b"]}',
    "json_fence": '```json\n{"name": "Bob", "age": 42, "tags": ["a", "b"]}\n```',
    "bare_fence_and_prose": 'Sure!\n```\n{"name": "Bob", "age": 42, "tags": ["a", "b"]}\n```\nHope it helps.',
    "leading_prose": 'Here is the JSON you asked for: {"name": "Bob", "age": 42, "tags": ["a", "b"]}',
    "trailing_prose": '{"name": "Bob", "age": 42, "tags": ["a", "b"]} I filled in the age.',
    "single_quotes": "{'name': 'Bob', 'age': 42, 'tags': ['a', 'b']}",
    "trailing_commas": '{"name": "Bob", "age": 42, "tags": ["a", "b",],}',
    "python_literals": "{'name': 'Bob', 'age': 42, 'tags': ['a', 'b'], 'extra': None, 'ok': True}",
    "unquoted_keys": '{name: "Bob", age: 42, tags: ["a", "b"]}',
    "truncated_in_list": '{"name": "Bob", "age": 42, "tags": ["a", "b"',
    "truncated_in_string": '{"name": "Bob", "age": 42, "tags": ["a", "b',
    "truncated_after_comma": '{"name": "Bob", "age": 42, "tags": ["a", "b"], ',
    "missing_commas": '{"name": "Bob"\n "age": 42\n "tags": ["a" "b"]}',
    "comments": '{\n // the person\n "name": "Bob", /* years */ "age": 42, "tags": ["a", "b"]}',
    "string_number": '{"name": "Bob", "age": "42", "tags": ["a", "b"]}',
    "wrapped_in_key": '{"person": {"name": "Bob", "age": 42, "tags": ["a", "b"]}}',
    "list_of_one": '[{"name": "Bob", "age": 42, "tags": ["a", "b"]}]',
    "curly_quotes": '{\u201cname\u201d: \u201cBob\u201d, \u201cage\u201d: 42, \u201ctags\u201d: [\u201ca\u201d, \u201cb\u201d]}',
    "raw_newline_in_string": '{"name": "Bob", "age": 42, "tags": ["a", "b"], "note": "line1\nline2"}',
    "mismatched_closer": '{"name": "Bob", "age": 42, "tags": ["a", "b"}',
}

UNREPAIRABLE = {
    "no_json": "I am sorry, I cannot help with that.",
    "wrong_type": '{"name": "Bob", "age": "forty-two"}',
    "missing_field": '{"name": "Bob"}',
    "rule_violated": '{"name": "Bob", "age": -3}',
    "scalar": "42",
    "empty": "",
    "truncated_before_value": '{"name": "Bob", "age":',
    "list_of_many": '[{"name": "Bob", "age": 1}, {"name": "Al", "age": 2}]',
}


@pytest.mark.parametrize("kind", sorted(REPAIRABLE))
def test_parse_model_repairs(kind: str) -> None:
    assert parse_model(REPAIRABLE[kind], Person) == BOB


@pytest.mark.parametrize("kind", sorted(UNREPAIRABLE))
def test_parse_model_raises_typed_error(kind: str) -> None:
    with pytest.raises(StructuredOutputError) as info:
        parse_model(UNREPAIRABLE[kind], Person)
    assert info.value.raw_text == UNREPAIRABLE[kind]


@pytest.mark.parametrize("kind", sorted(REPAIRABLE) + sorted(UNREPAIRABLE))
def test_complete_json_never_raises_another_type(kind: str) -> None:
    text = REPAIRABLE.get(kind, UNREPAIRABLE.get(kind))
    llm = FakeLLM([text])
    try:
        assert complete_json(llm, [{"role": "user", "content": "Bob?"}], Person) == BOB
    except StructuredOutputError as exc:
        assert kind in UNREPAIRABLE
        assert exc.raw_text == text
        assert len(exc.errors) == 3  # first attempt + 2 re-asks
    else:
        assert kind in REPAIRABLE


def test_complete_json_reasks_with_the_validation_error() -> None:
    llm = FakeLLM(['{"name": "Bob", "age": "old"}', '{"name": "Bob", "age": 42}'])
    person = complete_json(llm, [{"role": "user", "content": "Describe Bob."}], Person)
    assert person.age == 42 and llm.calls == 2
    reask = llm.history[1]
    assert reask[-2].role == "assistant" and reask[-2].content == '{"name": "Bob", "age": "old"}'
    assert "age" in reask[-1].content and "valid integer" in reask[-1].content


def test_complete_json_passes_the_schema_and_instruction() -> None:
    llm = FakeLLM(['{"name": "Bob", "age": 42}'])
    complete_json(llm, [{"role": "user", "content": "Describe Bob."}], Person, max_tokens=64)
    assert llm.params[0]["json_schema"] == prompt_schema(Person)
    assert llm.params[0]["max_tokens"] == 64
    assert llm.history[0][-1].content.startswith("Describe Bob.")
    assert '"age"' in llm.history[0][-1].content


def test_complete_json_gives_up_after_max_retries() -> None:
    llm = FakeLLM(["nope"])
    with pytest.raises(StructuredOutputError) as info:
        complete_json(llm, [{"role": "user", "content": "x"}], Person, max_retries=1)
    assert llm.calls == 2 and info.value.raw_text == "nope" and len(info.value.errors) == 2


def test_complete_json_lets_call_failures_through() -> None:
    def fail(_messages):
        raise LLMError("server down")

    with pytest.raises(LLMError, match="server down"):
        complete_json(FakeLLM([fail]), [{"role": "user", "content": "x"}], Person)


def test_prompt_schema_keeps_a_field_named_title() -> None:
    class Doc(BaseModel):
        title: str

    schema = prompt_schema(Doc)
    assert "title" in schema["properties"] and "title" not in schema


def test_repair_json_output_is_json() -> None:
    assert repair_json("{'a': True, b: [1, 2,], }") == '{"a": true, "b": [1, 2] }'


def test_parse_json_lenient_prefers_the_fenced_block() -> None:
    text = 'Options [x]\n```json\n{"a": 1}\n```'
    assert parse_json_lenient(text) == {"a": 1}


def test_prompt_schema_hides_the_docstring_and_bounds_every_list_and_string() -> None:
    class Notes(BaseModel):
        """Developer notes a model would copy into its reply."""

        summary: str = Field(description="one line")
        tags: list[str] = Field(default_factory=list)
        pairs: list[list[str]] = Field(default_factory=list, min_length=10)

    assert "maxItems" not in prompt_schema(Notes)["properties"]["tags"]  # bounds are opt-in
    schema = prompt_schema(Notes, max_items=3)
    assert "description" not in schema
    assert schema["properties"]["summary"]["description"] == "one line"
    assert schema["properties"]["tags"]["maxItems"] == 3
    assert schema["properties"]["pairs"]["maxItems"] == 10  # never below the model's own minimum
    assert schema["properties"]["pairs"]["items"]["maxItems"] == 3
    # the bound shapes what the model writes; the reply is still validated by the model's rules
    llm = FakeLLM([json.dumps({"summary": "s", "tags": list("abcdef"), "pairs": [["x"]] * 10})])
    assert len(complete_json(llm, [{"role": "user", "content": "x"}], Notes, max_items=3).tags) == 6
    assert llm.params[0]["json_schema"]["properties"]["tags"]["maxItems"] == 3
    assert "maxLength" not in schema["properties"]["summary"]
    chars = prompt_schema(Notes, max_chars=40)["properties"]
    assert chars["summary"]["maxLength"] == 40 and chars["tags"]["items"]["maxLength"] == 40
    assert "maxItems" not in chars["tags"]


def test_string_bound_keeps_the_models_own_string_rules() -> None:
    class Pick(BaseModel):
        kind: Literal["fact", "plan"]
        code: str = Field(pattern=r"^[A-Z]{3}$")
        name: str = Field(min_length=50)

    props = prompt_schema(Pick, max_chars=20)["properties"]
    assert "maxLength" not in props["kind"] and "maxLength" not in props["code"]
    assert props["name"]["maxLength"] == 50  # never below the model's own minimum


def test_bounded_prompt_schema_compiles_to_a_local_grammar() -> None:
    from llama_cpp import LlamaGrammar  # a dependency of memlab: no skip

    from memlab.models.sleep import CompressionResult

    # grammar_for falls back to any-JSON when the converter fails; the bounded schema must not
    LlamaGrammar.from_json_schema(json.dumps(prompt_schema(CompressionResult, max_items=MEMORY_MAX_ITEMS, max_chars=MEMORY_MAX_CHARS)), verbose=False)


def test_a_root_model_of_one_model_gets_its_own_grammar_not_any_json() -> None:
    """llama-cpp-python's converter loses ``$defs`` below a top-level ``$ref``: the Taskforce
    step that offers only ``finish`` (a RootModel of one model) was constrained by the any-JSON
    grammar, and the 0.5B wrote another tool with made-up arguments three times."""
    from memlab.llm.grammars import grammar_for
    from memlab.taskforce.steps import step_model
    from memlab.taskforce.tools import FinishTool, Toolbox

    schema = prompt_schema(step_model(Toolbox([FinishTool()])))
    assert schema.get("$ref") and schema.get("$defs")
    rules = grammar_for(schema, None)._grammar
    assert '"\\"finish\\""' in rules and "thought" in rules  # its fields, its one tool


def test_inlined_refs_leave_no_reference() -> None:
    from memlab.llm.grammars import inline_refs

    schema = {"$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                        "B": {"type": "string", "const": "x"}},
              "$ref": "#/$defs/A"}
    assert inline_refs(schema) == {"type": "object",
                                   "properties": {"b": {"type": "string", "const": "x"}}}


def test_json_newlines_lets_the_local_grammar_break_lines_and_keeps_every_other_key() -> None:
    """mem0's prompt shows indented JSON; the converter's one-space rule pushed the 1.5B model
    to '{"memory": []}' (with line breaks it wrote the user's fact)."""
    from memlab.llm.fake import FakeLLM
    from memlab.llm.grammars import COMPACT_SPACE, NEWLINE_SPACE, grammar_for, grammar_version
    from memlab.models.sleep import CompressionResult

    schema = prompt_schema(CompressionResult, max_items=MEMORY_MAX_ITEMS)
    compact = grammar_for(schema, None)._grammar.splitlines()
    broken = grammar_for(schema, None, newlines=True)._grammar.splitlines()
    assert COMPACT_SPACE in compact and NEWLINE_SPACE not in compact
    assert NEWLINE_SPACE in broken and COMPACT_SPACE not in broken
    assert [x for x in broken if x != NEWLINE_SPACE] == [x for x in compact if x != COMPACT_SPACE]
    assert grammar_version(newlines=True) != grammar_version()
    llm = FakeLLM(["{}", "{}"])
    ask = [{"role": "user", "content": "a"}]
    llm.complete(ask, json_schema=schema)
    llm.complete(ask, json_schema=schema, json_newlines=True)
    assert "json_newlines" not in llm.params[0] and llm.params[1]["json_newlines"] is True


def test_written_keeps_the_whole_schema_and_cuts_the_reply_after_the_leading_fields() -> None:
    from memlab.models.sleep import CompressionResult

    whole = ('{"summary": "The user keeps a cat.", "key_concepts": ["cat", "pet"], '
             '"themes": ["home"], "relationships": [], "confidence": 0.9}')
    llm = FakeLLM([whole])
    result = complete_json(llm, [{"role": "user", "content": "Episode 1: I keep a cat."}],
                           CompressionResult, max_items=MEMORY_MAX_ITEMS,
                           written=("summary", "key_concepts"))
    shown = llm.history[0][-1].content
    assert '"themes"' in shown and '"confidence"' in shown  # the prompt asks for all five
    schema = prompt_schema(CompressionResult, max_items=MEMORY_MAX_ITEMS)
    assert llm.params[0]["json_schema"] == schema and llm.params[0]["json_fields"] == 2
    assert result.key_concepts == ["cat", "pet"] and result.themes == []
    assert result.confidence == 0.5  # the model's 0.9 came after the cut


@pytest.mark.parametrize("names", [("key_concepts",), ("summary", "themes"), ("nope",), ()])
def test_written_must_be_the_schemas_first_fields_in_order(names) -> None:
    from memlab.llm.structured import check_leading
    from memlab.models.sleep import CompressionResult

    with pytest.raises(ValueError, match="first properties"):
        check_leading(prompt_schema(CompressionResult), names)


@pytest.mark.integration
def test_written_fields_come_out_as_the_whole_reply_has_them_on_the_real_model() -> None:
    """The compressor's cut (memlab.sleep.compress.COMPRESS_WRITTEN) on the 0.5B, greedy: the
    summary and concepts are the whole reply's, written in fewer tokens."""
    from services import require_or_skip

    from memlab.config import Settings
    from memlab.errors import MissingDependencyError
    from memlab.llm.local import LocalLLM
    from memlab.llm.structured import complete_json_reply
    from memlab.models.sleep import CompressionResult, Episode
    from memlab.sleep.compress import COMPRESS_PROMPT, COMPRESS_WRITTEN, render_episodes

    try:  # one model each (windows no other test loads), each reading the prompt afresh: a
        # prompt reused from the call before is evaluated from another split, and greedy
        # decoding may then part at a near tie
        models = [LocalLLM("0.5b", n_ctx=n_ctx, settings=Settings(llm_cache=False))
                  for n_ctx in (4095, 4094)]
    except MissingDependencyError as exc:
        require_or_skip(str(exc))
    from datetime import UTC, datetime

    episodes = [Episode(id=f"e{i}", content=f'User: {text}\nAI: ',
                        timestamp=datetime(2023, 1, 20 + i, 16, 4, tzinfo=UTC))
                for i, text in enumerate([  # LoCoMo-like turns, on which the 0.5B writes lists
                    'Caroline said, "I went to a LGBTQ support group yesterday and it was so '
                    'powerful."',
                    'Melanie said, "That\'s great! I painted a lake sunrise last year; painting '
                    'helps me relax."',
                    'Caroline said, "I\'m keen on counseling and mental health jobs, to help '
                    'people like me."'])]
    ask = [{"role": "system", "content": COMPRESS_PROMPT},
           {"role": "user", "content": render_episodes(episodes)}]
    kwargs = dict(max_tokens=256, max_items=MEMORY_MAX_ITEMS, max_chars=MEMORY_MAX_CHARS)
    whole = complete_json_reply(models[0], ask, CompressionResult, **kwargs)
    cut = complete_json_reply(models[1], ask, CompressionResult, written=COMPRESS_WRITTEN,
                              **kwargs)
    assert whole.attempts == cut.attempts == 1
    assert cut.value.summary == whole.value.summary
    assert cut.value.key_concepts == whole.value.key_concepts
    assert whole.value.key_concepts and (whole.value.themes or whole.value.relationships)
    assert cut.value.themes == cut.value.relationships == []
    assert models[1].calls == 1 and models[0].calls == 1
