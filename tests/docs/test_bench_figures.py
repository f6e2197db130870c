"""The figures the docs quote from the benchmarks are those of ``bench/results.md`` (the file ``python -m bench.run``
writes), not hand-typed numbers that a rerun leaves behind.

Checked pages: docs/guides/benchmarks.md, and any page of docs/ or README.md with a line that is
``<!-- figures: bench/results.md -->``. A figure is a number with a unit of measurement (``3.7 ms``, ``1.18x``,
``97.6 %``, ``7,660 items/s``, ``584 rows/min``, ``1,001 requests``); it is current when ``bench/results.md``
has the same number with the same unit, or one that rounds to it at the quoted precision (``1.2x`` for 1.18x;
``~530 ms`` for 527.5 ms and ``23 000 items/s`` for 22913: the trailing zeros of a figure written ``~`` or of four
digits or more are rounding). A range, ``7,700-12,900 items/s``, is two figures, each checked.
A figure after ``<=``, ``>=``, ``<``, ``>`` (a target) is not a
measurement and is not checked. A stale figure fails the test with its page, line and text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results.md"
BENCHMARKS_PAGE = ROOT / "docs" / "guides" / "benchmarks.md"
OPT_IN = "<!-- figures: bench/results.md -->"
FIGURE = re.compile(
    r"(?P<before>(?:[<>]=?|[≤≥])\s*(?:[\d.,]+\s*/\s*)?)?(?P<approx>~\s*)?(?<![\w.\-/])"
    r"(?P<number>-?\d{1,3}(?:[ ,\u202f]\d{3})+|-?\d+(?:\.\d+)?)"
    r"\s?(?P<unit>ms|s|x|%|items/s|rows/min|requests)(?![\w/])"
)
_NUMBER = r"\d{1,3}(?:[ ,\u202f]\d{3})+|\d+(?:\.\d+)?"
RANGE = re.compile(
    rf"(?<![\w.\-/])(?P<low>{_NUMBER})\s?[-\u2013]\s?(?P<number>{_NUMBER})\s?(?P<unit>ms|s|x|%|items/s|rows/min|requests)"
    r"(?![\w/])"
)


@dataclass(frozen=True)
class Figure:
    number: Decimal
    approx: bool
    """Written ``~530 ms``, or an integer of four digits or more: its trailing zeros may be rounding."""
    text: str
    unit: str
    line: int


def figures(text: str) -> list[Figure]:
    """The measured figures of a text (targets after a comparison left out), with their line numbers."""
    found = []
    ranges = [match for match in RANGE.finditer(text) if not re.search(r"(?:[<>]=?|[≤≥])\s*$", text[: match.start()])]
    for match in ranges:  # 7 700-12 900 items/s: both ends are figures
        line = text.count("\n", 0, match.start()) + 1
        for end in ("low", "number"):
            number = Decimal(re.sub(r"[ ,\u202f]", "", match[end]))
            found.append(Figure(number, abs(number) >= 1000, f"{match[end]} {match['unit']}", match["unit"], line))
    for match in FIGURE.finditer(text):
        if match["before"] or any(r.start() <= match.start() < r.end() for r in ranges):
            continue
        number = Decimal(re.sub(r"[ ,\u202f]", "", match["number"]))
        approx = bool(match["approx"]) or abs(number) >= 1000
        line = text.count("\n", 0, match.start()) + 1
        found.append(Figure(number, approx, match[0].strip(), match["unit"], line))
    return found


def _rounds_to(measured: Decimal, quoted: Figure) -> bool:
    """``measured`` written at the quoted figure's precision is the quoted figure."""
    if measured == quoted.number:
        return True
    sign, digits, exponent = quoted.number.as_tuple()
    assert isinstance(exponent, int)
    if exponent == 0 and quoted.approx:  # its trailing zeros may be rounding (23 000 for 22913)
        zeros = len(digits) - len("".join(map(str, digits)).rstrip("0"))
        exponent = zeros if zeros < len(digits) else 0
    step = Decimal(1).scaleb(exponent)
    if exponent <= 0:
        return measured.quantize(step) == quoted.number
    return round(measured / step) * step == quoted.number


def stale_figures(text: str, results: str) -> list[Figure]:
    """The figures of ``text`` that ``results`` does not hold."""
    measured: dict[str, set[Decimal]] = {}
    for figure in figures(results):
        measured.setdefault(figure.unit, set()).add(figure.number)
    for line in results.splitlines():  # "100 + 0 requests": every number of a line that counts requests
        if "requests" in line:
            measured.setdefault("requests", set()).update(
                Decimal(n.replace(",", "")) for n in re.findall(r"(?<![\w.])\d[\d,]*(?![\w.])", line)
            )
    units = {"%": {"%"}, "x": {"x"}}
    stale = []
    for figure in figures(text):
        known = set().union(*(measured.get(unit, set()) for unit in units.get(figure.unit, {figure.unit})))
        if not any(_rounds_to(value, figure) for value in known):
            stale.append(figure)
    return stale


def checked_pages() -> list[Path]:
    pages = [BENCHMARKS_PAGE] if BENCHMARKS_PAGE.exists() else []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if page not in pages and OPT_IN in page.read_text(encoding="utf-8").splitlines():
            pages.append(page)
    return pages


@pytest.mark.parametrize("page", checked_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_quoted_figures_are_the_benchmark_files(page: Path) -> None:
    stale = stale_figures(page.read_text(encoding="utf-8"), RESULTS.read_text(encoding="utf-8"))
    where = page.relative_to(ROOT).as_posix()
    assert not stale, (
        f"{where} quotes figures bench/results.md does not hold (rerun the benchmark, or quote the file):\n"
        + "\n".join(f"  {where}:{figure.line}: {figure.text}" for figure in stale)
    )


def test_a_stale_figure_is_named() -> None:
    results = "| batch | 1000 items | 7,660 items/s | 1.08x | 527.5 ms | 100 + 0 requests | 97.6% |\n"
    page = (
        "Cache hits: 7 660 items/s (target >= 5000 items/s, <= 150 / 250 ms), 1.1x ideal,\n"
        "import ~530 ms, 100 requests, precision 97.6 %.\nLast round: 8,100 items/s, 1.10x, 110 requests and 500 ms.\n"
    )
    stale = [(figure.text, figure.line) for figure in stale_figures(page, results)]
    assert stale == [("8,100 items/s", 3), ("1.10x", 3), ("110 requests", 3), ("500 ms", 3)]


def test_a_range_is_two_figures_each_checked() -> None:
    results = "| batch | 1000 items | 7,660 items/s | 9,052 items/s | 20 ms | 200 ms |\n"
    assert not stale_figures("hits at 7,660-9,052 items/s, latency 20-200 ms (target >= 5-10 ms)", results)
    stale = [(figure.text, figure.line) for figure in stale_figures("hits at 7 700-12 900 items/s", results)]
    assert stale == [("12 900 items/s", 1)]  # 7 700 is 7,660 rounded (its trailing zeros)
