"""The Persona suite, modelled on PersonaMem: a seeded persona whose preferences change over
sessions, and 4-option questions of PersonaMem's 7 types with evidence and distractor kinds.

History turns are events of kind ``filler`` (user line plus the scripted assistant reply, stored
without a model call); questions are ``question`` events with ``options``/``answer_index`` and
``store=False``. Question metadata carries what the metrics need: ``question_type``, ``topic``,
``evidence`` (session, turn, event index) and ``evidence_indices``, ``evidence_session_ranks``
(0 = oldest session), ``distractor_kinds`` per option ("correct" for the answer), and for Table 2 probes ``probe``, ``cue``
and ``masked``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memlab.bench.base import Response, Suite, SuiteEvent, TestScore
from memlab.bench.schedule import TokenCounter, estimate_tokens
from memlab.bench.suites import persona_data as data
from memlab.bench.suites.options import bool_option, choice_option, count_option
from memlab.bench.suites.persona_questions import build_questions
from memlab.llm.options import parse_final_answer

QUESTION_TYPES = (
    "recall_user_shared_facts", "suggest_new_ideas", "acknowledge_latest_user_preferences",
    "track_full_preference_evolution", "revisit_reasons_behind_preference_updates",
    "provide_preference_aligned_recommendations", "generalize_to_new_scenarios",
)


@dataclass
class Stance:
    liked: bool
    reason: str
    date: datetime
    turn_ref: dict[str, Any] = field(default_factory=dict)  # session_id, turn, event_index
    text: str = ""


@dataclass
class Preference:
    topic: str
    item: str
    history: list[Stance] = field(default_factory=list)


@dataclass
class PersonaPlan:
    name: str
    description: str
    topics: list[str]
    prefs: list[Preference]
    facts: dict[str, tuple[str, dict[str, Any]]]  # topic -> (fact, turn_ref)
    session_order: list[str] = field(default_factory=list)


class PersonaSuiteBase(Suite):
    """Scoring shared by the generated and the loaded persona suites."""

    name = "persona"
    whole_history = True  # a question may ask about any session of the history
    persona: str = ""

    def score(self, responses: dict[int, Response]) -> list[TestScore]:
        scores = []
        for event in self.events():
            if event.kind != "question" or event.options is None:
                continue
            response = responses.get(event.index)
            chosen = None
            if response is not None:
                chosen = response.choice if response.choice is not None else \
                    parse_final_answer(response.reply, len(event.options), event.options)
            kinds = event.metadata.get("distractor_kinds") or [None] * len(event.options)
            ok = chosen is not None and chosen == event.answer_index
            reason = ("no option chosen" if chosen is None else
                      f"chose option {chosen}; answer {event.answer_index}")
            scores.append(TestScore(
                test_id=event.test_id or str(event.index), test_type=event.test_type or "question",
                score=int(ok), max_score=1, reasoning=[reason], judge="rule",
                metadata={"event_index": event.index, "chosen": chosen,
                          "answer_index": event.answer_index,
                          "chosen_kind": kinds[chosen] if chosen is not None and chosen < len(kinds) else None,
                          "by_logprob": response is not None and response.choice is not None,
                          **{k: event.metadata[k] for k in ("topic", "probe") if k in event.metadata}}))
        return scores


class PersonaSuite(PersonaSuiteBase):
    """A generated PersonaMem-style history of ``span`` tokens, then its questions.

    Args:
        span: history length to reach, in the model's tokens (at least two sessions
            per topic are always generated, so every question type has evidence).
        n_topics: topics the persona talks about (sessions are interleaved across them).
        probes: also generate Table 2 cue-based probes.
        chat: the small talk between the preferences: ``"repeated"`` (the default; 8
            exchanges drawn again and again, as every committed persona record has it) or
            ``"varied"`` (composed from parts, ``persona_data.varied_chat``: 1,088 distinct
            sentences, from a second generator). The seed's plan (persona, the items and
            their first stances) is the same; the sessions' lengths follow the tokens, so the
            later draws (changes of mind, options, their order) differ: a comparison of the
            two is unpaired.
    """

    options = ("n_topics", "probes", "chat")
    CHAT = ("repeated", "varied")

    def __init__(self, *, span: int = 32000, seed: int = 0, n_topics: int = 4,
                 count_tokens: TokenCounter | None = None, probes: bool = True,
                 start: datetime | None = None, chat: str = "repeated"):
        self.span, self.seed = span, seed
        self.n_topics = count_option(n_topics, "n_topics")
        self.probes = bool_option(probes, "probes")
        self.chat = choice_option(chat, "chat", self.CHAT)
        self.count = count_tokens or estimate_tokens
        self.start = start or datetime(2024, 1, 8, 19, 0, 0)
        self._events: list[SuiteEvent] | None = None
        self.plan: PersonaPlan | None = None
        self.history_tokens = 0

    def describe(self) -> dict[str, Any]:
        self.events()  # history_tokens is known once the history is built: a resumed run
        # compares this description with its manifest before it asks for the events
        # "chat" only when varied: every persona manifest before it had repeated small talk
        return ({"name": self.name, "source": "generated", "span": self.span,
                 "seed": self.seed, "n_topics": self.n_topics, "probes": self.probes,
                 "history_tokens": self.history_tokens}
                | ({"chat": self.chat} if self.chat != "repeated" else {}))

    def events(self) -> list[SuiteEvent]:
        if self._events is None:
            rng = random.Random(self.seed)
            self._chat_rng = random.Random(f"persona-chat-{self.seed}")
            self.plan = self._plan(rng)
            history = self._history(rng, self.plan)
            questions = build_questions(rng, self.plan, history, probes=self.probes)
            self._events = history + questions
        return self._events

    # ------------------------------------------------------------ generation

    def _plan(self, rng: random.Random) -> PersonaPlan:
        name = f"{rng.choice(data.FIRST_NAMES)} {rng.choice(data.LAST_NAMES)}"
        job, city = rng.choice(data.JOBS), rng.choice(data.CITIES)
        topics = rng.sample(sorted(data.TOPICS), min(self.n_topics, len(data.TOPICS)))
        prefs = [Preference(t, item) for t in topics for item in rng.sample(data.TOPICS[t]["items"], 2)]
        self.persona = (f"Current user persona: Name: {name}. {name} is {job} living in {city}, "
                        f"interested in {', '.join(topics)}.")
        return PersonaPlan(name, self.persona, topics, prefs, {})

    def _history(self, rng: random.Random, plan: PersonaPlan) -> list[SuiteEvent]:
        events: list[SuiteEvent] = []
        visits = {t: 0 for t in plan.topics}
        date, s, order = self.start, 0, []
        while s < 3 * len(plan.topics) or self.history_tokens < self.span:
            if s % len(plan.topics) == 0:
                order = rng.sample(plan.topics, len(plan.topics))
            topic = order[s % len(plan.topics)]
            if s:
                date += timedelta(days=rng.randint(3, 12))
                self._off_topic(rng, events, date - timedelta(days=1), s)
            self._session(rng, plan, events, topic, visits[topic], date, f"session-{s}")
            plan.session_order.append(f"session-{s}")
            visits[topic] += 1
            s += 1
        return events

    def _add(self, events: list[SuiteEvent], text: str, reply: str, session: str,
             when: datetime, **meta: Any) -> dict[str, Any]:
        turn = sum(e.session_id == session for e in events)
        events.append(SuiteEvent(index=len(events), kind="filler", text=text, reply=reply,
                                 session_id=session, timestamp=when + timedelta(minutes=turn),
                                 metadata={"turn": turn, **meta}))
        self.history_tokens += self.count(text) + self.count(reply)
        return {"session_id": session, "turn": turn, "event_index": len(events) - 1}

    def _off_topic(self, rng: random.Random, events: list[SuiteEvent], when: datetime, s: int):
        for user, reply in rng.sample(data.OFF_TOPIC, rng.randint(1, 2)):
            self._add(events, user, reply, f"offtopic-{s}", when, topic=None)

    def _session(self, rng: random.Random, plan: PersonaPlan, events: list[SuiteEvent],
                 topic: str, visit: int, date: datetime, session: str) -> None:
        needles = self._needles(rng, plan, topic, visit, date)
        remaining = max(self.span - self.history_tokens, 0)
        length = max(10, min(rng.randint(10, 30), remaining // 40 + len(needles)))
        slots = sorted(rng.sample(range(1, length), min(len(needles), length - 1)))
        opener = rng.choice(data.TOPIC_CHAT).format(topic=topic)
        self._add(events, opener, "Sure, happy to.", session, date, topic=topic)
        for t in range(1, length):
            if slots and t == slots[0]:
                slots.pop(0)
                text, reply, target = needles.pop(0)
                ref = self._add(events, text, reply, session, date, topic=topic, evidence=True)
                ref["answer"] = target.fact if isinstance(target, _FactRef) else target.reason
                target.turn_ref, target.text = ref, text
                if isinstance(target, _FactRef):
                    plan.facts[topic] = (target.fact, ref)
            else:
                user, reply = rng.choice(data.CHAT)  # drawn either way: the plan's stream
                if self.chat == "varied":
                    user, reply = data.varied_chat(self._chat_rng)
                self._add(events, user, reply, session, date, topic=topic)

    def _needles(self, rng: random.Random, plan: PersonaPlan, topic: str, visit: int,
                 date: datetime) -> list[tuple[str, str, Any]]:
        prefs = [p for p in plan.prefs if p.topic == topic]
        vocab, ack = data.TOPICS[topic], rng.choice(data.ASSISTANT_ACK)
        if visit == 0:
            out = []
            for p in prefs:
                liked = rng.random() < 0.5
                stance = Stance(liked, rng.choice(vocab["like" if liked else "dislike"]), date)
                p.history.append(stance)
                verb = "really like" if liked else "can't stand"
                out.append((f"I {verb} {p.item} because {stance.reason}.", ack, stance))
            fact = rng.choice(vocab["facts"])
            out.append((f"By the way, I {fact}.", "What a nice thing to share!", _FactRef(fact)))
            rng.shuffle(out)
            return out
        if visit > len(prefs):
            return []
        p = prefs[visit - 1]
        old = p.history[-1]
        pool = [r for r in vocab["dislike" if old.liked else "like"]]
        stance = Stance(not old.liked, rng.choice(pool), date)
        p.history.append(stance)
        when = date.strftime("%B %d")
        text = (f"I've changed my mind about {p.item}: since {when} I dislike it because {stance.reason}."
                if old.liked else
                f"I've changed my mind about {p.item}: since {when} I like it because {stance.reason}.")
        return [(text, ack, stance)]


@dataclass
class _FactRef:
    fact: str
    turn_ref: dict[str, Any] = field(default_factory=dict)
    text: str = ""
