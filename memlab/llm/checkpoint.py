"""Long prompt reads kept on disk, so a run killed and resumed does not pay for them again.

full_context's first answer on a long conversation reads the whole history: a 32k-token
prompt takes the 1.5B some 37 minutes on 2 cores (``memlab.gridcost``). A grid runs in pieces,
and a run stopped during or after that read paid it again on resume, since the evaluated state
lived only in the process. ``DiskStates`` evaluates such a prompt in chunks of ``every`` tokens
and writes the sequence's KV cells after each (llama.cpp's ``llama_state_seq_save_file``,
about 28 KB a token on the 1.5B), so a resumed run restores the longest checkpoint its prompt
starts with and reads only the rest. A checkpoint a longer one extends is deleted; past
``capacity_bytes`` the least recently used go.

The chunks are multiples of llama.cpp's batch and start where the call's own read starts, so
the prompt is evaluated in the same batches as without checkpoints, and a restored state is
the bytes that were evaluated: the answer is the one an uninterrupted run gives.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from memlab.llm.prefix import SEQ, common_prefix, make_live

EVERY = 4096  # tokens between checkpoints: a multiple of the batch (512)
MIN_NEW = 4096  # a call reading fewer new tokens writes none and looks for none
SUFFIX = ".kv"


class DiskStates:
    """The checkpoints of one model, in ``folder`` (shared by the processes that run it).

    Args:
        folder: where the checkpoints live (one folder per model file, window and attention).
        capacity_bytes: the most disk they take; the least recently used go first.
        every: tokens between checkpoints, a multiple of the model's batch.
        min_new: the fewest new tokens a call must read for checkpoints to be used.
    """

    def __init__(self, folder: Path, capacity_bytes: int, *, every: int = EVERY,
                 min_new: int = MIN_NEW):
        self.folder, self.capacity_bytes = Path(folder), capacity_bytes
        self.every, self.min_new = every, min_new
        self.restored = self.written = 0  # how often, for tests and benchmarks

    def prepare(self, llama: Any, tokens: list[int], reused: int) -> int:
        """Restore the longest checkpoint ``tokens`` start with when it beats the ``reused``
        tokens already live, then read the prompt up to its last whole chunk, writing a
        checkpoint after each; the tokens this call did not evaluate (restored or reused)."""
        if len(tokens) - reused < self.min_new or llama.n_batch <= 0 or self.every % llama.n_batch:
            return reused
        path, shared = self._best(tokens)
        if path is not None and shared > reused:
            # a restore replaces the live cells: a failed one leaves none
            reused = min(shared, len(tokens) - 1) if self._restore(llama, path) else 0
        start = reused
        llama.n_tokens = start  # what stays live; eval drops the cells past it
        while start + self.every < len(tokens):  # the rest, with the last token, is the call's
            llama.eval(tokens[start:start + self.every])
            start += self.every
            self._save(llama, tokens[:start])
        return reused

    def _files(self) -> list[Path]:
        return list(self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else []

    def _best(self, tokens: list[int]) -> tuple[Path | None, int]:
        best_path, best = None, 0
        for path in self._files():
            saved = _tokens(path)
            if saved is None or len(saved) <= best:
                continue
            shared = common_prefix(saved, tokens)
            if shared == len(saved) and shared > best:  # a state is only whole
                best_path, best = path, shared
        return best_path, best

    def _restore(self, llama: Any, path: Path) -> bool:
        import llama_cpp

        capacity = llama.n_ctx()
        out = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        llama._ctx.kv_cache_seq_rm(SEQ, -1, -1)
        read = llama_cpp.llama_state_seq_load_file(
            llama._ctx.ctx, str(path).encode(), SEQ, out, capacity, ctypes.byref(count))
        if not read:
            llama.n_tokens = 0
            return False
        make_live(llama, np.ctypeslib.as_array(out)[:int(count.value)])
        os.utime(path)  # recently used
        self.restored += 1
        return True

    def _save(self, llama: Any, tokens: list[int]) -> None:
        import llama_cpp

        self.folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(np.asarray(tokens, dtype=np.int32).tobytes()).hexdigest()[:32]
        path = self.folder / f"{name}{SUFFIX}"
        partial = path.with_suffix(f".{os.getpid()}.partial")
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        if not llama_cpp.llama_state_seq_save_file(llama._ctx.ctx, str(partial).encode(), SEQ,
                                                   array, len(tokens)):
            partial.unlink(missing_ok=True)
            return
        np.save(_tokens_path(partial), np.asarray(tokens, dtype=np.int32))
        os.replace(partial, path)  # a state without its tokens is never matched
        os.replace(_tokens_path(partial), _tokens_path(path))
        self.written += 1
        for stale in self.folder.glob("*.partial*"):  # a write a killed process left
            if stale.name.split(".")[1] != str(os.getpid()) and _older_than(stale, 3600):
                stale.unlink(missing_ok=True)
        for other in self._files():  # a checkpoint this one extends is no longer needed
            saved = _tokens(other) if other != path else None
            if saved is not None and common_prefix(saved, tokens) == len(saved):
                _remove(other)
        files = sorted(self._files(), key=lambda p: p.stat().st_mtime)
        while files and sum(p.stat().st_size for p in files) > self.capacity_bytes:
            _remove(files.pop(0))


def _tokens_path(path: Path) -> Path:
    return path.with_name(path.name + ".tokens.npy")


def _tokens(path: Path) -> np.ndarray | None:
    try:
        return np.load(_tokens_path(path))
    except (OSError, ValueError):
        return None  # removed by another process, or half written


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def _remove(path: Path) -> None:
    for p in (path, _tokens_path(path)):
        p.unlink(missing_ok=True)
