"""User mistakes at the ``memlab`` command, tried as a user would: each ends with exit status 2
(the user's mistake) or 1 (the environment), one line naming the file or field and what to do,
and every file already in the working folder (a finished run included) unchanged."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from faults_helpers import digest, visible_lines

from memlab import cli

RUN = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
       "--embedder", "hashing"]
RUN_ID = "ltm-vanilla-200-s0"
GOOD_RESULT = {"task_log": [], "actual_responses": ["red"], "score": 1.0, "max_score": 1.0,
               "reasoning": ["ok"], "expected_responses": ["red"]}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A complete run folder (``out/<RUN_ID>``) made once by ``memlab run``."""
    root = tmp_path_factory.mktemp("finished")
    mp = pytest.MonkeyPatch()
    mp.setenv("MEMLAB_CACHE_DIR", str(root / "cache"))
    try:
        assert cli.main([*RUN, "--out", str(root / "out"), ]) == 0
    finally:
        mp.undo()
    return root / "out"


@pytest.fixture
def workdir(tmp_path, monkeypatch, finished) -> Path:
    """A user's working folder holding a finished run in ``out/``; the cache lives elsewhere."""
    work = tmp_path / "work"
    shutil.copytree(finished, work / "out")
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(work)
    return work


def write(path: str, data: bytes | str) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if isinstance(data, bytes) else data.encode())
    return setup


def result_file(**changes) -> Callable[[Path], None]:
    text = json.dumps(GOOD_RESULT | changes, allow_nan=True)
    return write("published/agent/Colours/0_0.json", text)


def env(**values: str) -> dict[str, str]:
    return {f"MEMLAB_{k.upper()}": v for k, v in values.items()}


def nothing(work: Path) -> None:
    return None


SPEC_OK = "name: mine\nspans: {ltm: [200]}\nconditions: [vanilla]\nsuites: [ltm]\n"

# (id, setup, argv, environment, exit status, words the one line must hold)
CASES = [
    ("option_another_command_has", nothing, [*RUN, "--results", "out"], {}, 2,
     ["memlab run: error: unrecognized arguments: --results out", "memlab run --help"]),
    ("out_is_a_file", write("afile", "x"), [*RUN, "--out", "afile"], {}, 2,
     ["'afile' is a file", "give a folder"]),
    ("out_below_a_file", write("afile", "x"), [*RUN, "--out", "afile/sub"], {}, 2,
     ["'afile' is a file"]),
    ("grid_results_is_a_file", nothing,
     ["grid", "--spec", "quick", "--llm", "fake", "--embedder", "hashing", "--results",
      f"out/{RUN_ID}/manifest.json"], {}, 2, ["results folder", "manifest.json' is a file"]),
    ("paper_figures_is_a_file", write("afile", "x"),
     ["paper", "--figures", "afile", "--results", "out", "--llm", "fake"], {}, 2,
     ["figures folder 'afile'", "is a file"]),
    ("serve_workdir_is_a_file", write("afile", "x"),
     ["serve", "--workdir", "afile", "--llm", "fake", "--embedder", "hashing", "--port",
      "47123"], {}, 2, ["--workdir 'afile'", "is a file"]),
    ("spec_not_utf8", write("spec.yaml", b"name: \xff\xfe\n"), ["grid", "--spec", "spec.yaml"],
     {}, 2, ["grid spec 'spec.yaml'", "not UTF-8", "offset 6"]),
    ("spec_bad_yaml", write("spec.yaml", "name: x\nspans: {ltm: [200]\n"),
     ["grid", "--spec", "spec.yaml"], {}, 2, ["spec.yaml", "not valid YAML", "line 3"]),
    ("spec_unknown_field", write("spec.yaml", SPEC_OK + "seed: [5]\n"),
     ["grid", "--spec", "spec.yaml"], {}, 2, ["spec.yaml", "field 'seed'", "Extra inputs"]),
    ("spec_a_list", write("spec.yaml", "- rag\n- sleep\n"), ["grid", "--spec", "spec.yaml"], {},
     2, ["spec.yaml", "expected a mapping"]),
    ("spec_span_not_a_number", write("spec.yaml", "name: x\nspans: {ltm: [lots]}\n"),
     ["grid", "--spec", "spec.yaml"], {}, 2, ["field 'spans.ltm.0'"]),
    ("spec_span_too_long", write("spec.yaml", "name: x\nsuites: [ltm]\nspans: {ltm: [10000000]}\n"),
     ["grid", "--spec", "spec.yaml", "--llm", "fake"], {}, 2, ["field 'span'", "131072"]),
    ("spec_unknown_llm", write("spec.yaml", SPEC_OK + "llm: nosuchllm\n"),
     ["grid", "--spec", "spec.yaml"], {}, 2, ["nosuchllm"]),
    ("spec_is_a_folder", lambda w: (w / "specs.yaml").mkdir(), ["grid", "--spec", "specs.yaml"],
     {}, 2, ["specs.yaml", "nor a YAML file"]),
    ("grid_workers_negative", nothing, ["grid", "--workers", "-3"], {}, 2,
     ["--workers", "must not be negative"]),
    ("grid_seeds_repeat", nothing, ["grid", "--seeds", "0,0", "--llm", "fake"], {}, 2,
     ["cells repeat"]),
    ("grid_seeds_not_numbers", nothing, ["grid", "--seeds", "a,b"], {}, 2,
     ["argument --seeds: 'a' in 'a,b' is not a whole number"]),
    ("grid_unknown_condition", nothing, ["grid", "--conditions", "rag,telepathy"], {}, 2,
     ["field 'conditions'", "telepathy"]),
    ("span_in_float_notation", nothing, [*RUN[:5], "--span", "1e8"], {}, 2,
     ["--span", "whole number", "'1e8'"]),
    ("span_too_long", nothing, [*RUN[:5], "--span", "100000000", *RUN[7:]], {}, 2,
     ["field 'span'", "131072"]),
    ("span_zero", nothing, [*RUN[:5], "--span", "0"], {}, 2, ["--span", "at least 1"]),
    ("seed_negative", nothing, [*RUN, "--seed", "-1"], {}, 2, ["--seed", "must not be negative"]),
    ("n_ctx_not_a_number", nothing, [*RUN, "--out", "fresh"], env(n_ctx="abc"), 2,
     ["MEMLAB_N_CTX='abc'", "valid integer"]),
    ("n_ctx_too_small", nothing, [*RUN, "--out", "fresh"], env(n_ctx="12"), 2,
     ["MEMLAB_N_CTX='12'", "greater than or equal to 512"]),
    ("max_retries_negative", nothing, [*RUN, "--out", "fresh"], env(max_retries="-1"), 2,
     ["MEMLAB_MAX_RETRIES"]),
    ("failed_share_above_one", nothing, [*RUN, "--out", "fresh"], env(max_failed_share="2"), 2,
     ["MEMLAB_MAX_FAILED_SHARE", "less than or equal to 1"]),
    ("local_size_unknown", nothing, [*RUN, "--out", "fresh"], env(local_size="7b"), 2,
     ["MEMLAB_LOCAL_SIZE='7b'", "'0.5b', '1.5b' or '135m'"]),
    ("cache_dir_is_a_file", write("cachefile", "x"), [*RUN, "--out", "fresh"],
     {"MEMLAB_CACHE_DIR": "cachefile"}, 2, ["MEMLAB_CACHE_DIR", "'cachefile' is a file"]),
    ("cache_file_corrupt", write("cache2/llm_cache.sqlite", b"SQLite? no, garbage\n" * 50),
     [*RUN, "--out", "fresh"], {"MEMLAB_CACHE_DIR": "cache2"}, 1,
     ["LLM response cache cache2/llm_cache.sqlite", "not a database", "delete it"]),
    ("rescore_empty_folder", lambda w: (w / "published").mkdir(),
     ["goodai-rescore", "published"], {}, 2, ["published", "no GoodAI result files"]),
    ("rescore_missing_folder", nothing, ["goodai-rescore", "nowhere"], {}, 2,
     ["results folder 'nowhere': no such folder"]),
    ("rescore_nan_score", result_file(score=float("nan")), ["goodai-rescore", "published"], {},
     2, ["0_0.json", "field 'score'", "finite number"]),
    ("rescore_infinite_max", result_file(max_score=float("inf")),
     ["goodai-rescore", "published"], {}, 2, ["field 'max_score'", "finite number"]),
    ("rescore_negative_score", result_file(score=-1.0), ["goodai-rescore", "published"], {}, 2,
     ["field 'score'", "greater than or equal to 0"]),
    ("rescore_not_utf8", write("published/agent/Colours/0_0.json", b'{"score": "\xff"}'),
     ["goodai-rescore", "published"], {}, 2, ["GoodAI result", "0_0.json", "not UTF-8"]),
    ("rescore_truncated_json", write("published/agent/Colours/0_0.json", '{"score": 1.0, "ma'),
     ["goodai-rescore", "published"], {}, 2, ["0_0.json", "Invalid JSON"]),
    ("serve_port_out_of_range", nothing, ["serve", "--port", "70000"], {}, 2,
     ["--port", "0..65535", "70000"]),
    ("lab_port_not_a_number", nothing, ["lab", "--port", "http"], {}, 2,
     ["--port", "whole number"]),
    ("serve_host_not_here", nothing,
     ["serve", "--host", "10.255.255.1", "--port", "47124", "--llm", "fake", "--embedder",
      "hashing", "--workdir", "srv"], {"MEMLAB_API_TOKEN": "secret"}, 2,
     ["10.255.255.1:47124", "Cannot assign requested address"]),
    ("another_runs_folder", nothing, [*RUN[:-1], "minilm", "--out", "out"], {}, 2,
     [RUN_ID, "embedder", "recorded 'hashing', now 'minilm'", "use another results folder"]),
    ("manifest_not_json", write(f"out/{RUN_ID}/manifest.json", '{"status": "compl'),
     [*RUN, "--out", "out"], {}, 2, ["run manifest", "manifest.json", "not valid JSON"]),
    ("grid_scheduler_not_an_address", nothing,
     ["grid", "--spec", "quick", "--llm", "fake", "--scheduler", "bogus", "--results", "g"], {},
     2, ["--scheduler 'bogus'", "not a Dask scheduler address", "tcp://"]),
    ("spec_no_conditions", write("spec.yaml", "name: x\nconditions: []\nspans: {ltm: [200]}\n"),
     ["grid", "--spec", "spec.yaml", "--llm", "fake"], {}, 2,
     ["field 'conditions'", "at least 1 item"]),
    ("paper_results_is_a_file", write("afile", "x"),
     ["paper", "--results", "afile", "--llm", "fake", "--embedder", "hashing"], {}, 2,
     ["results folder 'afile'", "is a file"]),
    ("llm_from_environment_unknown", nothing, [*RUN[:7], *RUN[9:], "--out", "fresh"],
     env(llm="nosuch"), 2, ["field 'llm'", "unknown LLM provider 'nosuch'", "known: local"]),
    ("local_model_tier_unknown", nothing,
     [*RUN[:8], "local", "--llm-model", "7b", *RUN[9:], "--out", "fresh"], {}, 2,
     ["--llm-model", "no GGUF file at 7b", "0.5b, 1.5b, 135m"]),
    ("openai_without_a_server", nothing, [*RUN[:8], "openai", *RUN[9:], "--out", "fresh"], {},
     2, ["MEMLAB_OPENAI_BASE_URL"]),
    ("turns_bad_line_mid_file", None, [*RUN, "--out", "out"], {}, 2,
     ["turns.jsonl", "line 3", "not a torn tail"]),
]


def _corrupt_turns(work: Path) -> None:
    path = work / "out" / RUN_ID / "turns.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"\x00\x00 not json"
    path.write_bytes(b"\n".join(lines))
    manifest = work / "out" / RUN_ID / "manifest.json"  # a killed run: not complete
    manifest.write_text(manifest.read_text().replace('"complete"', '"running"'))


SETUPS = {"turns_bad_line_mid_file": _corrupt_turns}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake_is_one_line_and_changes_nothing(case, workdir, monkeypatch, capsys):
    name, setup, argv, environment, status, words = case
    (setup or SETUPS[name])(workdir)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    refused_in_one_line(argv, status, words, workdir, capsys)


def refused_in_one_line(argv: list[str], status: int, words: list[str], workdir: Path,
                        capsys) -> None:
    """``memlab <argv>`` exits ``status`` with one line holding ``words``, no traceback, and
    ``workdir`` unchanged."""
    before = digest(workdir)
    assert call_main(argv) == status
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    assert_unchanged(before, digest(workdir))


def call_main(argv: list[str]) -> int:
    """``memlab <argv>`` in this process: its exit status (argparse exits by SystemExit)."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


EMPTY = digest_of_empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def assert_unchanged(before: dict[str, str], after: dict[str, str]) -> None:
    """Every file is as it was; the only new file allowed is an empty (released) run lock."""
    changed = {f for f in before if after.get(f) != before[f]}
    added = {f for f in after if f not in before
             and not (f.endswith("run.lock") and after[f] == EMPTY)}
    assert not changed and not added, f"changed: {sorted(changed)}, added: {sorted(added)}"


def test_serving_on_a_port_in_use_is_refused_in_one_line(workdir, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        before = digest(workdir)
        assert call_main(["serve", "--port", port, "--llm", "fake", "--embedder", "hashing",
                          "--workdir", "srv"]) == 2
    lines = visible_lines(capsys.readouterr().err)
    assert len(lines) == 1 and f"--port {port}" in lines[0] and "already in use" in lines[0]
    assert_unchanged(before, digest(workdir))
