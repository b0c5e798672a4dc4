"""Lenient JSON: find the JSON in a model reply and repair the breakage small models produce.

Handles code fences, prose around the JSON, single or curly quotes, Python literals
(True/False/None), unquoted keys and bare-word values, comments, trailing or missing commas,
raw newlines in strings, and truncated output (closes open strings and brackets).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)(?:```|$)", re.S)
OPENERS = {"{": "}", "[": "]"}
QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d"}
LITERALS = {"True": "true", "False": "false", "None": "null", "true": "true",
            "false": "false", "null": "null", "NaN": "null", "Infinity": "null"}
MAX_STARTS = 6


class JSONRepairError(ValueError):
    """No JSON could be recovered from the text."""


def parse_json_lenient(text: str) -> Any:
    """The first JSON value recoverable from ``text``.

    Raises:
        JSONRepairError: nothing in ``text`` parses, even after repair.
    """
    for candidate in _candidates(text):
        for segment in _segments(candidate):
            for attempt in (lambda s: json.loads(s), lambda s: json.loads(repair_json(s)),
                            _python_literal):
                try:
                    return attempt(segment)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
    raise JSONRepairError(f"no JSON object or array found in: {text[:120]!r}")


def _candidates(text: str) -> list[str]:
    fenced = [m.group(1) for m in FENCE.finditer(text) if re.search(r"[\[{]", m.group(1))]
    return [*fenced, text]


def _segments(text: str) -> list[str]:
    starts = [i for i, ch in enumerate(text) if ch in OPENERS][:MAX_STARTS]
    return [text[i:_balanced_end(text, i)] for i in starts] or [text.strip()]


def _balanced_end(text: str, start: int) -> int:
    """Index after the bracket closing ``text[start]``, or the end of a truncated text."""
    depth, quote, escape = 0, None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == QUOTES[quote]:
                quote = None
        elif ch in QUOTES:
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _python_literal(segment: str) -> Any:
    value = ast.literal_eval(segment)
    if not isinstance(value, dict | list):
        raise ValueError("not a container")
    return json.loads(json.dumps(value))


def repair_json(text: str) -> str:
    """Rewrite near-JSON as JSON (the result may still fail to parse)."""
    return _Repairer(text).run()


class _Repairer:
    """One pass over the text with a stack of open containers."""

    def __init__(self, text: str):
        self.text, self.i, self.out = text, 0, []
        self.stack: list[str] = []
        self.need_comma = False  # a value just ended; another value needs a comma first
        self.after_key = False  # a key string ended; a colon is due

    def run(self) -> str:
        while self.i < len(self.text):
            self.step(self.text[self.i])
        return self.finish()

    def step(self, ch: str) -> None:
        if ch in QUOTES:
            self.string(ch)
        elif ch in OPENERS:
            self.begin_value()
            self.stack.append(OPENERS[ch])
            self.emit(ch, need_comma=False)
        elif ch in "}]":
            self.close(ch)
        elif ch == ",":
            self.emit(",", need_comma=False)
        elif ch == ":":
            self.after_key = False
            self.emit(":", need_comma=False)
        elif self.text.startswith("//", self.i) or self.text.startswith("/*", self.i):
            self.comment()
        elif ch.isalpha() or ch == "_":
            self.word()
        elif ch.isdigit() or ch in "-+.":
            self.number()
        else:
            self.out.append(ch if ch.isspace() else "")
            self.i += 1

    def emit(self, text: str, *, need_comma: bool) -> None:
        self.out.append(text)
        self.need_comma = need_comma
        self.i += 1

    def begin_value(self) -> None:
        if self.need_comma and self.stack:
            self.out.append(",")
        self.need_comma = False

    def close(self, ch: str) -> None:
        self.drop_trailing_comma()
        if self.stack:
            self.out.append(self.stack.pop())  # the closer that matches, whatever was typed
        self.need_comma, self.after_key = True, False
        self.i += 1

    def drop_trailing_comma(self) -> None:
        j = len(self.out) - 1
        while j >= 0 and (not self.out[j] or self.out[j].isspace()):
            j -= 1
        if j >= 0 and self.out[j] == ",":
            self.out[j] = ""

    def string(self, quote: str) -> None:
        is_key = self.expecting_key()
        self.begin_value()
        closer, chars, self.i = QUOTES[quote], ['"'], self.i + 1
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch == "\\" and self.i + 1 < len(self.text):
                nxt = self.text[self.i + 1]
                chars.append(nxt if nxt == "'" else ch + nxt)
                self.i += 2
                continue
            self.i += 1
            if ch == closer:
                break
            chars.append({'"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, ch))
        self.out.append("".join(chars) + '"')
        self.need_comma, self.after_key = not is_key, is_key

    def expecting_key(self) -> bool:
        if not self.stack or self.stack[-1] != "}":
            return False
        prev = "".join(self.out).rstrip()
        return prev.endswith("{") or prev.endswith(",") or self.need_comma

    def word(self) -> None:
        match = re.match(r"[A-Za-z_][A-Za-z0-9_\-]*", self.text[self.i:])
        word = match.group(0)
        is_key = self.expecting_key()
        self.begin_value()
        self.i += len(word)
        if is_key and word not in LITERALS:
            self.out.append(json.dumps(word))
            self.after_key = True
            return
        self.out.append(LITERALS.get(word) or json.dumps(word))
        self.need_comma = True

    def number(self) -> None:
        match = re.match(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", self.text[self.i:])
        if not match:
            self.out.append("")
            self.i += 1
            return
        self.begin_value()
        number = match.group(0).lstrip("+")
        if number.startswith(".") or number.startswith("-."):
            number = number.replace(".", "0.", 1)
        self.out.append(number + ("0" if number.endswith(".") else ""))
        self.i += len(match.group(0))
        self.need_comma = True

    def comment(self) -> None:
        end = "\n" if self.text.startswith("//", self.i) else "*/"
        stop = self.text.find(end, self.i + 2)
        self.i = len(self.text) if stop < 0 else stop + len(end)

    def finish(self) -> str:
        """Close what a truncated reply left open."""
        self.drop_trailing_comma()
        text = "".join(self.out).rstrip()
        if self.after_key:
            text += ": null"
        elif text.endswith(":"):
            text += " null"
        return text + "".join(reversed(self.stack))
