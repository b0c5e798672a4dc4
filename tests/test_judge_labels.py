"""Judges measured against hand labels: agreement, false accepts and rejects with Wilson
intervals, the judges' disagreement and what they accept on vanilla (issue 44 item 2), the
matched verdict (a rule's, else the strict judge's) measured like the judges."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memlab import lab, stats
from memlab.embed.hashing import HashingEmbedder
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.report.judge_labels import (
    judge_agreement,
    judge_disagreement,
    judges_shown,
    judges_table,
    labelled_scores,
    read_labels,
)
from memlab.report.literature import literature_tables, questions_frame

MINI = Path(__file__).parent / "suites_data" / "locomo_mini.json"
ANSWERS = {"vanilla": "strength", "oracle": "love, faith and strength"}


def scripted(answer: str):
    """Answers ``answer``; Mem0's judge accepts anything naming "strength", the strict one
    only the whole gold answer."""
    def reply(messages):
        text = messages[-1].content
        if "Gold answer:" not in text:
            return answer
        generated = text.split("Generated answer:")[1].split("\n")[0]
        wanted = "love, faith and strength" if "same topic is not enough" in text else "strength"
        return '{"label": "%s"}' % ("CORRECT" if wanted in generated else "WRONG")
    return reply


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("judged")
    for condition, answer in ANSWERS.items():
        spec = lab.RunSpec(suite="locomo", condition=condition, span=4000, llm="fake",
                           embedder="hashing", suite_options={"data": str(MINI)})
        lab.run(spec, root, llm=FakeLLM([scripted(answer)]), embedder=HashingEmbedder(),
                progress=False)
    return root


@pytest.fixture(scope="module")
def questions(root):
    return questions_frame(root, "locomo")


def write_labels(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def label(test_id, condition, verdict, answer=None):
    return {"test_id": test_id, "condition": condition, "answer": answer or ANSWERS[condition],
            "gold": "g", "label": verdict, "reason": "read against the gold"}


def hand_labels(path: Path):
    """vanilla's "strength" is WRONG for the necklace, oracle's answer CORRECT for it and WRONG
    for the dogs and the race."""
    return read_labels(write_labels(path, [
        label("conv-a:q0", "vanilla", "WRONG"), label("conv-a:q0", "oracle", "CORRECT"),
        label("conv-a:q2", "oracle", "WRONG"), label("conv-a:q1", "oracle", "WRONG")]))


def test_agreement_false_accepts_and_rejects_match_hand_counts(questions, tmp_path):
    table = judge_agreement(hand_labels(tmp_path / "labels.jsonl"), questions).set_index("judge")
    lenient, strict = table.loc["J (Mem0, lenient)"], table.loc["J strict"]
    # Mem0's J accepts all four (each names "strength"): right on 1 of 4, 3 false accepts of 3
    assert (lenient["agreement"], lenient["agreement_n"]) == (0.25, 4)
    assert (lenient["false_accept"], lenient["false_accept_n"]) == (1.0, 3)
    assert (lenient["false_reject"], lenient["false_reject_n"]) == (0.0, 1)
    expected = stats.proportion_ci(1, 4)
    assert (lenient["agreement_low"], lenient["agreement_high"]) == pytest.approx(
        (expected.low, expected.high))
    # the strict judge rejects vanilla's "strength" and accepts the oracle's whole answer,
    # which it also accepts for the dogs and the race: 2 of 4
    assert (strict["agreement"], strict["false_accept"], strict["false_reject"]) == (0.5, 2 / 3,
                                                                                     0.0)
    # on vanilla (7 answered questions, all "strength"), Mem0's J accepts every one
    assert (lenient["vanilla_accepted"], lenient["vanilla_accepted_n"]) == (1.0, 7)
    assert strict["vanilla_accepted"] == 0.0


def test_the_matched_judge_is_measured_against_the_labels_like_the_others(questions, tmp_path):
    table = judge_agreement(hand_labels(tmp_path / "labels.jsonl"), questions).set_index("judge")
    matched = table.loc["J matched (rule, else strict)"]
    # the rule decides the necklace (the oracle's answer holds every gold word: CORRECT) and the
    # race (the gold is a Saturday before 27 June 2023, the answer names no date: WRONG, where
    # the strict judge said CORRECT); vanilla's "strength" and the dogs' "2" fall to the strict
    # judge (WRONG, CORRECT): right on 3 of 4, the dogs a false accept
    assert (matched["agreement"], matched["agreement_n"]) == (0.75, 4)
    assert (matched["false_accept"], matched["false_accept_n"]) == (1 / 3, 3)
    assert (matched["false_reject"], matched["false_reject_n"]) == (0.0, 1)
    assert (matched["vanilla_accepted"], matched["vanilla_accepted_n"]) == (0.0, 7)
    by = questions.set_index(["condition", "test_id"])["j_matched"]
    assert by[("oracle", "conv-a:q1")] == 0.0 and by[("oracle", "conv-a:q2")] == 1.0


def test_disagreement_is_the_share_where_the_judges_differ(questions):
    assert judge_disagreement(questions, "vanilla")["disagreement"] == 1.0
    assert judge_disagreement(questions, "oracle")["disagreement"] == 0.0
    overall = judge_disagreement(questions)
    assert (overall["disagreement"], overall["disagreement_n"]) == (0.5, 14)


def test_the_judges_table_uses_the_labels_of_the_runs_answers_and_counts_them(questions,
                                                                             tmp_path):
    """A grid's judges table takes the labels whose answers its runs gave and leaves the others
    (another run's answer, a question it did not answer) out of every n."""
    labels = read_labels(write_labels(tmp_path / "l.jsonl", [
        label("conv-a:q0", "vanilla", "WRONG"), label("conv-a:q0", "oracle", "CORRECT"),
        label("conv-a:q2", "oracle", "WRONG", answer="an older answer"),
        label("conv-z:q0", "oracle", "WRONG")]))
    table = judges_table(questions, labels).set_index("judge")
    lenient, strict = table.loc["J (Mem0, lenient)"], table.loc["J strict"]
    assert (lenient["agreement"], lenient["agreement_n"]) == (0.5, 2)  # vanilla's a false accept
    assert (strict["agreement"], strict["false_accept_n"], strict["false_reject_n"]) == (1.0, 1,
                                                                                         1)
    assert (strict["differs_from_J"], strict["differs_from_J_n"]) == (0.5, 14)
    assert np.isnan(lenient["differs_from_J"])  # J against itself: no row of numbers
    hand = table.loc["hand labels"]  # vanilla's one labelled answer is wrong; J differs on it
    assert (hand["vanilla_accepted"], hand["vanilla_accepted_n"]) == (0.0, 1)
    assert (hand["differs_from_J"], hand["differs_from_J_n"]) == (0.5, 2)
    shown = judges_shown(table.reset_index())
    assert list(shown.loc[shown["judge"] == "J strict", "agreement with the labels (%)"]) == [
        "100.0"]
    unlabelled = judges_table(questions).set_index("judge")
    assert "agreement" not in unlabelled and "hand labels" not in unlabelled.index
    assert unlabelled.loc["J (Mem0, lenient)", "vanilla_accepted"] == 1.0


def test_labelled_scores_put_each_judges_number_beside_the_hand_labels(questions, tmp_path):
    """Per condition, on its labelled answers: the share right by hand and the share each
    judge accepts (oracle: 1 of 3 right by hand, Mem0's J accepts all 3)."""
    table = labelled_scores(questions, hand_labels(tmp_path / "l.jsonl")).set_index("condition")
    oracle, vanilla = table.loc["oracle"], table.loc["vanilla"]
    assert (oracle["hand"], oracle["hand_n"], oracle["score"], oracle["j_strict"]) == (
        pytest.approx(1 / 3), 3, 1.0, 1.0)
    assert oracle["j_matched"] == pytest.approx(2 / 3)  # the race: the rule's WRONG
    assert (vanilla["hand"], vanilla["score"], vanilla["j_strict"]) == (0.0, 1.0, 0.0)
    expected = stats.proportion_ci(1, 3)
    assert (oracle["hand_low"], oracle["hand_high"]) == pytest.approx((expected.low,
                                                                       expected.high))


def test_a_label_of_another_answer_or_of_no_answered_question_is_refused(questions, tmp_path):
    stale = read_labels(write_labels(tmp_path / "a.jsonl", [
        label("conv-a:q0", "oracle", "CORRECT", answer="love")]))
    with pytest.raises(ConfigError, match="1 label another answer than the run's"):
        judge_agreement(stale, questions)
    nowhere = read_labels(write_labels(tmp_path / "b.jsonl", [label("conv-z:q0", "oracle",
                                                                    "WRONG")]))
    with pytest.raises(ConfigError, match=r"1 name no answered question.*conv-z:q0"):
        judge_agreement(nowhere, questions)


@pytest.mark.parametrize("line, expected", [
    ('{"test_id": "t", "condition": "rag", "answer": "a", "gold": "g", "label": "RIGHT", '
     '"reason": "r"}', "line 1: field 'label'"),
    ('{"test_id": "t", "condition": "rag", "answer": "a", "gold": "g", "label": "WRONG", '
     '"reason": "two\\nlines"}', "line 1: field 'reason': Value error, must be one line"),
    ('{"test_id": "t", "condition": "rag", "answer": "a", "gold": "g", "label": "WRONG"}',
     "line 1: field 'reason'"),
    ('{"test_id": "t"', "line 1: not valid JSON"),
])
def test_a_malformed_label_line_is_named_with_its_line_and_field(tmp_path, line, expected):
    path = tmp_path / "labels.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError) as caught:
        read_labels(path)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_an_answer_labelled_twice_is_refused(tmp_path):
    path = write_labels(tmp_path / "labels.jsonl", [label("conv-a:q0", "oracle", "WRONG")] * 2)
    with pytest.raises(ConfigError, match="line 2: field 'test_id'.*labelled twice"):
        read_labels(path)


def test_held_out_labels_get_a_judges_table_of_their_own(root, tmp_path):
    """Labels no revision of the rule has read are measured apart from the in-sample ones
    (``locomo_judges_heldout``), and only when some label the runs' answers."""
    in_sample = hand_labels(tmp_path / "in.jsonl")
    held = read_labels(write_labels(tmp_path / "held.jsonl", [
        label("conv-a:q1", "vanilla", "WRONG"), label("conv-a:q2", "vanilla", "WRONG")]))
    tables = literature_tables(root, in_sample, held)
    own = tables["locomo_judges_heldout"][0].set_index("judge")
    assert own.loc["J strict", "agreement_n"] == 2  # the two held-out labels, not the four
    assert tables["locomo_judges"][0].set_index("judge").loc["J strict", "agreement_n"] == 4
    other = read_labels(write_labels(tmp_path / "other.jsonl", [
        label("conv-a:q1", "vanilla", "WRONG", answer="another run's answer")]))
    assert "locomo_judges_heldout" not in literature_tables(root, in_sample, other)
    assert "locomo_judges_heldout" not in literature_tables(root, in_sample)
