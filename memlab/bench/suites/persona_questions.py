"""The 4-option questions of the generated Persona suite (PersonaMem's 7 types + cue probes).

Every question records its evidence turns and, per option, the distractor kind: ``outdated``
(true once, superseded since), ``never_stated`` (asserts something the user never said) or
``contradicting`` (the opposite of what the user said).
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any

from memlab.bench.base import Evidence, SuiteEvent
from memlab.bench.suites import persona_data as data

Option = tuple[str, str | None]  # (text, distractor kind; None for the answer -> "correct")


def _you(text: str) -> str:
    """The user's first-person words as the assistant says them back."""
    words = {"I": "you", "my": "your", "me": "you", "I'm": "you're"}
    return " ".join(words.get(w, w) for w in text.split(" "))


def _feel(liked: bool) -> str:
    return "liked" if liked else "disliked"


def _unused(rng: random.Random, pool: tuple[str, ...] | list[str], used: set[str]) -> str:
    free = [x for x in pool if x not in used]
    return rng.choice(free or list(pool))


def build_questions(rng: random.Random, plan: Any, history: list[SuiteEvent], *,
                    probes: bool = True) -> list[SuiteEvent]:
    """Questions about every topic of ``plan``, placed after ``history``."""
    ranks = {s: i for i, s in enumerate(plan.session_order)}
    when = history[-1].timestamp + timedelta(days=2)
    out: list[SuiteEvent] = []
    for topic in plan.topics:
        prefs = [p for p in plan.prefs if p.topic == topic and len(p.history) >= 2]
        mentioned = {p.item for p in plan.prefs}
        specs = [_recall_fact(rng, plan, topic)]
        if prefs:
            first, last = prefs[0], prefs[-1]
            specs += [_acknowledge(rng, first, mentioned), _evolution(rng, first),
                      _reasons(rng, first), _recommend(rng, last, mentioned),
                      _suggest_new(rng, topic, plan, mentioned), _generalize(rng, last, mentioned)]
            if probes:
                specs += [_cue_probe(rng, p) for p in prefs]
        for qtype, text, options, evidence, extra in specs:
            out.append(_event(rng, len(history) + len(out), qtype, topic, text, options,
                              evidence, ranks, when, extra))
    return out


def _event(rng, index, qtype, topic, text, options: list[Option], evidence, ranks, when, extra):
    order = list(range(len(options)))
    rng.shuffle(order)
    shuffled = [options[i] for i in order]
    sessions = sorted({e["session_id"] for e in evidence}, key=lambda s: ranks.get(s, 0))
    meta = {"question_type": qtype, "topic": topic, "evidence": evidence,
            "evidence_indices": [e["event_index"] for e in evidence],
            "evidence_sessions": sessions,
            "evidence_session_ranks": [ranks[s] for s in sessions if s in ranks],
            "n_sessions": len(ranks), "distractor_kinds": [k or "correct" for _, k in shuffled],
            "probe": False, **extra}
    qid = str(uuid.UUID(int=rng.getrandbits(128)))
    return SuiteEvent(index=index, kind="question", text=text, test_id=qid, test_type=qtype,
                      session_id="questions", timestamp=when, store=False,
                      options=[t for t, _ in shuffled],
                      answer_index=[k for _, k in shuffled].index(None),
                      evidence=[Evidence(index=e["event_index"], answer=e.get("answer"))
                                for e in evidence], metadata=meta)


def _recall_fact(rng, plan, topic):
    fact, ref = plan.facts[topic]
    others = [f for f in data.TOPICS[topic]["facts"] if f != fact]
    options = [(f"You mentioned that you {_you(fact)}.", None),
               (f"You mentioned that you {_you(others[0])}.", "never_stated"),
               (f"You mentioned that you {_you(others[1])}.", "never_stated"),
               (f"You told me you had no personal stories about {topic} at all.", "contradicting")]
    return ("recall_user_shared_facts", f"Do you remember the {topic} story I shared with you?",
            options, [ref], {})


def _stance_line(p, s) -> str:
    return f"you {_feel(s.liked)} {p.item} because {_you(s.reason)}"


def _other_item(rng, topic, mentioned):
    return _unused(rng, data.TOPICS[topic]["items"], mentioned)


def _acknowledge(rng, p, mentioned):
    old, new = p.history[-2], p.history[-1]
    other = _other_item(rng, p.topic, mentioned)
    options = [(f"Since {_stance_line(p, new)}, I'll keep that in mind.", None),
               (f"Since {_stance_line(p, old)}, I'll keep that in mind.", "outdated"),
               (f"Since you have always {_feel(not p.history[0].liked)} {p.item}, I'll keep that in mind.",
                "contradicting"),
               (f"Since you told me you adore {other}, I'll keep that in mind.", "never_stated")]
    return ("acknowledge_latest_user_preferences", f"I came across {p.item} again today.",
            options, [new.turn_ref], {})


def _evolution(rng, p):
    first, last = p.history[0], p.history[-1]
    unused = _unused(rng, data.TOPICS[p.topic]["like" if last.liked else "dislike"], {last.reason})
    options = [(f"You first {_feel(first.liked)} it because {first.reason}; later you "
                f"{_feel(last.liked)} it because {last.reason}.", None),
               (f"You have always {_feel(first.liked)} it because {first.reason}.", "outdated"),
               (f"You first {_feel(last.liked)} it because {last.reason}; later you "
                f"{_feel(first.liked)} it because {first.reason}.", "contradicting"),
               (f"You first {_feel(first.liked)} it; later you {_feel(last.liked)} it because "
                f"{unused}.", "never_stated")]
    return ("track_full_preference_evolution", f"How have my feelings about {p.item} changed over time?",
            options, [s.turn_ref for s in p.history], {})


def _reasons(rng, p):
    old, new = p.history[-2], p.history[-1]
    vocab = data.TOPICS[p.topic]
    same = _unused(rng, vocab["like" if new.liked else "dislike"], {new.reason, old.reason})
    opposite = _unused(rng, vocab["dislike" if new.liked else "like"], {new.reason, old.reason})
    options = [(f"Because {_you(r)}.", kind) for r, kind in
               ((new.reason, None), (old.reason, "outdated"), (same, "never_stated"),
                (opposite, "contradicting"))]
    return ("revisit_reasons_behind_preference_updates", f"Why did I change my mind about {p.item}?",
            options, [old.turn_ref, new.turn_ref], {})


def _recommend(rng, p, mentioned):
    new, first = p.history[-1], p.history[0]
    other = _other_item(rng, p.topic, mentioned)
    keep = f"How about more {p.item}? You like it because {new.reason}."
    avoid = f"Skip {p.item} for now and try {other} instead, since you dislike {p.item}."
    options = [(keep if new.liked else avoid, None),
               (f"Going by what you told me first, {'try' if first.liked else 'avoid'} {p.item}: "
                f"{first.reason}.", "outdated"),
               (avoid if new.liked else keep.replace(new.reason, "you never had a problem with it"),
                "contradicting"),
               (f"Since you love {_other_item(rng, p.topic, mentioned | {other})}, do more of that.",
                "never_stated")]
    return ("provide_preference_aligned_recommendations",
            f"Can you recommend something to do with {p.topic} this week?", options,
            [new.turn_ref], {})


def _suggest_new(rng, topic, plan, mentioned):
    prefs = [p for p in plan.prefs if p.topic == topic]
    liked = [p for p in prefs if p.history and p.history[-1].liked]
    disliked = [p for p in prefs if p.history and not p.history[-1].liked]
    new = _other_item(rng, topic, mentioned)
    basis = f", which goes well with your liking for {liked[0].item}" if liked else ""
    options = [(f"Try {new}; we have never talked about it{basis}.", None),
               (f"Try {prefs[0].item}; it would be new for you.", "outdated"),
               (f"Try {(disliked or prefs)[-1].item}; you'd enjoy it.", "contradicting"),
               (f"Try {_other_item(rng, topic, mentioned | {new})}, since you said it was your favourite.",
                "never_stated")]
    evidence = [p.history[-1].turn_ref for p in prefs if p.history]
    return ("suggest_new_ideas", f"Suggest something new about {topic} that I haven't mentioned.",
            options, evidence, {})


def _generalize(rng, p, mentioned):
    new, first = p.history[-1], p.history[0]
    scenario = data.TOPICS[p.topic]["scenario"]
    use = f"Make {p.item} part of it, since you like it because {new.reason}."
    skip = f"Leave {p.item} out of it, since you dislike it because {new.reason}."
    options = [(use if new.liked else skip, None),
               (f"Plan it around how you felt at first: {_stance_line(p, first)}.", "outdated"),
               ((skip if new.liked else use).replace(new.reason, "you never cared either way"),
                "contradicting"),
               (f"Build it around {_other_item(rng, p.topic, mentioned)}, which you told me you love.",
                "never_stated")]
    return ("generalize_to_new_scenarios", f"I'm {scenario}. Any ideas that suit me?", options,
            [new.turn_ref], {})


def _cue_probe(rng, p):
    new, old = p.history[-1], p.history[-2]
    cue = new.text.split(" because ")[0]
    vocab = data.TOPICS[p.topic]
    same = _unused(rng, vocab["like" if new.liked else "dislike"], {new.reason, old.reason})
    opposite = _unused(rng, vocab["dislike" if new.liked else "like"], {new.reason, old.reason})
    options = [(new.reason, None), (old.reason, "outdated"), (same, "never_stated"),
               (opposite, "contradicting")]
    return ("cue_based_recall", f'You heard me say: "{cue} because ___". What was the rest?',
            options, [new.turn_ref], {"probe": True, "cue": cue, "masked": new.reason})
