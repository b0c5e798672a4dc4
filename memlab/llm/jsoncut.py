"""A JSON reply ended after its first fields: the fields that follow are never generated.

Some replies end in fields nothing reads (the sleep compressor's themes, relationships and
confidence after the summary and key concepts). Asking for a shorter object would change the
prompt, and a grammar that closes the object early would change the tokens (a model writes
'"],' as one token; closing the object after ']' rejects it, and the model continues the list
instead). So the prompt and the grammar stay the ones of the whole reply, the model writes
exactly what it would, and generation stops once the first ``n`` values of the object are
complete; the text is cut after the ``n``-th value and the object closed.
"""

from __future__ import annotations

import numpy as np


class FieldScanner:
    """Follows a JSON object's text as it is written; ``end`` is the offset just after its
    ``n``-th top-level value once that value is complete (None before)."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"n: at least one field, got {n}")
        self.n, self.end = n, None
        self._offset, self._depth, self._closed = 0, 0, 0
        self._in_string = self._escape = self._in_value = False
        self._scalar = False  # a number or literal at depth 1, ended by ',' or '}'

    def feed(self, text: str) -> int | None:
        """Scan ``text`` (what follows what was fed before); returns ``end`` once found."""
        for char in text:
            if self.end is not None:
                break
            self._step(char)
            self._offset += 1
        return self.end

    def _step(self, char: str) -> None:
        if self._in_string:
            if self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                if self._depth == 1 and self._in_value:  # a string value at the top level
                    self._value_done(self._offset + 1)
            return
        if self._scalar:
            if char in ",}" or char.isspace():
                self._scalar = False
                self._value_done(self._offset)
            else:
                return
        if char == '"':
            self._in_string = True
        elif char in "[{":
            self._depth += 1
        elif char in "]}":
            self._depth -= 1
            if self._depth == 1 and self._in_value:  # an array or object value closed
                self._value_done(self._offset + 1)
        elif self._depth == 1 and char == ":":
            self._in_value = True
        elif self._depth == 1 and self._in_value and not char.isspace() and char not in ",":
            self._scalar = True  # a number, true, false or null

    def _value_done(self, end: int) -> None:
        self._in_value = False
        self._closed += 1
        if self._closed == self.n:
            self.end = end


def cut_after_fields(text: str, n: int) -> str:
    """``text`` up to the end of its object's ``n``-th top-level value, the object closed;
    unchanged when it has fewer complete values (a reply that ended sooner)."""
    end = FieldScanner(n).feed(text)
    return text if end is None else text[:end] + "}"


class FieldsStop:
    """A llama-cpp stopping criterion: true once the reply (the tokens after the first
    ``n_prompt``) holds its object's first ``n`` values complete."""

    def __init__(self, detokenize, n_prompt: int, n: int):
        self.detokenize, self.n_prompt = detokenize, n_prompt
        self.scanner, self._seen = FieldScanner(n), n_prompt

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> bool:
        new = [int(t) for t in input_ids[self._seen:]]
        self._seen = len(input_ids)
        if new and self.scanner.end is None:
            # structural characters are ASCII, never part of a multi-byte character
            self.scanner.feed(self.detokenize(new).decode("utf-8", errors="replace"))
        return self.scanner.end is not None
