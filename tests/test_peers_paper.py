"""The peers in the same run: the ``peers`` grid spec, and write_paper's peers figure and tables
on run folders the runner wrote on fakes (test_report_peers's suite and replies)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_report_peers import EvidenceSuite, picky_reply  # noqa: E402
from test_runner import tiny_spec  # noqa: E402

from memlab import gridspec  # noqa: E402
from memlab.bench.runlog import read_jsonl  # noqa: E402
from memlab.bench.runner import run  # noqa: E402
from memlab.embed.hashing import HashingEmbedder  # noqa: E402
from memlab.llm.fake import FakeLLM  # noqa: E402
from memlab.report import NO_PEERS, figures, peers, show_peers, write_paper  # noqa: E402

BASELINES = ("rag", "hybrid", "sleep")
PEERS = ("mem0", "langmem", "graphiti")


def test_peers_spec_cells_are_the_seven_conditions_on_the_quick_sizes_with_one_memory_model():
    spec = gridspec.load_spec("peers")
    assert spec is gridspec.SPECS["peers"] and spec.description
    cells = spec.cells()
    assert {(c.condition, c.suite) for c in cells} == {
        (c, s) for c in ("vanilla", "rag", "hybrid", "sleep", "mem0", "langmem", "graphiti")
        for s in ("ltm", "persona")}
    assert len(cells) == 14  # seed 0 only: no evidence-only seeds, no Table 2 cells
    assert {c.seed for c in cells} == {0} and not any(c.probes_sleep for c in cells)
    assert all(c.llm_model == "1.5b" and c.memory_llm_model == "1.5b" for c in cells)
    assert all(c.answered == 24 for c in cells)
    quick = gridspec.QUICK
    assert {(c.suite, c.span) for c in cells} == {(s, quick.spans[s][0]) for s in quick.suites}
    assert all(c.suite_options == quick.suite_options[c.suite] for c in cells)
    assert all(c.needle_replies == ("scripted" if c.suite == "ltm" else "model") for c in cells)


def test_peers_standard_spec_is_the_peers_grid_at_the_standard_sizes_and_seeds():
    spec = gridspec.load_spec("peers-standard")
    standard, cells = gridspec.STANDARD, spec.cells()
    assert spec.conditions == [c for c in gridspec.PEERS_SPEC.conditions if c != "graphiti"]
    assert len(cells) == 6 * 2 * 3  # six conditions, two suites, seeds 0-2
    assert {c.seed for c in cells} == set(standard.seeds) and not any(c.probes_sleep for c in cells)
    assert all(c.llm_model == "1.5b" and c.memory_llm_model == "1.5b" for c in cells)
    assert all(c.answered == standard.answered[c.suite] for c in cells)
    assert all(c.suite_options == standard.suite_options[c.suite] for c in cells)
    assert {(c.suite, c.span) for c in cells} == {(s, standard.spans[s][0]) for s in standard.suites}


def test_peers_plan_counts_seed_0_only_and_runs_nothing(tmp_path, capsys):
    from memlab import cli

    table = gridspec.plan(gridspec.SPECS["peers"]).set_index("suite")
    quick = gridspec.plan(gridspec.QUICK).set_index("suite")
    assert (table["cells"] == 7).all() and (table["conditions"] == 7).all()
    assert table.loc["persona", "answered_per_condition"] == 24
    assert table.loc["persona", "evidence_per_condition"] == 45  # quick: 3 seeds x 45
    assert (table["answered_per_condition"] == quick["answered_per_condition"]).all()
    assert cli.main(["grid", "--spec", "peers", "--plan", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "grid peers: 14 cells" in out
    assert "persona at 4000 tokens: 7 conditions, 24 answered and 45 evidence" in out
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Complete runs of the three baselines and the three peers on test_report_peers's suite."""
    root = tmp_path_factory.mktemp("peers-paper")
    suite = EvidenceSuite(sessions=4, filler=2)
    for condition in BASELINES + PEERS:
        run(tiny_spec(suite, condition), suite=suite, llm=FakeLLM([picky_reply]),
            embedder=HashingEmbedder(dim=384), results_dir=root, progress=False)
    return root


def accuracy_from_files(results: Path, condition: str) -> float:
    """The run's accuracy read straight from its scores.jsonl (every test is answered)."""
    [folder] = [p.parent for p in results.rglob("manifest.json")
                if json.loads(p.read_text())["condition"] == condition]
    scores = [s for s in read_jsonl(folder / "scores.jsonl") if s["phase"] == "main"]
    return sum(s["score"] for s in scores) / len(scores)


@pytest.fixture(scope="module")
def written(results, tmp_path_factory):
    return write_paper(results, tmp_path_factory.mktemp("figures"))


def test_write_paper_writes_the_peers_tables_with_the_run_files_numbers(results, written):
    csv, tex, md = written["tables"]["peers"]
    rows = pd.read_csv(csv).set_index("condition")
    assert set(rows.index) == set(BASELINES + PEERS)
    for condition in BASELINES + PEERS:
        assert rows.loc[condition, "accuracy"] == pytest.approx(
            accuracy_from_files(results, condition))
        assert rows.loc[condition, "answered_tests"] == 4
    assert "\\begin{tabular}" in tex.read_text() and "| langmem " in md.read_text()
    for peer in PEERS:  # each peer's cost, as its run recorded it
        assert rows.loc[peer, "llm_calls_per_stored_turn"] > 0
        assert rows.loc[peer, "memories_written"] > 0 and rows.loc[peer, "parse_failures"] == 0
    pairs = pd.read_csv(written["tables"]["peers_paired"][0])
    assert sorted(zip(pairs["peer"], pairs["baseline"], strict=True)) == sorted(
        (p, b) for p in PEERS for b in BASELINES)
    for pair in pairs.itertuples():
        assert pair.pairs == 4
        assert pair.difference == pytest.approx(accuracy_from_files(results, pair.peer)
                                                - accuracy_from_files(results, pair.baseline))
        assert pair.low <= pair.difference <= pair.high and pair.p <= pair.p_holm
    assert (pairs["difference"] != 0).any()  # the fakes make hybrid differ from the peers
    assert "mem0 - hybrid" in written["tables"]["peers_paired"][2].read_text()


def test_write_paper_draws_the_peers_forest_plot(written):
    png, pdf = written["figures"]["peers"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert pdf.read_bytes()[:5] == b"%PDF-"
    pairs = pd.read_csv(written["tables"]["peers_paired"][0])
    fig = figures.plot_peers(pairs)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == len(BASELINES)  # one suite: one row, a column per baseline
    for ax, baseline in zip(panels, ("RAG", "Hybrid", "Sleep"), strict=True):
        assert f"vs {baseline} (memory model fake, seed 0)" in ax.get_title()
        names = [t.get_text() for t in ax.get_yticklabels()]
        drawn = dict(zip(names, (c.lines[0].get_xdata()[0] for c in ax.containers),
                         strict=True))
        expected = pairs[pairs["baseline"] == baseline.lower()].set_index("peer")["difference"]
        assert drawn == pytest.approx({"mem0": 100 * expected["mem0"],
                                       "LangMem": 100 * expected["langmem"],
                                       "graphiti": 100 * expected["graphiti"]})


def test_without_peer_runs_write_paper_writes_no_peers_entries(results, tmp_path, capsys):
    baselines = tmp_path / "results"
    for manifest in results.rglob("manifest.json"):
        if json.loads(manifest.read_text())["condition"] in BASELINES:
            shutil.copytree(manifest.parent, baselines / manifest.parent.name)
    out = tmp_path / "figures"
    written = write_paper(baselines, out)
    assert "peers" not in written["figures"]
    assert not {"peers", "peers_paired"} & set(written["tables"])
    assert not list(out.rglob("peers*"))
    show_peers(written)
    assert capsys.readouterr().out.strip() == NO_PEERS and "memlab paper --spec peers" in NO_PEERS


def test_show_peers_displays_the_figure_and_both_tables(written, capsys):
    show_peers(written)  # outside a kernel IPython's display prints each object's repr
    out = capsys.readouterr().out
    assert out.count("Image object") == 1 and out.count("Markdown object") == 2


def test_a_table2_run_is_not_taken_for_its_cells_sleep_run(results, tmp_path):
    """A Table 2 run answers its cell's questions too; the peers compare with the ordinary
    sleep run only."""
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    [sleep] = [p.parent for p in copy.rglob("manifest.json")
               if json.loads(p.read_text())["condition"] == "sleep"]
    probes = shutil.copytree(sleep, sleep.with_name(sleep.name + "-probes"))
    manifest = json.loads((probes / "manifest.json").read_text())
    manifest["spec"]["probes_sleep"] = True
    (probes / "manifest.json").write_text(json.dumps(manifest))
    wrong = [s | {"score": 0.0} for s in read_jsonl(probes / "scores.jsonl")]
    (probes / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in wrong))
    rows = peers.peer_rows(copy)
    assert list(rows["condition"]).count("sleep") == 1
    assert peers.paired(rows).equals(peers.paired(peers.peer_rows(results)))
