"""Agent personas for the decision debate (seed 003, section 2), generated from the UserInput.

The user's core values are spread evenly over three agents, each holding one or two of them;
names, descriptions, stances and system prompts are built from those values and the user's
MBTI type, strengths and weaknesses. Generation is deterministic (no model call).
"""

from __future__ import annotations

import re

from memlab.errors import ConfigError
from memlab.models.decision import AgentPersona, UserInput

AGENT_COUNT = 3
MAX_VALUES_PER_AGENT = 2
DIRECTOR = "Director"


def distribute_values(core_values: list[str], agents: int = AGENT_COUNT) -> list[list[str]]:
    """Spread ``core_values`` evenly over ``agents`` agents, 1-2 values each.

    Fewer values than agents: values are shared round-robin so every agent holds one.

    Example:
        >>> distribute_values(["growth", "money", "impact", "stability"])
        [['growth', 'stability'], ['money'], ['impact']]

    Raises:
        ConfigError: no values, or more than ``agents * 2`` (the seed's 1-2 per agent).
    """
    values = [v.strip() for v in core_values if v.strip()]
    if not values:
        raise ConfigError("core_values: needs at least 1 value to generate agents")
    if len(values) > agents * MAX_VALUES_PER_AGENT:
        raise ConfigError(
            f"core_values: at most {agents * MAX_VALUES_PER_AGENT} values fit {agents} agents "
            f"holding 1-2 each, got {len(values)}")
    if len(values) < agents:
        return [[values[i % len(values)]] for i in range(agents)]
    return [values[i::agents] for i in range(agents)]


def agent_name(values: list[str], taken: set[str]) -> str:
    """A CamelCase name from the agent's values, e.g. ``GrowthStabilityAdvocate``; unique."""
    words = [w for v in values for w in re.findall(r"[A-Za-z0-9]+", v)]
    base = "".join(w[:1].upper() + w[1:].lower() for w in words)[:40] or "Value"
    name, suffix = f"{base}Advocate", 2
    while name in taken or name == DIRECTOR:
        name, suffix = f"{base}Advocate{suffix}", suffix + 1
    return name


def _profile(user: UserInput) -> str:
    def listed(items: list[str]) -> str:
        return ", ".join(items) if items else "none given"

    return (f"MBTI {user.mbti}; strengths: {listed(user.strengths)}; weaknesses: "
            f"{listed(user.weaknesses)}; favourite subjects: {listed(user.favorite_subjects)}; "
            f"good at: {listed(user.good_at_subjects)}; bad at: {listed(user.bad_at_subjects)}")


def build_persona(values: list[str], user: UserInput, taken: set[str]) -> AgentPersona:
    name = agent_name(values, taken)
    joined = " and ".join(values)
    description = (f"An advisor who judges every option by {joined}, speaking for the part of a "
                   f"{user.mbti} student that cares most about {joined}.")
    stance = (f"Argues for criteria, weights and scores that reward {joined}; challenges "
              f"proposals that ignore them, citing the student's profile.")
    prompt = (f"You are {name}, one of three advisors helping a student choose a university "
              f"major. Your core values: {joined}. Student profile: {_profile(user)}. "
              f"{stance} Be concrete and brief; stay consistent with your values.")
    return AgentPersona(name=name, core_values=values, persona_description=description,
                        debate_stance=stance, system_prompt=prompt)


def generate_personas(user: UserInput) -> list[AgentPersona]:
    """The three debate agents for ``user`` (seed 003 generation rules)."""
    taken: set[str] = set()
    personas = []
    for values in distribute_values(user.core_values):
        persona = build_persona(values, user, taken)
        taken.add(persona.name)
        personas.append(persona)
    return personas


def director_prompt(user: UserInput) -> str:
    """System prompt of the Director who makes each round's final decision."""
    return ("You are the Director of a debate between three advisors helping a student choose a "
            f"university major. Student profile: {_profile(user)}. Weigh every advisor's "
            "arguments fairly and make the final, well-reasoned decision for the round.")
