"""GBNF grammars that constrain a local model's output (JSON of a schema, one of some choices)."""

from __future__ import annotations

import hashlib
import json
import logging
from functools import lru_cache
from importlib import metadata
from typing import Any

log = logging.getLogger(__name__)


def _gbnf_literal(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'


def choices_gbnf(choices: list[str]) -> str:
    """A grammar accepting exactly one of ``choices``."""
    return "root ::= " + " | ".join(_gbnf_literal(c) for c in choices) + "\n"


# llama-cpp-python's converter allows at most one space between JSON tokens; a prompt that
# shows indented JSON (mem0's) is answered with line breaks, and without them the 1.5B model
# turned to '{"memory": []}'. This rule (llama.cpp's own converter's) allows them.
COMPACT_SPACE = 'space ::= " "?'
NEWLINE_SPACE = 'space ::= | " " | "\\n" [ \\t]{0,20}'


def schema_gbnf(schema_json: str, *, newlines: bool = False) -> str:
    """The GBNF of llama-cpp-python's JSON-schema converter, with line breaks and indentation
    between tokens allowed when ``newlines``."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    if newlines:
        if COMPACT_SPACE not in gbnf.splitlines():
            raise ValueError("the JSON-schema converter's space rule changed")
        gbnf = "\n".join(NEWLINE_SPACE if line == COMPACT_SPACE else line
                          for line in gbnf.splitlines())
    return gbnf


@lru_cache(maxsize=64)
def _json_grammar(schema_json: str | None, newlines: bool = False):
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    if schema_json is not None:
        try:
            return LlamaGrammar.from_string(schema_gbnf(schema_json, newlines=newlines),
                                            verbose=False)
        except Exception:  # noqa: BLE001 - the converter's errors are KeyError, AssertionError...
            pass
        schema = json.loads(schema_json)
        if "$ref" in schema:  # it loses ``$defs`` below a top-level ``$ref`` (a RootModel of
            try:  # one model); other schemas keep the any-JSON fallback they were measured with
                return LlamaGrammar.from_string(schema_gbnf(
                    json.dumps(inline_refs(schema)), newlines=newlines), verbose=False)
            except Exception:  # noqa: BLE001
                pass
        log.debug("no grammar for this JSON schema: any JSON is allowed, validation checks it")
    return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``{"$ref": "#/$defs/Name"}`` replaced by its definition and
    ``$defs`` dropped (pydantic's schemas have no recursive references)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any, depth: int = 0) -> Any:
        if depth > 32:
            raise ValueError("recursive $ref in a reply schema")
        if isinstance(node, list):
            return [resolve(v, depth) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return resolve({**defs[ref.removeprefix("#/$defs/")], **rest}, depth + 1)
        return {k: resolve(v, depth) for k, v in node.items() if k != "$defs"}

    return resolve(schema)


@lru_cache(maxsize=64)
def _choices_grammar(choices: tuple[str, ...]):
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(choices_gbnf(list(choices)), verbose=False)


def grammar_for(json_schema: dict[str, Any] | None, choices: list[str] | None, *,
                newlines: bool = False):
    """The llama.cpp grammar for a request, or None when the output is free text
    (``newlines``: JSON may break lines between tokens)."""
    if choices:
        return _choices_grammar(tuple(choices))
    if json_schema is not None:
        schema_json = json.dumps(json_schema) if json_schema else None  # keeps field order
        return _json_grammar(schema_json, newlines)
    return None


@lru_cache(maxsize=2)
def grammar_version(*, newlines: bool = False) -> str:
    """What decides a constrained call's grammar: memlab's GBNF rules and llama-cpp-python's
    JSON-schema converter (by its version), as a short hash for the response-cache key."""
    try:
        converter = metadata.version("llama_cpp_python")
    except metadata.PackageNotFoundError:
        converter = "none"
    text = choices_gbnf(["(a)", 'say "b"\n']) + converter + (NEWLINE_SPACE if newlines else "")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
