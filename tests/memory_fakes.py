"""The memory-role FakeLLM the memory tests share, shipped in ``memlab.testing.fakes``."""

from memlab.testing.fakes import memory_llm, role_of

__all__ = ["memory_llm", "role_of"]
