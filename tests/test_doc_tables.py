"""The tables of the user guide render with the rows of their source.

In a reStructuredText *simple* table a new row starts at every line whose
first column is not blank, so a first-column cell wrapped onto a second
line silently becomes a row of its own (Sphinx does not warn). Tables whose
cells wrap are written as ``list-table``; this test finds simple tables in
which a row looks like the continuation of the one before: a cell left open
(an unclosed parenthesis or literal, a trailing comma or slash, a last
word such as "of" or "per") or a row starting with a slash.
"""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"
PAGES = sorted(p for p in DOC.rglob("*.rst") if "_build" not in p.parts
               and "generated" not in p.parts and "auto_examples" not in p.parts)
BORDER = re.compile(r"^( *)(=+)( +=+)+ *$")


def simple_tables(text):
    """``(first line number, [rows])`` of each simple table; a row: list of cell texts."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = BORDER.match(lines[i])
        if not m:
            i += 1
            continue
        spans = [(a.start(), a.end()) for a in re.finditer(r"=+", lines[i])]
        borders = [i]
        j = i + 1
        while j < len(lines) and len(borders) < 3 and lines[j].strip():
            if BORDER.match(lines[j]):
                borders.append(j)
            j += 1
        if len(borders) < 3:  # a header-less table ends at its second border
            borders = borders[:2]
        body = lines[borders[-2] + 1:borders[-1]] if len(borders) >= 2 else []
        rows = []
        for line in body:
            cells = [line[a:(spans[k + 1][0] if k + 1 < len(spans) else len(line))].strip()
                     for k, (a, _) in enumerate(spans)]
            if cells[0] or not rows:
                rows.append([[c] if c else [] for c in cells])
            else:
                for k, c in enumerate(cells):
                    if c:
                        rows[-1][k].append(c)
        yield i + 1, [[" ".join(c) for c in row] for row in rows]
        i = borders[-1] + 1 if len(borders) >= 2 else j


#: Words a complete cell does not end with.
_FUNCTION_WORDS = {"a", "an", "the", "of", "in", "per", "to", "and", "or", "with", "for",
                   "by", "on", "at", "from", "as", "than"}


def _open(cell):
    """Whether a cell visibly goes on: an unclosed bracket or literal, or a dangling word."""
    words = cell.split()
    return (cell.count("(") > cell.count(")") or cell.count("``") % 2 == 1
            or cell.endswith((",", "/")) or bool(words and words[-1] in _FUNCTION_WORDS))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOC)))
def test_no_simple_table_row_continues_the_previous_one(page):
    problems = []
    for line, rows in simple_tables(page.read_text(encoding="utf-8")):
        for prev, row in zip(rows, rows[1:]):
            if any(_open(cell) for cell in prev) or row[0].startswith("/"):
                problems.append(f"table at line {line}: row {row[0]!r} after {prev[0]!r}")
    assert not problems, (f"{page.name}: a wrapped cell became a row of its own (use a "
                          "list-table): " + "; ".join(problems))


def test_the_checker_finds_a_wrapped_first_column():
    text = """
=================  ==========
a                  b
=================  ==========
``x`` (a list,     one
in order)          two
``y``,             three
``z``              four
``p``: per         five
token a dict       six
=================  ==========
"""
    (line, rows), = simple_tables(text)
    assert [r[0] for r in rows] == ["``x`` (a list,", "in order)", "``y``,", "``z``",
                                    "``p``: per", "token a dict"]
    assert [_open(r[0]) for r in rows] == [True, False, True, False, True, False]
