"""Scripted replies for the peer libraries' prompts, shipped in ``memlab.testing.fakes``."""

from memlab.testing.fakes import peer_llm, peer_reply

__all__ = ["peer_llm", "peer_reply"]
