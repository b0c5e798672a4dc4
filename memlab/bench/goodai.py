"""GoodAI LTM Benchmark v3 file formats: test definitions, config.yml, per-test results.

Layout (as published)::

    definitions/<Test Type>/<id>.def.json   definitions/config.yml
    results/<agent>/<Test Type>/<id>_<rep>.json

``goodai_rescore`` re-scores a results folder with memlab's scorers (GoodAI's current scoring by
default, the 2024-05 scoring the published results were scored with, or memlab's ``strict`` set)
and reports, per test type, how many published scores it reproduces.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memlab.bench.suites.ltm_scorers import GOODAI_RULE_TYPES, LLM_JUDGED_TYPES, Scorer
from memlab.bench.suites.ltm_scorers import scorers as scorer_set
from memlab.errors import ConfigError
from memlab.userfiles import existing_folder, load_json, load_yaml, read_text

# memlab key <-> GoodAI folder name
TYPE_DIRS = {
    "colours": "Colours", "shopping": "Shopping", "name_list": "NameList",
    "locations_directions": "Locations Directions", "jokes": "Jokes", "sallyanne": "SallyAnne",
    "prospective_memory": "Prospective Memory", "trigger_response": "Trigger Response",
    "spy_meeting": "Spy Meeting", "restaurant": "Restaurant", "chapterbreak": "ChapterBreak",
}
TYPE_KEYS = {folder: key for key, folder in TYPE_DIRS.items()}


class Wait(BaseModel):
    """How long a script line waits before the next: a share of the memory span and/or time."""

    model_config = ConfigDict(extra="forbid")
    percentage_finished: float | None = Field(None, ge=0, le=100)
    tokens: int | None = Field(None, ge=0)
    time: float | None = Field(None, ge=0, description="seconds on the simulated clock")


class TestDefinition(BaseModel):
    """One GoodAI test script (``<id>.def.json``)."""

    __test__ = False
    model_config = ConfigDict(extra="allow")
    script: list[str]
    is_question: list[bool]
    waits: list[Wait] = Field(default_factory=list)
    expected_responses: list[Any]
    can_be_interleaved: bool = True
    is_temporal: bool = False
    uses_callback: bool = False

    @model_validator(mode="after")
    def _lengths_agree(self) -> TestDefinition:
        extra = 1 if self.is_temporal else 0  # a temporal question is written at run time
        if len(self.is_question) not in (len(self.script), len(self.script) + extra):
            raise ValueError(f"is_question has {len(self.is_question)} entries; the script has "
                             f"{len(self.script)} lines (rule: one per line, +1 if is_temporal)")
        if self.waits and len(self.waits) != len(self.is_question):
            raise ValueError(f"waits has {len(self.waits)} entries; rule: one per is_question "
                             f"entry ({len(self.is_question)})")
        return self


class DatasetEntry(BaseModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class DatasetsSection(BaseModel):
    args: dict[str, Any] = Field(default_factory=dict)
    datasets: list[DatasetEntry]

    @field_validator("args")
    @classmethod
    def _counts(cls, args: dict[str, Any]) -> dict[str, Any]:
        for key in ("memory_span", "dataset_examples"):
            value = args.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise ValueError(f"{key} {value!r} must be a whole number of at least 1")
        return args


class BenchmarkConfig(BaseModel):
    """GoodAI's ``config.yml``: run settings, memory span, examples and per-type arguments."""

    config: dict[str, Any] = Field(default_factory=dict)
    datasets: DatasetsSection

    @property
    def memory_span(self) -> int:
        return int(self.datasets.args.get("memory_span", 1000))

    @property
    def dataset_examples(self) -> int:
        return int(self.datasets.args.get("dataset_examples", 3))

    def type_args(self) -> dict[str, dict[str, Any]]:
        return {d.name: dict(d.args) for d in self.datasets.datasets}


class LoadedTest(BaseModel):
    """A definition with its place: ``test_type`` (memlab key) and GoodAI ``example_id``.

    The rules of its type are checked here, before a run, not when its answer is scored:
    only jokes are temporal (their question is written when it is asked, naming the joke);
    prospective memory expects ``[quote, author, n]`` (the quote goes on the n-th reply).
    """

    test_type: str
    example_id: str
    definition: TestDefinition
    path: str = ""

    @model_validator(mode="after")
    def _type_rules(self) -> LoadedTest:
        if self.test_type not in TYPE_DIRS:
            raise ValueError(f"test type {self.test_type!r} is not one memlab runs (folders: "
                             f"{', '.join(TYPE_DIRS.values())})")
        d = self.definition
        if not d.script:
            return self  # a dynamic GoodAI test (restaurant): skipped, never asked
        temporal = self.test_type == "jokes"
        if d.is_temporal != temporal:
            raise ValueError(f"field 'is_temporal': must be {str(temporal).lower()} for "
                             f"{TYPE_DIRS[self.test_type]} (only a jokes question is temporal: "
                             "it is written when asked)")
        if not any(d.is_question) or not d.expected_responses:
            raise ValueError("field 'is_question' / 'expected_responses': a test with a script "
                             "needs a question and its expected responses")
        if self.test_type == "jokes" and d.expected_responses[0] not in d.script:
            raise ValueError("field 'expected_responses': its first entry must be the joke, "
                             "one of the script's lines")
        if self.test_type == "prospective_memory" and not _quote_request(d.expected_responses[0]):
            raise ValueError("field 'expected_responses': must start with [quote, author, n], "
                             f"n a whole number of at least 1 (got {d.expected_responses[0]!r})")
        return self


def _quote_request(value: Any) -> bool:
    """GoodAI's prospective-memory expectation: ``[quote, author, n]`` (append the quote to
    the n-th reply)."""
    if not isinstance(value, list) or len(value) != 3:
        return False
    quote, author, n = value
    return (isinstance(quote, str) and bool(quote) and isinstance(author, str)
            and isinstance(n, int) and not isinstance(n, bool) and n >= 1)


class TestResult(BaseModel):
    """One published per-test result (``<id>_<rep>.json``)."""

    __test__ = False
    task_log: list[str] = Field(default_factory=list)
    actual_responses: list[Any] = Field(default_factory=list)
    score: float = Field(ge=0, allow_inf_nan=False)
    max_score: float = Field(gt=0, allow_inf_nan=False)
    reasoning: list[str] = Field(default_factory=list)
    tokens: int = 0
    characters: int = 0
    full_log: list[str] = Field(default_factory=list)
    expected_responses: list[Any] = Field(default_factory=list)
    needles: int = 0


def _field_error(path: Path, exc: ValidationError) -> ConfigError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(the whole file)"
    return ConfigError(f"{path}: field '{field}': {err['msg'].removeprefix('Value error, ')}")


def load_definition(path: str | Path) -> LoadedTest:
    """Read one ``<Test Type>/<id>.def.json``.

    Raises:
        ConfigError: naming the file and the offending field.
    """
    path = Path(path)
    raw = load_json(path, "GoodAI definition")
    try:
        definition = TestDefinition.model_validate(raw)
    except ValidationError as exc:
        raise _field_error(path, exc) from exc
    folder = path.parent.name
    try:
        return LoadedTest(test_type=TYPE_KEYS.get(folder, folder), path=str(path),
                          example_id=path.name.removesuffix(".def.json"), definition=definition)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}"
                          ) from None


def load_config(path: str | Path) -> BenchmarkConfig:
    """Read GoodAI's ``config.yml``."""
    path = Path(path)
    try:
        return BenchmarkConfig.model_validate(load_yaml(path, "GoodAI config"))
    except ValidationError as exc:
        raise _field_error(path, exc) from exc


def load_definitions(folder: str | Path, types: Iterable[str] | None = None
                     ) -> tuple[BenchmarkConfig | None, list[LoadedTest]]:
    """Every definition under ``folder`` (sorted by type and id) and its config, if present.

    Args:
        types: read only the definitions of these types (memlab keys); default: every one.

    Raises:
        ConfigError: no such folder, no definition in it, or a file that breaks a rule (naming
            the file and the field).
    """
    folder = existing_folder(folder, "definitions folder")
    config_path = folder / "config.yml"
    config = load_config(config_path) if config_path.exists() else None
    folders = None if types is None else {TYPE_DIRS.get(t, t) for t in types}
    paths = sorted((p for p in folder.glob("*/*.def.json")
                    if folders is None or p.parent.name in folders),
                   key=lambda p: (p.parent.name, int(p.stem.split(".")[0])
                                  if p.stem.split(".")[0].isdigit() else p.stem))
    if not paths:
        raise ConfigError(f"definitions folder {folder}: no test definitions in it (expected "
                          "<Test Type>/<id>.def.json, e.g. Colours/0.def.json)")
    return config, [load_definition(p) for p in paths]


def load_result(path: str | Path) -> TestResult:
    path = Path(path)
    try:
        return TestResult.model_validate_json(read_text(path, "GoodAI result"))
    except ValidationError as exc:
        raise _field_error(path, exc) from exc


def result_path(results_dir: str | Path, agent: str, test_type: str, example_id: str,
                rep: int = 0) -> Path:
    """``results/<agent>/<Test Type>/<id>_<rep>.json``."""
    return Path(results_dir) / agent / TYPE_DIRS.get(test_type, test_type) / f"{example_id}_{rep}.json"


def write_result(path: str | Path, result: TestResult) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.model_dump(), indent=2, ensure_ascii=False), encoding="utf-8")
    return path


# ---------------------------------------------------------------- re-scoring

def published_answers(test_type: str, result: TestResult) -> tuple[list[str], list[Any]]:
    """The replies a published result was scored on, and its expected responses.

    Prospective memory is scored on the task log: the agent's lines from the request on.
    """
    expected = list(result.expected_responses)
    if test_type != "prospective_memory":
        return [str(r) for r in result.actual_responses], expected
    log = result.task_log
    start = next((i for i, line in enumerate(log)
                  if "append the quote" in line and line.startswith("Test")), None)
    if start is None:
        return [], expected
    return [line.split("): ", 1)[-1] for line in log[start + 1:][::2]], expected


class RescoreItem(BaseModel):
    agent: str
    test_type: str
    file: str
    published: float
    memlab: float | None
    reasoning: list[str] = Field(default_factory=list)
    published_reasoning: list[str] = Field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return self.memlab is not None and abs(self.memlab - self.published) < 1e-6


class RescoreReport(BaseModel):
    """Per test type: how many published scores memlab reproduces, and which not (with why)."""

    folder: str
    scorers: str = "current"
    items: list[RescoreItem] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)

    def by_type(self) -> dict[str, list[RescoreItem]]:
        groups: dict[str, list[RescoreItem]] = defaultdict(list)
        for item in self.items:
            groups[item.test_type].append(item)
        return dict(sorted(groups.items()))

    def conformance(self) -> tuple[int, int]:
        """(agreeing, total) over the types GoodAI scored without a GPT judge."""
        rule = [i for i in self.items if i.test_type in GOODAI_RULE_TYPES]
        return sum(i.agrees for i in rule), len(rule)


def goodai_rescore(folder: str | Path, *, client: Any = None,
                   scorers: str = "current") -> RescoreReport:
    """Re-score every ``<agent>/<Test Type>/<id>_<rep>.json`` under ``folder``.

    Args:
        client: an LLM client for the type only an LLM can judge (restaurant); without it
            that type is listed as skipped.
        scorers: ``current`` (GoodAI's scoring today), ``published`` (2024-05) or ``strict``
            (memlab's own runs').
    """
    folder = existing_folder(folder, "results folder")
    chosen = scorer_set(scorers)
    report = RescoreReport(folder=str(folder), scorers=scorers)
    for path in sorted(folder.glob("**/*_*.json")):
        test_type = TYPE_KEYS.get(path.parent.name)
        if test_type is None:
            continue
        if test_type in LLM_JUDGED_TYPES and client is None:
            report.skipped[test_type] = "needs an LLM judge (GoodAI used GPT); pass client="
            continue
        report.items.append(_rescore_one(path, test_type, client, chosen[test_type]))
    if not report.items and not report.skipped:
        raise ConfigError(f"results folder {folder}: no GoodAI result files in it (expected "
                          "<agent>/<Test Type>/<id>_<rep>.json, e.g. agent/Colours/0_0.json)")
    return report


def _rescore_one(path: Path, test_type: str, client: Any, scorer: Scorer) -> RescoreItem:
    result = load_result(path)
    replies, expected = published_answers(test_type, result)
    item = RescoreItem(agent=path.parent.parent.name, test_type=test_type, memlab=None,
                       file=str(path.relative_to(path.parents[2])), published=result.score,
                       published_reasoning=result.reasoning)
    try:
        judged = scorer([""] * len(replies), replies, expected, client=client)
    except (IndexError, KeyError, TypeError, ValueError, ArithmeticError) as exc:
        item.reasoning = [f"memlab could not score it: {exc!r}"]
        return item
    item.memlab, item.reasoning = judged.score / judged.max_score, judged.reasoning
    return item


def format_rescore_report(report: RescoreReport, *, max_listed: int | None = 20) -> str:
    """The report as text: one line per type, then the disagreements with both reasonings (the
    first ``max_listed``; None: all of them)."""
    lines = [f"GoodAI re-score of {report.folder} ({report.scorers} scorers)"]
    for test_type, items in report.by_type().items():
        agree = sum(i.agrees for i in items)
        judge = "rule (GoodAI: rule)" if test_type in GOODAI_RULE_TYPES else "memlab rule/LLM (GoodAI: GPT judge)"
        lines.append(f"  {TYPE_DIRS.get(test_type, test_type):22s} {agree:4d}/{len(items):<4d} {judge}")
    for test_type, why in report.skipped.items():
        lines.append(f"  {TYPE_DIRS.get(test_type, test_type):22s}  skipped: {why}")
    ok, total = report.conformance()
    lines.append(f"Conformance (types GoodAI scored without a GPT judge): {ok}/{total}")
    misses = [i for i in report.items if not i.agrees]
    listed = misses if max_listed is None else misses[:max_listed]
    for item in listed:
        lines.append(f"- {item.file}: published {item.published:.3f}, memlab "
                     f"{'n/a' if item.memlab is None else f'{item.memlab:.3f}'}; memlab: "
                     f"{' | '.join(item.reasoning)[:160]!s}; GoodAI: "
                     f"{' | '.join(item.published_reasoning)[:160]!s}")
    if len(listed) < len(misses):
        lines.append(f"... and {len(misses) - len(listed)} more disagreements (--all lists "
                     "every one)")
    return "\n".join(lines)
