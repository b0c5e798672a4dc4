"""The seed 003 debate end to end on a scripted FakeLLM: rounds, retries, files, workspace."""

from __future__ import annotations

import json
import re
from itertools import combinations

import pytest
from pydantic import ValidationError

from memlab.decision.ahp import ahp_weights
from memlab.decision.debate import DecisionDebate, InconsistentJudgementsError
from memlab.decision.outputs import final_ranking_filename
from memlab.decision.personas import distribute_values, generate_personas
from memlab.errors import ConfigError
from memlab.llm.fake import FakeLLM
from memlab.models.decision import (
    ConversationState,
    Round1Output,
    Round2Output,
    Round3Output,
    UserInput,
    round_output_filename,
)
from memlab.models.operating import EventStatus
from memlab.stores.kv import InProcessKV
from memlab.stores.operating import OperatingMemory

CRITERIA = ["Interest", "Salary", "Impact", "Aptitude"]
RELATIVE = {"Interest": 4, "Salary": 2, "Impact": 2, "Aptitude": 1}  # consistent ratios on scale
MAJORS = ["Computer Science", "Biology", "Economics"]
SCORES = {"Computer Science": [8, 7, 5, 6.5], "Biology": [5.5, 4, 7, 5],
          "Economics": [4, 6.5, 4.5, 3.5]}

USER = {
    "mbti": "INTJ", "strengths": ["analysis"], "weaknesses": ["impatience"],
    "favorite_subjects": ["maths"], "disliked_subjects": ["history"],
    "good_at_subjects": ["physics"], "bad_at_subjects": ["art"],
    "core_values": ["growth", "security", "helping others", "curiosity"],
    "candidate_majors": MAJORS,
    "settings": {"max_criteria": 4, "cr_threshold": 0.10, "cr_max_retries": 2},
}

SEED_FIELDS = {
    1: {"user_input", "agent_personas", "round1_debate_turns", "selected_criteria"},
    2: {"user_input", "agent_personas", "selected_criteria", "round2_debate_turns",
        "comparison_matrix", "criteria_weights", "consistency_ratio", "eigenvalue_max",
        "round2_director_decision"},
    3: {"user_input", "agent_personas", "selected_criteria", "criteria_weights",
        "round3_debate_turns", "decision_matrix", "round3_director_decision"},
}


def consistent_matrix():
    out = {}
    for a, b in combinations(CRITERIA, 2):
        hi, lo = (a, b) if RELATIVE[a] >= RELATIVE[b] else (b, a)
        out[f"{hi} vs {lo}"] = RELATIVE[hi] / RELATIVE[lo]
    return out


def inconsistent_matrix(intensity=9.0):
    # two judgements turned round, strongly (CR 0.92 at 9): the rest agree with RELATIVE
    m = consistent_matrix()
    m.pop("Interest vs Salary")
    m.pop("Impact vs Aptitude")
    m.update({"Salary vs Interest": intensity, "Aptitude vs Impact": intensity})
    return m


def asked_pairs(text):
    """The pairs a CR retry asks for (its "- A vs B: you said ..." lines)."""
    return {frozenset(m) for m in re.findall(r"^- (.+?) vs (.+?): you said", text, re.M)}


def judgements(matrix, pairs=None):
    """The reply's form of a seed matrix: per "A vs B" (criteria order) the favoured side."""
    out = {}
    for a, b in combinations(CRITERIA, 2):
        if pairs is not None and frozenset((a, b)) not in pairs:
            continue
        if f"{a} vs {b}" in matrix:
            out[f"{a} vs {b}"] = {"more_important": a, "intensity": matrix[f"{a} vs {b}"]}
        else:
            out[f"{a} vs {b}"] = {"more_important": b, "intensity": matrix[f"{b} vs {a}"]}
    return out


class Script:
    """Routes on the first user message (round, role) and counts what it was asked.

    The round 2 Director is inconsistent for its first ``inconsistent_director_tries`` answers
    (first reply and CR retries); an inconsistent retry repeats its judgements (``retry=
    "repeat"``) or turns them round less strongly each time (``"vary"``: 8.5, 8, ...).
    """

    def __init__(self, *, inconsistent_director_tries=1, garbage_once=True, retry="repeat"):
        self.inconsistent_left = inconsistent_director_tries
        self.garbage_left = 1 if garbage_once else 0
        self.retry = retry
        self.cr_retries = 0
        self.reasks = 0

    def __call__(self, messages):
        first = messages[1].content
        last = messages[-1].content
        round_no = int(re.search(r"Round (\d) of 4", first).group(1))
        role = re.search(r"Your role: (\w+)", first).group(1)
        self.reasks += last.startswith("That reply was not valid")
        if "CR retry" in first:
            self.cr_retries += 1
            return json.dumps({"judgements": judgements(self.director_matrix(),
                                                        asked_pairs(first))})
        if round_no == 3 and role == "proposal" and self.garbage_left:
            self.garbage_left -= 1
            return "Sure! Here are my scores: CS is great."  # not JSON: must be re-asked
        return json.dumps(self.reply(round_no, role))

    def director_matrix(self):
        if not self.inconsistent_left:
            return consistent_matrix()
        self.inconsistent_left -= 1
        vary = self.retry == "vary" and self.cr_retries
        return inconsistent_matrix(9.0 - 0.5 * self.cr_retries if vary else 9.0)

    def reply(self, round_no, role):
        director = role == "final_decision"
        if role == "critique":
            return {"content": "You overlook the student's values."}
        if round_no == 1 and director:
            return {"content": "Final criteria chosen.", "selected_criteria": [
                {"name": c, "source_agent": "GrowthCuriosityAdvocate",
                 "reasoning": "raised in debate"} for c in CRITERIA]}
        if round_no == 1:
            return {"content": "These criteria matter.", "criteria": [
                {"name": c, "description": f"{c} fit"} for c in CRITERIA[:3]]}
        if round_no == 2:
            matrix = self.director_matrix() if director else consistent_matrix()
            return {"judgements": judgements(matrix), "content": "My comparisons.",
                    **({"reasoning": "interest first"} if director else {})}
        matrix = {c: {m: SCORES[m][i] for m in MAJORS} for i, c in enumerate(CRITERIA)}
        return {"content": "My scores.", **({"reasoning": "fit"} if director else {}),
                "scores": matrix}


@pytest.fixture
def finished(tmp_path):
    script = Script()
    llm = FakeLLM([script])
    seen = []
    state = DecisionDebate(llm, output_dir=tmp_path,
                           on_turn=lambda r, t, info: seen.append((r, t.turn))).run(USER)
    return state, script, llm, seen, tmp_path


def test_three_rounds_of_thirteen_turns_and_turn_structure(finished):
    state, _, _, seen, _ = finished
    assert seen == [(r, t) for r in (1, 2, 3) for t in range(1, 14)]
    for turns in (state.round1_debate_turns, state.round2_debate_turns, state.round3_debate_turns):
        assert [t.turn for t in turns] == list(range(1, 14))
        kinds = [t.type.value for t in turns]
        assert kinds == ["proposal", "critique", "critique", "defense"] * 3 + ["final_decision"]
        leads = [turns[i].speaker for i in (0, 4, 8)]
        assert leads == [p.name for p in state.agent_personas]
        assert turns[12].speaker == "Director"
        assert turns[12].phase == "Phase 4: Director's final decision"
        assert turns[1].target == leads[0] and turns[3].target == [turns[1].speaker,
                                                                   turns[2].speaker]


def test_round_files_exist_with_the_seed_fields_and_validate(finished):
    state, *_, out = finished
    models = {1: Round1Output, 2: Round2Output, 3: Round3Output}
    for n, model in models.items():
        path = out / round_output_filename(n, state.session_id)
        data = json.loads(path.read_text())
        assert set(data) == SEED_FIELDS[n]
        model.model_validate(data)
    r2 = json.loads((out / round_output_filename(2, state.session_id)).read_text())
    assert r2["consistency_ratio"] <= USER["settings"]["cr_threshold"]
    assert len(r2["comparison_matrix"]) == 6  # nC2, n = 4


def test_cr_retry_then_weights_from_the_accepted_matrix(finished):
    state, script, llm, *_ = finished
    assert script.cr_retries == 1
    expected = ahp_weights(CRITERIA, consistent_matrix())
    assert state.criteria_weights == pytest.approx(expected.criteria_weights)
    assert state.criteria_weights["Interest"] == pytest.approx(4 / 9)
    assert state.eigenvalue_max == pytest.approx(4.0)
    assert state.comparison_matrix == consistent_matrix()
    # 39 turns + 1 CR retry + 1 re-ask of the non-JSON reply
    assert llm.calls == 41 and script.reasks == 1


def test_topsis_ranking(finished):
    state, *_ = finished
    ranking = [(r.rank, r.alternative) for r in state.final_ranking]
    assert [r for r, _ in ranking] == [1, 2, 3]
    assert ranking[0][1] == "Computer Science"  # best on the two heaviest criteria
    assert all(0 <= r.closeness_coefficient <= 1 for r in state.final_ranking)
    assert sum(state.criteria_weights.values()) == pytest.approx(1.0)
    ConversationState.model_validate(state.model_dump())  # every round's rules hold together


def test_workspace_event_holds_the_turns_and_is_archived_resolved(finished):
    state, *_, out = finished
    archived = list(out.glob("workspace_*.json"))
    assert len(archived) == 1
    ws = json.loads(archived[0].read_text())
    assert ws["status"] == "resolved"
    assert ws["shared_data"]["session_id"] == state.session_id
    assert [len(ws["shared_data"][f"round{n}_debate_turns"]) for n in (1, 2, 3)] == [13] * 3
    assert set(ws["participating_agents"]) == {p.name for p in state.agent_personas} | {
        "Director"}
    assert ws["shared_data"]["round2_cr_attempts"][0] > 0.10


def test_given_operating_memory_without_hook_keeps_the_event_active(tmp_path):
    operating = OperatingMemory(InProcessKV())
    debate = DecisionDebate(FakeLLM([Script(inconsistent_director_tries=0, garbage_once=False)]),
                            output_dir=tmp_path, operating=operating)
    debate.run(USER, session_id="s1")
    ws = operating.get_workspace(debate.event_id)
    assert ws.status is EventStatus.ACTIVE and len(ws.shared_data["round3_debate_turns"]) == 13
    assert (tmp_path / "round3_test_s1.json").exists()


def test_strict_cr_fails_after_max_retries_and_writes_no_round2(tmp_path):
    script = Script(inconsistent_director_tries=99, garbage_once=False, retry="vary")
    with pytest.raises(InconsistentJudgementsError, match="consistency_ratio") as err:
        DecisionDebate(FakeLLM([script]), output_dir=tmp_path, cr_repair=False).run(
            USER, session_id="s2")
    assert len(err.value.ratios) == USER["settings"]["cr_max_retries"] + 1
    assert script.cr_retries == USER["settings"]["cr_max_retries"]
    assert all(r > 0.10 for r in err.value.ratios)
    assert (tmp_path / "round1_test_s2.json").exists()
    assert not (tmp_path / "round2_test_s2.json").exists()


def test_wrong_criteria_count_from_director_is_re_asked(tmp_path):
    script = Script(inconsistent_director_tries=0, garbage_once=False)
    wrong = {"done": False}

    def reply(messages):
        first = messages[1].content
        if "Round 1 of 4" in first and "Your role: final_decision" in first and not wrong["done"]:
            wrong["done"] = True
            return json.dumps({"content": "Two only.", "selected_criteria": [
                {"name": "Interest", "source_agent": "SecurityAdvocate"},
                {"name": "Salary", "source_agent": "SecurityAdvocate"}]})
        return script(messages)

    llm = FakeLLM([reply])
    state = DecisionDebate(llm, output_dir=tmp_path).run(USER)
    assert [c.name for c in state.selected_criteria] == CRITERIA
    reask = [m for call in llm.history for m in call if "at least 4 items" in m.content]
    assert reask, "the validation error was quoted back to the model"


@pytest.mark.parametrize("field, value", [
    ("mbti", "ABCD"), ("candidate_majors", ["Only one"]), ("core_values", []),
])
def test_bad_user_input_names_the_field(tmp_path, field, value):
    with pytest.raises(ValidationError, match=field):
        DecisionDebate(FakeLLM(), output_dir=tmp_path).run({**USER, field: value})
    assert not list(tmp_path.iterdir())


def test_settings_ranges_enforced():
    with pytest.raises(ValidationError, match="max_criteria"):
        UserInput.model_validate({**USER, "settings": {"max_criteria": 11}})
    with pytest.raises(ValidationError, match="cr_threshold"):
        UserInput.model_validate({**USER, "settings": {"cr_threshold": 0.3}})


@pytest.mark.parametrize("values, sizes", [
    (["a"], [1, 1, 1]), (["a", "b"], [1, 1, 1]), (["a", "b", "c"], [1, 1, 1]),
    (["a", "b", "c", "d"], [2, 1, 1]), (["a", "b", "c", "d", "e"], [2, 2, 1]),
    (list("abcdef"), [2, 2, 2]),
])
def test_core_values_spread_evenly_one_or_two_each(values, sizes):
    groups = distribute_values(values)
    assert [len(g) for g in groups] == sizes
    assert {v for g in groups for v in g} == set(values)


def test_too_many_core_values_is_a_clear_error():
    with pytest.raises(ConfigError, match="core_values"):
        distribute_values(list("abcdefg"))


def test_personas_are_unique_and_reflect_values_and_profile():
    personas = generate_personas(UserInput.model_validate({**USER, "core_values": ["growth"]}))
    assert len({p.name for p in personas}) == 3
    assert all(p.core_values == ["growth"] and "Growth" in p.name for p in personas)
    assert all("INTJ" in p.system_prompt and "analysis" in p.system_prompt for p in personas)


# --- resuming, diversity, the final ranking file, what the schema constrains ----------------------
def test_final_ranking_file_holds_round4_and_the_costs(finished):
    state, script, llm, _, out = finished
    final = json.loads((out / final_ranking_filename(state.session_id)).read_text())
    assert [r["alternative"] for r in final["final_ranking"]] == [
        r.alternative for r in state.final_ranking]
    stats = final["stats"]
    assert sum(r["calls"] for r in stats["rounds"].values()) == llm.calls == 41
    assert stats["rounds"]["3"]["reasks"] == 1 and stats["rounds"]["1"]["reasks"] == 0
    assert len(stats["cr_attempts"]) == 2 and stats["cr_attempts"][1] <= 0.10
    assert stats["repeated_scores"] == [{}]


def test_a_debate_stopped_after_round_1_resumes_from_its_file(tmp_path):
    script = Script(inconsistent_director_tries=99, garbage_once=False)
    with pytest.raises(InconsistentJudgementsError):
        DecisionDebate(FakeLLM([script]), output_dir=tmp_path, cr_repair=False).run(
            USER, session_id="s3")
    round1 = (tmp_path / "round1_test_s3.json").read_text()
    llm = FakeLLM([Script(inconsistent_director_tries=0, garbage_once=False)])
    debate = DecisionDebate(llm, output_dir=tmp_path)
    state = debate.run(USER, session_id="s3")
    assert llm.calls == 26  # rounds 2 and 3 only
    assert debate.stats.resumed_after_round == 1
    assert (tmp_path / "round1_test_s3.json").read_text() == round1  # kept as it was
    assert [c.name for c in state.selected_criteria] == CRITERIA
    assert state.final_ranking[0].alternative == "Computer Science"
    with pytest.raises(ConfigError, match="session_id: round1_test_s3.json was written for "
                                          "another user input"):
        DecisionDebate(FakeLLM(), output_dir=tmp_path).run({**USER, "mbti": "ENFP"}, "s3")


def test_repeated_scores_are_re_asked_once_then_kept_with_a_note(tmp_path):
    script = Script(inconsistent_director_tries=0, garbage_once=False)

    def flat(messages):
        first = messages[1].content
        if "Round 3 of 4" in first and "final_decision" in first:
            return json.dumps({"scores": {c: dict.fromkeys(MAJORS, 5.0) for c in CRITERIA},
                               "content": "All equal.", "reasoning": "unsure"})
        return script(messages)

    llm = FakeLLM([flat])
    debate = DecisionDebate(llm, output_dir=tmp_path)
    state = debate.run(USER)
    assert debate.stats.repeated_scores == [{5.0: 12}, {5.0: 12}]
    asked = [m.content for call in llm.history for m in call if m.content.startswith("Score div")]
    assert asked and "5.0 used 12 times" in asked[0]
    Round3Output.model_validate(json.loads(
        (tmp_path / round_output_filename(3, state.session_id)).read_text()))


def test_cr_retry_asks_only_the_least_consistent_pairs_without_the_previous_reply(finished):
    *_, llm, _, _ = finished
    retries = [call for call in llm.history if "CR retry" in call[-1].content]
    assert len(retries) == 1
    call = retries[0]
    assert [m.role for m in call] == ["system", "user"]  # no earlier reply to copy
    text = call[-1].content
    assert text.startswith("Round 2 of 4") and "Your role: final_decision" in text
    assert asked_pairs(text) == {frozenset(("Salary", "Interest")),
                                 frozenset(("Aptitude", "Impact"))}
    assert re.search(r"- Salary vs Interest: you said Salary 9\.0 times as important as "
                     r"Interest; your other judgements imply Interest about \d\.\d times", text)
    schema = text.split("JSON schema:")[-1]
    assert "Interest vs Salary" in schema and "Impact vs Aptitude" in schema
    assert "Interest vs Impact" not in schema and "content" not in schema


def test_reply_schemas_enumerate_every_pair_score_and_advisor():
    from memlab.decision.replies import comparison_model, criteria_decision_model, decision_model
    from memlab.llm.structured import prompt_schema

    pairs = prompt_schema(comparison_model(CRITERIA))
    judged = pairs["$defs"][pairs["properties"]["judgements"]["$ref"].split("/")[-1]]
    assert list(judged["properties"]) == [f"{a} vs {b}" for a, b in combinations(CRITERIA, 2)]
    assert judged["additionalProperties"] is False
    scores = json.dumps(prompt_schema(decision_model(MAJORS, CRITERIA)))
    assert all(m in scores for m in MAJORS) and '"enum": [1.0, 1.5, 2.0' in scores
    picks = json.dumps(prompt_schema(criteria_decision_model(2, ["A", "B", "C"], ["X", "Y"])))
    assert '"enum": ["A", "B", "C"]' in picks and '"enum": ["X", "Y"]' in picks
    assert '"minItems": 2, "maxItems": 2' in picks or '"maxItems": 2, "minItems": 2' in picks


# --- a Director that stays inconsistent: the repair (default) or a stop (strict) ---------------
def test_director_repeating_an_inconsistent_matrix_is_repaired_and_recorded(tmp_path,
                                                                             monkeypatch):
    monkeypatch.delenv("MEMLAB_DECISION_CR_REPAIR", raising=False)
    script = Script(inconsistent_director_tries=99, garbage_once=False, retry="repeat")
    llm = FakeLLM([script])
    debate = DecisionDebate(llm, output_dir=tmp_path)
    state = debate.run(USER, session_id="r1")
    given = inconsistent_matrix()
    # one retry, which gave the same judgements back: no second retry of the same question
    assert script.cr_retries == 1 and llm.calls == 40
    assert debate.stats.cr_stopped_on_repeat
    cr_given = ahp_weights(CRITERIA, given).consistency_ratio
    assert debate.stats.cr_attempts == pytest.approx([cr_given, cr_given])
    r2 = json.loads((tmp_path / round_output_filename(2, "r1")).read_text())
    Round2Output.model_validate(r2)
    repair = r2["round2_director_decision"]["cr_repair"]
    assert repair["attempt"] == 1 and repair["director_matrix"] == given
    assert repair["cr_before"] == pytest.approx(cr_given) and cr_given > 0.10
    assert r2["consistency_ratio"] == pytest.approx(repair["cr_after"])
    assert r2["consistency_ratio"] <= 0.10
    # the two turned pairs go back to what the other four judgements say
    assert r2["comparison_matrix"] == consistent_matrix()
    after = ahp_weights(CRITERIA, r2["comparison_matrix"])
    assert r2["criteria_weights"] == pytest.approx(after.criteria_weights)
    assert state.criteria_weights == pytest.approx(after.criteria_weights)
    changed = {k for c in repair["changed"] for k in c["before"]}
    assert changed and changed <= set(given)
    assert {k: v for k, v in r2["comparison_matrix"].items() if k in given and k not in changed} \
        == {k: v for k, v in given.items() if k not in changed}
    assert r2["round2_debate_turns"][12]["comparison_matrix"] == given  # what the Director said
    final = json.loads((tmp_path / final_ranking_filename("r1")).read_text())
    assert final["stats"]["cr_repair"] == repair
    assert final["consistency_ratio"] == r2["consistency_ratio"]
    ws = json.loads(next(tmp_path.glob("workspace_*.json")).read_text())
    assert ws["shared_data"]["round2_cr_repair"] == repair
    resumed = DecisionDebate(FakeLLM(), output_dir=tmp_path).run(USER, session_id="r1")
    assert resumed.round2_director_decision.cr_repair.model_dump() == repair


def test_strict_setting_from_the_environment_stops_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_DECISION_CR_REPAIR", "0")
    script = Script(inconsistent_director_tries=99, garbage_once=False, retry="repeat")
    with pytest.raises(InconsistentJudgementsError, match="a retry repeated a matrix") as err:
        DecisionDebate(FakeLLM([script]), output_dir=tmp_path).run(USER, session_id="s4")
    assert len(err.value.ratios) == 2 and all(r > 0.10 for r in err.value.ratios)
    assert not (tmp_path / "round2_test_s4.json").exists()


def test_varying_retries_end_at_cr_max_retries_and_the_best_attempt_is_repaired(tmp_path):
    script = Script(inconsistent_director_tries=99, garbage_once=False, retry="vary")
    debate = DecisionDebate(FakeLLM([script]), output_dir=tmp_path, cr_repair=True)
    state = debate.run(USER, session_id="v1")
    ratios = debate.stats.cr_attempts
    assert len(ratios) == USER["settings"]["cr_max_retries"] + 1
    assert not debate.stats.cr_stopped_on_repeat
    repair = state.round2_director_decision.cr_repair
    assert repair.attempt == 1 + ratios.index(min(ratios)) and repair.attempt > 1
    assert repair.cr_before == pytest.approx(min(ratios))
    assert state.consistency_ratio == pytest.approx(repair.cr_after)
    assert state.consistency_ratio <= 0.10


def test_a_repair_that_falls_short_stops_the_debate(tmp_path, monkeypatch):
    import memlab.decision.consistency as consistency

    monkeypatch.setattr(consistency, "repair_consistency",
                        lambda names, matrix, threshold: (matrix, ahp_weights(names, matrix), []))
    script = Script(inconsistent_director_tries=99, garbage_once=False)
    with pytest.raises(InconsistentJudgementsError, match="the repair reached only CR 0.9"):
        DecisionDebate(FakeLLM([script]), output_dir=tmp_path, cr_repair=True).run(
            USER, session_id="s5")
    assert not (tmp_path / "round2_test_s5.json").exists()
