"""A full disk and a read-only results folder, on real file systems (a small tmpfs, a read-only
bind mount, mounted in an unprivileged user namespace): one line, exit 1 or 2, the manifest says
``failed``, nothing else changes, and the run resumes once there is room."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest
from faults_helpers import digest, memlab_cli, unshare_prefix, visible_lines
from test_runner import TinySuite, comparable, fake_reply, run

from memlab.bench.failures import RESERVE_FILE, disk_full, disk_full_error
from memlab.bench.runlog import JsonlWriter, write_json_atomic
from memlab.errors import RunFailedError, StoreError
from memlab.llm.fake import FakeLLM

RUN = ["run", "-c", "rag", "-s", "ltm", "--span", "400", "--llm", "fake", "--embedder",
       "hashing"]
RUN_ID = "ltm-rag-400-s0"


@pytest.fixture
def cache_env(tmp_path) -> dict[str, str]:
    return {"MEMLAB_CACHE_DIR": str(tmp_path / "cache")}


def test_a_full_disk_ends_the_run_failed_then_it_resumes_once_there_is_room(tmp_path,
                                                                             cache_env):
    clean = tmp_path / "clean"  # its own cache: turns record whether an answer was cached
    assert memlab_cli(*RUN, "--out", str(clean),
                      env={"MEMLAB_CACHE_DIR": str(tmp_path / "clean-cache")}).returncode == 0
    mount, save = tmp_path / "mnt", tmp_path / "save"
    mount.mkdir()
    other = save / "ltm-vanilla-100-s0"  # a finished run already in the folder
    assert memlab_cli(*RUN[:2], "vanilla", *RUN[3:6], "100", *RUN[7:], "--out", str(save),
                      env={"MEMLAB_CACHE_DIR": str(tmp_path / "other-cache")}).returncode == 0
    kept = digest(other)
    # room for the finished run and about 600 KB more: the run fills it mid-way (its store
    # alone needs more); the tmpfs ends with the namespace, so what the command left is copied
    # back to the host disk
    used = sum(-(-p.stat().st_size // 4096) * 4096 for p in save.rglob("*") if p.is_file())
    size = used // 1024 + 600
    prefix = unshare_prefix(f"mount -t tmpfs -o size={size}k tmpfs {mount} && "
                            f"cp -a {save}/. {mount}/", after=f"cp -a {mount}/. {save}/")
    done = memlab_cli(*RUN, "--out", str(mount), env=cache_env, prefix=prefix)
    lines = visible_lines(done.stderr)
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "No space left on device" in lines[0] and RUN_ID in lines[0]
    assert "free some space and run the command again" in lines[0]
    manifest = json.loads((save / RUN_ID / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"]
    assert not (save / RUN_ID / RESERVE_FILE).exists()
    assert digest(other) == kept
    resumed = memlab_cli(*RUN, "--out", str(save), env=cache_env)  # room again: the host disk
    assert resumed.returncode == 0, resumed.stderr
    assert comparable(save / RUN_ID / "turns.jsonl") == comparable(clean / RUN_ID / "turns.jsonl")
    assert (save / RUN_ID / "scores.jsonl").read_bytes() == \
        (clean / RUN_ID / "scores.jsonl").read_bytes()


@pytest.mark.parametrize("where", ["new run", "existing run"])
def test_a_read_only_results_folder_is_refused_in_one_line(tmp_path, cache_env, where):
    out = tmp_path / "out"
    if where == "existing run":  # a killed run to resume, on a file system now read-only
        assert memlab_cli(*RUN, "--out", str(out), env=cache_env).returncode == 0
        path = out / RUN_ID / "manifest.json"
        path.write_text(path.read_text().replace('"complete"', '"running"'))
    else:
        out.mkdir()
    before = digest(out)
    prefix = unshare_prefix(f"mount --bind {out} {out} && mount -o remount,bind,ro {out}")
    done = memlab_cli(*RUN, "--out", str(out), env=cache_env, prefix=prefix)
    lines = visible_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"{out}" in lines[0] and "Read-only file system" in lines[0]
    assert "choose a folder you can write to" in lines[0]
    assert digest(out) == before


def test_a_journal_write_on_a_full_device_names_the_file(tmp_path):
    full = Path("/dev/full")
    writer = JsonlWriter(full, fsync=False)
    with pytest.raises(OSError) as raised:
        writer.write({"a": 1})
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(full)
    writer.close()  # the unflushed record is dropped with a warning, not raised again
    with pytest.raises(OSError) as raised:
        write_json_atomic(tmp_path / "nowhere" / "manifest.json", {"a": 1})
    assert raised.value.filename.startswith(str(tmp_path / "nowhere" / "manifest.json"))


def test_disk_full_is_recognised_however_a_library_words_it(tmp_path):
    wrapped = StoreError("chroma at x: InternalError: database or disk is full")
    assert disk_full(wrapped) and disk_full(OSError(errno.ENOSPC, "No space left on device"))
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise StoreError("chroma: Failed to apply logs") from inner
    except StoreError as outer:
        assert disk_full(outer)
        converted = disk_full_error(outer, tmp_path)
        assert isinstance(converted, OSError) and converted.filename == str(tmp_path)
    assert not disk_full(StoreError("connection refused"), tmp_path)  # a disk with room
    plain = ValueError("x")
    assert disk_full_error(plain, tmp_path) is plain


def test_the_reserved_room_is_given_back_when_a_run_ends(tmp_path):
    done = run(TinySuite(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path / "a",
               progress=False)
    assert not (done / RESERVE_FILE).exists()

    def down(messages):
        from memlab.errors import LLMTimeoutError

        raise LLMTimeoutError("down")

    with pytest.raises(RunFailedError):
        run(TinySuite(), "vanilla", llm=FakeLLM([down]), results_dir=tmp_path / "b",
            progress=False)
    failed = next((tmp_path / "b").iterdir())
    assert not (failed / RESERVE_FILE).exists()
    shutil.rmtree(tmp_path / "a")


def test_a_full_disk_error_naming_no_file_names_the_run_folder(tmp_path):
    """A write or fsync on an open file fails with ENOSPC and no file name: the line the
    command prints must still say which run to resume."""
    bare = disk_full_error(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "run")
    assert bare.errno == errno.ENOSPC and bare.filename == str(tmp_path / "run")
    named = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "run" / "a.jsonl"))
    assert disk_full_error(named, tmp_path / "run") is named
