"""A JSON reply ended where what follows is never read: after its first fields
(``cut_after_fields``), or before a list element that repeats an earlier one (``cut_repeats``).

Some replies end in fields nothing reads (the sleep compressor's themes, relationships and
confidence after the summary and key concepts). Asking for a shorter object would change the
prompt, and a grammar that closes the object early would change the tokens (a model writes
'"],' as one token; closing the object after ']' rejects it, and the model continues the list
instead). So the prompt and the grammar stay the ones of the whole reply, the model writes
exactly what it would, and generation stops once the first ``n`` values of the object are
complete; the text is cut after the ``n``-th value and the object closed.
"""

from __future__ import annotations

import codecs
from abc import ABC, abstractmethod

import numpy as np


class _Scanner(ABC):
    """Follows a JSON text as it is written, character by character, telling string content
    (escapes included) from structure; ``found`` is the offset a subclass looks for, once
    found (None before), after which nothing more is read."""

    def __init__(self):
        self.found: int | None = None
        self._offset = 0
        self._in_string = self._escape = False

    def feed(self, text: str) -> int | None:
        """Scan ``text`` (what follows what was fed before); returns ``found`` once found."""
        for char in text:
            if self.found is not None:
                break
            self._read(char)
            if not self._in_string:
                self._structure(char)
            elif self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                self._string_closed()
            self._offset += 1
        return self.found

    def _read(self, char: str) -> None:  # noqa: B027 (a hook a scanner may leave empty)
        """Every character, before it is scanned."""

    @abstractmethod
    def _structure(self, char: str) -> None:
        """A character outside strings (a '"' opening one included)."""

    def _string_closed(self) -> None:  # noqa: B027 (likewise)
        """The '"' at ``_offset`` closed a string."""


class FieldScanner(_Scanner):
    """Follows a JSON object's text as it is written; ``end`` is the offset just after its
    ``n``-th top-level value once that value is complete (None before)."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"n: at least one field, got {n}")
        super().__init__()
        self.n = n
        self._depth, self._closed = 0, 0
        self._in_value = False
        self._scalar = False  # a number or literal at depth 1, ended by ',' or '}'

    @property
    def end(self) -> int | None:
        return self.found

    def _string_closed(self) -> None:
        if self._depth == 1 and self._in_value:  # a string value at the top level
            self._value_done(self._offset + 1)

    def _structure(self, char: str) -> None:
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
            self.found = end


def cut_after_fields(text: str, n: int) -> str:
    """``text`` up to the end of its object's ``n``-th top-level value, the object closed;
    unchanged when it has fewer complete values (a reply that ended sooner)."""
    end = FieldScanner(n).feed(text)
    return text if end is None else text[:end] + "}"


class _ScannerStop:
    """A llama-cpp stopping criterion: true once ``scanner``, fed the reply (the tokens after
    the first ``n_prompt``) as it is written, has found what it looks for."""

    def __init__(self, detokenize, n_prompt: int, scanner: _Scanner):
        self.detokenize, self.n_prompt = detokenize, n_prompt
        self.scanner, self._seen = scanner, n_prompt
        # a character split across tokens waits for its end (structure is ASCII, but a
        # scanner that compares text needs whole characters)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> bool:
        new = [int(t) for t in input_ids[self._seen:]]
        self._seen = len(input_ids)
        if new and self.scanner.found is None:
            self.scanner.feed(self._decoder.decode(self.detokenize(new)))
        return self.scanner.found is not None


class FieldsStop(_ScannerStop):
    """True once the reply holds its object's first ``n`` values complete (``FieldScanner``)."""

    def __init__(self, detokenize, n_prompt: int, n: int):
        super().__init__(detokenize, n_prompt, FieldScanner(n))


class RepeatScanner(_Scanner):
    """Follows a JSON object's text as it is written; ``cut`` is, once an element of one of
    its list values repeats an earlier element of that list word for word, the offset just
    after the element before it (None before).

    A small model that starts to repeat a list's elements goes on repeating them until its
    token budget ends (hybrid's extraction on LoCoMo: in every one of 75 such replies, all
    that followed the first repeat were repeats), so what follows is never read.
    """

    def __init__(self):
        super().__init__()
        self._stack: list[str] = []  # the open containers, "{" or "["
        self._start: int | None = None  # where the element being written began
        self._last_end: int | None = None  # where the list's last complete element ended
        self._seen: set[str] = set()
        self._text: list[str] = []

    @property
    def cut(self) -> int | None:
        return self.found

    def _read(self, char: str) -> None:
        self._text.append(char)

    def _in_list(self) -> bool:
        return self._stack == ["{", "["]  # directly inside a top-level value that is a list

    def _string_closed(self) -> None:
        if self._in_list() and self._start is not None:  # a string element ended
            self._element_done(self._offset + 1)

    def _structure(self, char: str) -> None:
        if char == '"':
            self._in_string = True
            if self._in_list():
                self._start = self._offset
        elif char in "[{":
            if self._in_list():
                self._start = self._offset
            self._stack.append(char)
            if self._in_list():  # a new list value: its own elements
                self._seen, self._last_end, self._start = set(), None, None
        elif char in "]}":
            self._stack.pop() if self._stack else None
            if self._in_list() and self._start is not None:  # an object element ended
                self._element_done(self._offset + 1)

    def _element_done(self, end: int) -> None:
        element = "".join(self._text[self._start:end])
        self._start = None
        if element in self._seen and self._last_end is not None:
            self.found = self._last_end
            return
        self._seen.add(element)
        self._last_end = end


def cut_repeats(text: str) -> str:
    """``text`` up to the element before the first element of a list value that repeats an
    earlier one word for word, the list and the object closed (fields after that list take
    their defaults); unchanged when no element repeats."""
    cut = RepeatScanner().feed(text)
    return text if cut is None else text[:cut] + "]}"


class RepeatStop(_ScannerStop):
    """True once the reply repeats an element of one of its object's lists
    (``RepeatScanner``)."""

    def __init__(self, detokenize, n_prompt: int):
        super().__init__(detokenize, n_prompt, RepeatScanner())
