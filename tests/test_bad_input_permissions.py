"""Files and folders the user cannot read or write: exit 2, one line naming the path and what to
do, nothing changed. Run with permissions binding (``faults_helpers.without_root``)."""

from __future__ import annotations

import json

import pytest
from faults_helpers import digest, memlab_cli, visible_lines, without_root

RUN = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake", "--embedder",
       "hashing"]
RUN_ID = "ltm-vanilla-200-s0"


def unreadable_spec(work):
    (work / "spec.yaml").write_text("name: x\nspans: {ltm: [200]}\n")
    (work / "spec.yaml").chmod(0)
    return ["grid", "--spec", "spec.yaml"], ["grid spec 'spec.yaml'", "cannot be read",
                                            "permission denied"]


def unreadable_result(work):
    path = work / "published" / "agent" / "Colours" / "0_0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"score": 1.0, "max_score": 1.0}))
    path.chmod(0)
    return ["goodai-rescore", "published"], ["GoodAI result", "0_0.json", "cannot be read"]


def unwritable_results(work):
    (work / "out").mkdir()
    (work / "out").chmod(0o555)
    return [*RUN, "--out", "out"], [f"run folder 'out/{RUN_ID}'", "cannot be created",
                                    "Permission denied", "choose a folder you can write to"]


def unwritable_run_folder(work):
    assert memlab_cli(*RUN, "--out", "out", cwd=work).returncode == 0
    manifest = work / "out" / RUN_ID / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"complete"', '"running"'))  # to resume
    (work / "out" / RUN_ID).chmod(0o555)
    return [*RUN, "--out", "out"], [f"run folder 'out/{RUN_ID}'", "not writable",
                                    "Permission denied"]


def unwritable_cache(work):
    (work / "cache").mkdir()
    (work / "cache").chmod(0o555)
    return [*RUN, "--out", "fresh"], ["LLM cache folder (MEMLAB_CACHE_DIR) 'cache'",
                                      "not writable"]


@pytest.mark.parametrize("case", [unreadable_spec, unreadable_result, unwritable_results,
                                  unwritable_run_folder, unwritable_cache])
def test_a_path_without_permission_is_named_in_one_line(case, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    argv, words = case(work)
    before = digest(work)
    done = memlab_cli(*argv, cwd=work, prefix=without_root(),
                      env={"MEMLAB_CACHE_DIR": "cache" if case is unwritable_cache
                           else str(tmp_path / "cache")})
    lines = visible_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert digest(work) == before
