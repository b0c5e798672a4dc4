"""memlab.llm.jsoncut: a JSON reply ended after its first fields."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memlab.llm.fake import FakeLLM
from memlab.llm.jsoncut import FieldScanner, FieldsStop, cut_after_fields

WHOLE = ('{"summary": "He said \\"hi\\", then [left] {fast}.", "key_concepts": ["a", "b]"], '
         '"themes": [{"x": [1, 2]}], "confidence": 0.9}')


@pytest.mark.parametrize(("n", "kept"), [
    (1, {"summary": 'He said "hi", then [left] {fast}.'}),
    (2, {"summary": 'He said "hi", then [left] {fast}.', "key_concepts": ["a", "b]"]}),
    (3, {"summary": 'He said "hi", then [left] {fast}.', "key_concepts": ["a", "b]"],
         "themes": [{"x": [1, 2]}]}),
    (4, json.loads(WHOLE)),
])
def test_cut_after_fields_keeps_the_first_values_whatever_their_strings_hold(n, kept):
    assert json.loads(cut_after_fields(WHOLE, n)) == kept


def test_a_number_or_literal_value_ends_at_its_separator():
    assert json.loads(cut_after_fields('{"a": 12.5, "b": true , "c": null}', 2)) == {
        "a": 12.5, "b": True}
    assert cut_after_fields('{"a": 1}', 1) == '{"a": 1}'


def test_a_reply_with_fewer_fields_is_left_as_it_is():
    assert cut_after_fields('{"summary": "x"}', 2) == '{"summary": "x"}'
    assert cut_after_fields('{"summary": "x", "key_concepts": ["a"', 2).endswith('["a"')


def test_the_scanner_finds_the_end_across_pieces():
    scanner = FieldScanner(2)
    pieces = ['{"summary": "a', '", "key', '_concepts": ["x', '"],', ' "themes": []}']
    ends = [scanner.feed(piece) for piece in pieces]
    assert ends[:3] == [None, None, None]
    assert ends[3] == len("".join(pieces[:4])) - 1  # just after ']', before ','
    with pytest.raises(ValueError):
        FieldScanner(0)


def test_fields_stop_fires_on_the_token_that_completes_the_value():
    vocab = {1: '{"summary": "a"', 2: ', "key_concepts": ["x', 3: '"],', 4: ' "themes'}
    stop = FieldsStop(lambda ids: "".join(vocab[i] for i in ids).encode(), n_prompt=2, n=2)
    prompt = [7, 7]
    assert not stop(np.array(prompt + [1]), None)
    assert not stop(np.array(prompt + [1, 2]), None)
    assert stop(np.array(prompt + [1, 2, 3]), None)


def test_complete_cuts_every_backends_reply_and_keys_the_cache_by_it():
    llm = FakeLLM(['{"summary": "s", "key_concepts": ["k"], "themes": ["t"]}'] * 2)
    cut = llm.complete([{"role": "user", "content": "x"}], json_fields=2)
    assert json.loads(cut.text) == {"summary": "s", "key_concepts": ["k"]}
    plain = llm.complete([{"role": "user", "content": "x"}])
    assert "themes" in plain.text and "json_fields" not in llm.params[1]
