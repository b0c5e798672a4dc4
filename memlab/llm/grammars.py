"""GBNF grammars that constrain a local model's output (JSON of a schema, one of some choices)."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from typing import Any


def _gbnf_literal(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'


def choices_gbnf(choices: list[str]) -> str:
    """A grammar accepting exactly one of ``choices``."""
    return "root ::= " + " | ".join(_gbnf_literal(c) for c in choices) + "\n"


@lru_cache(maxsize=64)
def _json_grammar(schema_json: str | None):
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    if schema_json is not None:
        try:
            return LlamaGrammar.from_json_schema(schema_json, verbose=False)
        except Exception:  # a schema feature the converter lacks: any JSON will do, pydantic checks
            pass
    return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


@lru_cache(maxsize=64)
def _choices_grammar(choices: tuple[str, ...]):
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(choices_gbnf(list(choices)), verbose=False)


def grammar_for(json_schema: dict[str, Any] | None, choices: list[str] | None):
    """The llama.cpp grammar for a request, or None when the output is free text."""
    if choices:
        return _choices_grammar(tuple(choices))
    if json_schema is not None:
        schema_json = json.dumps(json_schema) if json_schema else None  # keeps field order
        return _json_grammar(schema_json)
    return None


@lru_cache(maxsize=1)
def grammar_version() -> str:
    """What decides a constrained call's grammar: memlab's GBNF rules and llama-cpp-python's
    JSON-schema converter (by its version), as a short hash for the response-cache key."""
    try:
        converter = metadata.version("llama_cpp_python")
    except metadata.PackageNotFoundError:
        converter = "none"
    text = choices_gbnf(["(a)", 'say "b"\n']) + converter
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
