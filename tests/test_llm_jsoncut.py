"""memlab.llm.jsoncut: a JSON reply ended after its first fields, or before a list element
that repeats an earlier one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memlab.llm.fake import FakeLLM
from memlab.llm.jsoncut import (
    FieldScanner,
    FieldsStop,
    RepeatScanner,
    RepeatStop,
    cut_after_fields,
    cut_repeats,
)

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


LOOPING = ('{"candidates": [{"subject": "gift", "content": "A \\"bowl\\" [old]."}, '
           '{"subject": "art", "content": "Paints."}, {"subject": "gift", "content": '
           '"A \\"bowl\\" [old]."}, {"subject": "art", "content": "Pai')


def test_cut_repeats_ends_the_list_before_its_first_repeated_element():
    assert json.loads(cut_repeats(LOOPING)) == {"candidates": [
        {"subject": "gift", "content": 'A "bowl" [old].'}, {"subject": "art", "content": "Paints."}]}
    # strings repeat too; each list has its own elements; later fields take their defaults
    assert json.loads(cut_repeats('{"a": ["x", "y", "x", "z"], "b": 1}')) == {"a": ["x", "y"]}
    assert json.loads(cut_repeats('{"a": ["x"], "b": ["x", "x"]}')) == {"a": ["x"], "b": ["x"]}


def test_a_reply_without_a_repeat_is_left_as_it_is():
    for text in ('{"a": ["x", "y"]}', '{"a": [{"s": "x", "c": 1}, {"s": "x", "c": 2}]}',
                 '{"a": [["x"], ["y", "x"]]}', '{"a": ["x", "y"'):
        assert cut_repeats(text) == text


def test_the_repeat_scanner_finds_the_cut_across_pieces():
    scanner = RepeatScanner()
    pieces = ['{"a": [{"s": "x"', '}, {"s": "y"}, ', '{"s": "x', '"}', ', {"s"']
    cuts = [scanner.feed(piece) for piece in pieces]
    assert cuts[:3] == [None, None, None]
    assert cuts[3] == len('{"a": [{"s": "x"}, {"s": "y"}')


def test_repeat_stop_fires_on_the_token_that_completes_the_repeat_and_waits_for_characters():
    vocab = {1: b'{"a": ["\xc3', 2: b'\xa9", "b", ', 3: b'"\xc3\xa9"', 4: b']}'}
    stop = RepeatStop(lambda ids: b"".join(vocab[i] for i in ids), n_prompt=1)
    assert not stop(np.array([9, 1]), None)  # half of "é": not yet a character
    assert not stop(np.array([9, 1, 2]), None)
    assert stop(np.array([9, 1, 2, 3]), None)
    assert stop.scanner.cut == len('{"a": ["é", "b"')


def test_complete_cuts_repeats_in_every_backends_reply_and_keys_the_cache_by_it():
    llm = FakeLLM([LOOPING + '"}]}'] * 2)
    cut = llm.complete([{"role": "user", "content": "x"}], json_repeats=True)
    assert len(json.loads(cut.text)["candidates"]) == 2 and llm.params[0]["json_repeats"]
    plain = llm.complete([{"role": "user", "content": "x"}])
    assert plain.text.count('"gift"') == 2 and "json_repeats" not in llm.params[1]
