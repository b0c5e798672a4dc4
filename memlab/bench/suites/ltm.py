"""The LTM suite, modelled on the GoodAI LTM Benchmark v3: generated or loaded from definitions.

One conversation in which the tests' script lines are interleaved (see ``memlab.bench.schedule``),
scored per test with GoodAI's rules (``ltm_scorers``); the suite score is the sum over test types
of the mean score, out of the number of types. Results can be written in GoodAI's per-test format.
"""

from __future__ import annotations

import inspect
import random
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.bench.base import Evidence, Response, Suite, SuiteEvent, TestScore
from memlab.bench.goodai import (
    LoadedTest,
    TestDefinition,
    TestResult,
    load_definitions,
    result_path,
    write_result,
)
from memlab.bench.schedule import Schedule, Scheduler, ScriptTest, TokenCounter
from memlab.bench.suites.ltm_generate import DEFAULT_ARGS, GENERATORS
from memlab.bench.suites.ltm_scorers import RUN_SCORERS, run_scorers_id, scorers
from memlab.bench.suites.options import count_option, list_option
from memlab.errors import ConfigError

# Reset messages for loaded definitions (GoodAI sends one after these tests' questions).
RESETS = {
    "name_list": "Forget every name I have given you before this message; you do not know my name now.",
    "shopping": "I bought everything; please clear my shopping list.",
    "locations_directions": "Forget the places of my home town I told you about.",
    "trigger_response": "Cancel every instruction about a sentence to say when I do something.",
    "prospective_memory": "Forget my request to append a quote to one of your replies.",
}


def jokes_question(script: list[str], joke: str) -> Any:
    """The temporal question of a jokes test, written when it is asked."""
    def make(line_times: list[datetime], now: datetime) -> str:
        minutes = int((now - line_times[script.index(joke)]).total_seconds()) // 60
        hours, minutes = divmod(minutes, 60)
        when = (f"{hours} hours " if hours else "") + (f"{minutes} minutes " if minutes else "")
        return f"Which joke did I tell you about {when}ago?"
    return make


class LTMSuite(Suite):
    """GoodAI-style long-term-memory suite.

    Args:
        tests: the tests (``LoadedTest``); default: generated with ``seed``.
        span: the memory span in the model's tokens (GoodAI's ``memory_span``).
        examples: examples per type when generating.
        types: test types to generate (default: all nine generated types).
        type_args: per-type generator arguments (default: GoodAI's v3 configuration).
        count_tokens: the model's token counter (default: a whitespace/4-character estimate).
        judge: an LLM client for the type only an LLM can score (restaurant).
    """

    name = "ltm"
    options = ("examples", "types", "type_args")

    @classmethod
    def _build(cls, *, span: int, seed: int, llm: Any, **options: Any) -> LTMSuite:
        return cls(span=span, seed=seed, count_tokens=getattr(llm, "count_tokens", None),
                   judge=llm, **options)

    def __init__(self, tests: list[LoadedTest] | None = None, *, span: int = 1000,
                 examples: int = 3, seed: int = 0, types: list[str] | None = None,
                 type_args: dict[str, dict[str, Any]] | None = None,
                 count_tokens: TokenCounter | None = None, judge: Any = None,
                 source: str = "generated"):
        self.span, self.examples, self.seed = span, count_option(examples, "examples"), seed
        self.count_tokens, self.judge, self.source = count_tokens, judge, source
        self.tests = tests if tests is not None else self._generate(types, type_args or {})
        self.skipped = {self.test_id(t): "empty script (a dynamic GoodAI test)"
                        for t in self.tests if not t.definition.script}
        self._schedule: Schedule | None = None
        self._events: list[SuiteEvent] | None = None

    @classmethod
    def from_definitions(cls, folder: str | Path, **kwargs: Any) -> LTMSuite:
        """Load GoodAI ``.def.json`` definitions (and ``config.yml``'s memory span)."""
        config, tests = load_definitions(folder)
        if config is not None:
            kwargs.setdefault("span", config.memory_span)
        return cls(tests, source=str(folder), **kwargs)

    def _generate(self, types: list[str] | None, type_args: dict[str, dict[str, Any]]):
        list_option(types, "types", str, "[colours, jokes]")
        unknown = set(types or []) - set(GENERATORS)
        if unknown:
            raise ConfigError(f"field 'types': no generator for {sorted(unknown)} (restaurant "
                              f"and chapterbreak load from definitions only)")
        check_type_args(type_args)
        rng = random.Random(self.seed)
        tests = []
        for test_type in types or list(GENERATORS):
            args = {**DEFAULT_ARGS.get(test_type, {}), **type_args.get(test_type, {})}
            for i in range(self.examples):
                try:
                    definition = GENERATORS[test_type](rng, **args)
                except ValueError as exc:  # random.sample: more than the vocabulary holds
                    raise ConfigError(f"field 'suite_options.type_args.{test_type}': {args} "
                                      f"asks for more than memlab's vocabulary holds ({exc})"
                                      ) from None
                tests.append(LoadedTest(test_type=test_type, example_id=str(i),
                                        definition=definition))
        return tests

    # ------------------------------------------------------------ conversation

    def schedule(self) -> Schedule:
        if self._schedule is None:
            scheduler = Scheduler(self.span, count_tokens=self.count_tokens, seed=self.seed)
            self._schedule = scheduler.run(self._script_tests())
        return self._schedule

    def _script_tests(self) -> list[ScriptTest]:
        by_example: dict[str, list[ScriptTest]] = defaultdict(list)
        for test in self.tests:
            d = test.definition
            if not d.script:
                continue
            by_example[test.example_id].append(self._script_test(test, d))
        rng = random.Random(self.seed)
        ordered = []
        for key in sorted(by_example, key=lambda k: (len(k), k)):
            batch = by_example[key]
            rng.shuffle(batch)
            ordered += batch
        return ordered

    def _script_test(self, test: LoadedTest, d: TestDefinition) -> ScriptTest:
        extra = d.model_extra or {}
        replies = int(d.expected_responses[0][2]) - 1 if test.test_type == "prospective_memory" else 0
        make = (jokes_question(d.script, d.expected_responses[0])
                if d.is_temporal and test.test_type == "jokes" else None)
        return ScriptTest(test_id=self.test_id(test), test_type=test.test_type,
                          script=list(d.script), is_question=list(d.is_question),
                          waits=[w.model_dump(exclude_none=True) for w in d.waits],
                          reset_message=extra.get("reset_message", RESETS.get(test.test_type, "")),
                          replies_after=replies, make_question=make)

    @staticmethod
    def test_id(test: LoadedTest) -> str:
        return f"{test.test_type}/{test.example_id}"

    def events(self) -> list[SuiteEvent]:
        if self._events is None:
            events = [
                SuiteEvent(index=i, kind=t.kind, text=t.text, reply=t.reply, test_id=t.test_id,
                           test_type=t.test_type, session_id="ltm", timestamp=t.timestamp,
                           store=True, metadata={"tokens": t.tokens, **t.metadata})
                for i, t in enumerate(self.schedule().turns)]
            expected = {self.test_id(t): t.definition.expected_responses for t in self.tests}
            for event in events:
                if event.kind == "question":
                    needles = [e for e in events[:event.index]
                               if e.kind == "needle" and e.test_id == event.test_id]
                    event.evidence = needle_evidence(needles, expected.get(event.test_id, []))
            self._events = events
        return self._events

    def spans(self) -> dict[str, dict[str, Any]]:
        """Per test: first needle and question positions and their distance, in tokens."""
        return self.schedule().spans

    # ------------------------------------------------------------ scoring

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        events = self.events()
        scores = []
        for test in self.tests:
            tid = self.test_id(test)
            if tid in self.skipped:
                continue
            questions = [e for e in events if e.test_id == tid and e.kind == "question"]
            replies = [responses[e.index].reply if e.index in responses else "" for e in questions]
            if test.test_type == "prospective_memory" and questions:
                n = int(test.definition.expected_responses[0][2])
                answered = [e for e in events[questions[0].index:] if e.kind != "filler"][:n]
                replies = [responses[e.index].reply if e.index in responses else "" for e in answered]
            scores.append(self._judge(test, [e.text for e in questions], replies))
        return scores

    def _judge(self, test: LoadedTest, questions: list[str], replies: list[str]) -> TestScore:
        d, tid = test.definition, self.test_id(test)
        extra = d.model_extra or {}
        context: dict[str, Any] = {"client": self.judge}
        if "spy_vocabulary" in extra:
            context["vocabulary"] = frozenset(extra["spy_vocabulary"])
        span = self.spans().get(tid, {})
        meta = {"example_id": test.example_id, "span_tokens": span.get("distance"),
                "memory_span": self.span, "question_indexes": []}
        try:
            judged = scorers(RUN_SCORERS)[test.test_type](questions, replies,
                                                          d.expected_responses, **context)
        except ConfigError as exc:
            return TestScore(test_id=tid, test_type=test.test_type, score=0, max_score=1,
                             reasoning=[str(exc)], judge="llm", metadata={**meta, "unscored": True})
        return TestScore(test_id=tid, test_type=test.test_type, score=judged.score,
                         max_score=judged.max_score, reasoning=judged.reasoning,
                         judge=judged.judge, metadata=meta)

    def describe(self) -> dict[str, Any]:
        types = sorted({t.test_type for t in self.tests})
        return {"name": self.name, "source": self.source, "span": self.span,
                "examples": self.examples, "seed": self.seed, "types": types,
                "tests": len(self.tests), "skipped": dict(self.skipped),
                "scorers": run_scorers_id()}

    # ------------------------------------------------------------ GoodAI results

    def write_goodai_results(self, results_dir: str | Path, agent: str,
                             responses: dict[int, Response], scores: list[TestScore],
                             rep: int = 0) -> list[Path]:
        """Write ``results/<agent>/<Test Type>/<id>_<rep>.json`` for every scored test."""
        events, paths = self.events(), []
        by_id = {t: test for test in self.tests for t in [self.test_id(test)]}
        for score in scores:
            test = by_id[score.test_id]
            own = [e for e in events if e.test_id == score.test_id]
            first, last = own[0].index, own[-1].index
            window = events[first:last + 1]
            question_idx = [e.index for e in own if e.kind == "question"]
            answers = [responses[i].reply if i in responses else "" for i in question_idx]
            span = self.spans().get(score.test_id, {})
            result = TestResult(
                task_log=_log(own, responses), actual_responses=answers,
                score=score.score, max_score=score.max_score, reasoning=score.reasoning,
                tokens=span.get("distance") or 0,
                characters=sum(len(e.text) for e in events[first:question_idx[-1]]) if question_idx else 0,
                full_log=_log(window, responses), expected_responses=test.definition.expected_responses,
                needles=test.definition.is_question.count(False))
            paths.append(write_result(result_path(results_dir, agent, test.test_type,
                                                  test.example_id, rep), result))
        return paths


def check_type_args(type_args: Any) -> None:
    """``type_args`` maps generated test types to counts their generator takes.

    Raises:
        ConfigError: another shape, a type with no generator, an argument the generator does
            not take, or a value that is not a whole number of at least 1 (naming the field).
    """
    field = "field 'suite_options.type_args'"
    if not isinstance(type_args, dict) or any(not isinstance(v, dict) for v in type_args.values()):
        raise ConfigError(f"{field}: {type_args!r} must map a test type to its arguments, e.g. "
                          "type_args={colours: {colour_changes: 2}}")
    for test_type, args in type_args.items():
        if test_type not in GENERATORS:
            raise ConfigError(f"{field}: no generated type {test_type!r} (known: "
                              f"{', '.join(GENERATORS)})")
        takes = [name for name in inspect.signature(GENERATORS[test_type]).parameters
                 if name != "rng"]
        for name, value in args.items():
            if name not in takes:
                raise ConfigError(f"{field}: {test_type} takes {takes or 'no arguments'}, not "
                                  f"{name!r}")
            count_option(value, f"type_args.{test_type}.{name}")


def answer_strings(expected: Any) -> list[str]:
    """Every string of at least 3 characters inside ``expected_responses`` (nested lists too)."""
    if isinstance(expected, str):
        return [expected.strip()] if len(expected.strip()) >= 3 else []
    if isinstance(expected, list | tuple):
        return [s for item in expected for s in answer_strings(item)]
    return []


def needle_evidence(needles: list[SuiteEvent], expected: Any) -> list[Evidence]:
    """The needles a question of a test needs, with the answer each carries.

    A needle carries an answer when one of the test's expected answer strings occurs in it (the
    colour, a name, a shopping item, the joke, the trigger sentence); those needles are the
    evidence, each with the longest string it holds. When no needle holds one (directions,
    coded spy messages, loaded tests), every needle of the test is evidence, with no answer
    string, so only the verbatim turn counts.
    """
    keys = answer_strings(expected)
    carried = []
    for needle in needles:
        found = [k for k in keys if k.lower() in needle.text.lower()]
        if found:
            carried.append(Evidence(index=needle.index, answer=max(found, key=len)))
    return carried or [Evidence(index=n.index) for n in needles]


def _log(events: list[SuiteEvent], responses: dict[int, Response]) -> list[str]:
    lines = []
    for e in events:
        lines.append(f"Test ({e.timestamp}): {e.text}")
        reply = e.reply if e.kind == "filler" else (responses[e.index].reply if e.index in responses else "")
        lines.append(f"Agent ({e.timestamp}): {reply}")
    return lines


def suite_score(scores: list[TestScore]) -> tuple[float, int]:
    """GoodAI's suite score: sum over test types of the mean score, and the number of types."""
    by_type: dict[str, list[float]] = defaultdict(list)
    for s in scores:
        by_type[s.test_type].append(s.fraction)
    return sum(sum(v) / len(v) for v in by_type.values()), len(by_type)
