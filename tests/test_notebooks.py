"""Every notebook executes through papermill with tiny parameters (FakeLLM + hashing embedder).

The shipped notebooks (the checkout's ``notebooks/``; ``memlab/notebooks/`` in the wheel) are
the source: they are committed stripped (``nbstripout --verify``), each has a cell tagged
``parameters``, and a broken parameter set fails with an error naming the parameter. ``memlab
lab`` copies them into a working folder without overwriting a notebook the user already has.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from test_report_fixtures import write_results

from memlab import cli, notebook_files
from memlab.errors import ConfigError
from memlab.notebook_files import notebook_path

papermill = pytest.importorskip("papermill", reason="papermill is a core dependency")
from papermill.exceptions import PapermillExecutionError  # noqa: E402

CHECKOUT_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SEEDS_DATA = Path(__file__).resolve().parent.parent / "data"
NAMES = ("condition", "sleep_probes", "paper", "tour", "docqa", "decision", "taskforce")
TINY_LTM = {"examples": 1, "types": ["colours", "shopping"]}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))  # the kernel inherits it
    monkeypatch.chdir(tmp_path)


def execute(name: str, tmp_path: Path, **parameters) -> nbformat.NotebookNode:
    output = tmp_path / f"{name}.out.ipynb"
    papermill.execute_notebook(str(notebook_path(name)), str(output),
                               parameters=parameters, kernel_name="python3", progress_bar=False)
    return nbformat.read(output, as_version=4)


def text_outputs(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("data", {}).get("text/plain", "") or output.get("text", ""))
    return "\n".join(parts)


def test_the_package_ships_exactly_the_checkout_notebooks():
    assert notebook_files.NAMES == NAMES
    assert notebook_files.notebooks_dir() == CHECKOUT_NOTEBOOKS  # the tests run on the checkout
    assert sorted(p.stem for p in CHECKOUT_NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)
    assert notebook_path("paper.ipynb") == CHECKOUT_NOTEBOOKS / "paper.ipynb"


def test_an_unknown_notebook_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match="notebook 'tuor' is not shipped by memlab; known: "
                                          "condition, sleep_probes, paper, tour, docqa"):
        notebook_path("tuor")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stripped_thin_and_has_a_parameters_cell(name):
    notebook = nbformat.read(notebook_path(name), as_version=4)
    nbformat.validate(notebook)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in notebook.cells if c.cell_type == "code")
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "for " not in code and "if " not in code  # thin: logic lives in memlab
    assert not re.search(r"report\.lab|report import .*\blab\b", code)  # front door: memlab.lab


def test_nbstripout_verify_passes_on_the_shipped_notebooks(tmp_path):
    """What CI checks (and ``make lint``): nothing would change if the notebooks were stripped."""
    command = [str(Path(sys.executable).parent / "nbstripout"), "--verify"]
    files = [str(notebook_path(name)) for name in NAMES]
    result = subprocess.run([*command, *files], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    executed = tmp_path / "executed.ipynb"  # the check is real: an output makes it fail
    notebook = nbformat.read(notebook_path("tour"), as_version=4)
    notebook.cells[1].execution_count = 1
    nbformat.write(notebook, executed)
    assert subprocess.run([*command, str(executed)], capture_output=True).returncode != 0


def test_copy_notebooks_never_overwrites_a_users_notebook(tmp_path):
    first = notebook_files.copy_notebooks(tmp_path / "work")
    assert first.copied == [f"{n}.ipynb" for n in NAMES] and first.kept == []
    assert (tmp_path / "work" / "tour.ipynb").read_bytes() == notebook_path("tour").read_bytes()
    (tmp_path / "work" / "tour.ipynb").write_text("my edits")
    (tmp_path / "work" / "paper.ipynb").unlink()
    again = notebook_files.copy_notebooks(tmp_path / "work")
    assert again.copied == ["paper.ipynb"]
    assert again.kept == [f"{n}.ipynb" for n in NAMES if n != "paper"]
    assert (tmp_path / "work" / "tour.ipynb").read_text() == "my edits"
    assert "kept (already in" in again.lines()[1] and "tour.ipynb" in again.lines()[1]


def test_copy_notebooks_into_a_file_is_a_config_error(tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(ConfigError, match="notebook folder .*taken.* is a file"):
        notebook_files.copy_notebooks(tmp_path / "taken")


def test_lab_opens_the_checkout_folder_or_a_working_copy(tmp_path, monkeypatch, capsys):
    """In this checkout `memlab lab` opens notebooks/; with --dir it makes a copy there."""
    launched, find_spec = [], importlib.util.find_spec
    monkeypatch.setattr("importlib.util.find_spec",  # JupyterLab "installed"; nothing else changes
                        lambda name, *a: object() if name == "jupyterlab" else find_spec(name, *a))
    monkeypatch.setattr("subprocess.call", lambda command: launched.append(command) or 0)
    assert notebook_files.is_source_checkout()
    assert cli.main(["lab", "--no-browser"]) == 0
    assert f"--notebook-dir={CHECKOUT_NOTEBOOKS}" in launched[0]
    assert cli.main(["lab", "--dir", "mine"]) == 0
    assert f"--notebook-dir={tmp_path / 'mine'}" in launched[1]
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == sorted(
        f"{n}.ipynb" for n in NAMES)
    assert "lab: copied into mine: condition.ipynb" in capsys.readouterr().out


def test_condition_notebook_runs_one_condition(tmp_path):
    notebook = execute("condition", tmp_path, condition="rag", suite="ltm", span=300, llm="fake",
                       embedder="hashing", out_dir=str(tmp_path / "results"),
                       suite_options=TINY_LTM, n_examples=2)
    run = tmp_path / "results" / "ltm-rag-300-s0"
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
    shown = text_outputs(notebook)
    assert "ltm-rag-300-s0" in shown and "colours" in shown and "prompt_tokens" in shown


def test_broken_parameters_fail_naming_the_parameter(tmp_path):
    with pytest.raises(PapermillExecutionError) as info:
        execute("condition", tmp_path, condition="nope", llm="fake", embedder="hashing",
                out_dir=str(tmp_path / "results"))
    assert info.value.ename == "ConfigError"
    assert "field 'condition'" in info.value.evalue and "'nope'" in info.value.evalue
    assert not (tmp_path / "results").exists()  # failed before any run started


def test_sleep_probes_notebook_runs_table2_protocol(tmp_path):
    notebook = execute("sleep_probes", tmp_path, suite="ltm", span=300, llm="fake",
                       embedder="hashing", out_dir=str(tmp_path / "results"),
                       suite_options=TINY_LTM)
    run = tmp_path / "results" / "ltm-sleep-300-s0-probes"
    phases = {json.loads(line)["phase"] for line in (run / "turns.jsonl").read_text().splitlines()}
    assert phases == {"main", "pre_sleep", "post_sleep"}
    assert "episodes_considered" in text_outputs(notebook)


PAPER_FIGURES = ("accuracy_vs_tokens", "paired_accuracy", "evidence_recall", "paired_recall",
                 "ltm_ceilings", "ltm_vs_span", "persona_by_type", "table2_sleep", "latency")


def test_paper_notebook_writes_figures_and_tables_and_explains_each(tmp_path):
    results = write_results(tmp_path / "results", seeds=(0,), spans=(1000,))
    notebook = execute("paper", tmp_path, results_dir=str(results),
                       figures_dir=str(tmp_path / "figures"))
    for name in PAPER_FIGURES:
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 10_000
        assert (tmp_path / "figures" / f"{name}.pdf").stat().st_size > 5_000
    for name in ("overview", "accuracy", "evidence_recall", "paired_accuracy", "ltm_ceilings"):
        for ext in ("csv", "tex", "md"):
            assert (tmp_path / "figures" / "tables" / f"{name}.{ext}").exists()
    # every figure and table the notebook shows sits under a markdown cell saying what it
    # shows (a figure and its table may share one)
    def shows(cell):
        return cell.cell_type == "code" and re.match(r"(Image|Markdown)\(", cell.source)

    for before, cell in zip(notebook.cells, notebook.cells[1:], strict=False):
        if shows(cell):
            assert before.cell_type == "markdown" or shows(before), cell.source
    shown = [o for c in notebook.cells for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in shown) == len(PAPER_FIGURES)
    assert any("evidence recall (%)" in o.get("data", {}).get("text/markdown", "")
               for o in shown)
    assert any("wrong with evidence in prompt (%)" in o.get("data", {}).get("text/markdown", "")
               for o in shown)  # where wrong answers come from
    assert any("outdated of wrong (%)" in o.get("data", {}).get("text/markdown", "")
               for o in shown)  # which option persona's answers chose
    assert any("No memory condition beats full_context" in o.get("data", {}).get(
        "text/markdown", "") or "Beats full_context" in o.get("data", {}).get(
        "text/markdown", "") for o in shown)  # the findings section


def test_tour_notebook_walks_a_conversation_and_a_sleep_cycle(tmp_path):
    notebook = execute("tour", tmp_path, llm="fake", embedder="hashing", condition="sleep",
                       workdir=str(tmp_path / "tour"))
    shown = text_outputs(notebook)
    assert "Porto" in shown and "episodes_considered" in shown


# --- the seed systems' notebooks (001, 003, 004) ---------------------------------------------------
def images(notebook) -> int:
    return sum("image/png" in output.get("data", {})
               for cell in notebook.cells for output in cell.get("outputs", []))


def test_docqa_notebook_ingests_answers_and_plots_the_chunks(tmp_path):
    reply = json.dumps({"answer": "An IMU in the pelvis and ankle force-torque sensors.",
                        "cited": [1]})
    notebook = execute("docqa", tmp_path, llm="fake", llm_options={"default": reply},
                       embedder="hashing", documents=str(SEEDS_DATA / "docqa"),
                       workdir=str(tmp_path / "docqa"), k=3)
    shown = text_outputs(notebook)
    assert "'chunks': " in shown and "'dimension': 256" in shown
    assert shown.count("COMPLETED") == 2 and "IMU in the pelvis" in shown
    assert images(notebook) == 2  # the retrieved chunks of both questions


def test_decision_notebook_resumes_the_round_files_and_plots_weights_and_closeness(tmp_path):
    from test_decision_debate import USER, Script

    from memlab.decision.debate import DecisionDebate
    from memlab.llm.fake import FakeLLM

    (tmp_path / "input.json").write_text(json.dumps(USER))
    stubborn = Script(inconsistent_director_tries=99)  # round 2 is repaired
    DecisionDebate(FakeLLM([stubborn]), output_dir=tmp_path / "out", cr_repair=True).run(
        USER, session_id="nb")
    notebook = execute("decision", tmp_path, llm="fake", input_path=str(tmp_path / "input.json"),
                       output_dir=str(tmp_path / "out"), session_id="nb")
    shown = text_outputs(notebook)  # rounds 1-3 came from their files: no model was asked
    assert "GrowthCuriosityAdvocate" in shown and "Computer Science" in shown
    assert "Salary vs Interest: 9.0" in shown and "Interest vs Salary: 2.0" in shown  # repair
    assert images(notebook) == 2  # AHP weights, TOPSIS closeness


def test_taskforce_notebook_shows_a_finished_session_plan_and_steps(tmp_path):
    from test_taskforce_agent import MISSION, Script

    from memlab import lab
    from memlab.embed.hashing import HashingEmbedder
    from memlab.llm.fake import FakeLLM

    agent = lab.make_taskforce(tmp_path / "tf", llm=FakeLLM([Script()]),
                               embedder=HashingEmbedder())
    done = agent.run(MISSION, user_id="nb")
    agent.repo.close()
    notebook = execute("taskforce", tmp_path, llm="fake", embedder="hashing",
                       workdir=str(tmp_path / "tf"), docs_workdir=str(tmp_path / "docs"),
                       session_id=done.session.session_id)
    shown = text_outputs(notebook)
    assert "completed" in shown and "The answer is 6.0." in shown and "Divide the sum by 7" in shown
    assert "calculator" in shown and images(notebook) == 1  # the plan's DAG
