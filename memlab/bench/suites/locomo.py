"""The LoCoMo suite: the published conversations replayed into memory, questions asked after.

Each conversation (a LoCoMo sample) is its own user: its sessions are replayed in order, every
turn of both speakers stored as it happened (``Caroline said, "..." [shares a photo of ...]``,
see ``locomo_data.render_turn``) with no model call, then its questions are asked without being
stored. One run holds the conversations the ``conversations`` option names, one after another,
each with its own memory scope (``SuiteEvent.user_id``).

Why both speakers go on the user side of memlab's user/assistant exchange, with an empty
assistant side: the answering model is not a party to these chats, it is asked about both
people in the third person. Storing speaker B as "the assistant" would make every condition
present B's words as the model's own replies (and a fact extractor attribute B's life to the
assistant); keeping each turn whole, with its speaker's name, keeps who said what, and one
turn is one event, so a question's evidence dia_ids map to exactly the turns that hold it.

LoCoMo dates sessions, not turns: turn k of a session is stamped k seconds after the session's
time (order kept, the session's minute shown), and the answer prompt writes times as LoCoMo
does (``format_time``: the session's own ``date_time`` string, "1:56 pm on 8 May, 2023", as the
data set and Mem0's protocol show it), so a right date can match the gold answer's tokens; the
option ``dates="memlab"`` keeps memlab's ``Sun 09 Jul 2023 13:25``. Questions are asked one
second after the last replayed turn, with LoCoMo's own answer prompt (a short phrase, exact
words; temporal questions add its "Use DATE of CONVERSATION" line); an adversarial question
(category 5) is LoCoMo's two-option choice between "Not mentioned in the conversation" and the
answer it baits, and scores 1 when the model declines. Scores: LoCoMo's F1, BLEU-1 and two
judges side by side on every answer, Mem0's lenient J and a strict one (``locomo_metrics``,
``judges``), and a third verdict from them with no call of its own, J matched (a rule's where
one decides, else the strict judge's: ``judges.matched_verdict``); ``TestScore.score`` is
Mem0's J (F1 with ``judge=False``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memlab.bench.base import Evidence, Response, SuiteEvent, TestScore
from memlab.bench.evidence import carries
from memlab.bench.schedule import TokenCounter, estimate_tokens
from memlab.bench.suites.judges import judge_answer, matched_verdict, mem0_judge, strict_judge
from memlab.bench.suites.locomo_data import (
    Conversation,
    LoCoMoQuestion,
    dia_ids,
    format_date,
    locomo_counts,
    read_locomo,
    render_turn,
)
from memlab.bench.suites.locomo_metrics import CATEGORIES, bleu1, declines, locomo_f1
from memlab.bench.suites.options import bool_option, count_option, list_option
from memlab.bench.suites.published import PublishedSuite, seeded_sample, select
from memlab.errors import ConfigError
from memlab.llm.options import parse_letter

INTRO = ("Your memory holds conversations between two people, {a} and {b}, over multiple "
         "days; each remembered turn names its speaker.")
QA_PROMPT = ("Based on the above context, write an answer in the form of a short phrase for the "
             "following question. Answer with exact words from the context whenever possible."
             "\n\nQuestion: {question} Short answer:")
QA_PROMPT_CAT_5 = "Based on the above context, answer the following question.\n\nQuestion: {question}"
TEMPORAL_HINT = " Use DATE of CONVERSATION to answer with an approximate date."
NOT_MENTIONED = "Not mentioned in the conversation"
DATES = ("locomo", "memlab")  # how the answer prompt writes times (option dates)


class LoCoMoSuite(PublishedSuite):
    """LoCoMo conversations from the published file, replayed, then their questions.

    Args:
        data: path of ``locomo10.json`` (or a file of the same format).
        conversations: sample ids, or a count (the first N in the file); default: all.
        sessions: replay only the first N sessions of each conversation; a question is then
            kept only when every turn it names as evidence was replayed.
        categories: question categories asked (default 1-4, Mem0's protocol; 5 adds the
            adversarial questions).
        questions: a seeded sample of this many questions per conversation (default: all).
        judge: the LLM judge client (None: no J; ``score`` is then F1).
        dates: "locomo" (default) writes times in the answer prompt as the data set writes
            its sessions' ``date_time`` ("1:56 pm on 8 May, 2023"); "memlab" as memlab's
            other suites do ("Mon 08 May 2023 13:56").
        clock: start each question with the present time ("It is now ...", the time it is
            asked: one second after the conversation's last turn), as memlab's other suites
            do. Default False: LoCoMo's and Mem0's protocols state none, and with it the model
            answered "when" questions with that clock's date (6 of 16 temporal answers in a
            pilot, docs/suites.md).
        count_tokens: the answering model's tokenizer (history sizes in ``describe``).
    """

    name = "locomo"
    options = ("data", "conversations", "sessions", "categories", "questions", "judge",
               "dates", "clock")

    def __init__(self, data: str | None = None, *, span: int = 0, seed: int = 0,
                 conversations: int | list[str] | None = None, sessions: int | None = None,
                 categories: list[int] | None = None, questions: int | None = None,
                 judge: Any = None, dates: str = "locomo", clock: bool = False,
                 count_tokens: TokenCounter | None = None):
        self.file, every = read_locomo(data)
        self.span, self.seed, self.judge = span, seed, judge
        self.conversations = self.units = select(every, conversations, lambda c: c.sample_id,
                                                 self.file, "conversations")
        self.sessions = count_option(sessions, "sessions")
        self.per_conversation = count_option(questions, "questions")
        self.categories = sorted(set(list_option(categories, "categories", int, "[1, 2]")
                                     or (1, 2, 3, 4)))
        if not set(self.categories) <= set(CATEGORIES):
            raise ConfigError(f"field 'suite_options.categories': {categories} must be among "
                              "1-5 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, "
                              "5 adversarial)")
        self.count = count_tokens or estimate_tokens
        if dates not in DATES:
            raise ConfigError(f"field 'suite_options.dates': {dates!r} must be one of "
                              f"{', '.join(DATES)}")
        self.dates = dates
        self.states_clock = bool_option(clock, "clock")

    def format_time(self, moment: datetime) -> str:
        """LoCoMo's ``date_time`` format (``dates="locomo"``), else memlab's."""
        return format_date(moment) if self.dates == "locomo" else super().format_time(moment)

    # ------------------------------------------------------------ conversation
    def _add_unit(self, conversation: Conversation, events: list[SuiteEvent]) -> None:
        sample = conversation.sample_id
        turns: dict[str, SuiteEvent] = {}
        replayed = conversation.sessions[:self.sessions]
        for session in replayed:
            for k, turn in enumerate(session.turns):
                event = SuiteEvent(
                    index=len(events), kind="filler", text=render_turn(turn), reply="",
                    session_id=f"{sample}/session_{session.number}", user_id=sample,
                    timestamp=session.date + timedelta(seconds=k),
                    metadata={"sample_id": sample, "dia_id": turn.dia_id,
                              "speaker": turn.speaker, "image": turn.blip_caption is not None})
                events.append(event)
                turns[turn.dia_id] = event
        asked = events[-1].timestamp + timedelta(seconds=1)
        complete = len(replayed) == len(conversation.sessions)
        chosen = [(n, q) for n, q in enumerate(conversation.questions)
                  if q.category in self.categories and self._answerable(q, turns, complete)]
        for n, question in seeded_sample(chosen, self.per_conversation, self.seed, sample):
            events.append(self._question(conversation, n, question, turns, asked, len(events)))

    @staticmethod
    def _answerable(question: LoCoMoQuestion, turns: dict[str, SuiteEvent],
                    complete: bool) -> bool:
        """Whether the replayed sessions hold the question's evidence (every question, when
        every session was replayed)."""
        return complete or bool(question.evidence) and all(
            d in turns for d in dia_ids(question.evidence))

    def _question(self, conversation: Conversation, n: int, question: LoCoMoQuestion,
                  turns: dict[str, SuiteEvent], asked: datetime, index: int) -> SuiteEvent:
        ids = dia_ids(question.evidence)
        gold = str(question.answer if question.category != 5 else question.adversarial_answer)
        evidence = [Evidence(index=turns[d].index, answer=gold if carries(turns[d].text, gold)
                             and question.category != 5 else None) for d in ids if d in turns]
        intro = INTRO.format(a=conversation.speaker_a, b=conversation.speaker_b) + "\n\n"
        meta = {"sample_id": conversation.sample_id, "qa_index": n,
                "category": question.category, "answer": gold, "evidence_ids": ids,
                "evidence_unresolved": [d for d in ids if d not in conversation.turn_ids]}
        event = SuiteEvent(index=index, kind="question", text=question.question,
                           test_id=f"{conversation.sample_id}:q{n}",
                           test_type=CATEGORIES[question.category], store=False,
                           session_id=f"{conversation.sample_id}/questions",
                           user_id=conversation.sample_id, timestamp=asked, evidence=evidence,
                           metadata=meta)
        if question.category == 5:
            event.options, event.answer_index = [NOT_MENTIONED, gold], 0
            event.prompt = intro + QA_PROMPT_CAT_5.format(question=question.question)
        else:
            hint = TEMPORAL_HINT if question.category == 2 else ""
            event.prompt = intro + QA_PROMPT.format(question=question.question + hint)
        return event

    def _no_questions(self) -> str:
        held = sorted({q.category for c in self.conversations for q in c.questions})
        ids = [c.sample_id for c in self.conversations]
        if not held:
            return f"conversations {ids} hold no questions (field 'qa')"
        if not set(held) & set(self.categories):
            return (f"the questions of conversations {ids} are in categories {held}, none in "
                    f"{self.categories} (option categories; 5 is the adversarial one)")
        return (f"no question in categories {self.categories} of conversations {ids} has its "
                f"evidence in the first {self.sessions} sessions (option sessions)")

    # ------------------------------------------------------------ scoring
    def _score_question(self, event: SuiteEvent, response: Response) -> TestScore:
        if event.metadata["category"] == 5:
            return self._score_adversarial(event, response)
        return self._score_answer(event, response)

    def _score_answer(self, event: SuiteEvent, response: Response) -> TestScore:
        meta, reply = event.metadata, response.reply.strip()
        gold, category = meta["answer"], meta["category"]
        f1, b1 = locomo_f1(reply, gold, category), bleu1(reply, gold)
        verdicts = self._judged(event.text, gold, reply)
        reasons = [f"F1 {f1:.3f}, BLEU-1 {b1:.3f}"]
        if self.judge is not None:
            reasons.append(", ".join(f"{name}: {'CORRECT' if verdicts[key] else 'WRONG'}"
                                     for name, key in (("J", "j"), ("J strict", "j_strict"),
                                                       ("J matched", "j_matched")))
                           + ("" if reply else " (no answer)"))
        # the score is the judge measured against hand labels (J matched; docs/suites.md),
        # Mem0's J and the strict judge stay beside it in the metadata
        judged = verdicts["j_matched"]
        return TestScore(
            test_id=event.test_id or str(event.index), test_type=event.test_type or "question",
            score=float(judged) if judged is not None else f1, max_score=1,
            reasoning=reasons, judge="llm" if judged is not None else "rule",
            metadata={**meta, "event_index": event.index, "f1": f1, "bleu1": b1, **verdicts,
                      "judge_model": self.judge_model})

    def _judged(self, question: str, gold: str, reply: str) -> dict[str, Any]:
        """Both judges' verdicts and raw replies on the normalised answer (``judge_answer``),
        and the matched verdict with who decided it (``matched_verdict``); an empty answer is
        WRONG for all three without a call; None without a judge."""
        if self.judge is None:
            return {"j": None, "j_strict": None, "j_matched": None, "j_matched_by": None,
                    "judge_raw": None, "judge_strict_raw": None, "judged_answer": None}
        judged = judge_answer(reply)
        if not judged:
            return {"j": False, "j_strict": False, "j_matched": False, "j_matched_by": "rule",
                    "judge_raw": "", "judge_strict_raw": "", "judged_answer": ""}
        lenient = mem0_judge(self.judge, question, gold, judged)
        strict = strict_judge(self.judge, question, gold, judged)
        matched, by = matched_verdict(gold, judged, strict.correct, question)
        return {"j": lenient.correct, "j_strict": strict.correct, "j_matched": matched,
                "j_matched_by": by, "judge_raw": lenient.raw, "judge_strict_raw": strict.raw,
                "judged_answer": judged}

    def _score_adversarial(self, event: SuiteEvent, response: Response) -> TestScore:
        options = event.options or []
        chosen = response.choice if response.choice is not None else \
            parse_letter(response.reply, len(options))
        said = options[chosen] if chosen is not None and chosen < len(options) else response.reply
        declined = declines(said)
        return TestScore(
            test_id=event.test_id or str(event.index), test_type=event.test_type or "question",
            score=float(declined), max_score=1, judge="rule",
            reasoning=[f"{'declined' if declined else 'did not decline'}: {said[:80]!r}"],
            metadata={**event.metadata, "event_index": event.index, "chosen": chosen,
                      "declined": declined})

    @classmethod
    def info(cls, data: str) -> dict[str, Any]:
        """The file's counts (``locomo_data.locomo_counts``), tokens estimated."""
        return locomo_counts(*read_locomo(data), estimate_tokens)

    # ------------------------------------------------------------ identity
    def describe(self) -> dict[str, Any]:
        events = self.events()
        ids = [c.sample_id for c in self.conversations]
        history = {sample: sum(self.count(e.text) for e in events
                               if e.kind == "filler" and e.user_id == sample) for sample in ids}
        return {"name": self.name, "source": str(self.file.path), "sha256": self.file.sha256,
                "conversations": ids, "user_id": ids[0] if len(ids) == 1 else None,
                "sessions": self.sessions, "categories": self.categories,
                "questions_per_conversation": self.per_conversation, "seed": self.seed,
                "questions": sum(e.kind == "question" for e in events),
                "history_tokens": history, "judge_model": self.judge_model,
                "dates": self.dates, "clock": self.states_clock}

