"""Files and folders a user names: read them, or write into them, with one clear error.

A problem with a path the user gave (missing, a file where a folder belongs, unreadable, not
UTF-8, read-only) is a ConfigError naming the path and what to do, never a traceback.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from memlab.errors import ConfigError

NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)
# the empty file that marks a folder memlab made (and so may delete things in)
OWNED_MARK = ".memlab-owned"
_PROBE_PREFIX = ".memlab-write-check-"


@contextmanager
def open_text(path: str | Path, what: str) -> Iterator[TextIO]:
    """``path`` opened as UTF-8 text (newlines untranslated, as ``csv`` wants).

    A read problem inside the block, decoding included, becomes a ConfigError naming ``what``
    (e.g. "grid spec") and the file.
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            yield fh
    except FileNotFoundError:
        raise ConfigError(f"{what} {str(path)!r}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} {str(path)!r}: is a folder; give the file") from None
    except PermissionError:
        raise ConfigError(f"{what} {str(path)!r}: cannot be read (permission denied); fix its "
                          "permissions") from None
    except UnicodeDecodeError:
        offset, byte = first_bad_utf8(path)
        raise ConfigError(f"{what} {str(path)!r}: not UTF-8 text (byte 0x{byte:02x} at offset "
                          f"{offset}); save it as UTF-8") from None


def first_bad_utf8(path: Path, chunk: int = 1 << 20) -> tuple[int, int]:
    """The file offset and value of the first byte of ``path`` that is not valid UTF-8.

    A decoding error raised while streaming gives a position in some buffer, not in the file.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                pending = len(exc.object) - len(block)  # bytes held from the previous block
                return done - pending + exc.start, exc.object[exc.start]
            done += len(block)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:  # a character cut off by the end of the file
        return done - len(exc.object) + exc.start, exc.object[exc.start]
    return done, 0


def read_text(path: str | Path, what: str) -> str:
    """The whole of ``path`` as UTF-8 text (errors as ``open_text``)."""
    with open_text(path, what) as fh:
        return fh.read()


def load_yaml(path: str | Path, what: str) -> Any:
    """The YAML document in ``path``; a syntax error is one line naming the file and place."""
    import yaml

    text = read_text(path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{what} {str(path)!r}: not valid YAML ({problem}{where})") from None


def parse_json(text: str | bytes, path: str | Path, what: str, where: str = "") -> Any:
    """``text`` (read from ``path``, at ``where`` in it: "line 3", "row 4: field 'x'") as JSON.

    ``text`` given as bytes is the whole file, decoded here (a bad byte is named by its offset).

    Raises:
        ConfigError: bytes that are not UTF-8, not valid JSON, or JSON nested more deeply than
            Python's reader follows (it would raise RecursionError); one line naming ``what``,
            the file and the place.
    """
    name = f"{what} {str(path)!r}: " + (f"{where}: " if where else "")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{name}not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                              f"offset {exc.start}); save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name}not valid JSON ({exc.msg} at line {exc.lineno}, column "
                          f"{exc.colno})") from None
    except RecursionError:
        raise ConfigError(f"{name}JSON nested too deeply to read (rule: at most about "
                          f"{sys.getrecursionlimit():,} levels of lists and objects)") from None


def load_json(path: str | Path, what: str) -> Any:
    """The JSON document in ``path`` (errors as ``open_text`` and ``parse_json``)."""
    return parse_json(read_text(path, what), path, what)


def existing_folder(path: str | Path, what: str) -> Path:
    """``path`` as a folder that exists (to read from).

    Raises:
        ConfigError: nothing is at ``path``, or a file is; the message names the path.
    """
    path = Path(path)
    if not path.is_dir():
        problem = "is a file, not a folder" if path.exists() else "no such folder"
        raise ConfigError(f"{what} {str(path)!r}: {problem}")
    return path


def writable_folder(path: str | Path, what: str) -> Path:
    """``path`` as a folder this process can write into, created when missing.

    Raises:
        ConfigError: ``path`` (or a folder above it) is a file, or it cannot be created or
            written (permissions, a read-only file system); the message names the path.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
        raise ConfigError(f"{what} {str(path)!r}: {str(blocker)!r} is a file, not a folder; "
                          "give a folder path") from None
    except OSError as exc:
        if exc.errno not in NOT_WRITABLE:
            raise
        raise ConfigError(f"{what} {str(path)!r}: cannot be created ({exc.strerror}); choose "
                          "a folder you can write to") from None
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=_PROBE_PREFIX)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if exc.errno not in NOT_WRITABLE:
            raise
        raise ConfigError(f"{what} {str(path)!r}: not writable ({exc.strerror}); choose a "
                          "folder you can write to or fix its permissions") from None
    return path


def claim_folder(path: str | Path, what: str, *, marks: tuple[str, ...] = (OWNED_MARK,)) -> Path:
    """``path`` as a folder a command may delete things in: memlab deletes only what it created.

    A missing or empty folder is created and marked with an empty ``marks[0]`` file; a folder
    holding any of ``marks`` was made by memlab and is taken as it is.

    Raises:
        ConfigError: ``path`` holds other files and none of ``marks`` (memlab did not make it),
            or cannot be written (as ``writable_folder``); the message names ``what`` and path.
    """
    path = writable_folder(path, what)
    if not any((path / mark).exists() for mark in marks):
        if any(not p.name.startswith(_PROBE_PREFIX) for p in path.iterdir()):
            raise ConfigError(f"{what} {str(path)!r}: holds files memlab did not create, and "
                              "memlab deletes only what it created; give a new or empty folder")
        (path / marks[0]).touch()
    return path
