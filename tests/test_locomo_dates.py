"""Dates the way LoCoMo writes them: the answer prompt of a LoCoMo run carries each session's
own ``date_time`` string, other suites keep memlab's format, and the choice is part of a run's
identity (issue 44 item 3)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from memlab import lab
from memlab.agent import Agent
from memlab.bench.questions import PromptStore
from memlab.bench.runlog import read_jsonl
from memlab.bench.spec import RunSpec
from memlab.bench.suites.locomo import LoCoMoSuite
from memlab.bench.suites.locomo_data import format_date, parse_date
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.memory.base import MemoryContext, MemoryItem, format_time

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"


def run_locomo(tmp_path: Path, condition: str, **options) -> Path:
    spec = RunSpec(suite="locomo", condition=condition, span=4000, llm="fake",
                   embedder="hashing", suite_options={"data": str(MINI), **options})
    return lab.run(spec, tmp_path, llm=FakeLLM(), embedder=HashingEmbedder(), progress=False)


def sent_prompt(run_dir: Path, test_id: str) -> str:
    turn = next(t for t in read_jsonl(run_dir / "turns.jsonl") if t.get("test_id") == test_id)
    return "\n".join(m.content for m in PromptStore(run_dir / "prompts").get(turn["prompt_sha"]))


@pytest.mark.parametrize("written", ["1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023",
                                     "12:04 am on 1 January, 2024", "12:30 pm on 9 July, 2023"])
def test_format_date_writes_back_the_string_it_was_parsed_from(written):
    assert format_date(parse_date(written)) == written


@pytest.mark.parametrize("condition", ["oracle", "full_context"])
def test_a_locomo_prompt_carries_the_sessions_own_date_strings(tmp_path, condition):
    sent = sent_prompt(run_locomo(tmp_path, condition, clock=True), "conv-a:q1")
    # the race turn is in session 2, "10:37 am on 27 June, 2023"; the clock is its last minute
    assert "10:37 am on 27 June, 2023" in sent
    assert "It is now 10:37 am on 27 June, 2023." in sent
    assert "Tue 27 Jun 2023" not in sent and "10:37]" not in sent


@pytest.mark.parametrize("condition", ["oracle", "full_context"])
def test_a_locomo_question_states_no_clock_by_default_but_keeps_the_turns_dates(tmp_path,
                                                                                 condition):
    """LoCoMo's and Mem0's protocols state no present time; the remembered turns keep theirs."""
    run_dir = run_locomo(tmp_path, condition)
    sent = sent_prompt(run_dir, "conv-a:q1")
    assert "It is now" not in sent
    assert "10:37 am on 27 June, 2023" in sent
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["suite_params"]["clock"] is False
    assert LoCoMoSuite(str(MINI), clock=True).describe()["clock"] is True


def test_a_bad_clock_option_names_the_field():
    with pytest.raises(ConfigError, match="clock"):
        LoCoMoSuite(str(MINI), clock="sometimes")


def test_option_dates_memlab_keeps_memlabs_format_and_is_another_run(tmp_path):
    run_dir = run_locomo(tmp_path / "memlab", "oracle", dates="memlab")
    sent = sent_prompt(run_dir, "conv-a:q1")
    assert "Tue 27 Jun 2023 10:37" in sent and "27 June, 2023" not in sent
    recorded = json.loads((run_dir / "manifest.json").read_text())["suite_params"]["dates"]
    assert recorded == "memlab"
    assert LoCoMoSuite(str(MINI)).describe()["dates"] == "locomo"


def test_a_bad_dates_option_names_the_field_and_the_choices():
    with pytest.raises(ConfigError, match=r"field 'suite_options.dates': 'iso' must be one of "
                                          r"locomo, memlab"):
        LoCoMoSuite(str(MINI), dates="iso")


def test_the_agent_writes_every_time_with_its_time_format_and_memlabs_by_default():
    moment = datetime(2023, 5, 8, 13, 56)
    context = MemoryContext(items=[MemoryItem(id="m", kind="turn", text="hi", timestamp=moment)])
    assert context.render(show_time=True) == f"- [turn, {format_time(moment)}] hi"
    assert context.render(show_time=True, time_format=format_date) == \
        "- [turn, 1:56 pm on 8 May, 2023] hi"

    class Held:
        def recall(self, text):
            return context

    llm = FakeLLM(["fine"])
    Agent(Held(), llm, time_format=format_date).interact("q", store=False, timestamp=moment)
    sent = "\n".join(m.content for m in llm.history[0])
    assert "It is now 1:56 pm on 8 May, 2023." in sent and "[turn, 1:56 pm on 8 May, 2023]" in sent
    default = FakeLLM(["fine"])
    Agent(Held(), default).interact("q", store=False, timestamp=moment)
    assert "It is now Mon 08 May 2023 13:56." in default.history[0][-1].content
    quiet = FakeLLM(["fine"])
    Agent(Held(), quiet, time_format=format_date, show_clock=False).interact(
        "q", store=False, timestamp=moment)
    sent = "\n".join(m.content for m in quiet.history[0])
    assert "It is now" not in sent and "[turn, 1:56 pm on 8 May, 2023]" in sent


def test_the_published_files_session_dates_are_written_back_exactly():
    """All 272 replayed sessions of locomo10.json: format_date(parse_date(s)) == s."""
    from services import require_or_skip

    from memlab.config import get_settings
    from memlab.gridspec import default_locomo_data

    path = default_locomo_data(get_settings())
    if path is None:
        require_or_skip("LoCoMo's published file not found (MEMLAB_LOCOMO_DATA)")
    samples = json.loads(Path(path).read_text())
    written = [c[key] for c in (s["conversation"] for s in samples) for key in c
               if key.endswith("_date_time") and key.removesuffix("_date_time") in c]
    assert len(written) == 272
    assert [format_date(parse_date(w)) for w in written] == written
