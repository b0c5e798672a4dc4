"""What the suites read from a published data file share: loading, fault messages, sampling.

LoCoMo and LongMemEval are not shipped with memlab (licences, size): the user downloads them
and names the file (the suite option ``data``). The file is read once per process and content
(its sha256 goes into the suite's ``describe()``, so a changed file makes a different run). A
malformed file raises ConfigError naming the file, the sample and the field, never a traceback.
"""

from __future__ import annotations

import hashlib
import random
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memlab.bench.base import Response, Suite, SuiteEvent, TestScore
from memlab.bench.suites.options import bool_option, is_count
from memlab.errors import ConfigError, fields_message
from memlab.userfiles import parse_json

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class DataFile:
    """A parsed published file: its path, its sha256 and its JSON content."""

    path: Path
    sha256: str
    content: Any


def load_json(path: str | Path | None, suite: str) -> DataFile:
    """The JSON file at ``path`` (cached per path, size and modification time).

    Raises:
        ConfigError: no path given, no such file, or not UTF-8 JSON (naming the file; JSON
            nested too deeply to read included).
    """
    if not path:
        raise ConfigError(f"field 'suite_options.data': suite {suite!r} reads its published "
                          "JSON file from a path you give (e.g. suite_options={'data': PATH})")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"{file}: no such file (suite {suite!r}, option 'data')")
    stat = file.stat()
    return _parsed(str(file.resolve()), stat.st_size, stat.st_mtime_ns, suite)


@lru_cache(maxsize=4)
def _parsed(path: str, size: int, mtime_ns: int, suite: str) -> DataFile:
    raw = Path(path).read_bytes()
    content = parse_json(raw, path, f"{suite} data file")
    return DataFile(Path(path), hashlib.sha256(raw).hexdigest(), content)


def fault(file: DataFile | Path, where: str, field: str, rule: str) -> ConfigError:
    """A ConfigError naming the file, the sample (``where``), the field and the rule."""
    path = file.path if isinstance(file, DataFile) else file
    return ConfigError(f"{path}: {where}: field {field!r} {rule}")


def parse_model(model: type[M], value: Any, file: DataFile, where: str, prefix: str) -> M:
    """``value`` as ``model``; a validation error names the file, ``where`` and the field
    (``qa[3].category``)."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        errors = [{**e, "loc": (prefix, *e.get("loc", ())) if prefix else e.get("loc", ())}
                  for e in exc.errors()]
        raise ConfigError(f"{file.path}: {where}: {fields_message(errors)}") from None


def expect_list(value: Any, file: DataFile, where: str, field: str) -> list:
    if not isinstance(value, list):
        raise fault(file, where, field, f"must be a list, got {type(value).__name__}")
    return value


def select(items: Sequence[T], wanted: int | list[str] | None, key: Callable[[T], str],
           file: DataFile, option: str) -> list[T]:
    """The items an option names: ids (kept in file order), a count (the first N), or all.

    Raises:
        ConfigError: an id the file does not hold, or a count below 1.
    """
    if wanted is None:
        return list(items)
    if not (is_count(wanted) or isinstance(wanted, str) or isinstance(wanted, list) and wanted
            and all(isinstance(name, str) for name in wanted)):
        raise ConfigError(f"field 'suite_options.{option}': {wanted!r} must be a count (a whole "
                          "number of at least 1), an id, or a list of ids (e.g. "
                          f"{option}=[{key(items[0]) if items else 'id'}])")
    if isinstance(wanted, int):
        if wanted < 1:
            raise ConfigError(f"field 'suite_options.{option}': {wanted} must be at least 1")
        return list(items[:wanted])
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    known = {key(item) for item in items}
    missing = [name for name in names if name not in known]
    if missing:
        raise ConfigError(f"field 'suite_options.{option}': {file.path} holds no {missing} "
                          f"(it holds {len(known)}, e.g. {sorted(known)[:3]})")
    return [item for item in items if key(item) in set(names)]


def seeded_sample(items: Sequence[T], k: int | None, seed: int, salt: str) -> list[T]:
    """``k`` items drawn with ``seed`` and ``salt``, in their original order (all when
    ``k`` is None or at least ``len(items)``)."""
    if k is None or k >= len(items):
        return list(items)
    if k < 1:
        raise ConfigError(f"field 'suite_options': a sample of {k} must be at least 1")
    chosen = set(random.Random(f"{salt}:{seed}").sample(range(len(items)), k))
    return [item for i, item in enumerate(items) if i in chosen]


class PublishedSuite(Suite):
    """A suite read from a published file: its units (conversations, instances) replayed one
    after another, each its own user, and judged by an LLM (the option ``judge``, default on:
    the run's answering model).

    Subclasses set ``units`` and ``judge`` and add one unit's events in ``_add_unit``.
    """

    whole_history = True  # a question may need any turn of its conversation
    units: list[Any]
    file: DataFile
    judge: Any = None
    _events: list[SuiteEvent] | None = None

    @classmethod
    def _build(cls, *, span: int, seed: int, llm: Any, **options: Any) -> PublishedSuite:
        judge = llm if bool_option(options.pop("judge", True), "judge") else None
        return cls(span=span, seed=seed, judge=judge,
                   count_tokens=getattr(llm, "count_tokens", None), **options)

    def events(self) -> list[SuiteEvent]:
        """Every unit's turns and questions.

        Raises:
            ConfigError: the options select no question (a run would measure nothing); the
                message says why (``_no_questions``).
        """
        if self._events is None:
            events: list[SuiteEvent] = []
            for unit in self.units:
                self._add_unit(unit, events)
            if not any(event.kind == "question" for event in events):
                raise ConfigError(f"suite {self.name!r}, {self.file.path}: {self._no_questions()}"
                                  "; a run would measure nothing")
            self._events = events
        return self._events

    def _no_questions(self) -> str:
        """Why the options select no question (the suite knows its options best)."""
        return "these options select no question"

    @abstractmethod
    def _add_unit(self, unit: Any, events: list[SuiteEvent]) -> None:
        """Append one unit's turns and questions to ``events`` (indices continuing)."""

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        """One score per question (an unanswered one scored from an empty reply)."""
        return [self._score_question(event, responses.get(event.index)
                                     or Response(index=event.index))
                for event in self.events() if event.kind == "question"]

    @abstractmethod
    def _score_question(self, event: SuiteEvent, response: Response) -> TestScore:
        """The score of one question from the agent's response."""

    @property
    def judge_model(self) -> str | None:
        """The judge's model name (None: no judge)."""
        return getattr(self.judge, "model", None) if self.judge is not None else None
