"""Evaluated prompt prefixes kept per loaded model, so each family of prompts is read once.

llama.cpp keeps one evaluated prompt (its KV cache) and reuses the part the next prompt shares
with it. One model often serves several families of prompts in turn: the answers, a memory's
extraction, a sleep cycle's compression and schema induction. Each family starts with the same
fixed text (instructions, a long history), but a call of another family in between overwrote
it, so the fixed text was read again at every switch (mem0's ~7,900 tokens of instructions: 130 s
cold, 8.8 s when kept). ``PrefixStates`` parks the evaluated state of the prompt a switch would
overwrite and restores, before a call, the parked state that shares the longest prefix with it,
when that is longer than what the live state shares. Only the sequence's KV cells are copied
(llama.cpp's ``llama_state_seq_*``), about 28 KB a token on the 1.5B model.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

SEQ = 0  # llama-cpp-python evaluates everything in sequence 0


def common_prefix(a: np.ndarray | list[int], b: np.ndarray | list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


@dataclass
class Parked:
    """One evaluated prompt: its tokens and the KV cells of its sequence."""

    tokens: np.ndarray
    data: bytes


class PrefixStates:
    """The parked states of one model (LRU, at most ``capacity_bytes``).

    Args:
        capacity_bytes: the most parked state kept; the least recently used goes first.
        min_gain: a parked state is restored only when it shares at least this many more
            tokens with the prompt than the live one does (a restore costs a copy).
        park_share: the live state is parked before a prompt overwrites it when the prompt
            shares less than this share of it (a switch of family, not the next question of
            the same conversation).
    """

    def __init__(self, capacity_bytes: int, *, min_gain: int = 32, park_share: float = 0.5):
        self.capacity_bytes = capacity_bytes
        self.min_gain, self.park_share = min_gain, park_share
        self._parked: OrderedDict[int, Parked] = OrderedDict()
        self._next = 0
        self.restored = self.parked = 0  # how often, for tests and benchmarks

    @property
    def size_bytes(self) -> int:
        return sum(len(p.data) for p in self._parked.values())

    def prepare(self, llama: Any, tokens: list[int]) -> int:
        """Make ``llama``'s live state the best start for ``tokens`` (parking what the call
        would overwrite, restoring a better parked state); the tokens it will reuse."""
        live_tokens = np.array(llama.input_ids[: llama.n_tokens])
        live = common_prefix(live_tokens, tokens)
        key, best = self._best(tokens)
        if key is not None and best >= live + self.min_gain:
            # parking the live state may drop the chosen one (a state the live one carries
            # further, or the least recently used): hold it, or the lookup fails mid-call
            chosen = self._parked[key]
            self._park(llama, live_tokens, live)
            self._restore(llama, chosen)
            if key in self._parked:
                self._parked.move_to_end(key)
            live = best
        else:
            self._park(llama, live_tokens, live)
        return max(0, min(live, len(tokens) - 1))  # the last token is always evaluated

    def _best(self, tokens: list[int]) -> tuple[int | None, int]:
        best_key, best = None, 0
        for key, parked in self._parked.items():
            shared = common_prefix(parked.tokens, tokens)
            if shared > best:
                best_key, best = key, shared
        return best_key, best

    def _park(self, llama: Any, live_tokens: np.ndarray, kept: int) -> None:
        """Park the live state unless the next prompt keeps most of it, or it is parked."""
        if len(live_tokens) < self.min_gain or kept >= self.park_share * len(live_tokens):
            return
        for key, parked in list(self._parked.items()):
            shared = common_prefix(parked.tokens, live_tokens)
            if shared == len(live_tokens) and len(parked.tokens) >= shared:
                self._parked.move_to_end(key)
                return  # already parked (this state is a prefix of a parked one)
            if shared >= self.park_share * len(parked.tokens):
                del self._parked[key]  # the live state carries that one's prefix further
        data = _seq_state(llama)
        if data is None or len(data) > self.capacity_bytes:
            return
        self._parked[self._next] = Parked(tokens=live_tokens.copy(), data=data)
        self._next += 1
        self.parked += 1
        while self.size_bytes > self.capacity_bytes:
            self._parked.popitem(last=False)

    def _restore(self, llama: Any, parked: Parked) -> None:
        import llama_cpp

        ctx = llama._ctx.ctx
        llama._ctx.kv_cache_seq_rm(SEQ, -1, -1)
        buffer = (ctypes.c_uint8 * len(parked.data)).from_buffer_copy(parked.data)
        if not llama_cpp.llama_state_seq_set_data(ctx, buffer, len(parked.data), SEQ):
            llama.n_tokens = 0  # nothing restored: the call evaluates the whole prompt
            return
        make_live(llama, parked.tokens)
        self.restored += 1


def make_live(llama: Any, tokens: np.ndarray) -> None:
    """Record ``tokens`` as what ``llama``'s restored KV cells hold."""
    n = len(tokens)
    llama.input_ids[:n] = tokens
    llama.n_tokens = n
    # the logits in the context are the last live call's: an exact repeat of the restored
    # prompt must evaluate its last token again, not sample from them
    llama._requires_eval = True


def _seq_state(llama: Any) -> bytes | None:
    """The KV cells of the live sequence (None when llama.cpp cannot copy them)."""
    import llama_cpp

    ctx = llama._ctx.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, SEQ))
    if size <= 0:
        return None
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_seq_get_data(ctx, buffer, size, SEQ))
    return ctypes.string_at(buffer, written) if written > 0 else None
