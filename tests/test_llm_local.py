"""The real local model (llama.cpp + packaged GGUF): few calls, short outputs."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from services import require_or_skip

from memlab.errors import MissingDependencyError
from memlab.llm import complete_json, get_llm
from memlab.llm.options import choose_option_traced

pytestmark = pytest.mark.integration

CONTEXT = ("Context: Maria adopted a dog called Biscuit in 2021. Her brother Tom moved to "
           "Lisbon and works as a nurse.\n")


def _local(size: str):
    try:
        return get_llm("local", local_size=size, llm_cache=False)
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


@pytest.fixture(scope="module")
def qwen():
    return _local("0.5b")


def test_answers_from_a_short_context(qwen) -> None:
    messages = [{"role": "user", "content": CONTEXT + "Question: What is the name of Maria's "
                                                       "dog? Answer in a few words."}]
    first = qwen.complete(messages, max_tokens=16)
    assert "biscuit" in first.text.lower()
    assert first.prompt_tokens == qwen.count_message_tokens(messages)
    assert 0 < first.completion_tokens <= 16
    assert qwen.complete(messages, max_tokens=16).text == first.text  # deterministic at 0


def test_complete_json_validates(qwen) -> None:
    class Person(BaseModel):
        name: str
        city: str
        job: str

    person = complete_json(qwen, [{"role": "user", "content": CONTEXT + "Describe Tom."}],
                           Person, max_tokens=48)
    assert person.city.lower() == "lisbon" and "nurse" in person.job.lower()


def test_bounded_strings_are_enforced_by_the_grammar(qwen) -> None:
    class Story(BaseModel):
        story: str

    prompt = CONTEXT + "Tell Maria's story in great detail, in at least five sentences."
    free = complete_json(qwen, [{"role": "user", "content": prompt}], Story, max_tokens=120)
    bounded = complete_json(qwen, [{"role": "user", "content": prompt}], Story, max_tokens=120,
                            max_chars=40)
    assert len(free.story) > 40  # the model does write more when it may
    assert 0 < len(bounded.story) <= 40


def test_picks_the_right_option_by_scoring(qwen) -> None:
    messages = [{"role": "user", "content": "Context: The team meeting was moved from Monday "
                 "to Thursday at 3pm.\nQuestion: When is the team meeting now?"}]
    options = ["Monday at 3pm", "Tuesday at 9am", "Thursday at 3pm", "Friday at noon"]
    choice = choose_option_traced(qwen, messages, options)
    assert (choice.index, choice.method) == (2, "logprob")
    assert len(choice.scores) == 4 and all(s < 0 for s in choice.scores)


def test_generation_after_scoring_matches_a_fresh_call(qwen) -> None:
    messages = [{"role": "user", "content": "Name a colour. One word."}]
    before = qwen.complete(messages, max_tokens=4).text
    qwen.score_options(messages, ["Blue", "Red"])
    assert qwen.complete(messages, max_tokens=4).text == before


def test_constrained_choice_and_tokenizer(qwen) -> None:
    reply = qwen.complete([{"role": "user", "content": "Is water wet? Answer yes or no."}],
                          max_tokens=4, choices=["yes", "no"])
    assert reply.text in ("yes", "no")
    assert qwen.count_tokens("hello world") == 2  # the model's own BPE, not whitespace
    assert qwen.count_tokens("antidisestablishmentarianism") > 1
    assert qwen.context_window == 4096


def test_fast_tier_loads_and_answers() -> None:
    smol = _local("135m")
    assert smol.model == "smollm2-135m-instruct-q4_1"
    text = smol.complete([{"role": "user", "content": "Say hello."}], max_tokens=8).text
    assert text.strip()


def test_stop_on_loop_cuts_a_reply_that_repeats_itself(qwen) -> None:
    """The 1.5B model filled a LangMem tool argument with "/0/0/0..." to the token limit; a
    reply asked for with ``stop_on_loop`` ends once it loops."""
    messages = [{"role": "user", "content": "Write the text 'go ' two hundred times in a row, "
                                            "nothing else: go go go go go go go go go go"}]
    free = qwen.complete(messages, max_tokens=160)
    cut = qwen.complete(messages, max_tokens=160, stop_on_loop=True)
    assert free.completion_tokens == 160 and not free.looped  # it does loop to the limit
    assert cut.looped and cut.completion_tokens < 80
    assert free.text.startswith(cut.text.strip()[:20])
