"""graphiti's three model interfaces on memlab's parts: ``MemlabGraphitiLLM`` (its LLMClient:
every call is ``LLMClient.complete``, cached, journaled, replayed), ``MemlabGraphitiEmbedder``
(its EmbedderClient: memlab's embedder) and ``EmbeddingReranker`` (its CrossEncoderClient, by
embedding similarity: graphiti's default reranker calls OpenAI).

Import only through ``graphiti_memory.import_graphiti`` (telemetry is turned off first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.embedder.client import EmbedderClient
from graphiti_core.llm_client.client import LLMClient as GraphitiLLMClient
from graphiti_core.llm_client.config import LLMConfig
from pydantic import BaseModel

from memlab.embed.base import Embedder
from memlab.errors import StructuredOutputError
from memlab.llm.base import LLMClient, Message
from memlab.llm.chat_stats import ChatStats
from memlab.llm.repair import parse_json_lenient
from memlab.llm.structured import (
    MEMORY_MAX_CHARS,
    MEMORY_MAX_ITEMS,
    json_instruction,
    parse_model,
    prompt_schema,
    with_instruction,
)

# graphiti appends its response model's raw pydantic schema (titles and descriptions) to the
# last message; small local models echo it instead of filling it in
GRAPHITI_SCHEMA_NOTE = "\n\nRespond with a JSON object in the following format:"


def without_schema_note(text: str) -> str:
    """``text`` without the raw schema graphiti appended to it."""
    return text.split(GRAPHITI_SCHEMA_NOTE, 1)[0]


class MemlabGraphitiLLM(GraphitiLLMClient):
    """graphiti's LLMClient over a memlab ``LLMClient``: one model call per request, its reply
    constrained by memlab's grammar to the response model graphiti passes (lists and strings
    bounded as memlab's own memory calls are); a reply that does not validate raises
    ``StructuredOutputError`` (graphiti retries only network errors) and is counted.

    Args:
        llm: the memlab client every call goes through.
        max_tokens: reply limit of one call (graphiti asks for up to 16k).
    """

    def __init__(self, llm: LLMClient, max_tokens: int):
        super().__init__(LLMConfig(api_key="unused", model=llm.model, small_model=llm.model,
                                   max_tokens=max_tokens, temperature=0.0))
        self.llm, self.reply_limit = llm, max_tokens
        self.stats = ChatStats()

    async def _generate_response(self, messages: list[Any], response_model: type[BaseModel] |
                                 None = None, max_tokens: int = 0, model_size: Any = None,
                                 **kwargs: Any) -> dict[str, Any]:
        # a blocking call on purpose: the loop is memlab's own and the model serves one call at
        # a time, so graphiti's gathers run in one order and a replay asks the same prompts
        convo = [Message(role=m.role, content=without_schema_note(m.content)) for m in messages]
        schema = ({} if response_model is None else prompt_schema(
            response_model, max_items=MEMORY_MAX_ITEMS, max_chars=MEMORY_MAX_CHARS))
        if schema:
            convo = with_instruction(convo, json_instruction(schema))
        limit = min(max_tokens or self.reply_limit, self.reply_limit)
        # a list the small model starts repeating goes on repeating to the limit ("game",
        # "event", "game", ... in the smoke run): the reply ends before the first repeat
        completion = self.llm.complete(convo, max_tokens=limit, json_schema=schema,
                                       stop_on_loop=True, json_repeats=bool(schema))
        self.stats.add(completion)
        if completion.completion_tokens >= limit and not completion.looped:
            self.stats.cut_replies += 1
        try:
            if response_model is None:
                reply = parse_json_lenient(completion.text)
                return reply if isinstance(reply, dict) else {"content": reply}
            return parse_model(completion.text, response_model).model_dump()
        except StructuredOutputError as exc:
            self.stats.fail(f"{response_model.__name__ if response_model else 'JSON'}: {exc}")
            raise
        except Exception as exc:  # the repair failing on garbage: bad output, never a crash
            self.stats.fail(f"not JSON: {exc}")
            raise StructuredOutputError(f"not JSON: {exc}", raw_text=completion.text) from exc


class MemlabGraphitiEmbedder(EmbedderClient):
    """graphiti's EmbedderClient over memlab's embedder."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    async def create(self, input_data: Any) -> list[float]:
        text = input_data if isinstance(input_data, str) else str(next(iter(input_data), ""))
        return self.embedder.embed([text])[0].astype(float).tolist()

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        if not input_data_list:
            return []
        return self.embedder.embed(list(input_data_list)).astype(float).tolist()


class EmbeddingReranker(CrossEncoderClient):
    """graphiti's CrossEncoderClient by cosine similarity of memlab's embeddings (no network;
    only search configs that ask for a cross-encoder call it)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        if not passages:
            return []
        vectors = self.embedder.embed([query, *passages])
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        scores = (vectors[1:] @ vectors[0]) / (norms[1:] * norms[0])
        ranked = sorted(zip(passages, scores.tolist(), strict=True), key=lambda p: -p[1])
        return [(p, float(s)) for p, s in ranked]
