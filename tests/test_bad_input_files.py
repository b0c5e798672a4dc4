"""memlab.userfiles: a user's file that cannot be read as UTF-8 text, YAML or a folder is one
ConfigError naming the path, the place and what to do; nothing is written."""

from __future__ import annotations

import random

import pytest
from faults_helpers import digest

from memlab.errors import ConfigError
from memlab.userfiles import first_bad_utf8, load_yaml, open_text, writable_folder


def test_the_first_bad_byte_is_found_at_its_file_offset_across_read_blocks(tmp_path):
    rng, path = random.Random(7), tmp_path / "f"
    for _ in range(500):
        data = bytes(rng.choice(b"a\xc3\xa9\xe2\x82\xac\xff\n") for _ in range(rng.randint(1, 40)))
        try:
            data.decode("utf-8")
            continue
        except UnicodeDecodeError as exc:
            expected = (exc.start, data[exc.start])
        path.write_bytes(data)
        assert {first_bad_utf8(path, chunk) for chunk in (1, 2, 3, 7, 1 << 20)} == {expected}


def test_a_bad_byte_deep_in_a_streamed_file_is_named_with_its_real_offset(tmp_path):
    path = tmp_path / "contexts.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 200_000 + b'{"b": "\xff"}\n')  # past the reader's buffers
    with pytest.raises(ConfigError, match=rf"byte 0xff at offset {9 * 200_000 + 7}\)"):
        with open_text(path, "contexts file") as fh:
            for _ in fh:
                pass


def test_yaml_errors_are_one_line_with_line_and_column(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\nspans:\n  ltm: [200\n  persona: 3\n")
    with pytest.raises(ConfigError) as info:
        load_yaml(path, "grid spec")
    assert "\n" not in str(info.value) and "line 4, column" in str(info.value)


@pytest.mark.parametrize("layout, target, blocker", [
    ("file", "results", "results"), ("file", "results/run", "results"),
    ("nested", "a/b/c/run", "a/b")])
def test_a_file_in_the_way_of_a_folder_is_named(tmp_path, layout, target, blocker):
    if layout == "file":
        (tmp_path / "results").write_text("x")
    else:
        (tmp_path / "a").mkdir()
        (tmp_path / "a" / "b").write_text("x")
    before = digest(tmp_path)
    with pytest.raises(ConfigError, match=f"'{tmp_path / blocker}' is a file, not a folder"):
        writable_folder(tmp_path / target, "results folder")
    assert digest(tmp_path) == before


def test_a_writable_folder_is_made_and_left_empty(tmp_path):
    folder = writable_folder(tmp_path / "x" / "y", "results folder")
    assert folder.is_dir() and list(folder.iterdir()) == []


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1.0", "2.0", '"1"'])
def test_a_score_that_is_not_a_number_in_range_stops_the_report_naming_it(tmp_path, value):
    from test_report_fixtures import write_run

    from memlab.bench.tables import load_runs
    from memlab.report.data import scores_frame

    folder = write_run(tmp_path, "rag", "ltm", 0, 1000)
    path = folder / "scores.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"score": 1.0', f'"score": {value}').replace(
        '"score": 0.0', f'"score": {value}')
    path.write_text("\n".join(lines) + "\n")
    before = digest(tmp_path)
    for read in (scores_frame, load_runs):
        with pytest.raises(ConfigError, match=r"scores.jsonl: line 3 \(test '.*'\): score"):
            read(tmp_path)
    assert digest(tmp_path) == before


def test_a_manifest_that_is_not_json_stops_the_report_naming_it(tmp_path):
    from test_report_fixtures import write_run

    from memlab.report.data import runs_frame

    folder = write_run(tmp_path, "rag", "ltm", 0, 1000)
    (folder / "manifest.json").write_text('{"status": "comp')
    with pytest.raises(ConfigError, match="manifest.json': not valid JSON"):
        runs_frame(tmp_path)
