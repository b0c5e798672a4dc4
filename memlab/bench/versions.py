"""What made a run, as its manifest records it: prompt versions, package versions, git commit.

``prompt_versions`` is part of a run's identity (``runner.run_identity``): a run folder made with
other prompts, templates or grammars is refused, never resumed with the new ones. Each version is
a short sha256 of the texts memlab sends to a model; a new prompt belongs in ``PROMPT_TEXTS``
(tests/test_faults_identity.py fails for a ``*_PROMPT`` constant that is not covered).
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("memlab", "pydantic", "numpy", "pandas", "llama_cpp_python", "chromadb",
            "onnxruntime", "tokenizers", "google-genai", "httpx",
            "mem0ai", "langmem", "trustcall", "langgraph", "langchain-core",  # the peers extra
            "graphiti-core", "kuzu")  # the graphiti extra


def _agent_texts() -> list[str]:
    from memlab import agent
    from memlab.memory.base import Exchange, MemoryContext, MemoryItem

    context = MemoryContext(items=[MemoryItem(id="m1", kind="fact", text="likes tea")],
                            history=[Exchange(user="hi", assistant="hello", turn_number=1,
                                              timestamp=datetime(2024, 1, 1, tzinfo=UTC))])
    return [agent.DEFAULT_SYSTEM_PROMPT, agent.MEMORY_HEADER, agent.PROMPT_LAYOUT, context.render(),
            agent.render_options("Which?", ["tea", "coffee"]), context.history[0].render()]


def _memory_texts() -> list[str]:
    from memlab.memory.hybrid_extract import EXTRACT_PROMPT, EXTRACT_STOPS_REPEATS
    from memlab.memory.hybrid_forget import FORGET_PROMPT
    from memlab.models.sleep import Episode
    from memlab.sleep.compress import COMPRESS_PROMPT, COMPRESS_WRITTEN, render_episodes
    from memlab.sleep.induce import SCHEMA_PROMPT

    episodes = [Episode(id=f"e{i}", content="User: hi\nAI: hello",
                        timestamp=datetime(2024, 1, 1 + i // 2, 9 + i, tzinfo=UTC))
                for i in range(3)]  # how episodes are laid out for the compressor
    return [EXTRACT_PROMPT, COMPRESS_PROMPT, SCHEMA_PROMPT, FORGET_PROMPT,
            render_episodes(episodes), repr(COMPRESS_WRITTEN),
            f"extraction stops repeats: {EXTRACT_STOPS_REPEATS}"]


def _structured_texts() -> list[str]:
    from memlab.llm.grammars import choices_gbnf
    from memlab.llm.local import CHATML_TEMPLATE
    from memlab.llm.structured import json_instruction

    return [json_instruction({"type": "object"}), choices_gbnf(["(a)", 'say "b"']),
            CHATML_TEMPLATE]


def _scoring_texts() -> list[str]:
    from memlab.bench.scoring import JUDGE_PROMPT

    return [JUDGE_PROMPT]


def _locomo_texts() -> list[str]:
    from memlab.bench.suites import judges, locomo
    from memlab.bench.suites.locomo_data import format_date

    return [locomo.INTRO, locomo.QA_PROMPT, locomo.QA_PROMPT_CAT_5, locomo.TEMPORAL_HINT,
            locomo.NOT_MENTIONED, format_date(datetime(2023, 5, 8, 13, 56)), judges.MEM0_PROMPT,
            judges.STRICT_PROMPT, judges.judge_answer("Answer: 1:56 pm on 8 May, 2023")]


def _longmemeval_texts() -> list[str]:
    from memlab.bench.suites import judges

    return [judges.LONGMEMEVAL_ABSTENTION, *judges.LONGMEMEVAL_PROMPTS.values()]


# The texts one suite sends (its prompts, its judges): the "suites" part of that suite's runs
# only, so a change to LoCoMo's judge leaves an LTM run resumable.
SUITE_TEXTS: dict[str, Callable[[], list[str]]] = {
    "locomo": _locomo_texts, "longmemeval": _longmemeval_texts}


def _suite_texts(suite: str | None = None) -> list[str]:
    names = sorted(SUITE_TEXTS) if suite is None else [suite] if suite in SUITE_TEXTS else []
    return [text for name in names for text in SUITE_TEXTS[name]()]


# The texts memlab sends to a model, by part (agent, memory, structured output, scoring, the
# suites' own).
PROMPT_TEXTS: dict[str, Callable[[], list[str]]] = {
    "agent": _agent_texts, "memory": _memory_texts, "structured": _structured_texts,
    "scoring": _scoring_texts, "suites": _suite_texts}


def prompt_versions(condition: str | None = None, suite: str | None = None) -> dict[str, str]:
    """Per part of ``PROMPT_TEXTS``, the first 16 hex digits of the sha256 of its texts; for a
    ``condition`` whose memory sends none of memlab's memory prompts
    (``MemorySystem.uses_memory_prompts``), without the "memory" part; for a ``suite``, the
    "suites" part holds that suite's texts (``SUITE_TEXTS``) and is left out when it has none."""
    parts: dict[str, Callable[[], list[str]]] = dict(PROMPT_TEXTS)
    if condition is not None and not _uses_memory_prompts(condition):
        del parts["memory"]
    if suite is not None:
        if suite in SUITE_TEXTS:
            parts["suites"] = SUITE_TEXTS[suite]
        else:
            del parts["suites"]
    return {part: hashlib.sha256("\x00".join(texts()).encode("utf-8")).hexdigest()[:16]
            for part, texts in parts.items()}


def _uses_memory_prompts(condition: str) -> bool:
    from memlab.errors import MemlabError
    from memlab.memory.base import MEMORIES

    try:
        return MEMORIES.resolve(condition).uses_memory_prompts
    except (MemlabError, ImportError):  # an unknown condition or a missing extra: every part
        return True


def environment_info() -> dict[str, Any]:
    """memlab version, git commit, python and package versions (for a run's manifest)."""
    import memlab

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {"memlab_version": memlab.__version__, "git_commit": git_commit(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "packages": packages}


def git_commit() -> str | None:
    """HEAD of the git checkout memlab is imported from (None outside one)."""
    import memlab

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(memlab.__file__).parent, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
