"""Long prompt reads checkpointed on disk (memlab.llm.checkpoint), on one real local model: a
"resumed" read restores them and reads only the rest, and every number is the uninterrupted one."""

from __future__ import annotations

import pytest
from services import require_or_skip

from memlab.config import Settings
from memlab.errors import MissingDependencyError
from memlab.llm.checkpoint import DiskStates

pytestmark = pytest.mark.integration

N_CTX = 3584  # a window no other test loads, so this model and its live state are its own
HISTORY = " ".join(f"On day {i} the user bought {i % 7} apples and walked {i % 5} miles."
                   for i in range(110))
QUESTION = [{"role": "system", "content": "You answer from the history.\n" + HISTORY},
            {"role": "user", "content": "How many apples on day 3?"}]
OTHER = [{"role": "system", "content": "Another history.\n" + HISTORY},
         {"role": "user", "content": "Anything?"}]


@pytest.fixture(scope="module")
def llm():
    from memlab.llm.local import LocalLLM

    try:
        return LocalLLM("135m", n_ctx=N_CTX, settings=Settings(
            prefix_cache_mb=0, llm_cache=False, kv_checkpoint_mb=0))
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


def _fresh(llm) -> None:
    """Drop the live state, as a new process has none."""
    llm.llama.n_tokens = 0


def _answer(llm) -> tuple[list[float], str, int]:
    _fresh(llm)
    scores = llm.score_options(QUESTION, ["3", "4", "five"])
    _fresh(llm)
    reply = llm.complete(QUESTION, max_tokens=12)
    return scores, reply.text, reply.prompt_tokens_reused


def test_a_resumed_read_restores_its_checkpoint_and_answers_as_uninterrupted(llm, tmp_path):
    prompt = llm.count_message_tokens(QUESTION)
    assert prompt > 1536  # several chunks of 512
    reference_scores, reference_text, _ = _answer(llm)  # no checkpoints
    disk = DiskStates(tmp_path, 2**31, every=512, min_new=1024)
    llm._loaded.checkpoints = disk
    try:
        _fresh(llm)
        first = llm.complete(QUESTION, max_tokens=12)
        assert (first.text, first.prompt_tokens_reused) == (reference_text, 0)
        whole = (prompt - 1) // 512 * 512  # the last whole chunk before the last token
        assert disk.written == whole // 512
        files = list(tmp_path.glob("*.kv"))
        assert len(files) == 1  # each checkpoint replaced the one it extends
        scores, text, reused = _answer(llm)  # a new process: restored from disk
        assert reused == whole and disk.restored == 2
        assert text == reference_text
        assert scores == reference_scores  # bit for bit: the same batches, the same bytes
    finally:
        llm._loaded.checkpoints = None


def test_checkpoints_stay_within_their_capacity_and_a_lost_file_is_read_again(llm, tmp_path):
    disk = DiskStates(tmp_path, 1, every=512, min_new=1024)  # room for none
    llm._loaded.checkpoints = disk
    try:
        _fresh(llm)
        llm.complete(QUESTION, max_tokens=4)
        assert disk.written > 0 and not list(tmp_path.glob("*.kv"))
        disk.capacity_bytes = 2**31
        _fresh(llm)
        llm.complete(OTHER, max_tokens=4)
        (kept,) = tmp_path.glob("*.kv")
        kept.write_bytes(b"not a state")  # a damaged file: read in full, not a crash
        _fresh(llm)
        again = llm.complete(OTHER, max_tokens=4)
        assert again.prompt_tokens_reused == 0 and disk.restored == 0
    finally:
        llm._loaded.checkpoints = None


def test_short_reads_write_nothing(llm, tmp_path):
    disk = DiskStates(tmp_path, 2**31, every=512, min_new=4096)
    llm._loaded.checkpoints = disk
    try:
        _fresh(llm)
        llm.complete(QUESTION, max_tokens=4)
        assert disk.written == 0 and not list(tmp_path.iterdir())
    finally:
        llm._loaded.checkpoints = None
