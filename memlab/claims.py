"""Whether the numbers a page cites come from committed records (``memlab claims``).

A number cited with its interval, ``72.0 (63.6-80.3)``, ``+11.6 (6.2 to 17.0; ...)`` or
``89.0% (84.1-92.6)``, is a *claim*. It is *supported* when a committed table holds it: some
row of a ``records/<grid>/tables/*.csv`` (what ``memlab replay --check`` reproduces byte for
byte) has three numeric cells side by side (a value and its low and high, as every memlab table
writes them: ``accuracy, accuracy_low, accuracy_high``, ``difference, low, high``) that print
as the claim's three numbers at the claim's decimals, as they are or as percentages. A number
the tables do not hold (a typo, a figure from a run whose records were not kept, one computed
by hand) is listed with its page and line.

A count cited with its interval, ``1/8 (2-47%)``, ``6 / 16 (18.5-61.4, Wilson)`` or ``25/40,
62% (47-76)``, carries its own evidence: it is supported when the interval prints as the
Wilson or the exact (Clopper-Pearson) 95% interval of k/n at the claim's decimals, and a
percentage cited with it as 100 k/n. A count is checked this way wherever it sits (an
extraction benchmark's row, a labelled sample), so a mistyped bound fails like a missing table.

Some numbers come from elsewhere on purpose (an earlier version of a rule, a benchmark's
results file). ``records/claims-elsewhere.md`` lists them, a line each,
``page | claim | where it comes from``; they are not reported, and one that no page cites any
more is (``stale_elsewhere``), so the list cannot outlive its numbers.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from memlab import stats
from memlab.errors import ConfigError

ELSEWHERE = "claims-elsewhere.md"  # in the records folder
# the project's pages: the README and every docs page (findings, conditions, suites, ...)
DEFAULT_PAGES = ("README.md", "docs/**/*.md")

_NUMBER = r"[+-]?\d+(?:\.\d+)?"
# a value not itself the end of a range ("0.00-4.3 (1.7-2.9)" is a range and its mean), then
# its interval: "(low-high" or "(low to high", closed by ")", ";" or ","
CLAIM = re.compile(rf"(?<![\w.+/-])({_NUMBER})%?\s\(({_NUMBER})%?(?:-|\s+to\s+)({_NUMBER})%?"
                   r"(?=[;),])")
# a count k/n (optionally ", p%"), then its interval; not the end of "2,390 / 8,128" or "1/2/3"
COUNT = re.compile(rf"(?<![\w.,/])(\d+)\s?/\s?(\d+)(?:,\s({_NUMBER})%)?\s\(({_NUMBER})%?"
                   rf"(?:-|\s+to\s+)({_NUMBER})%?(?=[;),])")
SCALES = (1, 100)  # a table's proportion is cited as it is or as a percentage


@dataclass(frozen=True)
class Claim:
    page: str
    line: int
    text: str  # as the page writes it, closed by ")": "72.0 (63.6-80.3)", "-3.3 (-7.1 to -0.3)"
    numbers: tuple[str, str, str]  # value, low, high as written (without "+" or "%")
    count: tuple[int, int] | None = None  # k, n of a count claim (its value: a percentage or "")


def find_claims(text: str, page: str = "") -> list[Claim]:
    """The claims ``text`` makes, in order (a claim may run over a line break): counts with
    their intervals, and the other values with theirs."""
    flat = text.replace("\u2212", "-")  # a typeset minus is a minus
    found = []
    for match in COUNT.finditer(flat):
        k, n, percent, low, high = match.groups()
        found.append((match.start(), match.end(), (percent or "", low, high), (int(k), int(n))))
    counted = [(start, end) for start, end, _, _ in found]
    for match in CLAIM.finditer(flat):
        if not any(start <= match.start() < end for start, end in counted):
            found.append((match.start(), match.end(),
                          tuple(n.lstrip("+") for n in match.groups()), None))
    return [Claim(page=page, line=flat.count("\n", 0, start) + 1,
                  text=" ".join(flat[start:end].split()) + ")", numbers=numbers, count=count)
            for start, end, numbers, count in sorted(found, key=lambda f: f[0])]


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _printed(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0"


def _printed_either(value: float, decimals: int) -> set[str]:
    """``value`` at ``decimals``, a tie rounded either way (12.5 is "12" or "13")."""
    step = 10.0 ** -decimals
    return {_printed(value, decimals), _printed(math.floor(value / step + 0.5 + 1e-9) * step,
                                                decimals)}


def counted(claim: Claim) -> bool:
    """Whether a count claim's interval is the Wilson or the exact 95% interval of its k/n
    (as a proportion or a percentage), and its percentage, if cited, 100 k/n."""
    k, n = claim.count
    if n == 0 or k > n:
        return False
    percent, low, high = claim.numbers
    if percent and _printed(float(percent), _decimals(percent)) not in _printed_either(
            100 * k / n, _decimals(percent)):
        return False
    wanted = (_printed(float(low), _decimals(low)), _printed(float(high), _decimals(high)))
    for method in ("wilson", "exact"):
        interval = stats.proportion_ci(k, n, method=method)
        # a proportion has decimals: "(0-0)" is not 0/8's interval as a proportion
        for scale in SCALES if "." in low + high else (100,):
            lows = _printed_either(interval.low * scale, _decimals(low))
            highs = _printed_either(interval.high * scale, _decimals(high))
            if wanted[0] in lows and wanted[1] in highs:
                return True
    return False


def table_triples(records: Path) -> list[tuple[float, float, float]]:
    """Every three numeric cells side by side in a row of a committed table
    (``<records>/<grid>/tables/*.csv``)."""
    triples = []
    for table in sorted(records.glob("*/tables/*.csv")):
        with table.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                cells = [_float(cell) for cell in row]
                triples += [(a, b, c) for a, b, c in zip(cells, cells[1:], cells[2:],
                                                         strict=False)
                            if a is not None and b is not None and c is not None]
    return triples


def _float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _as_printed(triple: tuple[float, ...], decimals: tuple[int, ...], scale: float = 1) -> tuple:
    return tuple(_printed(v * scale, d) for v, d in zip(triple, decimals, strict=True))


def _wanted(claim: Claim) -> tuple[tuple[int, ...], tuple]:
    decimals = tuple(_decimals(n) for n in claim.numbers)
    return decimals, _as_printed(tuple(float(n) for n in claim.numbers), decimals)


def supports(triple: tuple[float, float, float], claim: Claim) -> bool:
    """Whether a table's value, low and high print as the claim's numbers."""
    return _Tables([triple]).hold(claim)


class _Tables:
    """Triples of the committed tables, printed once per claim's decimals and scale: a claim
    is held when one prints as its value, low and high."""

    def __init__(self, triples: list[tuple[float, float, float]]):
        self.triples, self.printed = triples, {}

    def hold(self, claim: Claim) -> bool:
        decimals, wanted = _wanted(claim)
        for scale in SCALES:
            if (decimals, scale) not in self.printed:
                self.printed[decimals, scale] = {_as_printed(t, decimals, scale)
                                                 for t in self.triples}
            if wanted in self.printed[decimals, scale]:
                return True
        return False


def read_elsewhere(records: Path) -> dict[tuple[str, str], str]:
    """``records/claims-elsewhere.md``: (page, claim as written) -> where it comes from; its
    lines that are not ``page | claim | source`` (a heading, prose) are passed over."""
    path = records / ELSEWHERE
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        parts = [part.strip() for part in line.strip().strip("|").split("|")]
        if len(parts) == 3 and [c.text for c in find_claims(parts[1])] == [parts[1]]:
            out[parts[0], parts[1]] = parts[2]
    return out


def pages(patterns: list[str] | tuple[str, ...], root: Path) -> list[Path]:
    """The pages ``patterns`` name under ``root`` (globs allowed); one naming nothing is an
    error."""
    out = []
    for pattern in patterns:
        found = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else (
            [root / pattern] if (root / pattern).is_file() else [])
        if (root / pattern).is_dir():
            raise ConfigError(f"{pattern}: is a folder; name its pages ({pattern.rstrip('/')}"
                              "/*.md)")
        if not found:
            raise ConfigError(f"{pattern}: no such page")
        out += found
    return out


@dataclass
class ClaimCheck:
    claims: list[Claim]
    unsupported: list[Claim]  # not in a table, not listed as from elsewhere
    elsewhere: list[Claim]  # listed in claims-elsewhere.md
    stale_elsewhere: list[tuple[str, str]]  # listed for a page checked, which no longer cites it


def check_claims(page_paths: list[Path], records: Path, root: Path) -> ClaimCheck:
    """Each claim of the pages against the committed tables under ``records`` and its
    ``claims-elsewhere.md`` (pages named relative to ``root``)."""
    if not records.is_dir():
        raise ConfigError(f"--records {str(records)!r}: no such folder")
    tables = _Tables(table_triples(records))
    elsewhere = read_elsewhere(records)
    claims, unsupported, listed, names = [], [], [], set()
    for path in page_paths:
        name = path.resolve().relative_to(root.resolve()).as_posix() \
            if path.resolve().is_relative_to(root.resolve()) else str(path)
        names.add(name)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") \
                from exc
        for claim in find_claims(text, name):
            claims.append(claim)
            if (name, claim.text) in elsewhere:
                listed.append(claim)
            elif not (counted(claim) if claim.count else tables.hold(claim)):
                unsupported.append(claim)
    cited = {(c.page, c.text) for c in listed}
    return ClaimCheck(claims=claims, unsupported=unsupported, elsewhere=listed,
                      stale_elsewhere=[key for key in elsewhere
                                       if key[0] in names and key not in cited])
