"""complete_json: a pydantic model from a chat model, robust to the JSON small models write.

Asks for JSON (constraining generation where the backend can), extracts and repairs the JSON,
validates it, re-asks with the validation error, and raises ``StructuredOutputError`` (with the
raw text) when every attempt fails. Bad model output never raises anything else.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from memlab.errors import StructuredOutputError
from memlab.llm.base import LLMClient, Message, as_messages
from memlab.llm.repair import parse_json_lenient

M = TypeVar("M", bound=BaseModel)


# A memory's lists (concepts, themes, facts) need no more items than this. Unbounded, a small
# model loops ("memory", "memory compression", "memory", ...) until max_tokens cuts the JSON: in
# the quick paper over half the 0.5B model's compression replies ended that way and were re-asked.
MEMORY_MAX_ITEMS = 8
# ... and no string longer than this (a summary, a concept): the 0.5B model also loops inside one
# string ("I'll keep that in mind. I'll keep that in mind. ...") until max_tokens.
MEMORY_MAX_CHARS = 480


def prompt_schema(model_cls: type[BaseModel], *, max_items: int | None = None,
                  max_chars: int | None = None) -> dict[str, Any]:
    """The JSON schema shown to (and, locally, enforced on) the model: pydantic's schema without
    its ``title`` annotations and the class docstring (a model copies a docstring into its reply);
    with ``max_items`` every list is bounded by ``maxItems``, with ``max_chars`` every free string
    by ``maxLength`` (the reply is still validated by the model's own rules)."""
    schema = _drop_titles(model_cls.model_json_schema())
    schema.pop("description", None)
    return bound_schema(schema, max_items, max_chars)


def bound_schema(node: Any, max_items: int | None, max_chars: int | None) -> Any:
    """``node`` (a JSON schema) with every list bounded by ``maxItems`` and every free string
    by ``maxLength`` (None: that bound is left out)."""
    if isinstance(node, list):
        return [bound_schema(v, max_items, max_chars) for v in node]
    if not isinstance(node, dict):
        return node
    bounded = {k: bound_schema(v, max_items, max_chars) for k, v in node.items()}
    kind = bounded.get("type")
    if max_items is not None and kind == "array" and "maxItems" not in bounded:
        bounded["maxItems"] = max(max_items, bounded.get("minItems", 0))
    if (max_chars is not None and kind == "string" and "maxLength" not in bounded
            and not {"enum", "const", "format", "pattern"} & bounded.keys()):
        bounded["maxLength"] = max(max_chars, bounded.get("minLength", 0))
    return bounded


def _drop_titles(node: Any, *, in_properties: bool = False) -> Any:
    if isinstance(node, dict):
        return {k: _drop_titles(v, in_properties=(k == "properties" and not in_properties))
                for k, v in node.items()
                if in_properties or not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


def check_leading(schema: dict[str, Any], names: list[str] | tuple[str, ...]) -> int:
    """How many fields ``names`` are; they must be the first properties of ``schema`` (an
    object's), in order.

    Raises:
        ValueError: they are not (the reply would be cut before a field it needs).
    """
    properties = list(schema.get("properties", {}))
    if not names or properties[:len(names)] != list(names):
        raise ValueError(f"written: {list(names)} must be the first properties of the reply's "
                         f"schema in order ({properties})")
    return len(names)


def json_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with only a JSON object, no prose and no code fence, that matches this "
            "JSON schema:\n" + json.dumps(schema, separators=(",", ":")))


def with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    """``messages`` with ``instruction`` appended to the last user message (or as a new one)."""
    msgs = list(messages)
    if msgs and msgs[-1].role == "user":
        last = msgs[-1]
        msgs[-1] = Message(role="user", content=f"{last.content}\n\n{instruction}")
    else:
        msgs.append(Message(role="user", content=instruction))
    return msgs


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:6]:
        where = ".".join(str(p) for p in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def parse_model(text: str, model_cls: type[M]) -> M:
    """Extract, repair and validate ``text`` as ``model_cls``.

    Raises:
        StructuredOutputError: no valid instance could be recovered (message says why).
    """
    try:
        data = parse_json_lenient(text)
    except Exception as exc:  # any failure of the repair is bad output, never a crash
        raise StructuredOutputError(f"not JSON: {exc}", raw_text=text) from exc
    error: ValidationError | None = None
    for candidate in _shapes(data):
        try:
            return model_cls.model_validate(candidate)
        except ValidationError as exc:
            error = error or exc
        except Exception as exc:  # a validator of the model raising something else
            raise StructuredOutputError(f"invalid: {exc}", raw_text=text) from exc
    message = _describe(error) if error else "empty"
    raise StructuredOutputError(f"invalid {model_cls.__name__}: {message}", raw_text=text)


def _shapes(data: Any) -> list[Any]:
    """``data`` and the shapes it may be wrapped in (a one-key envelope, a one-item list)."""
    shapes = [data]
    if isinstance(data, dict) and len(data) == 1:
        inner = next(iter(data.values()))
        if isinstance(inner, dict):
            shapes.append(inner)
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
        shapes.append(data[0])
    return shapes


class StructuredReply(BaseModel):
    """A validated reply with what it took: ``attempts`` model calls, one error per failed one."""

    model_config = {"arbitrary_types_allowed": True}

    value: Any
    attempts: int = Field(ge=1)
    errors: list[str] = Field(default_factory=list)

    @property
    def reasks(self) -> int:
        return self.attempts - 1


def complete_json(client: LLMClient, messages: list[Message] | list[dict[str, str]],
                  model_cls: type[M], **kwargs: Any) -> M:
    """Ask ``client`` for an instance of ``model_cls`` (see :func:`complete_json_reply`).

    Raises:
        StructuredOutputError: every attempt failed; ``raw_text`` is the last reply and
            ``errors`` has one message per attempt.
        LLMError: the model call itself failed (raised by the client).
    """
    return complete_json_reply(client, messages, model_cls, **kwargs).value


def complete_json_reply(client: LLMClient, messages: list[Message] | list[dict[str, str]],
                        model_cls: type[M], *, max_retries: int = 2, max_tokens: int = 512,
                        temperature: float = 0.0, max_items: int | None = None,
                        max_chars: int | None = None, compact: bool = False,
                        instruction: str | None = None,
                        schema: dict[str, Any] | None = None,
                        written: list[str] | tuple[str, ...] | None = None,
                        stop_repeats: bool = False) -> StructuredReply:
    """Ask ``client`` for an instance of ``model_cls``; the reply says how many re-asks it took.

    Args:
        messages: the request; a JSON instruction is appended to it.
        max_retries: re-asks after the first attempt, each quoting the validation error.
        max_items, max_chars: bound every list and string the model writes (``prompt_schema``).
        compact: show the model :func:`compact_schema` (for schemas whose enums would fill the
            prompt); the full schema constrains generation either way (a grammar locally,
            response_format remotely).
        instruction: what to tell the model instead of showing a schema (when the prompt
            already describes the reply, e.g. a list of tools); the schema still constrains.
        schema: the JSON schema that constrains generation, when it must say more than
            ``model_cls`` can (per-position tuples); the reply is validated by ``model_cls``.
        written: the leading properties the model writes: the prompt and the grammar are the
            whole schema's, so the model writes them as it would anyway, and the reply ends
            after the last of them (``LLMClient.complete``'s ``json_fields``); the fields after
            it are never generated and take ``model_cls``'s defaults. For replies whose later
            fields nothing reads.
        stop_repeats: the reply ends before the first element of one of its lists that
            repeats an earlier one word for word (``LLMClient.complete``'s ``json_repeats``):
            for lists whose repeats are dropped anyway.

    Raises:
        StructuredOutputError: every attempt failed; ``raw_text`` is the last reply and
            ``errors`` has one message per attempt.
        LLMError: the model call itself failed (raised by the client).
    """
    schema = schema or prompt_schema(model_cls, max_items=max_items, max_chars=max_chars)
    shown = compact_schema(schema) if compact else schema
    fields = check_leading(schema, written) if written else None
    convo = with_instruction(as_messages(messages), instruction or json_instruction(shown))
    errors: list[str] = []
    raw = ""
    for attempt in range(1, max_retries + 2):
        raw = client.complete(convo, max_tokens=max_tokens, temperature=temperature,
                              json_schema=schema, json_fields=fields,
                              json_repeats=stop_repeats).text
        try:
            return StructuredReply(value=parse_model(raw, model_cls), attempts=attempt,
                                   errors=errors)
        except StructuredOutputError as exc:
            errors.append(str(exc))
        convo = [*convo, Message(role="assistant", content=raw), Message(
            role="user", content=f"That reply was not valid ({errors[-1]}). "
                                 "Reply again with only the corrected JSON object.")]
    raise StructuredOutputError(
        f"{model_cls.__name__}: no valid JSON after {len(errors)} attempts; last error: "
        f"{errors[-1]}", raw_text=raw, errors=errors)


# --- a compact view of a schema (what the model reads when a grammar enforces the rest) ------
def compact_schema(node: Any) -> Any:
    """``node`` with every evenly spaced numeric enum shown as minimum, maximum and multipleOf.

    A model reads this shorter schema; generation is still constrained by the full one.

    Example:
        >>> compact_schema({"type": "number", "enum": [1.0, 1.5, 2.0, 2.5, 3.0]})
        {'type': 'number', 'minimum': 1.0, 'maximum': 3.0, 'multipleOf': 0.5}
    """
    if isinstance(node, list):
        return [compact_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    compact = {k: compact_schema(v) for k, v in node.items()}
    values = compact.get("enum")
    numbers = sorted(v for v in values or [] if isinstance(v, int | float))
    steps = {round(b - a, 9) for a, b in zip(numbers, numbers[1:], strict=False)}
    if values and len(numbers) == len(values) > 4 and len(steps) == 1:
        del compact["enum"]
        compact.update(minimum=numbers[0], maximum=numbers[-1], multipleOf=steps.pop())
    return compact
