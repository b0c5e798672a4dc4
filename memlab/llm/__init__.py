"""LLM layer: one client interface, several providers, a response cache, structured output."""

from memlab.llm.base import LLMS, Completion, LLMClient, Message
from memlab.llm.factory import get_llm
from memlab.llm.options import choose_option, parse_final_answer
from memlab.llm.structured import complete_json

__all__ = ["LLMS", "Completion", "LLMClient", "Message", "choose_option", "complete_json",
           "get_llm", "parse_final_answer"]
