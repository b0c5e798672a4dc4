"""The LoCoMo suite on a hand-written file in the published format, and its metrics.

``suites_data/locomo_mini.json`` has what the published file has: a number as an answer, empty
evidence, a category-5 question with ``adversarial_answer`` and no ``answer``, an image turn
with ``blip_caption``, an evidence string naming two ids (one of no turn), a session date
without its session list, and the summaries memlab ignores.
"""

from __future__ import annotations

import copy
import json
import math
from datetime import datetime
from pathlib import Path

import pytest

from memlab.bench.base import SUITES, Response
from memlab.bench.suites import locomo_metrics as metrics
from memlab.bench.suites.judges import MEM0_PROMPT, mem0_label
from memlab.bench.suites.locomo import NOT_MENTIONED, LoCoMoSuite
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"


def suite(**options) -> LoCoMoSuite:
    return SUITES.resolve("locomo").build(span=4000, seed=0,
                                          options={"data": str(MINI), **options})


def questions(s: LoCoMoSuite) -> dict[str, object]:
    return {e.test_id: e for e in s.events() if e.kind == "question"}


# ---------------------------------------------------------------- events


def test_both_speakers_turns_in_order_with_times_and_captions():
    events = suite().events()
    turns = [e for e in events if e.kind == "filler"]
    assert [e.metadata["dia_id"] for e in turns[:7]] == [
        "D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3"]
    assert turns[0].text == 'Ana said, "Hey Ben! Good to see you!"'
    assert turns[1].text.endswith("[shares a photo of a lake at sunset]")
    assert turns[0].timestamp == datetime(2023, 5, 8, 13, 56)
    assert turns[3].timestamp == datetime(2023, 5, 8, 13, 56, 3)
    assert turns[4].timestamp == datetime(2023, 6, 27, 10, 37)
    assert all(e.reply == "" and e.store for e in turns)
    # session_3 has a date but no turns: nothing replayed for it
    assert {e.session_id for e in turns} == {"conv-a/session_1", "conv-a/session_2",
                                             "conv-b/session_1"}


def test_each_conversation_is_its_own_contiguous_user_with_questions_after_its_turns():
    events = suite().events()
    users = [e.user_id for e in events]
    assert users == sorted(users) and set(users) == {"conv-a", "conv-b"}
    for user in ("conv-a", "conv-b"):
        own = [e for e in events if e.user_id == user]
        kinds = [e.kind for e in own]
        assert kinds == sorted(kinds, key=lambda k: k == "question")  # turns, then questions
        asked = [e for e in own if e.kind == "question"]
        assert all(not q.store for q in asked)
        last_turn = max(e.timestamp for e in own if e.kind == "filler")
        assert all(q.timestamp > last_turn for q in asked)


def test_default_categories_are_one_to_four_and_answers_become_text():
    asked = questions(suite())
    assert set(asked) == {"conv-a:q0", "conv-a:q1", "conv-a:q2", "conv-a:q3", "conv-a:q5",
                          "conv-a:q6", "conv-b:q0"}
    assert asked["conv-a:q2"].metadata["answer"] == "2"
    assert asked["conv-a:q2"].test_type == "multi_hop"
    assert "Use DATE of CONVERSATION" in asked["conv-a:q1"].prompt
    assert "Use DATE" not in asked["conv-a:q0"].prompt
    assert asked["conv-a:q0"].text == "What does Ana's necklace stand for?"  # the memory query
    assert "Ana and Ben" in asked["conv-a:q0"].prompt and "Short answer:" in asked[
        "conv-a:q0"].prompt


def test_adversarial_question_is_a_two_option_choice_to_decline():
    asked = questions(suite(categories=[5]))
    assert list(asked) == ["conv-a:q4"]
    question = asked["conv-a:q4"]
    assert question.options == [NOT_MENTIONED, "love, faith and strength"]
    assert question.answer_index == 0 and question.test_type == "adversarial"


def test_evidence_maps_dia_ids_to_turn_events_with_the_answer_they_carry():
    s = suite()
    events, asked = s.events(), questions(s)
    index = {e.metadata.get("dia_id"): e.index for e in events if e.user_id == "conv-a"
             and e.kind == "filler"}
    necklace = asked["conv-a:q0"].evidence
    assert [(e.index, e.answer) for e in necklace] == [(index["D1:3"],
                                                        "love, faith and strength")]
    race = asked["conv-a:q1"].evidence  # a date the turn does not spell out: no answer text
    assert [(e.index, e.answer) for e in race] == [(index["D2:1"], None)]
    assert asked["conv-a:q3"].evidence == []  # empty evidence in the file
    photo = asked["conv-a:q5"].evidence  # the answer is in the image caption
    assert [(e.index, e.answer) for e in photo] == [(index["D1:2"], "a lake at sunset")]
    grandma = asked["conv-a:q6"]  # "D1:3; D2:9": two ids, the second names no turn
    assert [e.index for e in grandma.evidence] == [index["D1:3"]]
    assert grandma.metadata["evidence_unresolved"] == ["D2:9"]


def test_options_select_conversations_sessions_and_a_seeded_sample():
    assert {e.user_id for e in suite(conversations=["conv-b"]).events()} == {"conv-b"}
    assert {e.user_id for e in suite(conversations=1).events()} == {"conv-a"}
    first = suite(sessions=1)
    assert {e.session_id for e in first.events() if e.kind == "filler"} == {
        "conv-a/session_1", "conv-b/session_1"}
    # only questions whose evidence was replayed survive (not q1, q2, q3 or q6 of conv-a)
    assert set(questions(first)) == {"conv-a:q0", "conv-a:q5", "conv-b:q0"}
    sample = set(questions(suite(questions=2)))
    assert len({q for q in sample if q.startswith("conv-a")}) == 2
    assert sample == set(questions(suite(questions=2)))


def suite_seeded(seed: int, **options) -> LoCoMoSuite:
    return SUITES.resolve("locomo").build(span=4000, seed=seed,
                                          options={"data": str(MINI), **options})


def test_sample_depends_on_the_seed():
    picks = {frozenset(questions(suite_seeded(seed, questions=2))) for seed in range(8)}
    assert len(picks) > 1


@pytest.mark.parametrize("options, expected", [
    ({"conversations": ["conv-z"]}, "holds no ['conv-z']"),
    ({"categories": [6]}, "must be among 1-5"),
    ({"sessions": 0}, "'suite_options.sessions'"),
    ({"questions": -1}, "'suite_options.questions'"),
    ({"colour": "red"}, "does not accept ['colour']"),
])
def test_bad_options_name_the_option(options, expected):
    with pytest.raises(ConfigError) as caught:
        suite(**options)
    assert expected in str(caught.value)


def test_describe_holds_the_file_hash_so_a_changed_file_is_another_run(tmp_path):
    copy_path = tmp_path / "locomo.json"
    copy_path.write_text(MINI.read_text())
    before = SUITES.resolve("locomo").build(span=4000, options={"data": str(copy_path)})
    data = json.loads(copy_path.read_text())
    data[0]["qa"][0]["answer"] = "love"
    copy_path.write_text(json.dumps(data))
    after = SUITES.resolve("locomo").build(span=4000, options={"data": str(copy_path)})
    assert before.describe()["sha256"] != after.describe()["sha256"]
    assert before.describe()["conversations"] == ["conv-a", "conv-b"]


# ---------------------------------------------------------------- metrics


def test_normalisation_follows_locomo():
    assert metrics.normalise_answer("The Saturday, before 27 June!") == "saturday before 27 june"
    assert metrics.normalise_answer("Bread and an apple") == "bread apple"


def test_f1_stems_and_scores_by_category():
    assert metrics.token_f1("running", "run") == 1.0
    assert metrics.token_f1("", "run") == 0.0
    # "i paint sunset" against "sunset": precision 1/3, recall 1
    assert metrics.token_f1("I painted a sunset", "sunset") == pytest.approx(0.5)
    # multi-hop: mean over gold parts of the best predicted part
    assert metrics.locomo_f1("pottery, camping", "pottery, camping, painting", 1) == \
        pytest.approx(2 / 3)
    # open-domain: only the gold answer's first ";" part
    assert metrics.locomo_f1("Likely yes", "Likely yes; she loves making art", 3) == 1.0
    assert metrics.locomo_f1("2", 2, 4) == 1.0


def test_bleu1_is_brevity_penalised_unigram_precision():
    assert metrics.bleu1("The Saturday before 27 June 2023", "Saturday before 27 June 2023") \
        == pytest.approx(1.0)
    # 4 of 4 predicted unigrams right, reference 5 long: BP = exp(1 - 5/4)
    assert metrics.bleu1("Saturday before 27 June", "The Saturday before 27 June 2023") == \
        pytest.approx(math.exp(-0.25))
    assert metrics.bleu1("", "anything") == 0.0


def test_declines_rule_of_category_five():
    assert metrics.declines("Not mentioned in the conversation")
    assert metrics.declines("No information available.")
    assert not metrics.declines("love, faith and strength")


def test_mem0_label_reads_json_else_the_last_label_word():
    assert mem0_label('{"label": "WRONG"}') == "WRONG"
    assert mem0_label("The answer matches the gold answer, so CORRECT") == "CORRECT"
    assert mem0_label("no verdict here") is None


# ---------------------------------------------------------------- scoring


def responses_for(s: LoCoMoSuite, replies: dict[str, str], choices=None):
    asked = questions(s)
    return {asked[t].index: Response(index=asked[t].index, reply=r,
                                     choice=(choices or {}).get(t)) for t, r in replies.items()}


def test_scores_carry_f1_bleu_and_the_judges_verdict_and_model():
    judge = FakeLLM(['{"label": "CORRECT"}', '{"label": "WRONG"}'])
    s = LoCoMoSuite(str(MINI), judge=judge, conversations=["conv-a"])
    replies = {"conv-a:q0": "love, faith and strength", "conv-a:q1": "in May"}
    scores = {x.test_id: x for x in s.score(responses_for(s, replies))}
    necklace = scores["conv-a:q0"]
    assert necklace.score == 1.0 and necklace.judge == "llm"
    assert necklace.metadata["f1"] == 1.0 and necklace.metadata["bleu1"] == pytest.approx(1.0)
    assert necklace.metadata["j"] is True and necklace.metadata["judge_model"] == "fake"
    assert necklace.metadata["category"] == 4
    race = scores["conv-a:q1"]
    assert race.score == 0.0 and race.metadata["j"] is False
    # the judge saw Mem0's prompt with this question, gold answer and reply
    sent = judge.history[0][0].content
    assert sent == MEM0_PROMPT.format(question="What does Ana's necklace stand for?",
                                      gold_answer="love, faith and strength",
                                      generated_answer="love, faith and strength")
    # two judges per answer; unanswered questions are WRONG without a judge call
    assert scores["conv-a:q2"].metadata["j"] is False and len(judge.history) == 4


def test_without_judge_the_score_is_f1():
    s = LoCoMoSuite(str(MINI), judge=None, conversations=["conv-a"])
    scored = {x.test_id: x for x in s.score(responses_for(s, {"conv-a:q2": "2 dogs"}))}
    assert scored["conv-a:q2"].judge == "rule" and scored["conv-a:q2"].metadata["j"] is None
    assert scored["conv-a:q2"].score == pytest.approx(metrics.locomo_f1("2 dogs", "2", 1))


def test_adversarial_scores_one_only_when_the_model_declines():
    s = LoCoMoSuite(str(MINI), categories=[5], judge=FakeLLM())
    declined = s.score(responses_for(s, {"conv-a:q4": "A"}, {"conv-a:q4": 0}))[0]
    baited = s.score(responses_for(s, {"conv-a:q4": "B"}, {"conv-a:q4": 1}))[0]
    free_text = s.score(responses_for(s, {"conv-a:q4": "It is not mentioned anywhere."}))[0]
    assert (declined.score, baited.score, free_text.score) == (1.0, 0.0, 1.0)
    assert declined.metadata["declined"] and not baited.metadata["declined"]


# ---------------------------------------------------------------- malformed files


def _mutate(data: list, change: str) -> object:
    conv = data[0]["conversation"]
    if change == "top level object":
        return {"samples": data}
    if change == "no sample_id":
        del data[0]["sample_id"]
    elif change == "category 7":
        data[0]["qa"][2]["category"] = 7
    elif change == "no answer":
        del data[0]["qa"][1]["answer"]
    elif change == "no adversarial answer":
        del data[0]["qa"][4]["adversarial_answer"]
    elif change == "answer list":
        data[0]["qa"][0]["answer"] = ["love"]
    elif change == "evidence string":
        data[0]["qa"][0]["evidence"] = "D1:3"
    elif change == "bad date":
        conv["session_2_date_time"] = "yesterday"
    elif change == "no date":
        del conv["session_2_date_time"]
    elif change == "no text":
        del conv["session_1"][2]["text"]
    elif change == "repeated dia_id":
        conv["session_2"][0]["dia_id"] = "D1:1"
    elif change == "turns not a list":
        conv["session_1"] = {"speaker": "Ana"}
    elif change == "repeated sample":
        data[1]["sample_id"] = "conv-a"
    return data


@pytest.mark.parametrize("change, where, field", [
    ("top level object", "top level", "samples"),
    ("no sample_id", "sample #0", "sample_id"),
    ("category 7", "sample 'conv-a'", "qa[2].category"),
    ("no answer", "sample 'conv-a'", "qa[1]"),
    ("no adversarial answer", "sample 'conv-a'", "qa[4]"),
    ("answer list", "sample 'conv-a'", "qa[0].answer"),
    ("evidence string", "sample 'conv-a'", "qa[0].evidence"),
    ("bad date", "sample 'conv-a'", "conversation.session_2_date_time"),
    ("no date", "sample 'conv-a'", "conversation.session_2_date_time"),
    ("no text", "sample 'conv-a'", "conversation.session_1[2].text"),
    ("repeated dia_id", "sample 'conv-a'", "dia_id"),
    ("turns not a list", "sample 'conv-a'", "conversation.session_1"),
    ("repeated sample", "sample #1", "sample_id"),
])
def test_malformed_file_names_file_sample_and_field(tmp_path, change, where, field):
    bad = tmp_path / "bad_locomo.json"
    bad.write_text(json.dumps(_mutate(copy.deepcopy(json.loads(MINI.read_text())), change)))
    with pytest.raises(ConfigError) as caught:
        LoCoMoSuite(str(bad))
    message = str(caught.value)
    assert str(bad) in message and where in message and f"field '{field}" in message, message
    assert "\n" not in message


def test_missing_path_and_non_json_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="suite_options.data"):
        LoCoMoSuite(None)
    with pytest.raises(ConfigError, match="no such file"):
        LoCoMoSuite(str(tmp_path / "none.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ConfigError, match="locomo data file .*: not valid JSON"):
        LoCoMoSuite(str(broken))


def test_evidence_ids_are_read_as_numbers_and_malformed_strings_counted():
    from memlab.bench.suites.locomo_data import dia_ids, malformed_evidence, padded_ids

    assert dia_ids(["D30:05", "D8:6; D9:17", "D8:6"]) == ["D30:5", "D8:6", "D9:17"]
    assert padded_ids(["D30:05", "D8:6; D09:17"]) == 2 and padded_ids(["D8:6"]) == 0
    assert malformed_evidence(["D", "D:11:26", "D8:6; D9:17", "D8:6,D9:1"]) == 2
    assert dia_ids(["D", "D:11:26"]) == []  # which turn is meant cannot be told


def test_the_published_files_evidence_slips_are_normalised_or_counted():
    """locomo10.json: 'D30:05' (conv-50) resolves as D30:5; 'D' (conv-42) and 'D:11:26'
    (conv-43) are counted as malformed; D10:19 (conv-42) and D4:36 (conv-47) name no turn."""
    from services import require_or_skip

    from memlab.bench.suites.locomo_data import locomo_counts, read_locomo
    from memlab.gridspec import default_locomo_data

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
    path = path if path.exists() else Path(default_locomo_data() or path)
    if not path.exists():
        require_or_skip(f"LoCoMo's published file not found at {path}")
    file, conversations = read_locomo(path)
    counts = locomo_counts(file, conversations, count_tokens=lambda text: 0)
    assert counts["questions"] == 1986 and counts["turns"] == 5882
    assert counts["evidence_ids_zero_padded"] == 1
    assert counts["evidence_strings_malformed"] == 2
    assert counts["evidence_ids_unresolved"] == 2
    assert counts["questions_with_evidence"] == 1982
