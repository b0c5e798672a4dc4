"""Write the four memlab notebooks (outputs stripped) from the cell lists below.

Run ``python notebooks/build_notebooks.py`` after editing a notebook's cells here; the
``.ipynb`` files are generated, so review changes in this file. Each notebook has one cell tagged
``parameters`` (papermill) and otherwise only calls into memlab.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def md(text: str):
    return new_markdown_cell(text.strip())


def code(text: str, *tags: str):
    cell = new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


CONDITION = [
    md("""
# One memory condition on one suite

Runs one benchmark condition (papermill parameters below; `memlab grid` executes this notebook
once per grid cell) and shows its scores, a few transcripts with the memories behind each answer,
and what the answers cost in tokens and time. The run lands in `<out_dir>/<run_id>/`
(`manifest.json`, `turns.jsonl`, `scores.jsonl`); running again resumes or skips it.

`span` is the memory span (LTM suite) or the history length (persona suite), in tokens.
"""),
    code("""
condition = "vanilla"     # vanilla, full_context, rag, episodic, episodic_summary, sleep, hybrid
suite = "ltm"             # ltm or persona
span = 1000               # memory span / context length in tokens
seed = 0
llm = "local"             # local, gemini, openai (fake: tests only)
embedder = "minilm"       # minilm (hashing: tests only)
out_dir = "results/manual"
run_id = None             # default: <suite>-<condition>-<span>-s<seed>
suite_options = {}        # extra suite generator options, e.g. {"examples": 1}
probes_sleep = False      # also run Table 2's pre/post sleep protocol after the conversation
n_examples = 3            # transcripts to show
""", "parameters"),
    code("from memlab.report import lab"),
    code("""
run_dir = lab.run_condition(condition, suite, span, seed, llm=llm, embedder=embedder,
                            out_dir=out_dir, run_id=run_id, suite_options=suite_options,
                            probes_sleep=probes_sleep, progress=False)
lab.run_summary(run_dir)
"""),
    md("## Scores by test type (mean, 95% CI)"),
    code("lab.scores_by_type(run_dir)"),
    md("## Example transcripts and the memories behind each answer"),
    code("lab.transcripts(run_dir, n=n_examples)"),
    md("## Tokens and latency per answer"),
    code("lab.costs(run_dir)"),
]

SLEEP_PROBES = [
    md("""
# Table 2: the sleep condition before and after a sleep cycle

The sleep condition runs the suite; then its questions are asked again without being stored
(*pre sleep*), one sleep cycle is forced (replay, compression, schema induction, decay), and the
same questions are asked once more (*post sleep*). The delta is what consolidation bought.
"""),
    code("""
suite = "persona"         # ltm or persona
span = 2000               # memory span / context length in tokens
seed = 0
llm = "local"
embedder = "minilm"
out_dir = "results/sleep_probes"
suite_options = {}
""", "parameters"),
    code("from memlab.report import figures, lab"),
    code("""
run_dir = lab.run_condition("sleep", suite, span, seed, llm=llm, embedder=embedder,
                            out_dir=out_dir, suite_options=suite_options, probes_sleep=True,
                            progress=False)
lab.run_summary(run_dir)
"""),
    md("## Pre / post accuracy per probe"),
    code("probes = lab.table2(run_dir)\nprobes"),
    code("figures.apply_style()\nfigures.plot_table2(probes)"),
    md("## What the sleep cycle did"),
    code("lab.sleep_stats(run_dir)"),
    md("## Consolidated memories and schemas formed"),
    code("lab.consolidated_memories(run_dir)"),
    code("lab.schemas_formed(run_dir)"),
    md("## Schemas that reached a post-sleep prompt"),
    code("lab.schemas_used(run_dir)"),
    md("## Post-sleep transcripts"),
    code('lab.transcripts(run_dir, n=3, phase="post_sleep")'),
]

PAPER = [
    md("""
# The paper: every figure and table from a results folder

Reads every complete run under `results_dir` and writes the figures (PNG + PDF) into
`figures_dir` and the tables (CSV, LaTeX, markdown) into `figures_dir/tables/`.
`memlab paper` runs the quick grid first, then this notebook.
"""),
    code("""
results_dir = "results/quick"
figures_dir = "figures"
""", "parameters"),
    code("from memlab import report\nfrom IPython.display import Image"),
    code("report.data.runs_frame(results_dir)"),
    code("written = report.write_paper(results_dir, figures_dir)\nwritten"),
    md("## Overview: accuracy, tokens and latency per answer"),
    code("report.tables.overview(results_dir)"),
    md("## Accuracy against prompt tokens per answer"),
    code('Image(written["figures"]["accuracy_vs_tokens"][0])'),
    md("## LTM score against memory span"),
    code('Image(written["figures"]["ltm_vs_span"][0])'),
    md("## Persona accuracy by question type"),
    code('Image(written["figures"]["persona_by_type"][0])'),
    md("## Table 2: before and after sleep"),
    code('Image(written["figures"]["table2_sleep"][0])'),
    md("## Latency: memory vs LLM"),
    code('Image(written["figures"]["latency"][0])'),
]

TOUR = [
    md("""
# A tour of memlab

memlab compares seven memory architectures for LLM agents on the same model, data and scorers.
This walk: the settings and models, one conversation with an agent, and what its memory holds
after a sleep cycle. Change `llm` to `"gemini"` (with `GEMINI_API_KEY` set) to use Gemini.
"""),
    code("""
llm = "local"             # local, gemini, openai (fake: tests only)
embedder = "minilm"       # minilm (hashing: tests only)
condition = "sleep"       # try: rag, episodic, hybrid ...
workdir = "results/tour"
""", "parameters"),
    code("""
from memlab.config import get_settings
from memlab.memory.base import CONDITIONS
from memlab.report import lab
"""),
    md("## Settings (from `MEMLAB_*` environment variables) and the seven conditions"),
    code("get_settings()"),
    code("CONDITIONS"),
    md("## The model and the embedder"),
    code("model = lab.make_llm(llm)\n(model.provider, model.model, model.context_window)"),
    code("vectors = lab.make_embedder(embedder)\n(vectors.name, vectors.dim)"),
    md("## A conversation"),
    code("""
agent = lab.make_agent(condition, llm=model, embedder=vectors, workdir=workdir)
lab.chat(agent, [
    "Hi! I'm Ana. I live in Porto and I work as a nurse.",
    "I've started learning the cello; my teacher is called Miguel.",
    "I used to love coffee, but I switched to green tea last month.",
    "Where do I live, and what do I drink these days?",
])
"""),
    md("## What the memory recalls before a sleep cycle"),
    code('lab.recall_view(agent, "What does Ana drink?")'),
    md("## A sleep cycle: replay, compression, schema induction, decay"),
    code("lab.cycle_view(agent.sleep())"),
    md("## What the memory recalls after it"),
    code('lab.recall_view(agent, "What does Ana drink?")'),
]

NOTEBOOKS = {"condition": CONDITION, "sleep_probes": SLEEP_PROBES, "paper": PAPER,
             "tour": TOUR}


def build(out_dir: Path = HERE) -> list[Path]:
    """Write every notebook into ``out_dir``; return their paths."""
    paths = []
    for name, cells in NOTEBOOKS.items():
        notebook = new_notebook(cells=cells, metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}})
        for i, cell in enumerate(notebook.cells):
            cell.id = str(i)  # stable ids (as nbstripout numbers them): regenerating changes nothing
        nbformat.validate(notebook)
        path = out_dir / f"{name}.ipynb"
        nbformat.write(notebook, path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in build():
        print(written)
