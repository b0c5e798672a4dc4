"""hybrid's fact extractor on statements whose facts are known: how many it keeps, per model.

The statements are the ones the suites plant: the persona suite's stances ("I really like X
because Y", "I can't stand X because Y", "I've changed my mind about X: since D I dislike it
because Y") and asides ("By the way, I ..."), the LTM suite's colour and name lines; and, as
negatives, the persona suite's small talk and the questions it asks; and standing instructions
("Whenever I say that I am bored, reply: '...'"), the LTM suite's trigger_response tests. Each goes through
``extract_candidates`` (check on, as hybrid runs it) with a real local model and no response
cache. A positive is *kept* when a grounded candidate's content carries its value (the item and
a word of the reason; the colour; the name; most words of the aside; for an instruction, most
words of the sentence to say and a word of when to say it); a negative is *stored*
when any LLM candidate survives the check (for small talk that is a faithful but useless fact,
"The user tidied their desk."; for a question it would be an invented one).

The prompt was developed on ``--seed 0 --per-kind 4``; the results in docs/conditions/hybrid.md
are on the held-out ``--seed 1 --per-kind 8``: no item, aside, colour or name of the development set
(``DEVELOPMENT``). The instructions held out are the LTM suite's own five triggers and three
more; the development set has four others.

Run: .venv/bin/python benchmarks/bench_extraction.py [--models 0.5b 1.5b] [--per-kind 8]
     [--seed 1] [--label NAME]
Writes benchmarks/results/extraction.json (one entry per label and model, replacing that
entry); every share has its n and Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from memlab.bench.suites import persona_data as data
from memlab.bench.suites.ltm_generate import COLOUR_LINES, NAME_LINES, TRIGGERS
from memlab.llm.factory import get_llm
from memlab.memory.base import Exchange
from memlab.memory.hybrid_extract import content_words, extract_candidates
from memlab.stats import proportion_ci

RESULTS = Path(__file__).parent / "results" / "extraction.json"
COLOURS = ("Charcoal", "Coral", "Peach", "Teal", "Mustard", "Lilac", "Crimson", "Olive",
           "Amber", "Cobalt", "Indigo", "Saffron", "Sage", "Ivory", "Maroon", "Turquoise")
NAMES = ("Honora", "Kasimir", "Tamsin", "Oswin", "Marisol", "Ingrid", "Thaddeus", "Leocadia",
         "Anselm", "Berenike", "Caspian", "Delphine", "Evander", "Florentyna", "Gideon",
         "Hyacinth")
QUESTIONS = ("Do you think it will rain this weekend?", "What's the plural of 'cactus'?",
             "How many days does February have in a leap year?",
             "Can you remind me what 15 times 4 is?",
             "Which is bigger, a kilobyte or a megabyte?", "What is my favourite colour?",
             "Can we chat about travel for a bit?", "Do you remember the travel story I shared?")
# Standing instructions: (when, the sentence to say). The held-out ones are the LTM suite's
# triggers and three more; the development ones were the only ones the prompt was written against.
INSTRUCTIONS = (*((request, sentence) for request, sentence, _ in TRIGGERS),
                ("say that I am tired", "A short walk will wake you up"),
                ("tell you that I finished work", "Well done, now put your feet up"),
                ("mention the weekend", "Plan something outdoors for Saturday"))
DEV_INSTRUCTIONS = (("say good night", "Sleep well and dream of the sea"),
                    ("tell you that I am hungry", "Have an apple before dinner"),
                    ("mention my sister", "Say hello to Clara for me"),
                    ("ask for a joke", "Why did the owl sit alone at the party"))
INSTRUCTION_LINES = ("Whenever I {request}, reply: '{sentence}'",
                     "From now on, when I {request}, answer with '{sentence}'.")


# What the development runs used (seed 0, 4 per kind: the statements the prompt was written against)
# used; every other seed draws around them, so its statements are held out.
DEVELOPMENT = {"items": {"slow-cooked stews", "weight training", "live folk concerts",
                         "audiobooks"},
               "asides": {"won second prize in a neighbourhood chili contest",
                          "keep a training diary since last spring",
                          "met my best friend at a record fair", "read a novel in one night once"},
               "colours": set(COLOURS[:4]), "names": set(NAMES[:4])}


def statements(per_kind: int, seed: int = 1) -> list[dict]:
    """``per_kind`` statements of each kind, each with the words its fact must keep; a seed
    other than 0 uses no item, aside, colour or name of the development set (``DEVELOPMENT``). The instructions held out are the LTM suite's own five triggers and three
more; the development set has four others.
    """
    rng = random.Random(seed)
    avoid = {k: set() for k in DEVELOPMENT} if seed == 0 else DEVELOPMENT
    topics = sorted(data.TOPICS)
    colours = [c for c in COLOURS if c not in avoid["colours"]]
    names = [n for n in NAMES if n not in avoid["names"]]
    asides = [f for t in topics for f in data.TOPICS[t]["facts"] if f not in avoid["asides"]]
    instructions = list(DEV_INSTRUCTIONS if seed == 0 else INSTRUCTIONS)
    if seed:
        rng.shuffle(asides)
    out = []
    for i in range(per_kind):
        vocab = data.TOPICS[topics[(i + seed) % len(topics)]]
        item = rng.choice([x for x in vocab["items"] if x not in avoid["items"]])
        liked = rng.random() < 0.5
        reason = rng.choice(vocab["like" if liked else "dislike"])
        verb = "really like" if liked else "can't stand"
        out.append({"kind": "stance", "text": f"I {verb} {item} because {reason}.",
                    "item": item, "reason": reason})
        reason = rng.choice(vocab["dislike" if liked else "like"])
        out.append({"kind": "change", "item": item, "reason": reason, "text":
                    f"I've changed my mind about {item}: since March {10 + i:02d} I "
                    f"{'dislike' if liked else 'like'} it because {reason}."})
        fact = asides[i % len(asides)]
        out.append({"kind": "aside", "text": f"By the way, I {fact}.", "fact": fact})
        colour, name = colours[i % len(colours)], names[i % len(names)]
        out.append({"kind": "colour", "value": colour,
                    "text": rng.choice(COLOUR_LINES).format(x=colour)})
        out.append({"kind": "name", "value": name, "text": rng.choice(NAME_LINES).format(x=name)})
        request, sentence = instructions[i % len(instructions)]
        out.append({"kind": "instruction", "request": request, "sentence": sentence,
                    "text": INSTRUCTION_LINES[i % 2].format(request=request, sentence=sentence)})
        user, _ = data.CHAT[(i + seed) % len(data.CHAT)]
        out.append({"kind": "small talk", "text": user, "negative": True})
        out.append({"kind": "question", "text": QUESTIONS[(i + seed) % len(QUESTIONS)],
                    "negative": True})
    return out


def kept(statement: dict, contents: list[str]) -> bool:
    """Whether one of ``contents`` carries the statement's value."""
    for content in contents:
        words = content_words(content)
        if statement["kind"] in ("stance", "change"):
            if (content_words(statement["item"]) <= words
                    and content_words(statement["reason"]) & words):
                return True
        elif statement["kind"] == "instruction":
            need = content_words(statement["sentence"])
            if (len(need & words) * 2 >= len(need)
                    and content_words(statement["request"]) & words):
                return True
        elif statement["kind"] == "aside":
            need = content_words(statement["fact"])
            if len(need & words) * 2 >= len(need):
                return True
        elif statement["value"].lower() in words:
            return True
    return False


def measure(model: str, items: list[dict]) -> dict:
    llm = get_llm("local", local_size=model, llm_cache=False)
    rows, start = [], time.perf_counter()
    for n, item in enumerate(items):
        exchange = Exchange(user=item["text"], assistant="Noted.", turn_number=n)
        found, extractor, failure = extract_candidates(llm, exchange, check=True)
        contents = [c.content for c in found if c.extractor == "llm"]
        rows.append({**item, "extractor": extractor, "failure": failure,
                     "llm_candidates": contents,
                     "rule_candidates": [c.content for c in found if c.extractor == "rules"],
                     "kept": None if item.get("negative") else kept(item, contents)})
    by_kind = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind]
        hits = sum(bool(r["llm_candidates"]) if r.get("negative") else r["kept"] for r in mine)
        ci = proportion_ci(hits, len(mine))
        by_kind[kind] = {"measure": "stored" if mine[0].get("negative") else "kept",
                         "k": hits, "n": len(mine), "share": ci.estimate, "low": ci.low,
                         "high": ci.high}
    positives = [r for r in rows if not r.get("negative")]
    ci = proportion_ci(sum(r["kept"] for r in positives), len(positives))
    return {"model": model, "seconds": round(time.perf_counter() - start, 1),
            "kept": {"k": sum(r["kept"] for r in positives), "n": len(positives),
                     "share": ci.estimate, "low": ci.low, "high": ci.high},
            "by_kind": by_kind,
            "llm_failures": sum(r["failure"] is not None for r in rows), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["0.5b", "1.5b"],
                        choices=["0.5b", "1.5b", "135m"])
    parser.add_argument("--per-kind", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1, help="which statements (0: the "
                        "development set)")
    parser.add_argument("--label", default="current", help="name of this entry (e.g. the code)")
    args = parser.parse_args(argv)
    if args.per_kind < 1:
        print("bench_extraction: --per-kind must be at least 1", file=sys.stderr)
        return 2
    items = statements(args.per_kind, args.seed)
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"entries": []}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    for model in args.models:
        entry = {"label": args.label, "commit": commit, "seed": args.seed,
                 "per_kind": args.per_kind, **measure(model, items),
                 "when": datetime.now(UTC).isoformat(timespec="seconds"),
                 "machine": platform.platform()}
        k = entry["kept"]
        print(f"{args.label} {model}: kept {k['k']}/{k['n']} ({100 * k['share']:.0f}%, "
              f"{100 * k['low']:.0f}-{100 * k['high']:.0f}); " + ", ".join(
                  f"{kind} {v['measure']} {v['k']}/{v['n']}" for kind, v in entry["by_kind"].items()))
        old["entries"] = [e for e in old["entries"]
                          if (e["label"], e["model"], e.get("seed")) !=
                          (args.label, model, args.seed)] + [entry]
        RESULTS.write_text(json.dumps(old, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
