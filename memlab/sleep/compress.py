"""Phase 2 of the sleep cycle: compression and consolidation (seed 002 MemoryCompressor).

The LLM summarises one episode or a batch into a CompressionResult (summary, key_concepts,
themes, relationships, confidence) through ``complete_json``, which repairs and re-asks on
malformed output; the result goes into the ConsolidatedMemoryStore with its source episode ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab.llm.base import LLMClient, Message
from memlab.llm.structured import MEMORY_MAX_CHARS, MEMORY_MAX_ITEMS, complete_json
from memlab.models.sleep import CompressionResult, Episode

if TYPE_CHECKING:
    from memlab.stores.consolidated import ConsolidatedMemoryStore

COMPRESS_PROMPT = (
    "You compress conversation episodes into long-term memory. Write a short summary that keeps "
    "every durable fact about the user (names, preferences, plans, numbers, dates), list the key "
    "concepts (single words or short phrases), the themes, the relationships between people or "
    "things, and your confidence (0..1) that the summary is faithful."
)


# What the compressor has the model write: the summary and key concepts, the fields a
# ConsolidatedMemory is recalled by (seed 002 stores summary and key_concepts; its themes,
# relationships and confidence are read by nothing). The prompt and the schema it shows still ask
# for all five, so the summary and concepts come out as they would (the same greedy tokens), and
# the reply ends after the concepts (``memlab.llm.jsoncut``). In the standard grid's 684
# compressions 29% of what the 0.5B wrote came after the concepts, and 30 replies ran into the
# token limit there (then repaired or re-asked); see docs/efficiency.md for the seconds.
COMPRESS_WRITTEN = ("summary", "key_concepts")


def render_episodes(episodes: list[Episode], max_chars: int = 1200) -> str:
    """The episodes as numbered text for the prompt, each cut to ``max_chars``.

    A shorter layout (a date line, then ``[13:05] User: ...``, without the 16-token header) cut
    what the 0.5B read of LTM's short exchanges, but its persona summaries kept less: sleep's
    evidence recall fell 66.3% -> 58.9% on the standard grid's persona cells (paired, n = 135,
    docs/efficiency.md#what-was-tried-and-undone), so this layout stays."""
    return "\n\n".join(f"Episode {i} ({ep.timestamp:%Y-%m-%d %H:%M}):\n{ep.content[:max_chars]}"
                       for i, ep in enumerate(episodes, start=1))


class MemoryCompressor:
    """Turns episodes into ConsolidatedMemory through the LLM.

    Args:
        llm: the model that summarises.
        store: where consolidated memories go.
        max_tokens: reply limit of one compression call.
        max_retries: re-asks after malformed JSON (complete_json).
        max_chars: characters of one episode put into the prompt.
    """

    def __init__(self, llm: LLMClient, store: ConsolidatedMemoryStore, *, max_tokens: int = 256,
                 max_retries: int = 1, max_chars: int = 1200):
        self.llm, self.store = llm, store
        self.max_tokens, self.max_retries, self.max_chars = max_tokens, max_retries, max_chars

    def _compress(self, episodes: list[Episode]) -> CompressionResult:
        # The reply's JSON schema follows the episodes (complete_json appends it). Put before
        # them, in the system message, where llama.cpp would keep it evaluated from call to
        # call, it cost sleep 16.7 points of persona evidence recall
        # (docs/efficiency.md#what-was-tried-and-undone).
        messages = [Message(role="system", content=COMPRESS_PROMPT),
                    Message(role="user", content=render_episodes(episodes, self.max_chars))]
        return complete_json(self.llm, messages, CompressionResult, max_tokens=self.max_tokens,
                             max_retries=self.max_retries, max_items=MEMORY_MAX_ITEMS,
                             max_chars=MEMORY_MAX_CHARS, written=COMPRESS_WRITTEN)

    def compress_single_episode(self, episode: Episode) -> CompressionResult:
        """Summarise one episode.

        Raises:
            StructuredOutputError: the output stayed malformed after the re-asks.
            LLMError: the model call failed.
        """
        return self._compress([episode])

    def compress_episode_batch(self, episodes: list[Episode]) -> CompressionResult:
        """Summarise several episodes into one result (same errors as the single case)."""
        if not episodes:
            raise ValueError("episodes: a batch needs at least one episode")
        return self._compress(list(episodes))

    def consolidate(self, episodes: list[Episode]) -> str:
        """Compress ``episodes`` (single or batch) and store the result; returns the memory id.

        The memory's importance is the highest importance among its episodes.
        """
        result = (self.compress_single_episode(episodes[0]) if len(episodes) == 1
                  else self.compress_episode_batch(episodes))
        return self.store.add_memory(
            result.summary, source_episode_ids=[ep.id for ep in episodes],
            key_concepts=_clean(result.key_concepts), importance=max(ep.importance for ep in episodes),
            themes=_clean(result.themes), relationships=_clean(result.relationships),
            confidence=result.confidence)


def _clean(values: list[str]) -> list[str]:
    """Strip, drop blanks and duplicates (case-insensitive), keep order."""
    seen, out = set(), []
    for value in values:
        text = str(value).strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out
