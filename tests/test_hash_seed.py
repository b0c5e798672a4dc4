"""A run does not depend on the process's string hashing: every condition gives the same turns,
scores and stored memories under two PYTHONHASHSEEDs. A resume or a re-run is a new process, so
anything that iterates a set of strings into a prompt, a ranking or a stored text breaks the
replay (the sleep schemas' core concepts did: a resumed standard-grid run recalled another
schema).

FakeLLM scripted to compress episodes into concepts and name schemas (so the sleep cycle forms
schemas), the hashing embedder; each hash seed's runs in one subprocess.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.bench.runner import strip_timing
from memlab.memory.base import CONDITIONS

SUITES = {"ltm": 600, "persona": 1000}
RUN = """
import json, re, sys
from memlab import lab
from memlab.bench.spec import RunSpec
from memlab.llm.fake import FakeLLM
from memlab.sleep.compress import COMPRESS_PROMPT
from memlab.sleep.induce import SCHEMA_PROMPT

def reply(messages):
    system, text = messages[0].content, messages[-1].content
    if system.startswith(COMPRESS_PROMPT):  # every memory shares "user": one group, many ties
        words = list(dict.fromkeys(re.findall(r"[a-z]{{5,}}", text.lower())))
        return json.dumps({{"summary": " ".join(text.split()[:40]),
                           "key_concepts": ["user", *words[:6]]}})
    if system.startswith(SCHEMA_PROMPT):
        return json.dumps({{"name": "Pattern " + text.split()[1], "description": text[:120]}})
    return "ok"

for suite, span in {suites}.items():
    for condition in {conditions}:
        spec = RunSpec(suite=suite, condition=condition, span=span, seed=0, llm="fake",
                       embedder="hashing")
        lab.run(spec, sys.argv[1], llm=FakeLLM(default=reply), progress=False)
"""


def run_all(results: Path, hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MEMLAB_LLM_CACHE": "0"}
    code = RUN.format(suites=SUITES, conditions=list(CONDITIONS))
    subprocess.run([sys.executable, "-c", code, str(results)], env=env, check=True,
                   capture_output=True, timeout=600)


def records(run: Path, name: str) -> list[dict]:
    return [strip_timing(json.loads(line)) for line in (run / name).read_text().splitlines()]


# bookkeeping stamped with the wall clock (never in a prompt or a ranking)
WALL_CLOCK = {"created_at", "updated_at", "last_accessed"}
WALL_CLOCK_BY_KIND = {"consolidated_memories": {"timestamp"}}  # when it was consolidated


def stored(run: Path) -> list[tuple]:
    """Every memory record memlab's own SQLite store holds (kind, scope, order, content), its
    wall-clock fields left out."""
    rows = []
    for path in sorted(run.glob("store/**/memory.sqlite")):
        with sqlite3.connect(path) as db:
            for kind, scope, seq, data in db.execute(
                    "SELECT kind, scope, seq, data FROM memory_records "
                    "ORDER BY kind, scope, seq"):
                drop = WALL_CLOCK | WALL_CLOCK_BY_KIND.get(kind, set())
                record = {k: v for k, v in json.loads(data).items() if k not in drop}
                rows.append((kind, scope, seq, record))
    return rows


@pytest.mark.timeout(900)
def test_every_condition_runs_identically_under_two_hash_seeds(tmp_path):
    run_all(tmp_path / "a", "1")
    run_all(tmp_path / "b", "2")
    runs = sorted(p.name for p in (tmp_path / "a").iterdir() if p.is_dir())
    assert len(runs) == len(SUITES) * len(CONDITIONS)
    schemas = 0
    for name in runs:
        first, second = tmp_path / "a" / name, tmp_path / "b" / name
        for kind in ("turns.jsonl", "scores.jsonl"):
            one, two = records(first, kind), records(second, kind)
            differs = next((i for i, (x, y) in enumerate(zip(one, two, strict=True))
                            if x != y), None)
            assert differs is None, f"{name}/{kind} differs at record {differs}"
        assert stored(first) == stored(second), f"{name}: the stored memories differ"
        schemas += sum(kind == "schemas" for kind, *_ in stored(first))
    assert schemas >= 2  # the sleep runs formed schemas: their concepts were compared
