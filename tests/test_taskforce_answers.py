"""How results travel in a Taskforce session: into the next step's prompt as text, and into the
plan's answer item, which answers the mission from every item's result in one plain-text
call. FakeLLM + SQLite."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from pydantic import ValidationError
from test_taskforce_agent import TopicEmbedder

from memlab.llm.fake import FakeLLM
from memlab.models.retrieval import RetrievedChunk
from memlab.stores.sql import SqlStore
from memlab.taskforce.lessons import EXTRACT_SYSTEM
from memlab.taskforce.missions import Mission, check_mission
from memlab.taskforce.planner import PLANNER_SYSTEM, PlanDraft, Planner, plan_schema
from memlab.taskforce.react import ANSWER_SYSTEM, REACT_SYSTEM, TaskforceAgent
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.tools import Toolbox

SUM_MISSION = "Compute the sum of all whole numbers from 1 to 100."
COPY_MISSION = "Read the file motto.txt and write its text into a new file copy.txt."


def item(position, description, tool, dependencies=()):
    return {"position": position, "description": description, "tool": tool,
            "acceptance_criteria": ["done"], "dependencies": list(dependencies)}


class Router:
    """Replies by system prompt: a fixed plan, ``steps(position, prompt)`` for each plan item,
    ``answer`` (a text, or a function of the prompt) for the answer item's plain-text call,
    no lessons; records every prompt it answers."""

    def __init__(self, plan_items, steps, answer="unused"):
        self.plan, self.steps = {"items": plan_items}, steps
        self.answer = answer if callable(answer) else (lambda _: answer)
        self.prompts: dict[str, list[str]] = {"plan": [], "step": [], "answer": []}

    def __call__(self, messages):
        system, user = messages[0].content, messages[-1].content
        if system == PLANNER_SYSTEM:
            self.prompts["plan"].append(user)
            return json.dumps(self.plan)
        if system == EXTRACT_SYSTEM:
            return json.dumps({"lessons": []})
        if system == ANSWER_SYSTEM:
            self.prompts["answer"].append(user)
            return self.answer(user)
        assert system == REACT_SYSTEM
        position = int(re.search(r"Current step: (\d+)", user).group(1))
        self.prompts["step"].append(user)
        tool, arguments = self.steps(position, user)
        return json.dumps({"thought": "Next.", "tool": tool, "arguments": arguments})


def offered(prompt):
    """The tool names a step prompt lists."""
    return re.findall(r"^(\w+)\(", prompt.split("Tools:\n")[1].split("\n\n")[0], re.M)


@pytest.fixture
def repo(tmp_path):
    repository = TaskforceRepository(SqlStore(path=tmp_path / "taskforce.sqlite"),
                                     TopicEmbedder())
    yield repository
    repository.close()


def test_the_answer_is_written_from_every_result_not_taken_from_the_last_item(repo, tmp_path):
    # the 0.5B planned a step after the sum (its last result, 101, was the session's answer)
    router = Router([item(0, "Sum the numbers 1 to 100", "python"),
                     item(1, "Add the first and the last number", "calculator", [0])],
                    lambda p, _: ("python", {"expression": "sum(range(1, 101))"}) if p == 0
                    else ("calculator", {"expression": "1 + 100"}), answer="The sum is 5050.")
    agent = TaskforceAgent(FakeLLM([router]), repo, Toolbox.default(tmp_path / "ws"))
    result = agent.run(SUM_MISSION)
    assert result.succeeded and result.answers == {0: "5050", 1: "101", 2: "The sum is 5050."}
    (prompt,) = router.prompts["answer"]
    assert prompt.startswith(f"Mission: {SUM_MISSION}")
    assert "step 0 (Sum the numbers 1 to 100):\n5050" in prompt
    assert "step 1 (Add the first and the last number):\n101" in prompt
    assert result.final_answer == "The sum is 5050."
    assert agent.load(result.session.session_id).final_answer == "The sum is 5050."
    check = Mission(id="m04", kind="arithmetic", mission=SUM_MISSION, answer_contains=["5050"])
    assert check_mission(check, True, result.final_answer, tmp_path).succeeded
    assert not check_mission(check, True, result.answers[1], tmp_path).succeeded


def test_a_file_read_reaches_the_next_step_as_text_and_is_written_unchanged(repo, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "motto.txt").write_text("Small steps, checked often.\n", encoding="utf-8")

    def steps(position, prompt):
        if position == 0:
            return "file_read", {"path": "motto.txt"}
        text = prompt.split("Results this step works with:\n")[1].split("\n", 1)[1]
        return "file_write", {"path": "copy.txt", "content": text.split("\n\n")[0]}

    router = Router([item(0, "Read motto.txt", "file_read"),
                     item(1, "Write the text into copy.txt", "file_write", [0])], steps)
    result = TaskforceAgent(FakeLLM([router]), repo, Toolbox.default(workspace)).run(
        COPY_MISSION)
    assert result.succeeded
    write_prompt = router.prompts["step"][1]
    assert "step 0 (Read motto.txt):\nSmall steps, checked often.\n" in write_prompt
    assert "\\n" not in write_prompt and "{0:" not in write_prompt  # not a dict's repr
    assert (workspace / "copy.txt").read_text(encoding="utf-8") == "Small steps, checked often."


def test_search_hits_are_an_items_result_one_a_line_and_the_answer_reads_them(repo, tmp_path):
    chunks = [RetrievedChunk(content=text,
                             source_document="robots.md", page_number=i + 1,
                             similarity_score=0.7 - i / 10)
              for i, text in enumerate(["The IMU sits in the pelvis.", "Batteries last hours."])]
    toolbox = Toolbox.default(tmp_path / "ws", retrieve=lambda query: chunks)
    router = Router([item(0, "Search where the IMU is", "search_documents")],
                    lambda p, _: ("search_documents", {"query": "where is the IMU?"}),
                    answer="In the pelvis.")
    mission = "Search the documents: where is the IMU?"
    result = TaskforceAgent(FakeLLM([router]), repo, toolbox).run(mission)
    assert result.succeeded
    assert result.answers[0] == ("[robots.md p.1, similarity 0.70] The IMU sits in the pelvis.\n"
                                 "[robots.md p.2, similarity 0.60] Batteries last hours.")
    assert result.answers[0] in router.prompts["answer"][0]
    assert result.final_answer == "In the pelvis."


def test_the_planner_reads_what_each_tool_is_for_and_the_mission_last(tmp_path):
    # the 0.5B picked the calculator for "Search the documents: ..." (and, shown an example
    # mission per tool, copied the examples into its plans: tools say what they are for)
    toolbox = Toolbox.default(tmp_path, retrieve=lambda query: [])
    messages = Planner(FakeLLM()).messages("Search the documents: why legs?",
                                           toolbox.describe(), [])
    prompt = messages[1].content
    assert "(for questions about what the documents say)" in prompt
    # the 1.5B planned "Read the document containing ..." lookups with file_read
    assert "search the ingested documents" in prompt.split("search_documents(")[1]
    assert "(not for searching the documents)" in prompt.split("file_read(")[1].split("\n")[0]
    assert "p percent of x is x * p / 100" in prompt
    # the 1.5B summed 1 to 100 with the calculator (a made-up expression: 2485)
    assert "no ranges or lists (python has those)" in prompt
    assert "sums over ranges" in prompt.split("python(")[1].split("\n")[0]
    assert prompt.index("Mission: Search the documents: why legs?") > prompt.index(
        "file_write(")
    assert "Add no step the mission does not ask for" in messages[0].content


def test_a_plan_says_its_length_first_and_the_grammar_holds_it_to_that(tmp_path):
    # the 0.5B, once it had written an item, wrote more up to the limit (a file write in an
    # arithmetic mission, a document search after reading a file)
    schema = plan_schema(["calculator", "python"])
    one = {"steps_needed": 1, "items": [item(0, "Compute 7 * 9", "calculator")]}
    two = {"steps_needed": 1, "items": [item(0, "Compute 7 * 9", "calculator"),
                                        item(1, "Check it", "python", [0])]}
    assert [b["properties"]["steps_needed"]["const"] for b in schema["anyOf"]] == [1, 2, 3]
    assert all(b["required"][0] == "steps_needed" for b in schema["anyOf"])
    jsonschema.validate(one, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(two, schema)
    with pytest.raises(ValidationError, match="steps_needed is 1 but there are 2 items"):
        PlanDraft.model_validate(two)
    llm = FakeLLM([json.dumps(two), json.dumps(one)])  # a remote model without the grammar
    plan = Planner(llm).plan("s", "Compute 7 * 9", tool_names=["calculator", "python"])
    assert [i.description for i in plan.items] == ["Compute 7 * 9"] and llm.calls == 2
    assert "steps_needed is 1 but there are 2 items" in llm.history[1][-1].content


def test_the_answer_item_is_one_plain_call_that_calls_no_tool(repo, tmp_path):
    # as a ReAct step the answer item called python and file_read again after the work was
    # done and finished with their output ('5050' in a file mission) or with its own
    # description (the 1.5B: 'the value or text it asks for, ...')
    router = Router([item(0, "Sum the numbers 1 to 100", "python")],
                    lambda p, _: ("python", {"expression": "sum(range(1, 101))"}),
                    answer="  5050\n")
    llm = FakeLLM([router])
    result = TaskforceAgent(llm, repo, Toolbox.default(tmp_path / "ws")).run(SUM_MISSION)
    assert result.succeeded and result.final_answer == "5050"
    (prompt,) = router.prompts["answer"]
    assert "Tools" not in prompt and prompt.endswith("The mission's answer:")
    assert [e.action_data["tool"] for e in result.events if hasattr(e, "action_data")] == [
        "python", "finish", "finish"]
    answer_call = llm.params[2]
    assert not answer_call.get("schema") and not answer_call.get("choices")
    history = repo.history(result.session.session_id)
    assert history[-1].action == "complete" and history[-1].observation == "5050"


@pytest.mark.parametrize("reply, expression, expected", [
    ("", "sum(range(1, 101))", "5050"), ("x" * 400, "sum(range(1, 101))", "x" * 300),
    ("", "'y' * 400", "'" + "y" * 299),  # a long last result, clipped to finish's limit
])
def test_an_empty_answer_falls_back_to_the_last_result_and_a_long_one_is_clipped(
        repo, tmp_path, reply, expression, expected):
    router = Router([item(0, "Sum the numbers 1 to 100", "python")],
                    lambda p, _: ("python", {"expression": expression}), answer=reply)
    result = TaskforceAgent(FakeLLM([router]), repo, Toolbox.default(tmp_path / "ws")).run(
        SUM_MISSION)
    assert result.succeeded and result.final_answer == expected
