"""Grids as data: which cells a grid runs, and what it can detect before it runs.

A ``GridSpec`` names conditions x suites x spans x seeds and the protocol of every cell
(answering and memory models, how many tests are answered, scripted needles, Table 2's probes).
Its cells are RunSpecs. ``plan`` counts, per suite, the questions every condition answers (the
same questions in every condition: comparisons are paired) and the questions evidence recall
is measured on, and states the smallest paired difference the grid detects (exact McNemar,
80% power, alpha 0.05), so a grid's power is known before anything runs.

Three sizes ship: ``quick`` (``make paper``), ``standard`` (the README's headline) and ``full``.
``peers`` runs mem0 and LangMem beside vanilla, rag, hybrid and sleep at the quick sizes, every
memory on the 1.5B model (``memlab paper --spec peers``; docs/peers.md). ``locomo`` is LoCoMo as
the memory papers report it, all ten conversations (docs/suites.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from memlab.bench.base import SUITES
from memlab.bench.questions import answered_tests, is_answered
from memlab.bench.spec import REGISTRIES, RunSpec
from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, fields_message
from memlab.gridcost import (
    HISTORY_SCALE,
    cell_seconds,
    full_context_reading,
    mean_turn_tokens,
    rates_text,
)
from memlab.memory.base import CONDITIONS, MEMORIES
from memlab.stats import min_detectable_difference
from memlab.userfiles import load_yaml


class GridSpec(BaseModel):
    """A grid as data (see ``QUICK``, ``STANDARD``, ``FULL``; ``load_spec`` reads YAML).

    Attributes:
        spans: per suite, the memory spans (ltm) or history lengths (persona) in tokens.
        seeds: seeds whose questions the answering model answers (``answered`` of them).
        evidence_seeds: further seeds run for evidence recall only (nothing answered).
        suite_seeds: per suite, ``seeds`` and/or ``evidence_seeds`` replacing the grid's for
            that suite (``scaling``: LTM answers every test of one seed, persona a sample of
            two).
        answered: per suite, tests answered per seed (a seeded sample, the same in every
            condition); a suite not named answers every test.
        evidence_only: per suite and span, conditions that answer nothing there: their cells
            at the answered seeds measure evidence recall only (``scaling``: full_context at
            LTM 16k and 32k, the budget's cut).
        not_run: per suite and span, conditions with no cell there at all (a grid cut to a
            budget at some spans; the crossover table then names the gap).
        suite_options: per suite, the suite's own options.
        needle_replies: "scripted" stores needles with a fixed acknowledgement (no model call).
        sleep_probes: add Table 2's cells (the sleep condition, first seed, every suite).
        expected_minutes: measured wall-clock on a 2-core machine (None: not measured).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    conditions: list[str] = Field(default_factory=lambda: list(CONDITIONS),  # peers opt in
                                  min_length=1)
    suites: list[str] = Field(default_factory=SUITES.names, min_length=1)
    spans: dict[str, list[int]]
    seeds: list[int] = Field(default_factory=lambda: [0])
    evidence_seeds: list[int] = Field(default_factory=list)
    suite_seeds: dict[str, dict[Literal["seeds", "evidence_seeds"], list[int]]] = Field(
        default_factory=dict)
    answered: dict[str, int] = Field(default_factory=dict)
    evidence_only: dict[str, dict[int, list[str]]] = Field(default_factory=dict)
    not_run: dict[str, dict[int, list[str]]] = Field(default_factory=dict)
    suite_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    llm: str = "local"
    llm_model: str | None = None
    memory_llm: str | None = None
    memory_llm_model: str | None = None
    embedder: str = "minilm"
    needle_replies: Literal["model", "scripted"] = "model"
    sleep_probes: bool = Field(True, description="add Table 2's cells for the sleep condition")
    one_seed: list[str] = Field(default_factory=list, description=(
        "suites run at the first seed only, without evidence-only seeds or Table 2 cells (the "
        "published data sets: another seed would replay the same conversations)"))
    expected_minutes: float | None = None

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        return [MEMORIES.check(v) for v in value]

    @field_validator("suites")
    @classmethod
    def _known_suites(cls, value: list[str]) -> list[str]:
        return [SUITES.check(v) for v in value]

    @field_validator("evidence_only", "not_run")
    @classmethod
    def _known_conditions_per_span(cls, value: dict[str, dict[int, list[str]]]
                             ) -> dict[str, dict[int, list[str]]]:
        return {SUITES.check(suite): {span: [MEMORIES.check(c) for c in conditions]
                                      for span, conditions in spans.items()}
                for suite, spans in value.items()}

    @field_validator("suite_seeds")
    @classmethod
    def _known_seed_suites(cls, value: dict[str, Any]) -> dict[str, Any]:
        return {SUITES.check(suite): seeds for suite, seeds in value.items()}

    @field_validator("llm", "memory_llm", "embedder")
    @classmethod
    def _known_models(cls, value: str | None, info: ValidationInfo) -> str | None:
        # checked here, not only in cells(): --llm on the command line replaces the spec's
        # value there, and a wrong file must not pass unnoticed
        registry = REGISTRIES["embedder" if info.field_name == "embedder" else "llm"]
        return None if value is None else registry.check(value)

    def cells(self, **overrides: Any) -> list[RunSpec]:
        """Every cell of the grid, validated before anything runs.

        Args:
            **overrides: llm / llm_model / memory_llm / memory_llm_model / embedder replacing
                the spec's (None: keep).

        Raises:
            ConfigError: a suite without spans, a duplicate cell, or a field no RunSpec takes
                (named with the cell it belongs to).
        """
        missing = [suite for suite in self.suites if not self.spans.get(suite)]
        if missing:
            raise ConfigError(f"grid {self.name!r}: spans has no size for suite(s) {missing}")
        cells = [self._cell(c, s, span, seed, overrides,
                            **self._evidence_only(s, span, c, protocol))
                 for s in self.suites for span in self.spans[s]
                 for seed, protocol in self._seed_protocols(s)
                 for c in self._conditions(protocol)
                 if c not in self.not_run.get(s, {}).get(span, [])]
        if not cells:
            raise ConfigError(f"grid {self.name!r}: no cells (seeds and evidence_seeds are "
                              "both empty)")
        ids = [cell.run_id for cell in cells]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ConfigError(f"grid {self.name!r}: cells repeat ({', '.join(repeated)}): "
                              "a condition, span or seed is listed twice")
        return cells

    def seeds_of(self, suite: str) -> tuple[list[int], list[int]]:
        """(answered seeds, evidence-only seeds) of ``suite``: ``suite_seeds``' where it names
        them, else the grid's."""
        own = self.suite_seeds.get(suite, {})
        return own.get("seeds", self.seeds), own.get("evidence_seeds", self.evidence_seeds)

    def _seed_protocols(self, suite: str) -> list[tuple[int, dict[str, Any]]]:
        answered = self.answered.get(suite)
        seeds, evidence_seeds = self.seeds_of(suite)
        if suite in self.one_seed:
            return [(seeds[0], {"answered": answered})] if seeds else []
        out = [(seed, {"answered": answered}) for seed in seeds]
        out += [(seed, {"answered": 0}) for seed in evidence_seeds]
        if self.sleep_probes and "sleep" in self.conditions and seeds:
            out.append((seeds[0], {"answered": answered, "probes_sleep": True}))
        return out

    def _evidence_only(self, suite: str, span: int, condition: str,
                       protocol: dict[str, Any]) -> dict[str, Any]:
        if condition in self.evidence_only.get(suite, {}).get(span, []):
            return protocol | {"answered": 0}
        return protocol

    def _conditions(self, protocol: dict[str, Any]) -> list[str]:
        return ["sleep"] if protocol.get("probes_sleep") else self.conditions

    def _cell(self, condition: str, suite: str, span: int, seed: int,
              overrides: dict[str, Any], **protocol: Any) -> RunSpec:
        models = {k: getattr(self, k) for k in
                  ("llm", "llm_model", "memory_llm", "memory_llm_model", "embedder")}
        models |= {k: v for k, v in overrides.items() if v is not None}
        return RunSpec.parse(
            {"condition": condition, "suite": suite, "span": span, "seed": seed,
             "suite_options": self.suite_options.get(suite, {}),
             "needle_replies": self.needle_replies if suite == "ltm" else "model",
             **models, **protocol},
            f"grid {self.name!r}, cell {suite}/{condition}/{span}/s{seed}")


def plan(spec: GridSpec, cells: list[RunSpec] | None = None) -> pd.DataFrame:
    """Per suite and span: cells, questions answered and evidence questions per condition, the
    smallest paired difference the answered questions detect (the tests they fall in, when a
    test asks several: the unit accuracy is paired on), and (for a suite with measured
    rates, ``memlab.gridcost``) the projected hours of model time, in all and per condition.

    Questions are counted on the suites themselves, with the sample a run answers (built with
    the token estimate, which changes lengths a little, not the tests or questions).
    """
    rows = []
    for (suite, span), group in _by_suite_span(cells or spec.cells()).items():
        built_seeds: dict[tuple[int, int | None], dict[str, Any]] = {}
        suites: dict[int, Any] = {}  # a seed built once, whatever its cells answer
        for seed, k in sorted({(c.seed, c.answered) for c in group if not c.probes_sleep},
                              key=str):
            if seed not in suites:
                suites[seed] = SUITES.resolve(suite).build(
                    span=span, seed=seed, options=spec.suite_options.get(suite, {}))
            built_seeds[seed, k] = _seed_counts(suites[seed], suite, span, seed, k)
        conditions = sorted({c.condition for c in group}, key=[c.condition for c in group].index)
        counts = {c: [built_seeds[cell.seed, cell.answered] for cell in group
                      if cell.condition == c and not cell.probes_sleep] for c in conditions}
        answered = {c: sum(n["answered"] for n in own) for c, own in counts.items()}
        tests = max(sum(n["tests"] for n in own) for own in counts.values())
        evidence = max(sum(n["evidence"] for n in own) for own in counts.values())
        stored = max(sum(n["stored"] for n in own) for own in counts.values())
        seeds = [n for n in built_seeds.values() if n["stored"]]
        turn_tokens = (sum(n["turn_tokens"] * n["stored"] for n in seeds)
                       / sum(n["stored"] for n in seeds)) if seeds else None
        readings = [n["reading"] for n in counts.get("full_context", []) if n["reading"]]
        reading = [max((r[0] for r in readings), default=0),
                   max((r[1] for r in readings), default=0),
                   sum(r[2] for r in readings), sum(r[3] for r in readings)]
        hours = {c: cell_seconds(suite, c, stored_turns=stored, answered=answered[c],
                                 history_s=reading[3], turn_tokens=turn_tokens)
                 for c in conditions}
        known = None not in hours.values()
        most = max(answered.values())
        rows.append({"suite": suite, "span": span, "cells": len(group),
                     "conditions": len(conditions),
                     "answered_per_condition": most, "evidence_per_condition": evidence,
                     "answered_tests_per_condition": tests,
                     "evidence_only_conditions": [c for c in conditions if answered[c] == 0
                                                  and most > 0],
                     "detectable_difference": min_detectable_difference(min(most, tests)),
                     "stored_turns_per_condition": stored,
                     "tokens_per_stored_turn": round(turn_tokens, 1) if turn_tokens else None,
                     "reads_full_context": reading[3] > 0,
                     "full_context_window": reading[0], "longest_conversation": reading[1],
                     "full_context_tokens_read": reading[2],
                     "projected_hours": sum(hours.values()) / 3600 if known else None,
                     "hours_by_condition": {c: round(h / 3600, 2) for c, h in hours.items()}
                     if known else None})
    return pd.DataFrame(rows)


def _seed_counts(built: Any, suite: str, span: int, seed: int,
                 k: int | None) -> dict[str, Any]:
    """One built seed's questions (evidence), answered questions, the tests they belong to (an
    LTM test asks several; accuracy is scored and paired per test), stored turns and the tokens
    they average, and what full_context reads answering them (None: it answers nothing, so reads
    no prompt)."""
    events = built.events()
    sample = answered_tests(events, k, seed)
    questions = [e for e in events if e.kind == "question"]
    asked = [e for e in questions if is_answered(e, sample)] if k != 0 else []
    reading = (full_context_reading(built, span, events, asked)
               if asked and suite in HISTORY_SCALE else None)
    return {"evidence": len(questions), "answered": len(asked),
            "tests": len({e.test_id or e.index for e in asked}),
            "stored": sum(e.kind != "question" for e in events), "reading": reading,
            "turn_tokens": mean_turn_tokens(built, events)}


def _by_suite_span(cells: list[RunSpec]) -> dict[tuple[str, int], list[RunSpec]]:
    groups: dict[tuple[str, int], list[RunSpec]] = {}
    for cell in cells:
        groups.setdefault((cell.suite, cell.span), []).append(cell)
    return groups


def format_plan(spec: GridSpec, table: pd.DataFrame) -> str:
    """The plan as ``memlab grid`` prints it before it starts."""
    lines = [f"grid {spec.name}: {int(table['cells'].sum())} cells"
             + (f", about {spec.expected_minutes:g} min measured on 2 cores"
                if spec.expected_minutes else "")]
    for row in table.itertuples():
        mdd = row.detectable_difference
        power = (f"detects a paired difference of {mdd:.0%} (80% power, exact McNemar, 30% "
                 "of questions discordant)" if mdd == mdd else
                 "too few to detect a paired difference below 30% with 80% power")
        tests = row.answered_tests_per_condition
        unit = (f" (in {tests} tests, the unit its accuracy is scored and paired on)"
                if 0 < tests < row.answered_per_condition else "")
        lines.append(f"  {row.suite} at {row.span} tokens: {row.conditions} conditions, "
                     f"{row.answered_per_condition} answered{unit} and "
                     f"{row.evidence_per_condition} evidence questions per condition; {power}")
        if row.evidence_only_conditions:
            lines.append(f"    evidence recall only (nothing answered): "
                         f"{', '.join(row.evidence_only_conditions)}")
        skipped = spec.not_run.get(row.suite, {}).get(row.span, [])
        if skipped:
            lines.append(f"    not run at this span (no cells): {', '.join(skipped)}")
        if row.projected_hours is not None and row.projected_hours == row.projected_hours:
            by = ", ".join(f"{c} {h:g}" for c, h in row.hours_by_condition.items())
            tokens = (f", {row.tokens_per_stored_turn:g} tokens each on average"
                      if row.tokens_per_stored_turn else "")
            lines.append(f"    projected model time: {row.projected_hours:.1f} h on 2 cores, "
                         f"one cell at a time ({row.stored_turns_per_condition} stored turns "
                         f"per condition{tokens}; hours by condition: {by})")
            lines.append(f"    from {rates_text(row.suite)} (memlab.gridcost)")
        if row.reads_full_context and row.longest_conversation > row.full_context_window:
            lines.append(f"    full_context cuts: conversations up to "
                         f"{row.longest_conversation:,} tokens in a "
                         f"{row.full_context_window:,}-token window "
                         f"({row.full_context_tokens_read:,} history tokens read in all)")
    return "\n".join(lines)


# The LTM types every size runs: the generated types whose answers a question asks for
# (prospective_memory scores replies to later needles, which scripted needles leave out).
LTM_TYPES = ["colours", "jokes", "name_list", "shopping", "sallyanne", "trigger_response",
             "locations_directions", "spy_meeting"]
PAPER_SUITES = ["ltm", "persona"]  # the generated suites: they need no data from the user
PAPER_MODELS = {"llm_model": "1.5b", "memory_llm_model": "0.5b"}
QUICK = GridSpec(
    name="quick", suites=PAPER_SUITES, **PAPER_MODELS,
    description=("Every condition on both suites (make paper): LTM at a 1k-token span, 3 "
                 "examples of 8 test types; a persona history of 5 topics (45 questions); "
                 "24 tests answered per suite by the 1.5B model; 2 more seeds for evidence "
                 "recall; Table 2 on the sleep condition."),
    spans={"ltm": [1000], "persona": [4000]}, seeds=[0], evidence_seeds=[1, 2],
    answered={"ltm": 24, "persona": 24}, needle_replies="scripted",
    suite_options={"ltm": {"examples": 3, "types": LTM_TYPES}, "persona": {"n_topics": 5}},
)
STANDARD = GridSpec(
    name="standard", suites=PAPER_SUITES, **PAPER_MODELS,
    description=("The README's findings: over 100 paired questions per condition and suite "
                 "(LTM: 13 examples of 8 types at a 1k span; persona: 5 topics at 3 seeds)."),
    spans={"ltm": [1000], "persona": [4000]}, seeds=[0, 1, 2],
    answered={"ltm": 35, "persona": 35}, needle_replies="scripted",
    suite_options={"ltm": {"examples": 5, "types": LTM_TYPES}, "persona": {"n_topics": 5}},
)
FULL = GridSpec(
    name="full", suites=PAPER_SUITES, **PAPER_MODELS,
    description=("The paper grid: LTM at spans 1k/4k/8k with 3 examples of every generated "
                 "type and the model's own replies to needles, persona histories of 8k and "
                 "32k tokens, three seeds, every question answered."),
    spans={"ltm": [1000, 4000, 8000], "persona": [8000, 32000]}, seeds=[0, 1, 2],
    suite_options={"ltm": {"examples": 3}, "persona": {"n_topics": 5}},
)
PEERS_SPEC = GridSpec(
    name="peers", suites=PAPER_SUITES, llm_model="1.5b", memory_llm_model="1.5b",
    description=("mem0, LangMem and graphiti beside vanilla, rag, hybrid and sleep (issues 16 "
                 "and 47): the quick grid's suites and sizes, seed 0 only (no evidence-only "
                 "seeds, no Table 2 cells), 24 tests answered per suite by the 1.5B model, and "
                 "the 1.5B model as the memory model of every condition that writes memories "
                 "(the peers store nothing useful on the 0.5B). graphiti's two cells take about "
                 "20 h (LTM) and 15 h (persona) of one core: about 205 s a stored turn at one "
                 "thread beside another cell (79 s at two threads on quiet cores). "
                 "Needs the peers and graphiti extras."),
    conditions=["vanilla", "rag", "hybrid", "sleep", "mem0", "langmem", "graphiti"],
    spans=QUICK.spans,
    seeds=[0],
    answered=QUICK.answered, needle_replies=QUICK.needle_replies,
    suite_options=QUICK.suite_options, sleep_probes=False,
)
PEERS_STANDARD = PEERS_SPEC.model_copy(update=dict(
    name="peers-standard",
    description=("The peers grid at the standard grid's sizes and seeds (0, 1, 2; 35 tests "
                 "answered per suite and seed): the paired differences the README reports as "
                 "findings, with the 1.5B model as every condition's memory model. About 43 h "
                 "of model time on 2 cores, resumable cell by cell. Needs the peers extra."),
    # graphiti joins only if its cost per stored turn allows it (issue 47: about 205 s a stored
    # turn at one thread in the peers grid, some 20 h of one core per LTM 1k cell: over 100 h at
    # these sizes and seeds)
    conditions=[c for c in PEERS_SPEC.conditions if c != "graphiti"],
    spans=STANDARD.spans, seeds=STANDARD.seeds, answered=STANDARD.answered,
    suite_options=STANDARD.suite_options))
LOCOMO_CONDITIONS = ["vanilla", "oracle", "full_context", "rag", "episodic", "episodic_summary",
                     "sleep", "hybrid"]
LOCOMO_ANSWERED = 320  # detects a 9-point paired difference (80% power, exact McNemar)
LOCOMO = GridSpec(
    name="locomo", suites=["locomo"], conditions=LOCOMO_CONDITIONS, **PAPER_MODELS,
    description=("LoCoMo as the memory papers report it (issue 44): all ten conversations of "
                 "locomo10.json, categories 1-4, the eight conditions; a seeded sample of "
                 f"{LOCOMO_ANSWERED} questions answered and judged by both judges (the same in "
                 "every condition: paired), evidence recall on all 1,540; dates as LoCoMo "
                 "writes them. Data: MEMLAB_LOCOMO_DATA, else "
                 "../shared/data/locomo/locomo10.json when present, else --locomo PATH."),
    spans={"locomo": [26000]}, seeds=[0], answered={"locomo": LOCOMO_ANSWERED},
    suite_options={"locomo": {"categories": [1, 2, 3, 4]}}, one_seed=["locomo"],
    sleep_probes=False,
)
SCALING = GridSpec(
    name="scaling", suites=PAPER_SUITES, conditions=LOCOMO_CONDITIONS, **PAPER_MODELS,
    description=("Where memory matters (issue 45): LTM at memory spans 1k/4k/16k/32k, persona "
                 "at 4k/16k/32k (5 topics), the eight conditions, no Table 2 cells. LTM answers "
                 "every test of seed 0 (6 examples of 8 types: 60 questions) and measures "
                 "evidence recall on seed 1 too (120); persona answers 30 questions of seeds 0 "
                 "and 1 (60) and adds seed 2 for evidence recall (135). At 16k-32k full_context "
                 "cuts LTM's conversations to its 32k window. The budget's cut (24 h): "
                 "full_context answers nothing at LTM 16k and 32k, where reading 266k-535k-token "
                 "conversations through a 32k window would take 21.5 of the grid's 43.4 h "
                 "(a token read at position 30k costs 3.5x one at the start); its evidence "
                 "recall is still measured there (no model call), and the comparison with "
                 "full_context past its window is persona's at 32k. Projected 21.9 h on 2 "
                 "cores: the first 44 cells took 1.93x their projected model time on one of "
                 "the two cores, so 0.97x it in machine time; run it in pieces (it resumes)."),
    evidence_only={"ltm": {16000: ["full_context"], 32000: ["full_context"]}},
    spans={"ltm": [1000, 4000, 16000, 32000], "persona": [4000, 16000, 32000]},
    seeds=[0, 1], evidence_seeds=[2], answered={"persona": 30},
    suite_seeds={"ltm": {"seeds": [0], "evidence_seeds": [1]}},
    needle_replies="scripted",
    suite_options={"ltm": {"examples": 6, "types": LTM_TYPES}, "persona": {"n_topics": 5}},
    sleep_probes=False,
)
SPECS = {"quick": QUICK, "standard": STANDARD, "full": FULL, "peers": PEERS_SPEC,
         "peers-standard": PEERS_STANDARD, "locomo": LOCOMO,
         "scaling": SCALING}
# where the lab keeps LoCoMo's file: beside the repository (relative to where memlab runs)
LOCOMO_DATA = Path("..") / "shared" / "data" / "locomo" / "locomo10.json"

# The published suites' cells per grid size (``memlab paper --locomo PATH --longmemeval PATH``):
# the span sizes the answering window (26k holds LoCoMo's longest conversation in a 32k window;
# LongMemEval_s histories, ~115k tokens, are cut by full_context at the 32k maximum); answered:
# questions the model answers (a seeded sample, the same in every condition; the others are
# measured for evidence recall). LoCoMo asks categories 1-4 (Mem0's protocol).
PUBLISHED_SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "quick": {"locomo": {"span": 26000, "answered": 24, "options": {"conversations": 1}},
              "longmemeval": {"span": 32000, "answered": None, "options": {"instances": 5}}},
    "standard": {"locomo": {"span": 26000, "answered": 100, "options": {"conversations": 3}},
                 "longmemeval": {"span": 32000, "answered": None,
                                 "options": {"instances": 30}}},
    "full": {"locomo": {"span": 26000, "answered": None, "options": {}},
             "longmemeval": {"span": 32000, "answered": None, "options": {}}},
}
PUBLISHED_SIZES["locomo"] = {
    "locomo": {"span": 26000, "answered": LOCOMO_ANSWERED,
               "options": LOCOMO.suite_options["locomo"]},
    "longmemeval": PUBLISHED_SIZES["quick"]["longmemeval"]}


def default_locomo_data(settings: Settings | None = None) -> str | None:
    """LoCoMo's file for a grid that does not name one: ``MEMLAB_LOCOMO_DATA`` (as given: a
    wrong path is then named by the suite), else ``LOCOMO_DATA`` when present, else None."""
    configured = (settings or get_settings()).locomo_data
    if configured is not None:
        return str(configured)
    return str(LOCOMO_DATA) if LOCOMO_DATA.is_file() else None


def with_default_data(spec: GridSpec) -> GridSpec:
    """``spec`` with LoCoMo's default file (``default_locomo_data``) when it runs the locomo
    suite without a ``data`` option and the file is there (otherwise unchanged: the suite then
    says which option is missing)."""
    options = spec.suite_options.get("locomo", {})
    path = default_locomo_data() if "locomo" in spec.suites and "data" not in options else None
    if path is None:
        return spec
    return spec.model_copy(update={"suite_options": spec.suite_options | {
        "locomo": {**options, "data": path}}})


def with_published(spec: GridSpec, data: dict[str, str | None]) -> GridSpec:
    """``spec`` with the published suites whose data file ``data`` names (suite -> path) added
    at ``PUBLISHED_SIZES`` for its size (a spec of another name gets the quick sizes)."""
    sizes = PUBLISHED_SIZES.get(spec.name, PUBLISHED_SIZES["quick"])
    update = spec.model_dump()
    for suite, path in data.items():
        if not path:
            continue
        size = sizes[suite]
        update["suites"] = [s for s in update["suites"] if s != suite] + [suite]
        update["spans"] = update["spans"] | {suite: [size["span"]]}
        update["suite_options"] = update["suite_options"] | {suite: {**size["options"],
                                                                   "data": str(path)}}
        update["answered"] = {k: v for k, v in update["answered"].items() if k != suite}
        if size["answered"] is not None:
            update["answered"][suite] = size["answered"]
        update["one_seed"] = sorted(set(update["one_seed"]) | {suite})
    return validate_spec(update, spec.name)


def validate_spec(values: dict[str, Any], source: str) -> GridSpec:
    """GridSpec from ``values``; a bad field raises ConfigError naming it and the rule."""
    try:
        return GridSpec.model_validate(values)
    except ValidationError as exc:
        message = fields_message(exc.errors(), whole="spec")
        raise ConfigError(f"grid spec {source}: {message}") from exc


def load_spec(name_or_path: str | Path) -> GridSpec:
    """A built-in spec (``SPECS``: quick, standard, full, peers, peers-standard, locomo) or a
    YAML file with GridSpec's fields; LoCoMo's data path filled in (``with_default_data``)."""
    if str(name_or_path) in SPECS:
        return with_default_data(SPECS[str(name_or_path)])
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(f"grid spec {str(name_or_path)!r}: not a built-in spec "
                          f"({', '.join(SPECS)}) nor a YAML file")
    values = load_yaml(path, "grid spec") or {}
    if not isinstance(values, dict):
        raise ConfigError(f"grid spec {path}: expected a mapping of GridSpec fields")
    return with_default_data(validate_spec(values, str(path)))
