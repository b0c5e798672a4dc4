"""Prompt prefixes kept across families of prompts on one real local model (memlab.llm.prefix)."""

from __future__ import annotations

import numpy as np
import pytest
from services import require_or_skip

from memlab.config import Settings
from memlab.errors import MissingDependencyError
from memlab.llm.prefix import common_prefix

pytestmark = pytest.mark.integration

EXTRACT = "You extract facts from a conversation. " + " ".join(
    f"Rule {i}: keep fact {i} short, precise and in the user's own words." for i in range(25))
COMPRESS = "You compress episodes into one memory. " + " ".join(
    f"Guideline {i}: merge episode {i} with the others that tell the same story." for i in range(25))


def _local(prefix_cache_mb: int, n_ctx: int):
    from memlab.llm.local import LocalLLM

    try:  # a window no other test loads, so this model (and its live state) is its own
        return LocalLLM("135m", n_ctx=n_ctx,
                        settings=Settings(prefix_cache_mb=prefix_cache_mb, llm_cache=False))
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


def _families(llm) -> list[tuple[str, int, int]]:
    """Extraction and compression calls in turn: (reply, prompt tokens, reused tokens)."""
    out = []
    for i in range(3):
        for system, user in ((EXTRACT, f"User: I like tea number {i}.\nAI: Noted."),
                             (COMPRESS, f"Episode {i}: the user went to Paris by train.")):
            reply = llm.complete([{"role": "system", "content": system},
                                  {"role": "user", "content": user}], max_tokens=12)
            out.append((reply.text, reply.prompt_tokens, reply.prompt_tokens_reused))
    return out


def test_each_family_reads_its_instructions_once_and_answers_as_without_parking():
    parking, live_only = _local(512, 2561), _local(0, 2562)
    kept, plain = _families(parking), _families(live_only)
    assert [text for text, _, _ in kept] == [text for text, _, _ in plain]
    # the first call of each family reads it all; later ones reuse its instructions and
    # evaluate only their own short message (under 40 tokens with the chat template)
    assert kept[0][2] == 0 and kept[1][2] < 8
    for _, tokens, reused in kept[2:]:
        assert tokens > 300 and reused >= tokens - 40
    # without parking, a switch of family re-reads the instructions every time
    assert all(reused < 8 for _, _, reused in plain[1:])
    assert parking._loaded.prefixes.restored == 4


def test_parked_states_stay_within_their_capacity():
    llm = _local(1, 2563)  # 1 MiB holds no state of a 500-token prompt of this model
    _families(llm)
    prefixes = llm._loaded.prefixes
    assert prefixes.size_bytes <= 2**20 and prefixes.restored == 0


def test_common_prefix_counts_shared_leading_tokens():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix(np.array([1, 2]), [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([7], [8]) == 0


def test_an_exact_repeat_of_a_parked_prompt_is_answered_afresh():
    """A one-token reply leaves the parked state exactly the prompt long: the repeat must
    evaluate its last token again, not sample from the logits of the call in between."""
    llm = _local(512, 2564)
    question = [{"role": "system", "content": EXTRACT},
                {"role": "user", "content": "Which letter comes first in the alphabet?"}]
    first = llm.complete(question, max_tokens=1, choices=["A", "B", "C", "D"])
    for i in range(2):  # another family in between, ending on other logits
        llm.complete([{"role": "system", "content": COMPRESS},
                      {"role": "user", "content": f"Episode {i}: D D D D D"}], max_tokens=4)
    again = llm.complete(question, max_tokens=1, choices=["A", "B", "C", "D"])
    assert llm._loaded.prefixes.restored >= 1
    assert again.prompt_tokens_reused == again.prompt_tokens - 1
    assert again.text == first.text


def test_greedy_first_grammar_checks_give_the_grammars_own_tokens(monkeypatch):
    """Checking only the greedy token against the grammar (the full pass when it breaks it)
    writes the very tokens llama-cpp-python's full pass at every step writes."""
    from contextlib import contextmanager, nullcontext

    from pydantic import BaseModel

    import memlab.llm.local as local
    from memlab.llm.sampling import greedy_first
    from memlab.llm.structured import prompt_schema

    class Facts(BaseModel):
        subject: str
        facts: list[str]

    schema = prompt_schema(Facts, max_items=3, max_chars=60)
    asks = [([{"role": "system", "content": EXTRACT},
              {"role": "user", "content": f"User: I moved to Lisbon in {2015 + i} and I keep "
                                          "two cats.\nAI: Noted."}], {"json_schema": schema})
            for i in range(2)]
    asks.append(([{"role": "user", "content": "Which is a colour? A. table B. red C. run"}],
                 {"choices": ["A", "B", "C"]}))
    samplers = []

    @contextmanager
    def counted(llama):
        with greedy_first(llama) as made:
            yield made
        samplers.extend(made)

    llm = _local(0, 2565)
    monkeypatch.setattr(local, "greedy_first", counted)
    fast = [llm.complete(m, max_tokens=48, **c) for m, c in asks]
    monkeypatch.setattr(local, "greedy_first", lambda llama: nullcontext([]))
    plain = [llm.complete(m, max_tokens=48, **c) for m, c in asks]
    assert [r.text for r in fast] == [r.text for r in plain]
    assert fast[0].text.startswith("{") and fast[2].text in ("A", "B", "C")
    assert len(samplers) == 3 and sum(s.checked for s in samplers) > sum(s.full for s in samplers)


def test_a_parked_state_the_live_one_displaces_is_still_restored(monkeypatch):
    """Parking the live state drops a parked one it shares most of; when that is the state the
    next prompt restores, the restore must still happen (it raised KeyError: <its key>, which
    failed the call: graphiti's adds on the 1.5B failed on about 1 turn in 5)."""
    import numpy as np

    from memlab.llm import prefix

    restored = []
    monkeypatch.setattr(prefix, "_seq_state", lambda llama: bytes(8))
    monkeypatch.setattr(prefix.PrefixStates, "_restore",
                        lambda self, llama, parked: restored.append(parked.tokens.tolist()))

    class Llama:
        def __init__(self, tokens):
            self.input_ids, self.n_tokens = np.array(tokens), len(tokens)

    states = prefix.PrefixStates(capacity_bytes=1000)
    family_a = list(range(1, 101))  # parked: instructions A, 100 tokens
    states._park(Llama(family_a), np.array(family_a), kept=0)
    # live: the first 60 of A's tokens, then 200 of another family's
    live = family_a[:60] + list(range(1000, 1200))
    prompt = family_a[:95] + list(range(5000, 5010))  # shares 95 with A, 60 with live
    assert states.prepare(Llama(live), prompt) == 95
    assert restored == [family_a]
    assert [p.tokens.tolist() for p in states._parked.values()] == [live]  # A gave way to it
