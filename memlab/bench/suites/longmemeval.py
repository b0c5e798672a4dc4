"""The LongMemEval suite: each instance's chat history replayed, then its one question.

Reads ``longmemeval_s`` / ``_m`` / ``_oracle`` JSON: a list of instances with ``question_id``,
``question_type``, ``question``, ``answer``, ``question_date``, ``haystack_session_ids``,
``haystack_dates``, ``haystack_sessions`` (lists of ``{"role", "content", "has_answer"?}``) and
``answer_session_ids``; abstention questions have ids ending in ``_abs``. Dates look like
"2023/05/20 (Sat) 02:21".

Each instance is its own user (``SuiteEvent.user_id`` = its question id): its sessions are
replayed in time order, a user message and the assistant reply after it stored as one exchange
(turn k of a session stamped k seconds after the session's date), with no model call; then the
question is asked at ``question_date`` and not stored. Its evidence is the exchanges holding a
``has_answer`` turn; when an answer session marks none (abstention questions often do not),
every exchange of the answer sessions. Scored by LongMemEval's judge prompt for the question's
type (the abstention prompt for ``_abs`` ids) with the run's model (``judges``); accuracy by
type, task-averaged and abstention accuracy are ``memlab.report.literature``'s.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from memlab.bench.base import Evidence, Response, SuiteEvent, TestScore
from memlab.bench.evidence import carries
from memlab.bench.schedule import TokenCounter, estimate_tokens
from memlab.bench.suites.judges import LONGMEMEVAL_PROMPTS, longmemeval_judge
from memlab.bench.suites.options import count_option, list_option
from memlab.bench.suites.published import (
    DataFile,
    PublishedSuite,
    expect_list,
    fault,
    load_json,
    parse_model,
    seeded_sample,
)
from memlab.errors import ConfigError

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
QUESTION_TYPES = tuple(LONGMEMEVAL_PROMPTS)


def _date(value: Any) -> Any:
    """``"2023/05/20 (Sat) 02:21"`` as a datetime (anything else is left for pydantic)."""
    if isinstance(value, str):
        try:
            return datetime.strptime(value.strip(), DATE_FORMAT)
        except ValueError:
            raise ValueError(f"{value!r} is not a date like '2023/05/20 (Sat) 02:21'") from None
    return value


LongMemEvalDate = Annotated[datetime, BeforeValidator(_date)]


class Turn(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["user", "assistant"]
    content: StrictStr
    has_answer: bool = False


class Instance(BaseModel):
    """One LongMemEval instance, checked (dates parsed, the haystack lists of equal length)."""

    model_config = ConfigDict(extra="allow")

    question_id: StrictStr = Field(min_length=1)
    question_type: Literal[QUESTION_TYPES]  # type: ignore[valid-type]
    question: StrictStr
    answer: StrictStr | StrictInt | StrictFloat
    question_date: LongMemEvalDate
    haystack_session_ids: list[StrictStr]
    haystack_dates: list[LongMemEvalDate]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[StrictStr] = Field(default_factory=list)

    @model_validator(mode="after")
    def _aligned(self) -> Instance:
        lengths = {len(self.haystack_session_ids), len(self.haystack_dates),
                   len(self.haystack_sessions)}
        if len(lengths) != 1:
            raise ValueError("haystack_session_ids, haystack_dates and haystack_sessions must "
                             "have one entry per session")
        return self

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")


def read_longmemeval(path: str | Path | None) -> tuple[DataFile, list[Instance]]:
    """The file's instances, checked (ConfigError naming the file, instance and field)."""
    file = load_json(path, "longmemeval")
    raw = expect_list(file.content, file, "top level", "instances")
    instances = []
    for i, item in enumerate(raw):
        qid = item.get("question_id") if isinstance(item, dict) else None
        where = f"instance {qid!r}" if isinstance(qid, str) else f"instance #{i}"
        instances.append(parse_model(Instance, item, file, where, ""))
    ids = Counter(instance.question_id for instance in instances)
    repeated = sorted(q for q, n in ids.items() if n > 1)
    if repeated:
        raise fault(file, f"instance {repeated[0]!r}", "question_id", "repeats")
    return file, instances


def exchanges(session: list[Turn]) -> list[dict[str, Any]]:
    """A session as exchanges ``{"user", "assistant", "marked"}``: each user message with the
    assistant message right after it (a reply with no user message before it gets an empty
    user side); ``marked`` when either turn has ``has_answer``."""
    out: list[dict[str, Any]] = []
    for turn in session:
        open_reply = bool(out) and out[-1]["awaiting"]
        if turn.role == "assistant" and open_reply:
            out[-1].update(assistant=turn.content, awaiting=False,
                           marked=out[-1]["marked"] or turn.has_answer)
        else:
            user = turn.role == "user"
            out.append({"user": turn.content if user else "",
                        "assistant": "" if user else turn.content,
                        "marked": turn.has_answer, "awaiting": user})
    return out


class LongMemEvalSuite(PublishedSuite):
    """LongMemEval instances from a published file, each replayed, then its question.

    Args:
        data: path of ``longmemeval_s.json`` / ``_m`` / ``_oracle`` (or one of that format).
        types: question types asked (default: all six).
        instances: a seeded sample of this many instances (after the type filter); default all.
        judge: the LLM judge client (None: no verdicts; every score is then 0 and unjudged).
        count_tokens: the answering model's tokenizer (history sizes in ``describe``).
    """

    name = "longmemeval"
    options = ("data", "types", "instances", "judge")

    def __init__(self, data: str | None = None, *, span: int = 0, seed: int = 0,
                 types: list[str] | None = None, instances: int | None = None,
                 judge: Any = None, count_tokens: TokenCounter | None = None):
        self.file, every = read_longmemeval(data)
        self.span, self.seed, self.judge = span, seed, judge
        self.types = sorted(set(list_option(types, "types", str, "[temporal-reasoning]")
                                or QUESTION_TYPES))
        unknown = sorted(set(self.types) - set(QUESTION_TYPES))
        if unknown:
            raise ConfigError(f"field 'suite_options.types': {unknown} are not LongMemEval "
                              f"question types ({', '.join(QUESTION_TYPES)})")
        count_option(instances, "instances")
        kept = [i for i in every if i.question_type in self.types]
        self.instances = self.units = seeded_sample(kept, instances, seed, "longmemeval")
        self.sample_size = instances
        self.count = count_tokens or estimate_tokens

    def _add_unit(self, instance: Instance, events: list[SuiteEvent]) -> None:
        qid, answer = instance.question_id, str(instance.answer)
        sessions = sorted(zip(instance.haystack_dates, instance.haystack_session_ids,
                              instance.haystack_sessions, strict=True), key=lambda s: s[0])
        marked, by_session = [], {}
        for date, session_id, turns in sessions:
            for k, exchange in enumerate(exchanges(turns)):
                event = SuiteEvent(index=len(events), kind="filler", text=exchange["user"],
                                   reply=exchange["assistant"], session_id=f"{qid}/{session_id}",
                                   user_id=qid, timestamp=date + timedelta(seconds=k),
                                   metadata={"question_id": qid, "session": session_id})
                events.append(event)
                by_session.setdefault(session_id, []).append(event)
                if exchange["marked"]:
                    marked.append(event)
        evidence = [Evidence(index=e.index, answer=answer if carries(
            f"{e.text}\n{e.reply}", answer) else None) for e in marked]
        for session_id in instance.answer_session_ids:
            own = by_session.get(session_id, [])
            if not any(e in marked for e in own):
                evidence += [Evidence(index=e.index) for e in own]
        events.append(SuiteEvent(
            index=len(events), kind="question", text=instance.question, test_id=qid,
            test_type=instance.question_type, store=False, session_id=f"{qid}/question",
            user_id=qid, timestamp=instance.question_date, evidence=evidence,
            metadata={"question_id": qid, "question_type": instance.question_type,
                      "abstention": instance.abstention, "answer": answer,
                      "answer_session_ids": instance.answer_session_ids,
                      "evidence_turns": "has_answer" if marked else "answer_sessions"}))

    def _score_question(self, event: SuiteEvent, response: Response) -> TestScore:
        meta, reply = event.metadata, response.reply.strip()
        verdict = raw = None
        if self.judge is not None:
            judged = longmemeval_judge(self.judge, meta["question_type"], event.text,
                                       meta["answer"], reply, meta["abstention"]) \
                if reply else None
            verdict, raw = (judged.correct, judged.raw) if judged else (False, "")
        return TestScore(
            test_id=event.test_id or str(event.index), test_type=meta["question_type"],
            score=float(bool(verdict)), max_score=1,
            judge="llm" if verdict is not None else "rule",
            reasoning=[f"judge: {'yes' if verdict else 'no'}" if verdict is not None
                       else "not judged (judge off)"],
            metadata={**meta, "event_index": event.index, "correct": verdict,
                      "judge_raw": raw, "judge_model": self.judge_model})

    @classmethod
    def info(cls, data: str) -> dict[str, Any]:
        """The file's counts (``longmemeval_counts``), tokens estimated."""
        return longmemeval_counts(*read_longmemeval(data), estimate_tokens)

    def describe(self) -> dict[str, Any]:
        ids = [i.question_id for i in self.instances]
        history = sum(self.count(f"{e.text}\n{e.reply or ''}") for e in self.events()
                      if e.kind == "filler")
        return {"name": self.name, "source": str(self.file.path), "sha256": self.file.sha256,
                "types": self.types, "instances": self.sample_size, "seed": self.seed,
                "question_ids": ids, "user_id": ids[0] if len(ids) == 1 else None,
                "history_tokens": history, "judge_model": self.judge_model}


def longmemeval_counts(file: DataFile, instances: list[Instance],
                       count_tokens: Any) -> dict[str, Any]:
    """What ``memlab suites info longmemeval`` prints."""
    sessions = [s for i in instances for s in i.haystack_sessions]
    turns = [t for s in sessions for t in s]
    by_type = Counter(i.question_type for i in instances)
    return {
        "file": str(file.path), "sha256": file.sha256, "samples": len(instances),
        "sessions": len(sessions), "turns": len(turns),
        "tokens_estimated": sum(count_tokens(t.content) for t in turns),
        "questions": len(instances),
        "questions_by_type": {k: by_type[k] for k in sorted(by_type)},
        "abstention_questions": sum(i.abstention for i in instances),
        "questions_with_evidence": sum(any(t.has_answer for s in i.haystack_sessions for t in s)
                                       or bool(i.answer_session_ids) for i in instances),
        "questions_with_has_answer_turns": sum(
            any(t.has_answer for s in i.haystack_sessions for t in s) for i in instances),
    }
