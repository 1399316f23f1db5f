"""HTML and DOCX tables reach the chunker and the answerer as Markdown pipe tables: a header
line, a separator, one line per row, so that the sentence splitter marks each row a
``table-row`` and finds its header (``beleg.sentences.table_header``); spans, nested and
layout tables as ``beleg.ingest.readers.tables`` says."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beleg.errors import IngestError
from beleg.ingest.readers import html as html_reader
from beleg.ingest.readers import reader_for
from beleg.markup import table_row
from beleg.sentences import split_sentences, table_header

PRICES = [("Plan", "Price"), ("Starter", "10 EUR per month"), ("Business", "49 EUR per month")]
PRICE_TABLE = "| Plan | Price |\n| --- | --- |\n| Starter | 10 EUR per month |\n| Business | 49 EUR per month |"


def html(body: str) -> str:
    page = f"<html><body><main><h1>Prices</h1>{body}</main></body></html>"
    return reader_for(Path("p.html")).read(page.encode(), Path("p.html")).text


def docx_bytes(build: Callable[[Any], None]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Prices", 1)
    build(document)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def docx_text(build: Callable[[Any], None]) -> str:
    return reader_for(Path("p.docx")).read(docx_bytes(build), Path("p.docx")).text


def add_table(document: Any, rows: list[tuple[str, ...]]) -> Any:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    return table


def read_rows(text: str) -> list[str]:
    """Each data row as the answerer shows it: "Header: value; Header: value"."""
    rows = []
    for span in split_sentences(text):
        if span.kind == "table-row":
            header = table_header(text, span)
            if header is not None:
                rows.append(table_row(header.text, span.text))
    return rows


# --- the basic table: header, separator, rows ------------------------------------------


def test_html_table_is_a_pipe_table_whose_rows_have_their_header() -> None:
    cells = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in PRICES[1:])
    text = html(f"<p>Our plans:</p><table><tr><th>Plan</th><th>Price</th></tr>{cells}</table><p>After.</p>")
    assert text == f"# Prices\n\nOur plans:\n\n{PRICE_TABLE}\n\nAfter."
    assert read_rows(text) == ["Plan: Starter; Price: 10 EUR per month", "Plan: Business; Price: 49 EUR per month"]


def test_docx_table_is_a_pipe_table_whose_rows_have_their_header() -> None:
    text = docx_text(lambda d: (add_table(d, PRICES), d.add_paragraph("After.")))
    assert text == f"# Prices\n\n{PRICE_TABLE}\n\nAfter."
    assert read_rows(text) == ["Plan: Starter; Price: 10 EUR per month", "Plan: Business; Price: 49 EUR per month"]


def test_html_without_th_takes_the_first_row_as_header_and_thead_before_tfoot() -> None:
    no_th = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in PRICES)
    assert html(f"<table>{no_th}</table>") == f"# Prices\n\n{PRICE_TABLE}"
    # A browser shows <tfoot> last wherever it stands; <caption> is a paragraph above the table.
    grouped = (
        "<table><caption>Monthly fees</caption><tfoot><tr><td>Total</td><td>59 EUR</td></tr></tfoot>"
        "<thead><tr><td>Plan</td><td>Price</td></tr></thead>"
        "<tbody><tr><td>Starter</td><td>10 EUR</td></tr><tr><td>Business</td><td>49 EUR</td></tr></tbody></table>"
    )
    assert html(grouped) == (
        "# Prices\n\nMonthly fees\n\n| Plan | Price |\n| --- | --- |\n| Starter | 10 EUR |\n"
        "| Business | 49 EUR |\n| Total | 59 EUR |"
    )


def test_docx_rows_marked_repeat_as_header_are_the_header() -> None:
    from docx.oxml import OxmlElement

    def build(document: Any) -> None:
        table = add_table(document, [("", ""), ("Plan", "Price"), ("Business", "49 EUR")])
        table.cell(0, 0).merge(table.cell(0, 1)).text = "Prices 2025"
        for row in table.rows[:2]:
            row._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))

    # The first header row spans the table: a title, written once above it.
    assert docx_text(build) == "# Prices\n\nPrices 2025\n\n| Plan | Price |\n| --- | --- |\n| Business | 49 EUR |"


# --- cell text: one line, pipes escaped -------------------------------------------------


def test_html_cell_text_is_folded_to_one_line_with_pipes_escaped() -> None:
    text = html(
        "<table><tr><th>Option</th><th>Effect</th></tr>"
        "<tr><td>a|b</td><td><p>First line.</p><p>Second line.</p></td></tr>"
        "<tr><td>x<br>y</td><td><ul><li>one</li><li>two</li></ul></td></tr></table>"
    )
    assert text.endswith("| Option | Effect |\n| --- | --- |\n| a\\|b | First line. Second line. |\n| x y | one two |")
    assert read_rows(text) == ["Option: a\\|b; Effect: First line. Second line.", "Option: x y; Effect: one two"]


def test_docx_cell_paragraphs_and_line_breaks_are_folded_and_pipes_escaped() -> None:
    def build(document: Any) -> None:
        table = add_table(document, [("Option", "Effect"), ("a|b", "First line.")])
        cell = table.cell(1, 1)
        cell.add_paragraph("Second line.")
        cell.paragraphs[0].add_run().add_break()
        cell.paragraphs[0].add_run("After a break.")

    text = docx_text(build)
    assert text.endswith("| Option | Effect |\n| --- | --- |\n| a\\|b | First line. After a break. Second line. |")


# --- spans ---------------------------------------------------------------------------


def test_html_row_and_column_spans_are_repeated_a_full_row_label_is_written_once() -> None:
    text = html(
        "<table><thead><tr><th rowspan='2'>Plan</th><th colspan='2'>Price</th></tr>"
        "<tr><th>Monthly</th><th>Yearly</th></tr></thead>"
        "<tr><td colspan='3'>For teams</td></tr>"
        "<tr><td rowspan='2'>Business</td><td>49 EUR</td><td>490 EUR</td></tr>"
        "<tr><td colspan='2'>with a discount for schools</td></tr></table>"
    )
    assert text.endswith(
        "| Plan | Price Monthly | Price Yearly |\n| --- | --- | --- |\n| For teams |  |  |\n"
        "| Business | 49 EUR | 490 EUR |\n| Business | with a discount for schools | with a discount for schools |"
    )


def test_docx_merged_cells_are_repeated() -> None:
    def build(document: Any) -> None:
        table = add_table(
            document,
            [
                ("Plan", "Term", "Price"),
                ("Business", "monthly", "49 EUR"),
                ("", "yearly", "490 EUR"),
                ("Support", "included", ""),
            ],
        )
        table.cell(1, 0).merge(table.cell(2, 0))  # vertical: w:vMerge
        table.cell(3, 1).merge(table.cell(3, 2))  # horizontal: w:gridSpan

    assert docx_text(build).endswith(
        "| Plan | Term | Price |\n| --- | --- | --- |\n| Business | monthly | 49 EUR |\n"
        "| Business | yearly | 490 EUR |\n| Support | included | included |"
    )


def test_html_spans_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_reader, "MAX_HTML_ELEMENTS", 1000)
    rows = "<tr><td colspan='600'>x</td><td>y</td></tr>" * 3
    with pytest.raises(IngestError, match="span more than 1,000 cells"):
        html(f"<table>{rows}</table>")


def test_html_padding_short_rows_to_the_widest_counts_against_the_span_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # 502 cells are placed, but every row is padded to 501 columns: 1,002 grid positions.
    monkeypatch.setattr(html_reader, "MAX_HTML_ELEMENTS", 1000)
    with pytest.raises(IngestError, match="span more than 1,000 cells"):
        html("<table><tr><td colspan='500'>a</td><td>b</td></tr><tr><td>x</td></tr></table>")
    # A cell spanning down into short rows pads each to its column before the table ends.
    with pytest.raises(IngestError, match="span more than 1,000 cells"):
        html(
            "<table><tr><td colspan='400'>a</td><td rowspan='3'>b</td></tr><tr><td>x</td></tr><tr><td>y</td></tr></table>"
        )


def test_html_one_wide_row_over_many_short_rows_fails_instead_of_padding_them_all() -> None:
    # An outside tester's page: 38 KB that used to read as 12 million characters of padding.
    wide = "<tr>" + "<td colspan='1000'>a</td>" * 2 + "</tr>"
    with pytest.raises(IngestError, match="span more than 1,000,000 cells"):
        html("<table>" + wide + "<tr><td>x</td></tr>" * 2000 + "</table>")


def _docx_with_table(rows: list[str], gridspan: int = 0, grid_before: int = 0) -> bytes:
    """A .docx whose body is one table; each row's cells given as their texts, the first
    row's cells spanning ``gridspan`` columns and every row skipping ``grid_before``."""
    import zipfile

    def cell(text: str, span: int) -> str:
        properties = f'<w:tcPr><w:gridSpan w:val="{span}"/></w:tcPr>' if span else ""
        return f"<w:tc>{properties}<w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:tc>"

    skip = f'<w:trPr><w:gridBefore w:val="{grid_before}"/></w:trPr>' if grid_before else ""
    table = (
        "<w:tbl>"
        + "".join(
            "<w:tr>" + skip + "".join(cell(text, gridspan if r == 0 else 0) for text in row.split()) + "</w:tr>"
            for r, row in enumerate(rows)
        )
        + "</w:tbl>"
    )
    base = docx_bytes(lambda document: None)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for item in src.infolist():  # stored, not deflated: a repetitive table is no zip bomb
            data = src.read(item.filename)
            if item.filename == "word/document.xml":
                start, end = data.index(b"<w:body>") + len(b"<w:body>"), data.index(b"<w:sectPr")
                data = data[:start] + table.encode() + data[end:]
            dst.writestr(item.filename, data)
    return out.getvalue()


def _read_docx(data: bytes) -> str:
    return reader_for(Path("p.docx")).read(data, Path("p.docx")).text


def test_docx_padding_and_skipped_columns_count_against_the_span_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from beleg.ingest.readers import docx as docx_reader

    monkeypatch.setattr(docx_reader, "MAX_TABLE_POSITIONS", 1000)
    # 631 positions placed, but the short row is padded to 630 columns: 1,260 in the grid.
    wide = _docx_with_table(["a " * 10, "x"], gridspan=63)
    with pytest.raises(IngestError, match=r"^tables span more than 1,000 cells"):
        _read_docx(wide)
    # 20 one-cell rows each skipping 63 columns (w:gridBefore): 1,280 positions.
    skipping = _docx_with_table(["x y"] + ["z"] * 19, grid_before=63)
    with pytest.raises(IngestError, match=r"^tables span more than 1,000 cells"):
        _read_docx(skipping)
    assert _read_docx(_docx_with_table(["a b", "x"], gridspan=2)).endswith(
        "| a | a | b | b |\n| --- | --- | --- | --- |\n| x |  |  |  |"
    )


def test_docx_one_wide_row_over_many_short_rows_fails_instead_of_padding_them_all() -> None:
    # An outside tester's document: 30 cells of 63 columns over 2,000 one-cell rows.
    with pytest.raises(IngestError, match=r"^tables span more than 2,000,000 cells"):
        _read_docx(_docx_with_table(["a " * 30] + ["x"] * 2000, gridspan=63))


# --- tables without a header, and layout tables --------------------------------------


def test_html_key_value_table_and_one_row_table_have_no_header_line() -> None:
    # <th> cells that name rows: no row names the columns, each row reads as its values.
    text = html("<table><tr><th>Price</th><td>49 EUR</td></tr><tr><th>Users</th><td>25</td></tr></table>")
    assert text == "# Prices\n\n| Price | 49 EUR |\n| Users | 25 |"
    assert [s.kind for s in split_sentences(text)][1:] == ["table-row", "table-row"]
    assert html("<table><tr><td>Size</td><td>M8</td></tr></table>") == "# Prices\n\n| Size | M8 |"


def test_html_comparison_table_with_an_empty_corner_cell_has_its_header() -> None:
    text = html(
        "<table><tr><td></td><th>Starter</th><th>Business</th></tr>"
        "<tr><th>Price</th><td>10 EUR</td><td>49 EUR</td></tr><tr><th>Users</th><td>3</td><td>25</td></tr></table>"
    )
    assert (
        text
        == "# Prices\n\n|  | Starter | Business |\n| --- | --- | --- |\n| Price | 10 EUR | 49 EUR |\n| Users | 3 | 25 |"
    )
    assert read_rows(text) == ["Price; Starter: 10 EUR; Business: 49 EUR", "Users; Starter: 3; Business: 25"]


def test_html_layout_tables_are_read_as_their_blocks() -> None:
    # One column (an e-mail template), a spacer column, role=presentation, a heading in a cell.
    one_column = (
        "<table><tr><td><p>First paragraph.</p><p>Second paragraph.</p></td><td></td></tr>"
        "<tr><td>Third paragraph.</td><td> </td></tr></table>"
    )
    assert html(one_column) == "# Prices\n\nFirst paragraph.\n\nSecond paragraph.\n\nThird paragraph."
    marked = "<table role='presentation'><tr><td>Left text.</td><td>Right text.</td></tr></table>"
    assert html(marked) == "# Prices\n\nLeft text.\n\nRight text."
    sections = (
        "<table><tr><td><h2>Plans</h2><p>Two plans.</p></td><td><h2>Support</h2><p>By mail.</p></td></tr></table>"
    )
    text = html(sections)
    assert text == "# Prices\n\n## Plans\n\nTwo plans.\n\n## Support\n\nBy mail."
    assert [s.kind for s in split_sentences(text)] == ["heading", "heading", "sentence", "heading", "sentence"]


def test_html_nested_table_is_read_as_a_table_of_its_own_and_no_text_is_lost() -> None:
    inner = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in PRICES)
    text = html(
        f"<table><tr><td>Menu</td><td><p>Our plans:</p><table>{inner}</table><p>Prices with VAT.</p></td></tr></table>"
    )
    assert text == f"# Prices\n\nMenu\n\nOur plans:\n\n{PRICE_TABLE}\n\nPrices with VAT."


def test_docx_layout_and_nested_tables_are_read_as_their_blocks() -> None:
    def build(document: Any) -> None:
        add_table(document, [("Only one column.",), ("Another paragraph.",)])
        outer = add_table(document, [("Menu", "")])
        cell = outer.cell(0, 1)
        cell.paragraphs[0].text = "Our plans:"
        add_table(cell, PRICES)
        cell.add_paragraph("Prices with VAT.")
        sections = add_table(document, [("", "")])
        sections.cell(0, 0).paragraphs[0].text = "Plans"
        sections.cell(0, 0).paragraphs[0].style = "Heading 2"
        sections.cell(0, 1).paragraphs[0].text = "Two plans."

    assert docx_text(build) == (
        f"# Prices\n\nOnly one column.\n\nAnother paragraph.\n\nMenu\n\nOur plans:\n\n{PRICE_TABLE}"
        "\n\nPrices with VAT.\n\n## Plans\n\nTwo plans."
    )


def test_heading_offsets_stay_exact_around_tables() -> None:
    page = (
        f"<html><body><h1>A</h1><table>{''.join(f'<tr><td>{a}</td><td>{b}</td></tr>' for a, b in PRICES)}"
        "</table><h2>B</h2><p>x</p></body></html>"
    )
    doc = reader_for(Path("p.html")).read(page.encode(), Path("p.html"))
    for heading in doc.headings:
        assert doc.text[heading.start :].startswith("#" * heading.level + " " + heading.title + "\n")


# --- end to end: ingest, ask, the quote is the row -----------------------------------


def test_ask_quotes_the_row_of_an_html_and_a_docx_table_with_its_header(tmp_path: Path, capsys) -> None:
    from beleg.cli.main import main

    docs = tmp_path / "docs"
    docs.mkdir()
    rows = [
        ("Plan", "Price", "Users"),
        ("Starter", "10 EUR per month", "3"),
        ("Business", "49 EUR per month", "25"),
        ("Enterprise", "on request", "unlimited"),
    ]
    cells = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in rows[1:])
    (docs / "pricing.html").write_text(
        "<html lang='en'><body><main><h1>Pricing</h1><p>Every plan includes email support.</p><table><thead><tr>"
        + "".join(f"<th>{v}</th>" for v in rows[0])
        + f"</tr></thead>{cells}</table></main></body></html>"
    )
    support = [("Support plan", "Reply time"), ("Basic", "3 working days"), ("Premium", "4 hours")]
    (docs / "support.docx").write_bytes(docx_bytes(lambda d: add_table(d, support)))
    index = str(tmp_path / "idx")
    assert main(["ingest", str(docs), "--index", index, "--json"]) == 0
    capsys.readouterr()
    assert main(["ask", "What does the Business plan cost?", "--index", index, "--json"]) == 0
    citations = json.loads(capsys.readouterr().out)["citations"]
    assert citations[0]["quote"] == "| Business | 49 EUR per month | 25 |"
    assert citations[0]["display"] == "Plan: Business; Price: 49 EUR per month; Users: 25"
    assert main(["ask", "What is the reply time of the Premium support plan?", "--index", index, "--json"]) == 0
    citations = json.loads(capsys.readouterr().out)["citations"]
    assert citations[0]["quote"] == "| Premium | 4 hours |"
    assert citations[0]["display"] == "Support plan: Premium; Reply time: 4 hours"
