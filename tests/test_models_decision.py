"""Seed 003 models and rules: user input, personas, 13-turn debates, AHP, decision matrix, TOPSIS."""

import pytest
from pydantic import BaseModel, ValidationError

from memlab.models.decision import (
    MBTI_TYPES,
    SCALE_VALUES,
    AgentPersona,
    ConversationState,
    Criterion,
    CRRepair,
    DebateTurn,
    JudgementChange,
    Round1Output,
    Round2DirectorDecision,
    Round2Output,
    Round3DirectorDecision,
    Round3Output,
    SessionSettings,
    TopsisResult,
    UserInput,
    check_comparison_matrix,
    check_debate_turns,
    check_decision_matrix,
    check_weights,
    expected_turn_type,
    repeated_scores,
    round_output_filename,
)

AGENTS = ["PassionDriven", "PragmaticEarner", "SocialContributor"]
NAMES = ["Salary", "Interest", "Impact"]
MAJORS = ["CS", "Biology"]
CM = {"Salary vs Interest": 3.0, "Impact vs Salary": 2.5, "Interest vs Impact": 1.0}
DM = {m: {n: 5.0 for n in NAMES} for m in MAJORS}
WEIGHTS = {"Salary": 0.5, "Interest": 0.3, "Impact": 0.2}


def reject(model: type[BaseModel], data: dict, *fragments: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    text = str(exc.value)
    for fragment in fragments:
        assert fragment in text, text


def user_input(**kw) -> dict:
    return {
        "mbti": "INTJ",
        "core_values": ["growth", "money", "helping"],
        "candidate_majors": MAJORS,
        "settings": {"max_criteria": 3},
        **kw,
    }


def debate(**final) -> list[DebateTurn]:
    turns = []
    for k, lead in enumerate(AGENTS):
        others = [a for a in AGENTS if a != lead]
        phase, base = f"Phase {k + 1}: {lead} leads", 4 * k
        turns.append(
            DebateTurn(turn=base + 1, phase=phase, speaker=lead, type="proposal", content="p")
        )
        for i, other in enumerate(others):
            turns.append(
                DebateTurn(
                    turn=base + 2 + i,
                    phase=phase,
                    speaker=other,
                    type="critique",
                    target=lead,
                    content="c",
                )
            )
        turns.append(
            DebateTurn(
                turn=base + 4, phase=phase, speaker=lead, type="defense", target=others, content="d"
            )
        )
    turns.append(
        DebateTurn(
            turn=13,
            phase="Phase 4: Director's final decision",
            speaker="Director",
            type="final_decision",
            content="f",
            **final,
        )
    )
    return turns


def personas() -> list[AgentPersona]:
    return [
        AgentPersona(
            name=a,
            core_values=["v"],
            persona_description="pd",
            debate_stance="ds",
            system_prompt="sp",
        )
        for a in AGENTS
    ]


def full_state(**kw) -> dict:
    return {
        "user_input": user_input(),
        "agent_personas": personas(),
        "round1_debate_turns": debate(selected_criteria=[{"name": n} for n in NAMES]),
        "selected_criteria": [{"name": n, "source_agent": "PassionDriven"} for n in NAMES],
        "round2_debate_turns": debate(comparison_matrix=CM),
        "comparison_matrix": CM,
        "criteria_weights": WEIGHTS,
        "consistency_ratio": 0.04,
        "eigenvalue_max": 3.04,
        "round2_director_decision": {"comparison_matrix": CM, "reasoning": "r"},
        "round3_debate_turns": debate(decision_matrix=DM),
        "decision_matrix": DM,
        "round3_director_decision": {"decision_matrix": DM, "reasoning": "r"},
        "ideal_solution": {"Salary": 0.3},
        "anti_ideal_solution": {"Salary": 0.1},
        "topsis_results": [ranked("CS", 1, 0.7), ranked("Biology", 2, 0.3)],
        "final_ranking": [ranked("CS", 1, 0.7), ranked("Biology", 2, 0.3)],
        **kw,
    }


def ranked(alt: str, rank: int, cc: float) -> dict:
    return {
        "alternative": alt,
        "distance_to_ideal": 0.1,
        "distance_to_anti_ideal": 0.2,
        "closeness_coefficient": cc,
        "rank": rank,
    }


STATE = ConversationState.model_validate(full_state())
CHANGE = JudgementChange(before={"Interest vs Salary": 9.0}, after={"Salary vs Interest": 3.0})
REPAIR = CRRepair(attempt=2, cr_before=0.25, cr_after=0.0, changed=[CHANGE],
                  director_matrix={"Interest vs Salary": 9.0, "Impact vs Salary": 2.5,
                                   "Interest vs Impact": 1.0})
SAMPLES = {
    "SessionSettings": SessionSettings(),
    "UserInput": UserInput.model_validate(user_input(strengths=["math"], weaknesses=["art"])),
    "AgentPersona": personas()[0],
    "Criterion": Criterion(name="Salary", description="d", source_agent="x", reasoning="r"),
    "DebateTurn": debate(comparison_matrix=CM)[-1],
    "Round2DirectorDecision": Round2DirectorDecision(comparison_matrix=CM, reasoning="r",
                                                     cr_repair=REPAIR),
    "JudgementChange": CHANGE,
    "CRRepair": REPAIR,
    "Round3DirectorDecision": Round3DirectorDecision(decision_matrix=DM),
    "TopsisResult": TopsisResult.model_validate(ranked("CS", 1, 0.7)),
    "ConversationState": STATE,
    "Round1Output": STATE.round1_output(),
    "Round2Output": STATE.round2_output(),
    "Round3Output": STATE.round3_output(),
}


# --- user input --------------------------------------------------------------------------


def test_settings_defaults():
    s = SessionSettings()
    assert (s.max_criteria, s.cr_threshold, s.cr_max_retries, s.enable_streaming) == (
        5,
        0.10,
        3,
        False,
    )


def test_mbti_one_of_16_types():
    assert len(MBTI_TYPES) == 16 and "ENFP" in MBTI_TYPES
    assert UserInput.model_validate(user_input(mbti="enfp")).mbti == "ENFP"
    reject(UserInput, user_input(mbti="ABCD"), "mbti", "one of the 16 MBTI types")


def test_candidate_majors_at_least_2_and_unique():
    reject(UserInput, user_input(candidate_majors=["CS"]), "candidate_majors", "at least 2 items")
    reject(UserInput, user_input(candidate_majors=["CS", "CS"]), "candidate_majors", "unique")


def test_core_values_at_least_1():
    reject(UserInput, user_input(core_values=[]), "core_values", "at least 1 item")


@pytest.mark.parametrize(("value", "ok"), [(2, False), (3, True), (10, True), (11, False)])
def test_max_criteria_3_to_10(value, ok):
    data = user_input(settings={"max_criteria": value})
    if ok:
        assert UserInput.model_validate(data).settings.max_criteria == value
    else:
        reject(UserInput, data, "settings.max_criteria")


@pytest.mark.parametrize(("value", "ok"), [(0.04, False), (0.05, True), (0.2, True), (0.21, False)])
def test_cr_threshold_005_to_020(value, ok):
    data = user_input(settings={"cr_threshold": value})
    if ok:
        assert UserInput.model_validate(data).settings.cr_threshold == value
    else:
        reject(UserInput, data, "settings.cr_threshold")


def test_cr_max_retries_non_negative_and_streaming_bool():
    reject(SessionSettings, {"cr_max_retries": -1}, "cr_max_retries", "greater than or equal")
    reject(SessionSettings, {"enable_streaming": "maybe"}, "enable_streaming", "valid boolean")


def test_persona_core_values_1_to_2():
    base = {"name": "A", "persona_description": "", "debate_stance": "", "system_prompt": ""}
    reject(AgentPersona, {**base, "core_values": []}, "core_values", "at least 1 item")
    reject(AgentPersona, {**base, "core_values": ["a", "b", "c"]}, "core_values", "at most 2")


# --- debate turns ------------------------------------------------------------------------


def test_turn_types_follow_13_turn_structure():
    types = [expected_turn_type(t).value for t in range(1, 14)]
    assert types == ["proposal", "critique", "critique", "defense"] * 3 + ["final_decision"]
    check_debate_turns(debate(), complete=True)


def turn(**kw) -> dict:
    return {
        "turn": 2,
        "phase": "Phase 1: A leads",
        "speaker": "B",
        "type": "critique",
        "target": "A",
        "content": "c",
        **kw,
    }


def test_turn_number_1_to_13():
    reject(DebateTurn, turn(turn=0), "turn", "greater than or equal to 1")
    reject(DebateTurn, turn(turn=14), "turn", "less than or equal to 13")


def test_turn_type_must_match_position():
    reject(DebateTurn, turn(type="proposal"), "type", "turn 2 must be 'critique'")
    reject(DebateTurn, turn(type="rant"), "type", "'proposal'")


def test_turn_phase_must_match_turn():
    reject(DebateTurn, turn(phase="Phase 2: A leads"), "phase", "'Phase 1'")


def test_target_is_str_or_list_and_required_for_critique_and_defense():
    assert DebateTurn(**turn()).targets == ["A"]
    assert DebateTurn(**turn(turn=4, type="defense", speaker="A", target=["B", "C"])).targets == [
        "B",
        "C",
    ]
    reject(DebateTurn, turn(target=None), "target", "must name its target")


def test_debate_sequence_rules():
    turns = debate()
    with pytest.raises(ValueError, match="exactly 13 turns"):
        check_debate_turns(turns[:12], complete=True)
    check_debate_turns(turns[:6])  # a debate in progress is fine
    with pytest.raises(ValueError, match="numbered 1, 2, 3"):
        check_debate_turns([turns[0], turns[2]])
    bad = [*turns[:1], turns[1].model_copy(update={"target": "Someone"}), *turns[2:]]
    with pytest.raises(ValueError, match="targets the phase leader"):
        check_debate_turns(bad)
    bad = [*turns[:3], turns[3].model_copy(update={"speaker": "Other"}), *turns[4:]]
    with pytest.raises(ValueError, match="defense is by the phase leader"):
        check_debate_turns(bad)
    reject(
        ConversationState,
        full_state(round1_debate_turns=[turns[1]]),
        "round1_debate_turns",
        "numbered 1, 2, 3",
    )


def test_each_phase_has_its_own_leader():
    turns = debate()
    # Phase 2 led again by PassionDriven (critiqued by the other two): leaders repeat.
    swap = {"PragmaticEarner": "PassionDriven", "PassionDriven": "PragmaticEarner"}
    phase2 = [
        t.model_copy(
            update={
                "speaker": swap.get(t.speaker, t.speaker),
                "target": "PassionDriven" if t.type == "critique" else t.target,
            }
        )
        for t in turns[4:8]
    ]
    with pytest.raises(ValueError, match="phase leaders must be unique"):
        check_debate_turns([*turns[:4], *phase2])


# --- AHP comparison matrix ---------------------------------------------------------------


def test_scale_is_1_to_9_in_half_steps():
    assert SCALE_VALUES[0] == 1.0 and SCALE_VALUES[-1] == 9.0 and len(SCALE_VALUES) == 17


@pytest.mark.parametrize("value", [0.5, 2.3, 9.5, -1.0])
def test_comparison_values_off_scale_rejected(value):
    reject(
        DebateTurn,
        turn(
            turn=13,
            type="final_decision",
            phase="Phase 4",
            target=None,
            comparison_matrix={"A vs B": value},
        ),
        "comparison_matrix",
        "1.0-9.0 in 0.5 increments",
    )


def test_comparison_keys_are_a_vs_b():
    reject(
        Round2DirectorDecision,
        {"comparison_matrix": {"A-B": 2.0}},
        "comparison_matrix",
        "'CriterionA vs CriterionB'",
    )
    reject(Round2DirectorDecision, {"comparison_matrix": {"A vs A": 2.0}}, "comparison_matrix")


def test_comparison_matrix_exactly_nc2_pairs():
    check_comparison_matrix(CM, NAMES)
    missing = {k: v for k, v in CM.items() if k != "Impact vs Salary"}
    with pytest.raises(ValueError, match="nC2 = 3 .* missing \\['Salary vs Impact'\\]"):
        check_comparison_matrix(missing, NAMES)
    with pytest.raises(ValueError, match="appears twice"):
        check_comparison_matrix({**CM, "Salary vs Impact": 2.0}, NAMES)
    with pytest.raises(ValueError, match="not among"):
        check_comparison_matrix({**missing, "Salary vs Fun": 2.0}, NAMES)
    reject(ConversationState, full_state(comparison_matrix=missing), "comparison_matrix", "nC2")


def test_ten_pairs_for_five_criteria():
    names = ["a", "b", "c", "d", "e"]
    matrix = {f"{x} vs {y}": 1.0 for i, x in enumerate(names) for y in names[i + 1 :]}
    assert len(matrix) == 10
    check_comparison_matrix(matrix, names)


def test_weights_sum_to_one():
    check_weights(WEIGHTS, NAMES)
    check_weights({"a": 0.1 + 0.2, "b": 0.7})  # float noise within tolerance
    with pytest.raises(ValueError, match="sum to 1.0"):
        check_weights({"a": 0.5, "b": 0.6})
    with pytest.raises(ValueError, match="one weight per selected criterion"):
        check_weights({"Salary": 1.0}, NAMES)
    reject(
        ConversationState,
        full_state(criteria_weights={"Salary": 0.9, "Interest": 0.3, "Impact": 0.2}),
        "criteria_weights",
        "sum to 1.0",
    )


# --- rounds -------------------------------------------------------------------------------


def test_round1_selected_criteria_exactly_max_criteria():
    reject(
        ConversationState,
        full_state(
            selected_criteria=[{"name": "Salary"}],
            comparison_matrix={},
            criteria_weights={},
            decision_matrix={},
        ),
        "selected_criteria",
        "exactly max_criteria = 3",
    )
    data = STATE.round1_output().model_dump()
    data["selected_criteria"] = data["selected_criteria"][:2]
    reject(Round1Output, data, "selected_criteria", "exactly max_criteria")


def test_round_outputs_need_all_13_turns():
    data = STATE.round1_output().model_dump()
    data["round1_debate_turns"] = data["round1_debate_turns"][:12]
    reject(Round1Output, data, "round1_debate_turns", "exactly 13 turns")


def test_round2_consistency_ratio_at_most_threshold():
    state = ConversationState.model_validate(full_state(consistency_ratio=0.15))  # mid-retry
    with pytest.raises(ValidationError, match="consistency_ratio: must be <= cr_threshold 0.1"):
        state.round2_output()


def test_round3_decision_matrix_every_major_and_criterion():
    check_decision_matrix(DM, MAJORS, NAMES)
    partial = {"CS": DM["CS"], "Biology": {"Salary": 5.0, "Interest": 5.0}}
    reject(
        ConversationState,
        full_state(decision_matrix=partial),
        "decision_matrix",
        "every (major x criterion)",
        "['Impact']",
    )
    reject(
        ConversationState,
        full_state(decision_matrix={"CS": DM["CS"]}),
        "decision_matrix",
        "missing majors ['Biology']",
    )
    data = STATE.round3_output().model_dump()
    data["decision_matrix"] = partial
    reject(Round3Output, data, "decision_matrix", "every (major x criterion)")


def test_round3_scores_on_scale():
    bad = {**DM, "CS": {**DM["CS"], "Salary": 10.0}}
    reject(Round3DirectorDecision, {"decision_matrix": bad}, "decision_matrix", "0.5 increments")


def test_repeated_scores_recommendation():
    assert repeated_scores(DM) == {5.0: 6}
    assert repeated_scores({"a": {"x": 1.0, "y": 2.0}}) == {}


def test_alternatives_come_from_candidate_majors():
    assert STATE.alternatives == MAJORS
    reject(ConversationState, full_state(alternatives=["Law"]), "alternatives", "candidate_majors")


def test_round4_ranks_unique_and_closeness_in_range():
    reject(
        ConversationState,
        full_state(final_ranking=[ranked("CS", 1, 0.7), ranked("Biology", 1, 0.3)]),
        "final_ranking",
        "ranks must be unique",
    )
    reject(
        ConversationState,
        full_state(final_ranking=[ranked("CS", 1, 0.7), ranked("Biology", 3, 0.3)]),
        "final_ranking",
        "without gaps",
    )
    reject(TopsisResult, ranked("CS", 1, 1.2), "closeness_coefficient", "less than or equal to 1")
    reject(TopsisResult, ranked("CS", 0, 0.2), "rank", "greater than or equal to 1")


def test_state_assignment_is_validated():
    state = ConversationState.model_validate(full_state())
    with pytest.raises(ValidationError, match="comparison_matrix"):
        state.comparison_matrix = {"Salary vs Interest": 3.0}


def test_round_output_filename():
    assert round_output_filename(2, "abc") == "round2_test_abc.json"
    with pytest.raises(ValueError, match="round_number"):
        round_output_filename(4, "abc")


# Malformed JSON per model: the error names the field and the rule (test_models_common).
MALFORMED = [
    (
        UserInput,
        '{"mbti": "INTJ", "core_values": ["a"], "candidate_majors": "CS"}',
        ("candidate_majors", "valid array"),
    ),
    (
        UserInput,
        '{"mbti": "INTJ", "core_values": ["a"], "candidate_majors": ["a", "b"], '
        '"settings": {"max_criteria": "five"}}',
        ("settings.max_criteria", "integer"),
    ),
    (
        DebateTurn,
        '{"turn": 1, "phase": "Phase 1", "speaker": "A", "type": "proposal", '
        '"content": "c", "comparison_matrix": {"A vs B": "x"}}',
        ("comparison_matrix", "valid number"),
    ),
    (Criterion, '{"description": "no name"}', ("name", "Field required")),
    (TopsisResult, '{"alternative": "CS"}', ("closeness_coefficient", "Field required")),
    (ConversationState, '{"session_id": "s"}', ("user_input", "Field required")),
    (Round2Output, '{"user_input": {}}', ("user_input.mbti", "Field required")),
    (CRRepair, '{"attempt": 0, "cr_before": 0.3, "cr_after": 0.0, "director_matrix": {}, '
               '"changed": []}', ("attempt", "greater than or equal to 1", "changed",
                                  "at least 1 item")),
    (JudgementChange, '{"before": {"A vs B": 10}, "after": {"A vs B": 1}}',
     ("before", "not on the scale")),
    (UserInput, '{"mbti": ', ("Invalid JSON",)),
]
