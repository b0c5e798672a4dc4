"""The front door for running: build suite, LLM and agent; run; chat; views (being moved here)."""

from memlab.report.lab import *  # noqa: F401,F403
from memlab.report.lab import (  # noqa: F401
    build_suite, chat, check_parameters, consolidated_memories, costs, cycle_view, make_agent,
    make_embedder, make_llm, recall_view, run_condition, run_summary, schemas_formed,
    schemas_used, scores_by_type, sleep_stats, table2, transcripts,
)
