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
from pydantic_core import PydanticCustomError

from memlab.bench.base import SUITES
from memlab.embed.base import EMBEDDERS
from memlab.errors import ConfigError, fields_message
from memlab.llm.base import LLMS
from memlab.memory.base import MEMORIES

# The longest span a suite is built at: beyond it generation runs for minutes while memory grows
# (and no packaged model has a longer window than Qwen2.5's 128k).
MAX_SPAN = 131_072
MIN_WINDOW, MAX_WINDOW = 4096, 32_768  # Qwen2.5's trained window is 32k
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
        memory_llm, memory_llm_model: the model of the memory's own calls (extraction,
            compression, schema induction); None: ``MEMLAB_MEMORY_LLM`` /
            ``MEMLAB_MEMORY_LLM_MODEL``, else the answering provider, and for ``local`` the
            0.5B tier (``local``) or the answering model (remote providers).
        n_ctx: the answering model's window; None: sized to the span (``window_for_span``),
            so full_context holds the whole conversation wherever a 32k window can.
        answered: answer the questions of a seeded sample of this many tests (the same sample
            in every condition); the others are recalled for evidence recall but not sent to
            the model. None: answer every question; 0: an evidence-only run.
        needle_replies: "scripted" stores every needle (a statement the user makes for a
            later question) with a fixed acknowledgement instead of the model's reply: only
            questions are answered, which makes a run several times cheaper and keeps the
            model's replies out of memory. A test that scores replies to later needles
            (prospective_memory) cannot be passed then.
        probes_sleep: Table 2's protocol: no auto-sleep during the conversation; after it the
            questions are asked (pre), one sleep cycle runs over everything, and they are asked
            again (post). A run of its own (its run id ends in ``-probes``).
        option_scoring: "logprob" also picks each multiple-choice option by log-probability.
        memory_options: the condition's own settings (its ``Config``: the mcp condition's
            server and tool names, rag's ``top_k``...); recorded in the identity when given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str
    condition: str
    span: int = Field(gt=0, le=MAX_SPAN)
    seed: int = Field(0, ge=0)
    suite_options: dict[str, Any] = Field(default_factory=dict)
    llm: str = "local"
    llm_model: str | None = None
    memory_llm: str | None = None
    memory_llm_model: str | None = None
    n_ctx: int | None = Field(None, ge=512, le=MAX_WINDOW)
    embedder: str = "minilm"
    answered: int | None = Field(None, ge=0)
    needle_replies: Literal["model", "scripted"] = "model"
    probes_sleep: bool = False
    option_scoring: Literal["generate", "logprob"] = "generate"
    memory_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("suite", "condition", "llm", "embedder", "memory_llm")
    @classmethod
    def _registered(cls, value: str | None, info: ValidationInfo) -> str | None:
        registry = REGISTRIES["llm" if info.field_name == "memory_llm" else info.field_name]
        return None if value is None else registry.check(value)

    @field_validator("memory_options")
    @classmethod
    def _memory_options(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """The condition's Config takes ``memory_options`` (the error names the setting; a
        condition without defaults for every setting, mcp, needs some)."""
        if "condition" not in info.data:
            return value
        condition = info.data["condition"]
        config = MEMORIES.resolve(condition).Config
        unknown = sorted(set(value) - set(config.model_fields))
        if unknown:
            raise PydanticCustomError("memory_options", f"condition {condition!r} has no "
                                      f"setting {unknown[0]!r}; its settings: "
                                      f"{', '.join(config.model_fields) or 'none'}")
        try:
            config(**value)
        except ValidationError as exc:
            rules = [f"{'.'.join(map(str, e['loc'])) or condition}: "
                     f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors()]
            raise PydanticCustomError("memory_options", "; ".join(rules)) from None
        return value

    @property
    def run_id(self) -> str:
        """``<suite>-<condition>-<span>-s<seed>`` (``-probes`` for Table 2's protocol): the
        run's folder name."""
        raw = f"{self.suite}-{self.condition}-{self.span}-s{self.seed}"
        if self.probes_sleep:
            raw += "-probes"
        return re.sub(r"[^A-Za-z0-9._-]+", "_", raw)

    @property
    def window(self) -> int:
        """The answering model's context window for this run."""
        return self.n_ctx or window_for_span(self.span)

    def run_dir(self, results_dir: str | Path) -> Path:
        return Path(results_dir) / self.run_id

    def identity(self) -> dict[str, Any]:
        """The spec as plain JSON (what a run's manifest records under ``spec``); without
        ``memory_options`` when there are none, as runs recorded before the field was added."""
        return self.model_dump(mode="json", exclude=set() if self.memory_options
                               else {"memory_options"})

    @classmethod
    def parse(cls, values: dict[str, Any], source: str = "run spec") -> RunSpec:
        """A RunSpec from ``values``; a bad field raises ConfigError naming it and the rule."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {fields_message(exc.errors(), whole='spec')}") from exc


def window_for_span(span: int) -> int:
    """A window for a conversation of ``span`` tokens: the span plus a quarter (at least 2,048
    tokens) for system prompt, memory, question and reply, in steps of 1,024, within
    [4,096, 32,768]. Beyond a 26k span full_context cuts the oldest turns (recorded per answer).
    """
    need = span + max(span // 4, 2048)
    return min(MAX_WINDOW, max(MIN_WINDOW, -(-need // 1024) * 1024))
