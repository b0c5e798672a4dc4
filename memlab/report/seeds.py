"""Tables and figures of the three seed systems, for their notebooks.

Seed 001: the chunks behind an answer with their similarity. Seed 003: the debate turn by turn,
AHP weights (and the CR repair, when one was made), TOPSIS closeness. Seed 004: the plan as a dependency graph and the ReAct steps.
Every ``plot_*`` returns a matplotlib figure (closed, so a notebook shows it once: as the
cell's value); every ``*_table`` a DataFrame.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from memlab.docqa import QueryResult
from memlab.models.decision import ConversationState
from memlab.models.taskforce import ExecutionHistory, TaskStatus, TodoList

STATUS_COLOURS = {TaskStatus.COMPLETED: "#8fd18f", TaskStatus.FAILED: "#f08a8a",
                  TaskStatus.SKIPPED: "#d0d0d0", TaskStatus.IN_PROGRESS: "#f5d76e",
                  TaskStatus.PENDING: "#ffffff"}


# --- seed 001: document QA ----------------------------------------------------------------------
def answer_summary(result: QueryResult) -> pd.Series:
    """Status, answer (or error), sources and confidence of one query."""
    response = result.response
    return pd.Series({"question": result.query.text, "status": result.query.status.value,
                      "answer": response.content if response else None,
                      "sources": "; ".join(response.sources) if response else None,
                      "confidence": round(response.confidence, 3) if response else None,
                      "error": result.error, "re-asks": result.reasks}, dtype=object)


def chunks_table(result: QueryResult) -> pd.DataFrame:
    """One row per retrieved chunk: similarity, source, page, cited, the text."""
    if result.response is None:
        return pd.DataFrame(columns=["similarity", "source", "page", "cited", "text"])
    cited = set(result.response.sources)
    rows = [{"similarity": round(c.similarity_score, 3), "source": c.source_document,
             "page": c.page_number, "cited": _cite(c) in cited, "text": c.content[:160]}
            for c in result.response.retrieved_chunks]
    return pd.DataFrame(rows)


def _cite(chunk: Any) -> str:
    page = f", page {chunk.page_number}" if chunk.page_number is not None else ""
    return f"{chunk.source_document}{page}"


def plot_retrieved_chunks(result: QueryResult) -> plt.Figure:
    """Similarity of each retrieved chunk, cited ones highlighted."""
    table = chunks_table(result)
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * max(len(table), 1)))
    labels = [f"{s} p.{p}" if p is not None else s for s, p in zip(
        table["source"], table["page"], strict=True)]
    colours = ["#3b7dd8" if c else "#b8c7dc" for c in table["cited"]]
    ax.barh(range(len(table)), table["similarity"], color=colours)
    ax.set_yticks(range(len(table)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("cosine similarity to the question (dark: cited)")
    ax.set_title(result.query.text[:80])
    fig.tight_layout()
    plt.close(fig)
    return fig


# --- seed 003: the debate -----------------------------------------------------------------------
def debate_table(state: ConversationState) -> pd.DataFrame:
    """Every turn of the three rounds: round, turn, speaker, type, what it said."""
    rows = []
    for number, turns in enumerate((state.round1_debate_turns, state.round2_debate_turns,
                                    state.round3_debate_turns), 1):
        rows += [{"round": number, "turn": t.turn, "speaker": t.speaker, "type": t.type.value,
                  "content": t.content} for t in turns]
    return pd.DataFrame(rows)


def personas_table(state: ConversationState) -> pd.DataFrame:
    """The three advisors: name, core values, stance."""
    return pd.DataFrame([{"name": p.name, "core values": ", ".join(p.core_values),
                          "stance": p.debate_stance} for p in state.agent_personas])


def criteria_table(state: ConversationState) -> pd.DataFrame:
    """Round 1's selected criteria with who proposed each and why."""
    return pd.DataFrame([c.model_dump() for c in state.selected_criteria])


def plot_ahp_weights(state: ConversationState) -> plt.Figure:
    """The AHP criteria weights (round 2), with the consistency ratio in the title."""
    weights = pd.Series(state.criteria_weights).sort_values()
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.5 * len(weights)))
    ax.barh(weights.index, weights.values, color=sns.color_palette("crest", len(weights)))
    for y, value in enumerate(weights.values):
        ax.text(value, y, f" {value:.3f}", va="center")
    ax.set_xlim(0, max(weights.max() * 1.25, 0.1))
    ax.set_xlabel("weight (principal eigenvector, sums to 1)")
    repair = state.round2_director_decision.cr_repair if state.round2_director_decision else None
    repaired = f" (repaired from {repair.cr_before:.3f})" if repair else ""
    ax.set_title(f"AHP weights, CR = {state.consistency_ratio or 0:.3f}{repaired}")
    fig.tight_layout()
    plt.close(fig)
    return fig


def cr_repair_table(state: ConversationState) -> pd.DataFrame:
    """The Director's judgements the CR repair changed (no rows: none was needed or allowed)."""
    decision = state.round2_director_decision
    repair = decision.cr_repair if decision else None
    rows = [{"pair": i + 1, "Director": _one(c.before), "repaired": _one(c.after)}
            for i, c in enumerate(repair.changed)] if repair else []
    return pd.DataFrame(rows, columns=["pair", "Director", "repaired"]).set_index("pair")


def _one(judgement: dict[str, float]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in judgement.items())


def plot_topsis_closeness(state: ConversationState) -> plt.Figure:
    """Closeness to the ideal solution of each major, best (rank 1) on top."""
    ranking = state.final_ranking
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.5 * len(ranking)))
    names = [f"{r.rank}. {r.alternative}" for r in ranking]
    values = [r.closeness_coefficient for r in ranking]
    ax.barh(names, values, color=sns.color_palette("flare", len(ranking)))
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("TOPSIS closeness coefficient D- / (D+ + D-)")
    ax.set_title("Final ranking")
    fig.tight_layout()
    plt.close(fig)
    return fig


def decision_matrix_table(state: ConversationState) -> pd.DataFrame:
    """The round 3 decision matrix: a row per major, a column per criterion."""
    return pd.DataFrame(state.decision_matrix).T


# --- seed 004: the Taskforce agent --------------------------------------------------------------
def plan_table(todolist: TodoList, answers: dict[int, Any] | None = None) -> pd.DataFrame:
    """The plan's items: position, description, dependencies, status, tool, result."""
    answers = answers or {}
    return pd.DataFrame([{"position": i.position, "description": i.description,
                          "depends on": i.dependencies, "status": i.status.value,
                          "tool": i.chosen_tool, "result": answers.get(i.position)}
                         for i in todolist.items])


def steps_table(history: list[ExecutionHistory]) -> pd.DataFrame:
    """The execution history: step, thought, action, observation."""
    return pd.DataFrame([{"step": h.step_id, "thought": h.thought, "action": h.action,
                          "observation": h.observation} for h in history])


def lessons_table(result: Any) -> pd.DataFrame:
    """Lessons a session used (from the same user's earlier sessions) and learned."""
    rows = [{"how": how, "lesson": x.lesson, "context": x.context, "tool": x.tool_name,
             "confidence": x.confidence}
            for how, lessons in (("used", result.lessons_used), ("learned",
                                                                 result.lessons_learned))
            for x in lessons]
    return pd.DataFrame(rows, columns=["how", "lesson", "context", "tool", "confidence"])


def plan_layers(todolist: TodoList) -> dict[int, int]:
    """Each item's layer in the DAG: 0 without dependencies, else 1 + its deepest dependency."""
    deps = {i.position: i.dependencies for i in todolist.items}
    layers: dict[int, int] = {}

    def layer(position: int) -> int:
        if position not in layers:
            layers[position] = 1 + max((layer(d) for d in deps[position]), default=-1)
        return layers[position]

    for position in deps:
        layer(position)
    return layers


def plot_plan_dag(todolist: TodoList) -> plt.Figure:
    """The plan as a graph: items left to right by dependency depth, coloured by status."""
    layers = plan_layers(todolist)
    rows: dict[int, int] = {}
    place = {}
    for item in sorted(todolist.items, key=lambda i: (layers[i.position], i.position)):
        column = layers[item.position]
        place[item.position] = (column, -rows.get(column, 0))
        rows[column] = rows.get(column, 0) + 1
    fig, ax = plt.subplots(figsize=(2.8 * (max(layers.values()) + 1), 1.2 * max(rows.values())
                                    + 0.8))
    boxes = {}
    for item in todolist.items:
        x, y = place[item.position]
        text = f"{item.position}. {item.description[:28]}\n[{item.status.value}]"
        boxes[item.position] = ax.text(x, y, text, ha="center", va="center", fontsize=8, bbox={
            "boxstyle": "round", "facecolor": STATUS_COLOURS[item.status], "edgecolor": "#444"})
    fig.canvas.draw()  # lays the boxes out, so arrows can stop at their edges
    for item in todolist.items:
        for dep in item.dependencies:
            ax.annotate("", xy=place[item.position], xytext=place[dep], arrowprops={
                "arrowstyle": "-|>", "color": "#555", "mutation_scale": 14,
                "patchA": boxes[dep].get_bbox_patch(),
                "patchB": boxes[item.position].get_bbox_patch()})
    ax.set_xlim(-0.6, max(layers.values()) + 0.6)
    ax.set_ylim(-max(rows.values()) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(f"Plan: {todolist.mission[:70]}")
    plt.close(fig)
    return fig
