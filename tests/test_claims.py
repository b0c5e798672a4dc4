"""`memlab claims`: every number a page cites with its interval is in a committed table."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab import cli
from memlab.claims import DEFAULT_PAGES, Claim, check_claims, counted, find_claims, pages, supports

ROOT = Path(__file__).resolve().parent.parent

TABLE = """suite,span,condition,accuracy,accuracy_low,accuracy_high,accuracy_n
ltm,1000,oracle,0.72,0.636,0.803,105
ltm,1000,rag,0.2433,0.1701,0.3159,105
"""
PAIRED = """suite,reference,condition,difference,low,high,p_holm
ltm,vanilla,rag,0.23074,0.15492,0.30873,0.0005
persona,full_context,rag,-0.0857,-0.2011,0.0295,1.0
"""


def _records(tmp_path: Path, elsewhere: str | None = None) -> Path:
    tables = tmp_path / "records" / "standard" / "tables"
    tables.mkdir(parents=True)
    (tables / "overview.csv").write_text(TABLE)
    (tables / "paired_accuracy.csv").write_text(PAIRED)
    if elsewhere is not None:
        (tmp_path / "records" / "claims-elsewhere.md").write_text(elsewhere)
    return tmp_path / "records"


def test_claims_are_values_with_intervals_in_the_forms_the_pages_write():
    text = ("| oracle | 72.0 (63.6-80.3) | 100 (97.5-100) |\n"
            "rag over vanilla +23.1 points? no: +23.1 (15.5 to\n  30.9; Holm p < 0.001), "
            "full_context -8.6 (-20.1 to 2.9), agreement 92.7% (90.0-94.7).\n"
            "Not claims: 0.00-4.3 (mean 1.7-2.9), 0.00-4.3 (1.7-2.9), Table 2 (n = 50), "
            "2,390 / 8,128, (p 0.06, Holm 0.18), seed 1 (of 3).")
    found = find_claims(text, "page.md")
    assert [c.text for c in found] == ["72.0 (63.6-80.3)", "100 (97.5-100)",
                                       "+23.1 (15.5 to 30.9)", "-8.6 (-20.1 to 2.9)",
                                       "92.7% (90.0-94.7)"]
    assert [c.line for c in found] == [1, 1, 2, 3, 3]
    assert found[2].numbers == ("23.1", "15.5", "30.9")
    assert find_claims("a typeset minus \u22128.6 (\u221220.1 to 2.9)")[0].numbers == (
        "-8.6", "-20.1", "2.9")


def _claim(text: str) -> Claim:
    (claim,) = find_claims(text)
    return claim


@pytest.mark.parametrize(("triple", "text", "held"), [
    ((0.72, 0.636, 0.803), "72.0 (63.6-80.3)", True),  # a proportion cited as a percentage
    ((0.72, 0.636, 0.803), "72.0 (63.6-80.4)", False),  # one digit off
    ((0.72, 0.636, 0.803), "72 (64-80)", True),  # at the claim's decimals
    ((1.0, 0.975, 1.0), "100 (97.5-100)", True),
    ((0.23074, 0.15492, 0.30873), "+23.1 (15.5 to 30.9)", True),
    ((-0.0004, -0.2011, 0.0295), "0.0 (-20.1 to 2.9)", True),  # no "-0.0"
    ((26.7, 21.5, 31.0), "26.7 (21.5-31.0)", True),  # a table in percent already
    ((0.2433, 0.1701, 0.3159), "72.0 (63.6-80.3)", False),
])
def test_a_table_supports_a_claim_when_its_three_cells_print_as_the_claims_numbers(
        triple, text, held):
    assert supports(triple, _claim(text)) is held


def test_the_check_names_each_claim_in_no_table_and_honours_the_list_of_others(tmp_path):
    page = tmp_path / "findings.md"
    page.write_text("oracle 72.0 (63.6-80.3); rag 24.3 (17.0-31.6), typo 24.3 (17.0-31.7);\n"
                    "rag - vanilla +23.1 (15.5 to 30.9; Holm p < 0.001); persona -8.6 (-20.1 "
                    "to 2.9); an earlier rule 89.0% (84.1-92.6).\n")
    records = _records(tmp_path, "| page | claim | source |\n|---|---|---|\n"
                                 "| findings.md | 89.0% (84.1-92.6) | the first rule |\n")
    done = check_claims([page], records, tmp_path)
    assert len(done.claims) == 6
    assert [(c.line, c.text) for c in done.unsupported] == [(1, "24.3 (17.0-31.7)")]
    assert [c.text for c in done.elsewhere] == ["89.0% (84.1-92.6)"]
    assert done.stale_elsewhere == []
    # the number goes from the page: its line in the list is stale
    page.write_text("oracle 72.0 (63.6-80.3).\n")
    done = check_claims([page], records, tmp_path)
    assert done.unsupported == [] and done.stale_elsewhere == [
        ("findings.md", "89.0% (84.1-92.6)")]
    # a list line for a page not checked is not stale
    other = tmp_path / "other.md"
    other.write_text("nothing cited\n")
    assert check_claims([other], records, tmp_path).stale_elsewhere == []


def test_the_command_exits_1_naming_a_claim_in_no_table_and_2_for_a_missing_page(
        tmp_path, monkeypatch, capsys):
    records = _records(tmp_path)
    (tmp_path / "README.md").write_text("oracle 72.0 (63.6-80.3), rag 24.4 (17.0-31.6).\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["claims", "README.md", "--records", str(records)]) == 1
    out = capsys.readouterr().out
    assert "2 numbers with intervals in 1 pages; 1 in a committed table" in out
    assert f"README.md:1: 24.4 (17.0-31.6): in no table under {records}" in out
    (tmp_path / "README.md").write_text("oracle 72.0 (63.6-80.3).\n")
    assert cli.main(["claims", "README.md", "--records", str(records)]) == 0
    capsys.readouterr()
    assert cli.main(["claims", "docs/nothing-*.md", "--records", str(records)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("docs/nothing-*.md: no such page") and len(err.splitlines()) == 1
    assert cli.main(["claims", "README.md", "--records", str(tmp_path / "none")]) == 2
    capsys.readouterr()
    (tmp_path / "docs").mkdir()
    assert cli.main(["claims", "docs", "--records", str(records)]) == 2
    assert capsys.readouterr().err.strip().endswith("docs: is a folder; name its pages (docs/*.md)")
    (tmp_path / "latin.md").write_bytes("caf\xe9 72.0 (63.6-80.3)".encode("latin-1"))
    assert cli.main(["claims", "latin.md", "--records", str(records)]) == 2
    err = capsys.readouterr().err.strip()
    assert "latin.md: not UTF-8 text" in err and len(err.splitlines()) == 1


def test_counts_are_claims_of_their_own_and_not_read_as_a_value_with_an_interval():
    text = ("kept 25/40, 62% (47-76); changes 1/8 (2-47%) / 7/8 (53-98%), dates 6 / 16 "
            "(18.5-61.4, Wilson).\nNot counts: 2,390 / 8,128 (p 0.06), 1/2/3 (4-5), 8 (2-47%).")
    found = find_claims(text)
    assert [(c.text, c.count) for c in found] == [
        ("25/40, 62% (47-76)", (25, 40)), ("1/8 (2-47%)", (1, 8)), ("7/8 (53-98%)", (7, 8)),
        ("6 / 16 (18.5-61.4)", (6, 16)), ("8 (2-47%)", None)]
    assert found[0].numbers == ("62", "47", "76") and found[1].numbers == ("", "2", "47")


@pytest.mark.parametrize(("text", "held"), [
    ("1/8 (2-47%)", True),  # Wilson
    ("1/8 (2-48%)", False),  # a mistyped bound
    ("1/8 (0.3-52.7%)", True),  # exact (Clopper-Pearson)
    ("0/8 (0-32%)", True),  # never +-0 at 0/n
    ("0/8 (0-0%)", False),
    ("25/40, 62% (47-76)", True),  # 62.5 rounds either way at a tie
    ("25/40, 63% (47-76)", True),
    ("25/40, 64% (47-76)", False),  # the percentage is not 25/40
    ("6 / 16 (18.5-61.4)", True),
    ("6 / 16 (0.185-0.614)", True),  # as a proportion
    ("9/8 (50-100%)", False),
])
def test_a_count_is_supported_by_its_own_wilson_or_exact_interval(text, held):
    assert counted(_claim(text)) is held


def test_every_number_the_readme_and_docs_cite_is_in_a_committed_table():
    """The project's own pages (README.md and docs/**/*.md): a number with an interval that no
    committed table holds, a count whose interval is not its own, and a number that
    records/claims-elsewhere.md does not list with its source fail here."""
    done = check_claims(pages(DEFAULT_PAGES, ROOT), ROOT / "records", ROOT)
    assert len(done.claims) > 450  # the pages do cite their numbers this way
    assert {c.page for c in done.claims} >= {"README.md", "docs/conditions/hybrid.md",
                                              "docs/suites.md", "docs/findings/standard.md"}
    assert [f"{c.page}:{c.line}: {c.text}" for c in done.unsupported] == []
    assert done.stale_elsewhere == []
