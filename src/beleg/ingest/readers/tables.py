"""Tables as Markdown pipe tables, shared by the HTML and DOCX readers.

The answerer quotes one table row and reads it with its table's header ("Plan: Business;
Price: 49 EUR", :func:`beleg.sentences.table_header`), so every row must stand on its own
under one header line:

* The header is the table's header rows (``<thead>``, leading rows of ``<th>`` cells,
  Word's "repeat as header row"), else its first row. Several header rows are merged per
  column ("Price" over "Monthly" gives "Price Monthly").
* A cell spanning rows is repeated in each of them, and one spanning columns in each of
  them: the row is quoted alone, and a value under a spanned header belongs to every
  column it covers. A cell that spans the whole row is a title or a group label, not a
  value of each column: it is written once (a header title as a line above the table, a
  body label in the first column).
* Cell text is one line (line breaks and paragraphs folded to spaces) with ``|`` escaped
  as ``\\|``. Columns and rows that are empty everywhere (spacer cells) are left out, and
  so is a row whose every cell is only dashes, which would read as a separator row.

A table without header rows (``<th>`` cells that only name rows, as in a key/value table),
or with nothing under its header (a one-row table), is written without header and
separator: each row then reads as its own values ("Size; M8").

A *layout* table, one that arranges the page rather than holding data, is read as its
cells' content in document order instead (paragraphs, headings, lists, inner tables), as
if the table were not there: a table with fewer than two columns holding text (its rows
are paragraphs), one with a heading or another table in a cell (a data cell holds a
value, not a section of the page; so nested tables are read as tables of their own and no
text is folded into a cell it does not belong to), and one marked ``role="presentation"``
or ``role="none"``. A layout table of two or more columns without such marks (a sidebar
beside the text, in one row, with no heading) is not recognised and is read as rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DASHES = re.compile(r"[-:]+")


@dataclass(frozen=True, slots=True)
class GridCell:
    """One position of a table's grid: ``origin`` names the source cell, so a cell spanning
    several positions is known as one."""

    text: str
    origin: int


Row = list[GridCell | None]


def cell_line(text: str) -> str:
    """A cell's text on one line, with ``|`` escaped so it cannot end the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def pipe_table(rows: list[Row], header: list[bool]) -> str | None:
    """The rows as a pipe table (title paragraphs, header, separator, one line per row), or
    ``None`` when the table is layout (see the module docstring).

    ``rows`` is the grid, every row as long as the widest (``None`` where no cell is);
    ``header[i]`` says whether row ``i`` is a header row. Without header rows, or without
    rows under them, the rows are written without a header: each then reads as its values.
    """
    width = max((len(row) for row in rows), default=0)
    kept_columns = [c for c in range(width) if any(_text(row, c) for row in rows)]
    if len(kept_columns) < 2:
        return None
    lines: list[tuple[list[str], bool, bool]] = []  # (cells, header row, one cell spans the row)
    for row, is_header in zip(rows, header):
        cells = [_text(row, c) for c in kept_columns]
        if any(cells) and not all(_DASHES.fullmatch(cell) for cell in cells):
            lines.append((cells, is_header, _spans_the_row(row, kept_columns)))
    if all(is_header for _, is_header, _ in lines):
        lines = [(cells, False, spanning) for cells, _, spanning in lines]  # nothing under it to name
    titles = [cells[0] for cells, is_header, spanning in lines if is_header and spanning]
    names: list[str] = []
    for cells, is_header, spanning in lines:
        if is_header and not spanning:
            names = [_merge(name, cell) for name, cell in zip(names or [""] * len(cells), cells)]
    body = [[cells[0]] + [""] * (len(cells) - 1) if spanning else cells for cells, is_header, spanning in lines
            if not is_header]  # fmt: skip
    if names and all(_DASHES.fullmatch(name) for name in names):
        names = [""] * len(names)  # a header of dashes alone would read as a separator row
    head = [_line(names), _line(["---"] * len(names))] if names else []
    table = "\n".join([*head, *(_line(cells) for cells in body)])
    return "\n\n".join([*titles, table])  # a title is a paragraph above the table


def _text(row: Row, column: int) -> str:
    cell = row[column] if column < len(row) else None
    return cell.text if cell is not None else ""


def _spans_the_row(row: Row, columns: list[int]) -> bool:
    cells = [row[c] if c < len(row) else None for c in columns]
    first = cells[0]
    return len(cells) > 1 and first is not None and all(c is not None and c.origin == first.origin for c in cells)


def _merge(name: str, cell: str) -> str:
    if not name or name == cell:
        return cell or name
    return f"{name} {cell}" if cell else name


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
