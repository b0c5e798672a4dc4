"""The README is a front page: short; every relative link in it, docs/ and figures/ resolves.

A link resolves when its file (or folder) exists relative to the page that holds it and, for a
``#anchor`` into a markdown file, that file has a heading with that slug (GitHub's rule:
lowercase, spaces to '-', punctuation other than '-' and '_' dropped; a repeated heading gets
'-1', '-2', ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 220

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
# [text](target) and ![alt](target); the target may carry a "title"
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code removed."""
    lines, in_fence = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append((number, INLINE_CODE.sub("", line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a markdown page, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link on a markdown page, outside code."""
    found = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        found += [(number, target) for target in INLINE_LINK.findall(line)]
        reference = REFERENCE_LINK.match(line)
        if reference:
            found.append((number, reference.group(1)))
    return found


def broken_links(page: Path) -> list[str]:
    """One line per relative link on ``page`` that does not resolve."""
    broken = []
    for number, target in links(page):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{shown(page)}:{number}: {target}"
        if not resolved.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and resolved.suffix == ".md" and unquote(anchor) not in anchors(resolved):
            broken.append(f"{where} (no heading with anchor #{anchor} in {resolved.name})")
    return broken


def shown(page: Path) -> str:
    """The page's path as a message shows it: from the repository's root when inside it."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            *sorted((ROOT / "figures").glob("*.md"))]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = broken_links(page)
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES})")


def test_github_slugs():
    assert slug("hybrid's extractor, measured") == "hybrids-extractor-measured"
    assert slug("Grid sizes and what they can detect") == "grid-sizes-and-what-they-can-detect"
    assert slug("The `full` grid's estimate") == "the-full-grids-estimate"
    assert slug("Standing instructions, fixed (193ad23)") == "standing-instructions-fixed-193ad23"
    assert slug("Numbers: LTM") == "numbers-ltm"
    assert slug("LoCoMo and LongMemEval") == "locomo-and-longmemeval"
    assert slug("run_id and results_dir") == "run_id-and-results_dir"


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# Here it is\n\n## Here it is\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/there.md) [ok](docs/there.md#here-it-is) [ok](docs/there.md#here-it-is-1)\n"
        "[ok](#top) [web](https://example.org/missing.md) `[code](missing.md)`\n"
        "# Top\n"
        "```\n[in a fence](missing.md)\n```\n"
        "[gone](docs/missing.md) ![gone](figures/none.png)"
        " [bad anchor](docs/there.md#nowhere)\n"
        "[ref]: docs/also-missing.md\n"
    )
    broken = broken_links(page)
    assert len(broken) == 4, broken
    assert all(":7: " in line for line in broken[:3]) and ":8: " in broken[3]
    assert "docs/missing.md (no such file)" in broken[0]
    assert "#nowhere" in broken[2]
