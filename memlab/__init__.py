"""memlab: a laboratory for long-term memory in LLM agents."""

__version__ = "0.1.0"
