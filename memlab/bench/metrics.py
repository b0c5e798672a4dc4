"""Seed 002's seven evaluation metrics, computed from a run's turn records (turns.jsonl).

Every metric is a function ``(turns, phase, embedder=None) -> {question index: outcome}``: one
0/1 outcome per question it applies to (questions it does not apply to are absent). Outcomes of
several runs are pooled and summarised by ``summarise`` into a ``MetricValue`` (value, n, 95% CI
from ``memlab.stats``: Wilson for proportions), and ``delta`` pairs the same probes before and
after sleep (exact McNemar, Newcombe's interval).

What the metrics read from a question's record (the runner copies the suite event in):
    options / answer_index: a multiple-choice question; ``choice`` (log-probability pick) wins
        over the letter parsed from ``<final_answer>(x)</final_answer>`` in the reply.
    metadata["evidence_indices"]: event indices of the turns holding the answer (``evidence``,
        a list of ints or of dicts with "index", is read too).
    metadata["distractor_kinds"]: per option, "correct" / "outdated" / "never_stated" /
        "contradicting" (``option_kinds`` is read too).
    metadata["topic"], metadata["cue"]: the question's topic; the evidence fragment given as cue.
    metadata["probe"]: a Table 2-only probe (cue-based recall), left out of the Table 1 metrics.
    metadata["evidence_session_ranks"], metadata["n_sessions"]: session ranks (delayed recall).
    memory_events: event indices whose content reached the prompt (runner, from the memory
        context); memory_schemas: texts of the schemas in the prompt.
    answered: False for a question recalled but not sent to the model (evidence only): the
        metrics of the answer leave it out, never count it wrong; the metrics of the prompt
        (multi_session_continuity, schema_utilisation) count it, its prompt was built.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel

from memlab import stats
from memlab.llm.options import parse_final_answer, parse_letter

Turn = dict[str, Any]
Outcomes = dict[int, float]
MetricFn = Callable[..., Outcomes]

_WORD = re.compile(r"[a-z][a-z'-]+")
STOPWORDS = frozenset("""the a an and or but with from that this these those have has had been
were was are is for not you your they them their about into over under than then there here what
which when where while will would could should just very really also more most much some such
like likes liked dislike dislikes i me my we our it its of to in on at by as be do does did""".split())


class MetricValue(BaseModel):
    """One table cell: the value, how many outcomes it rests on, and its 95% CI (a paired
    difference also its p-value)."""

    metric: str
    value: float | None
    n: int
    ci_low: float | None
    ci_high: float | None
    phase: str | None = None
    p_value: float | None = None


# ----------------------------------------------------------------------------- statistics
KINDS = ("proportion", "score", "mean")


def _cell(value: float) -> float | None:
    return None if math.isnan(value) else value


def summarise(metric: str, outcomes: Iterable[float], *, phase: str | None = None,
              kind: str = "proportion") -> MetricValue:
    """Pool outcomes into a cell: mean, n and 95% CI (``memlab.stats``).

    ``kind`` says what the values are: ``"proportion"`` (0/1 outcomes, Wilson), ``"score"``
    (scores in [0, 1]: Wilson when all are 0/1, else t clipped to [0, 1]) or ``"mean"``
    (unbounded, t). Cells without outcomes hold None.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: one of {', '.join(KINDS)}")
    values = [float(v) for v in outcomes]
    interval = {"proportion": stats.proportion, "score": stats.score_ci,
                "mean": stats.mean_ci}[kind](values)
    return MetricValue(metric=metric, value=_cell(interval.estimate), n=interval.n,
                       ci_low=_cell(interval.low), ci_high=_cell(interval.high), phase=phase)


def delta(metric: str, pre: dict[Any, float], post: dict[Any, float]) -> MetricValue:
    """post - pre over the probes present in both (paired): exact McNemar with Newcombe's
    interval for 0/1 outcomes, else the paired bootstrap; ``p_value`` tests "no change"."""
    keys = sorted(set(pre) & set(post), key=str)
    test = stats.paired([pre[k] for k in keys], [post[k] for k in keys])
    return MetricValue(metric=metric, value=_cell(test.estimate), n=test.n,
                       ci_low=_cell(test.low), ci_high=_cell(test.high), phase="delta",
                       p_value=_cell(test.p_value))


# ----------------------------------------------------------------------------- answer reading
def picked_option(turn: Turn) -> int | None:
    """The option the answer chose: the log-probability choice, else the letter it names or
    the option it quotes (``memlab.llm.options.parse_final_answer``)."""
    if turn.get("choice") is not None:
        return int(turn["choice"])
    options = turn.get("options") or []
    return parse_final_answer(turn.get("reply") or "", len(options), options) if options else None


def free_text(reply: str) -> str:
    """The reply's own words: a ``<final_answer>`` tag naming a letter is dropped, a tag holding
    text is unwrapped."""
    def unwrap(match: re.Match) -> str:
        return " " if parse_letter(match.group(0), 26) is not None else f" {match.group(1)} "
    return re.sub(r"<final_answer>(.*?)(?:</final_answer>|$)", unwrap, reply or "",
                  flags=re.IGNORECASE | re.DOTALL).strip()


def semantic_pick(turn: Turn, embedder: Any) -> int | None:
    """The option whose embedding is closest to the reply's free text (None without text)."""
    text, options = free_text(turn.get("reply") or ""), turn.get("options") or []
    if not text or not options or embedder is None:
        return None
    vectors = embedder.embed([text, *options])
    return int(np.argmax(vectors[1:] @ vectors[0]))


def is_correct(turn: Turn, embedder: Any = None) -> bool:
    """Right option picked; an answer naming no option is judged by semantic match."""
    picked = picked_option(turn)
    if picked is None:
        picked = semantic_pick(turn, embedder)
    return picked is not None and picked == turn.get("answer_index")


def keywords(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and w not in STOPWORDS}


# ----------------------------------------------------------------------------- evidence
def evidence_indices(turn: Turn) -> list[int]:
    meta = turn.get("metadata") or {}
    raw = meta.get("evidence_indices", meta.get("evidence")) or []
    out = [e.get("event_index", e.get("index")) if isinstance(e, dict) else e for e in raw]
    return [int(e) for e in out if isinstance(e, int)]


def distractor_kinds(turn: Turn) -> list[str | None]:
    meta = turn.get("metadata") or {}
    return list(meta.get("distractor_kinds") or meta.get("option_kinds") or [])


def answered_value(value: Any) -> bool:
    """Whether a record's ``answered`` field says the model answered: False only when it is
    False (a record without the field, written before evidence-only questions existed, or a
    missing value in a frame, counts as answered)."""
    return value is None or value != value or bool(value)


def is_answered(turn: Turn) -> bool:
    """Whether the model answered this turn (``answered_value`` of its field)."""
    return answered_value(turn.get("answered"))


def questions(turns: list[Turn], phase: str, *, probes: bool = True,
              answered_only: bool = False) -> list[Turn]:
    """Questions of one phase (``probes=False`` drops Table 2-only probes,
    ``metadata["probe"]``; ``answered_only`` drops questions the model was not asked: an
    accuracy metric never counts one as wrong)."""
    return [t for t in turns if t["phase"] == phase and t["kind"] == "question"
            and (probes or not (t.get("metadata") or {}).get("probe"))
            and (not answered_only or is_answered(t))]


def session_order(turns: list[Turn]) -> dict[str | None, int]:
    """Session id -> its position in the conversation (order of first appearance)."""
    order: dict[str | None, int] = {}
    for t in turns:
        if t["phase"] == "main" and t.get("session_id") not in order:
            order[t.get("session_id")] = len(order)
    return order


def _by_index(turns: list[Turn]) -> dict[int, Turn]:
    return {t["index"]: t for t in turns if t["phase"] == "main"}


# ----------------------------------------------------------------------------- Table 1
def long_horizon_qa(turns: list[Turn], phase: str = "main", embedder: Any = None) -> Outcomes:
    """Long-horizon QA: 1 when a multiple-choice question is answered with the right option.

    The option is the log-probability choice, else the ``<final_answer>`` letter; a free answer
    (no option named) counts as right when its embedding is closer to the correct option than to
    every distractor (needs ``embedder``; without one a free answer is wrong).
    """
    return {t["index"]: float(is_correct(t, embedder))
            for t in questions(turns, phase, probes=False, answered_only=True)
            if t.get("options") and t.get("answer_index") is not None}


def semantic_match(turns: list[Turn], phase: str = "main", embedder: Any = None) -> Outcomes:
    """Semantic match: over answers with free text, 1 when the text's embedding is closer to the
    correct option than to every distractor (whatever letter the answer named)."""
    out: Outcomes = {}
    for t in questions(turns, phase, probes=False, answered_only=True):
        picked = semantic_pick(t, embedder) if t.get("answer_index") is not None else None
        if picked is not None:
            out[t["index"]] = float(picked == t["answer_index"])
    return out


def multi_session_continuity(turns: list[Turn], phase: str = "main",
                             embedder: Any = None) -> Outcomes:
    """Multi-session continuity: over questions with evidence in an earlier session than the
    question's own, 1 when at least one such evidence turn reached the prompt (its event index is
    among the turn's ``memory_events``, i.e. a memory item or history turn derived from it)."""
    order, events, out = session_order(turns), _by_index(turns), {}
    for t in questions(turns, phase, probes=False):
        own = order.get(t.get("session_id"), math.inf)
        earlier = {i for i in evidence_indices(t)
                   if i in events and order.get(events[i].get("session_id"), -1) < own}
        if earlier:
            out[t["index"]] = float(bool(earlier & set(t.get("memory_events") or [])))
    return out


def hallucination_rate(turns: list[Turn], phase: str = "main", embedder: Any = None) -> Outcomes:
    """Hallucination rate: over questions with a never-stated distractor, 1 when the answer asserts
    it: that option picked, or (free answer) at least half of its keywords (words of 4+ letters
    found in neither the correct option nor the question) in the reply."""
    out: Outcomes = {}
    for t in questions(turns, phase, probes=False, answered_only=True):
        kinds, options = distractor_kinds(t), t.get("options") or []
        never = [i for i, k in enumerate(kinds) if k == "never_stated" and i < len(options)]
        if not never:
            continue
        picked = picked_option(t)
        if picked is not None:
            out[t["index"]] = float(picked in never)
            continue
        reply = keywords(free_text(t.get("reply") or ""))
        known = keywords(t["text"]) | keywords(options[t.get("answer_index") or 0])
        asserted = False
        for i in never:
            own = keywords(options[i]) - known
            asserted |= bool(own) and 2 * len(own & reply) >= len(own)
        out[t["index"]] = float(asserted)
    return out


# ----------------------------------------------------------------------------- Table 2
def _accuracy_where(turns: list[Turn], phase: str, embedder: Any,
                    keep: Callable[[Turn], bool]) -> Outcomes:
    return {t["index"]: float(is_correct(t, embedder))
            for t in questions(turns, phase, answered_only=True)
            if t.get("answer_index") is not None and keep(t)}


def delayed_recall(turns: list[Turn], phase: str = "pre_sleep", embedder: Any = None) -> Outcomes:
    """Delayed recall: accuracy on questions whose evidence lies wholly in the oldest third of the
    conversation's sessions (at least the first session). Session ranks come from the question's
    ``evidence_session_ranks`` / ``n_sessions`` (0 = oldest) when the suite gives them, else from
    the order in which sessions first appear."""
    order, events = session_order(turns), _by_index(turns)

    def old(t: Turn) -> bool:
        meta = t.get("metadata") or {}
        if meta.get("evidence_session_ranks") and meta.get("n_sessions"):
            ranks, n = meta["evidence_session_ranks"], meta["n_sessions"]
        else:
            ev = [events[i] for i in evidence_indices(t) if i in events]
            ranks, n = [order.get(e.get("session_id"), len(order)) for e in ev], len(order)
        return bool(ranks) and max(ranks) < max(1, math.ceil(n / 3))

    return _accuracy_where(turns, phase, embedder, old)


def cue_based_recall(turns: list[Turn], phase: str = "pre_sleep",
                     embedder: Any = None) -> Outcomes:
    """Cue-based recall: accuracy on questions that give a fragment of their evidence as cue
    (``metadata["cue"]``, or 4+ consecutive words of an evidence turn quoted in the question)."""
    events = _by_index(turns)

    def cued(t: Turn) -> bool:
        if (t.get("metadata") or {}).get("cue"):
            return True
        words = _WORD.findall(t["text"].lower())
        grams = {" ".join(words[i:i + 4]) for i in range(len(words) - 3)}
        return any(g in " ".join(_WORD.findall(events[i]["text"].lower()))
                   for i in evidence_indices(t) if i in events for g in grams)

    return _accuracy_where(turns, phase, embedder, cued)


def cross_episode_integration(turns: list[Turn], phase: str = "pre_sleep",
                              embedder: Any = None) -> Outcomes:
    """Cross-episode integration: accuracy on questions needing two or more evidence turns from
    at least two different sessions."""
    events = _by_index(turns)

    def spread(t: Turn) -> bool:
        ev = [i for i in evidence_indices(t) if i in events]
        return len(ev) >= 2 and len({events[i].get("session_id") for i in ev}) >= 2

    return _accuracy_where(turns, phase, embedder, spread)


def schema_utilisation(turns: list[Turn], phase: str = "pre_sleep",
                       embedder: Any = None) -> Outcomes:
    """Schema utilisation: over questions, 1 when the prompt held a schema on the question's topic
    (``metadata["topic"]`` named in a schema text; without a topic, a keyword of the question)."""
    out: Outcomes = {}
    for t in questions(turns, phase):
        topic = (t.get("metadata") or {}).get("topic")
        wanted = keywords(str(topic)) if topic else keywords(t["text"])
        schemas = [keywords(s) for s in t.get("memory_schemas") or []]
        out[t["index"]] = float(any(wanted & s for s in schemas)) if wanted else 0.0
    return out


def schema_generalisation(turns: list[Turn], phase: str = "pre_sleep",
                          embedder: Any = None) -> Outcomes:
    """Schema utilisation, second part: accuracy on generalize_to_new_scenarios questions."""
    return _accuracy_where(turns, phase, embedder,
                           lambda t: t.get("test_type") == "generalize_to_new_scenarios")


TABLE1: dict[str, MetricFn] = {
    "long_horizon_qa": long_horizon_qa,
    "semantic_match": semantic_match,
    "multi_session_continuity": multi_session_continuity,
    "hallucination_rate": hallucination_rate,
}
TABLE2: dict[str, MetricFn] = {
    "delayed_recall": delayed_recall,
    "cue_based_recall": cue_based_recall,
    "cross_episode_integration": cross_episode_integration,
    "schema_utilisation": schema_utilisation,
    "schema_generalisation": schema_generalisation,
}
