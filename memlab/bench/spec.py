"""RunSpec: one run of one condition on one suite, the vocabulary every entry point shares.

The grid's cells, ``memlab run``, the server and the notebooks all describe a run with a
RunSpec. It owns the run id and the results path, and everything that can change a result is a
field of it (and so of the identity recorded in the run's manifest): a folder holding a run of
another spec is refused, never reused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from memlab.bench.base import SUITES
from memlab.embed.base import EMBEDDERS
from memlab.errors import ConfigError, fields_message
from memlab.llm.base import LLMS
from memlab.memory.base import MEMORIES

# The longest span a suite is built at: beyond it generation runs for minutes while memory grows
# (and no packaged model has a longer window than Qwen2.5's 128k).
MAX_SPAN = 131_072
# The fields a user picks by name, and the registry each name must be in.
REGISTRIES = {"suite": SUITES, "condition": MEMORIES, "llm": LLMS, "embedder": EMBEDDERS}


class RunSpec(BaseModel):
    """One run: a suite (with its options) at a span, a condition, a seed, the models.

    Attributes:
        span: tokens of conversation, in the answering model's tokenizer: the memory span of
            the LTM suite (GoodAI's ``memory_span``) or the history length of the persona suite.
        llm_model: the answering model within ``llm``: for ``local`` a packaged tier ("0.5b",
            "1.5b", "135m") or a GGUF path; for remote providers the provider's model name;
            None takes the configured default (``MEMLAB_LOCAL_SIZE`` / ``MEMLAB_LLM_MODEL``).
        probes_sleep: run Table 2's pre/post sleep protocol after the conversation.
        option_scoring: "logprob" also picks each multiple-choice option by log-probability.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str
    condition: str
    span: int = Field(gt=0, le=MAX_SPAN)
    seed: int = Field(0, ge=0)
    suite_options: dict[str, Any] = Field(default_factory=dict)
    llm: str = "local"
    llm_model: str | None = None
    embedder: str = "minilm"
    probes_sleep: bool = False
    option_scoring: Literal["generate", "logprob"] = "generate"

    @field_validator("suite", "condition", "llm", "embedder")
    @classmethod
    def _registered(cls, value: str, info: ValidationInfo) -> str:
        return REGISTRIES[info.field_name].check(value)

    @property
    def run_id(self) -> str:
        """``<suite>-<condition>-<span>-s<seed>``: the run's folder name."""
        raw = f"{self.suite}-{self.condition}-{self.span}-s{self.seed}"
        return re.sub(r"[^A-Za-z0-9._-]+", "_", raw)

    def run_dir(self, results_dir: str | Path) -> Path:
        return Path(results_dir) / self.run_id

    def identity(self) -> dict[str, Any]:
        """The spec as plain JSON (what a run's manifest records under ``spec``)."""
        return self.model_dump(mode="json")

    @classmethod
    def parse(cls, values: dict[str, Any], source: str = "run spec") -> RunSpec:
        """A RunSpec from ``values``; a bad field raises ConfigError naming it and the rule."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {fields_message(exc.errors(), whole='spec')}") from exc
