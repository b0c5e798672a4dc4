"""Every notebook executes through papermill with tiny parameters (FakeLLM + hashing embedder).

The notebooks are committed without outputs, each has a cell tagged ``parameters``, and a broken
parameter set fails with an error naming the parameter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from test_report_fixtures import write_results

papermill = pytest.importorskip("papermill", reason="papermill is a core dependency")
from papermill.exceptions import PapermillExecutionError  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ("condition", "sleep_probes", "paper", "tour")
TINY_LTM = {"examples": 1, "types": ["colours", "shopping"]}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))  # the kernel inherits it
    monkeypatch.chdir(tmp_path)


def execute(name: str, tmp_path: Path, **parameters) -> nbformat.NotebookNode:
    output = tmp_path / f"{name}.out.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(output),
                               parameters=parameters, kernel_name="python3", progress_bar=False)
    return nbformat.read(output, as_version=4)


def text_outputs(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("data", {}).get("text/plain", "") or output.get("text", ""))
    return "\n".join(parts)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stripped_and_has_a_parameters_cell(name):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in notebook.cells if c.cell_type == "code")
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "for " not in code and "if " not in code  # thin: logic lives in memlab


def test_committed_notebooks_match_their_generator(tmp_path):
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import build_notebooks
    finally:
        sys.path.remove(str(NOTEBOOKS))
    for path in build_notebooks.build(tmp_path):
        assert path.read_text() == (NOTEBOOKS / path.name).read_text(), path.name
    stripout = Path(sys.executable).parent / "nbstripout"
    if stripout.exists():
        files = [str(NOTEBOOKS / f"{n}.ipynb") for n in NAMES]
        assert subprocess.run([str(stripout), "--verify", *files]).returncode == 0


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
    assert "parameter condition='nope'" in info.value.evalue
    assert not (tmp_path / "results").exists()  # failed before any run started


def test_sleep_probes_notebook_runs_table2_protocol(tmp_path):
    notebook = execute("sleep_probes", tmp_path, suite="ltm", span=300, llm="fake",
                       embedder="hashing", out_dir=str(tmp_path / "results"),
                       suite_options=TINY_LTM)
    run = tmp_path / "results" / "ltm-sleep-300-s0"
    phases = {json.loads(line)["phase"] for line in (run / "turns.jsonl").read_text().splitlines()}
    assert phases == {"main", "pre_sleep", "post_sleep"}
    assert "episodes_considered" in text_outputs(notebook)


def test_paper_notebook_writes_figures_and_tables(tmp_path):
    results = write_results(tmp_path / "results", seeds=(0,), spans=(1000,))
    execute("paper", tmp_path, results_dir=str(results), figures_dir=str(tmp_path / "figures"))
    for name in ("accuracy_vs_tokens", "ltm_vs_span", "persona_by_type", "table2_sleep",
                 "latency"):
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 10_000
        assert (tmp_path / "figures" / f"{name}.pdf").stat().st_size > 5_000
    assert (tmp_path / "figures" / "tables" / "overview.tex").exists()


def test_tour_notebook_walks_a_conversation_and_a_sleep_cycle(tmp_path):
    notebook = execute("tour", tmp_path, llm="fake", embedder="hashing", condition="sleep",
                       workdir=str(tmp_path / "tour"))
    shown = text_outputs(notebook)
    assert "Porto" in shown and "episodes_considered" in shown
