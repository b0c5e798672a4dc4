"""A bad line in the middle of a journal is not a torn tail: named, and nothing is changed."""

from __future__ import annotations

import hashlib

import pytest

from memlab.bench.runlog import CallJournal, read_jsonl
from memlab.errors import ConfigError

MIDDLES = {
    "nul_bytes": (b"\x00" * 64, "line 2 (byte offset 9) is not JSON"),
    "partial_json": (b'{"a": ', "line 2 (byte offset 9) is not JSON"),
    "invalid_utf8": (b'{"a": "\xff"}', "line 2 (byte offset 9) is not UTF-8"),
    "not_an_object": (b'"just a string"', "line 2 (byte offset 9) is not a JSON object"),
}


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("repair", [False, True])
@pytest.mark.parametrize("middle", MIDDLES)
def test_bad_middle_line_names_file_and_line_and_changes_nothing(tmp_path, middle, repair):
    bad, message = MIDDLES[middle]
    path = tmp_path / "turns.jsonl"
    path.write_bytes(b'{"a": 1}\n' + bad + b'\n{"a": 3}\n')
    before = digest(path)
    with pytest.raises(ConfigError, match="not a torn tail") as info:
        read_jsonl(path, repair=repair)
    assert str(path) in str(info.value) and message in str(info.value)
    assert digest(path) == before


def test_call_journal_refuses_a_record_that_is_not_a_call_entry(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"n": 0, "key": "k", "completion": {"text": "x"}}\n{"note": "hand edit"}\n')
    before = digest(path)
    with pytest.raises(ConfigError, match="record 2 is not a model-call entry") as info:
        CallJournal(path, fsync=False)
    assert str(path) in str(info.value) and digest(path) == before


def test_call_journal_refuses_a_bad_middle_line(tmp_path):
    path = tmp_path / "calls.jsonl"
    entry = b'{"n": 0, "key": "k", "completion": {"text": "x"}}\n'
    path.write_bytes(entry + b"\x00\x00\n" + entry.replace(b'"n": 0', b'"n": 1'))
    before = digest(path)
    with pytest.raises(ConfigError, match="line 2") as info:
        CallJournal(path, fsync=False)
    assert str(path) in str(info.value) and digest(path) == before
