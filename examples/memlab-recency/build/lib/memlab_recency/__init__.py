"""memlab-recency: an example memlab plugin (the ``recency`` memory condition)."""

from memlab_recency.memory import RecencyConfig, RecencyMemory

__all__ = ["RecencyConfig", "RecencyMemory"]
