"""LLM layer: one client interface, several providers, a response cache, structured output."""

from memlab.llm.base import LLMS, Completion, LLMClient, Message

__all__ = ["LLMS", "Completion", "LLMClient", "Message"]
