"""``memlab namespaces`` against a real redis-server on loopback (issue 42, item 12): the
namespaces runs leave on Redis, listed with their key counts and runs, removed on request,
a running run's and everything outside memlab's keys never."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_helpers import visible_lines

from memlab import cli
from memlab.bench.runlog import run_lock
from memlab.stores.base import run_namespace
from memlab.stores.kv import RedisKV

pytestmark = pytest.mark.services

RUN = ["run", "-s", "ltm", "--span", "200", "--llm", "fake", "--embedder", "hashing"]


@pytest.fixture
def two_runs(tmp_path, monkeypatch, redis_server) -> tuple[Path, Path, RedisKV]:
    """Two finished full_context runs (their history on Redis) and a key of someone else's."""
    monkeypatch.setenv("MEMLAB_REDIS_URL", redis_server.url)
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    raw = RedisKV(redis_server.url)
    raw.client.flushdb()
    raw.set("someone-elses-key", "keep me")
    for seed in ("0", "1"):
        assert cli.main([*RUN, "-c", "full_context", "--seed", seed, "--out", "out"]) == 0
    return (tmp_path / "out" / "ltm-full_context-200-s0",
            tmp_path / "out" / "ltm-full_context-200-s1", raw)


def keys_of(raw: RedisKV, run: Path) -> int:
    return len(raw.keys(f"memlab:{run_namespace(run)}:"))


def table(out: str) -> dict[str, list[str]]:
    """namespace -> the rest of its line, from the listing."""
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line and not line.startswith(("namespace", "removed")) and "namespace(s)" not in
            line and "belong to" not in line}


def test_lists_each_runs_namespace_with_its_keys_and_removes_nothing(two_runs, capsys):
    first, second, raw = two_runs
    capsys.readouterr()
    assert cli.main(["namespaces", "--results", "out"]) == 0
    out = capsys.readouterr().out
    rows = table(out)
    for run in (first, second):
        keys = keys_of(raw, run)
        assert keys > 0
        assert rows[run_namespace(run)][:2] == [str(keys), f"out/{run.name}"]
        assert "(complete)" in rows[run_namespace(run)]
    assert "2 of them belong to finished runs: --remove-finished removes them" in out
    assert keys_of(raw, first) > 0 and raw.get("someone-elses-key") == "keep me"


def test_remove_finished_spares_a_running_run_and_other_keys(two_runs, capsys):
    first, second, raw = two_runs
    kept = keys_of(raw, second)
    with run_lock(second):  # a process is writing the second run
        assert cli.main(["namespaces", "--results", "out", "--remove-finished"]) == 0
        out = capsys.readouterr().out
        assert f"removed {run_namespace(first)}" in out
        assert "(running)" in table(out)[run_namespace(second)]
        line = fails(capsys, ["namespaces", "--results", "out", "--remove",
                              run_namespace(second)])
        assert "is running" in line and "never removed" in line
    assert keys_of(raw, first) == 0 and keys_of(raw, second) == kept
    assert raw.get("someone-elses-key") == "keep me"
    assert cli.main(["namespaces", "--results", "out", "--remove", run_namespace(second)]) == 0
    assert keys_of(raw, second) == 0 and raw.get("someone-elses-key") == "keep me"


def test_a_namespace_without_a_run_is_listed_and_removed_only_by_name(two_runs, capsys):
    first, _, raw = two_runs
    capsys.readouterr()
    assert cli.main(["namespaces", "--results", "elsewhere", "--remove-finished"]) == 0
    out = capsys.readouterr().out
    assert "removed" not in out and "- (no run folder under elsewhere)" in out
    assert keys_of(raw, first) > 0
    line = fails(capsys, ["namespaces", "--remove", "no-such.0000"])
    assert "--remove 'no-such.0000'" in line and "no such namespace" in line


def test_without_a_redis_url_says_what_to_set(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MEMLAB_REDIS_URL", raising=False)
    assert "MEMLAB_REDIS_URL is not set" in fails(capsys, ["namespaces"])


def fails(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
