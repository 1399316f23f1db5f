"""Regenerate the binary reader fixtures (PDF with fpdf2, DOCX with python-docx).

Run from anywhere: ``python tests/data/readers/make_fixtures.py``. Dates are fixed and the
DOCX zip entries get a fixed timestamp, so unchanged code writes identical files (the
encrypted PDF excepted: its encryption key is random by design).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import docx
from docx.enum.style import WD_STYLE_TYPE
from fpdf import FPDF

HERE = Path(__file__).resolve().parent
CREATED = dt.datetime(2024, 3, 5, 10, 30, tzinfo=dt.UTC)

# Explicit line breaks put the hyphenated word at a line end, as a typesetter would.
PDF_PAGE_1 = (
    "Die Zahl der erfolglosen Zustell-\n"
    "versuche ist im Jahr 2023 deutlich\n"
    "gestiegen, vor allem in ländlichen\n"
    "Gebieten mit großen Entfernungen.\n"
    "\n"
    "Ein- und Ausgänge werden täglich geprüft."
)
PDF_PAGE_2 = "Seite zwei: Übergabe an Nachbarn ist zulässig."


def _pdf(title: str | None) -> FPDF:
    pdf = FPDF(format="A4")
    pdf.set_creation_date(CREATED)
    if title:
        pdf.set_title(title)
    pdf.set_author("Erika Mustermann")
    pdf.set_lang("de-DE")
    pdf.set_font("Helvetica", size=12)  # core font: WinAnsi covers the umlauts
    return pdf


def make_pdfs() -> None:
    pdf = _pdf("Zustellbericht 2023")
    pdf.add_page()
    pdf.multi_cell(0, 7, PDF_PAGE_1)
    pdf.add_page()
    pdf.multi_cell(0, 7, PDF_PAGE_2)
    pdf.output(str(HERE / "sample.pdf"))

    # A "scan": pages with graphics but no text layer at all.
    scanned = _pdf(None)
    scanned.add_page()
    scanned.set_fill_color(120, 120, 120)
    scanned.rect(20, 20, 170, 250, style="F")
    scanned.output(str(HERE / "scanned.pdf"))

    locked = _pdf("Geheim")
    locked.set_encryption(owner_password="owner-secret", user_password="user-secret")
    locked.add_page()
    locked.multi_cell(0, 7, "Nur mit Passwort lesbar.")
    locked.output(str(HERE / "encrypted.pdf"))


def _fixed_zip(blob: bytes) -> bytes:
    """Rewrite a zip with a constant timestamp on every entry, for reproducible bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 3, 5, 10, 30, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def _save(document: docx.document.Document, name: str) -> None:
    buf = io.BytesIO()
    document.save(buf)
    (HERE / name).write_bytes(_fixed_zip(buf.getvalue()))


def make_docx() -> None:
    d = docx.Document()
    props = d.core_properties
    props.title = "Handbuch Zustellung"
    props.author = "Erika Mustermann"
    props.language = "de-DE"
    props.created = CREATED.replace(tzinfo=None)
    props.modified = CREATED.replace(tzinfo=None)
    props.last_modified_by = "Erika Mustermann"
    d.add_paragraph("Handbuch Zustellung", style="Title")
    d.add_paragraph("Dieses Handbuch beschreibt die Zustellung von Päckchen.")
    d.add_heading("Zustellversuche", level=1)
    d.add_paragraph("Es gibt höchstens drei Zustellversuche.")
    d.add_paragraph("Erster Versuch am Werktag", style="List Bullet")
    d.add_paragraph("Zweiter Versuch am Folgetag", style="List Bullet")
    d.add_heading("Gebühren", level=2)
    table = d.add_table(rows=3, cols=2)
    prices = [("Leistung", "Preis"), ("Nachsendung", "5 €"), ("Lagerung", "2 €")]
    for row, cells in zip(table.rows, prices, strict=True):
        for cell, value in zip(row.cells, cells, strict=True):
            cell.text = value
    # Localised style name, as German Word templates store them.
    german = d.styles.add_style("Überschrift 2", WD_STYLE_TYPE.PARAGRAPH)
    german.base_style = d.styles["Normal"]
    d.add_paragraph("Rückfragen", style="Überschrift 2")
    d.add_paragraph("Schreiben Sie an die Poststelle.")
    _save(d, "sample.docx")

    # No title property: the title comes from the first Heading 1.
    plain = docx.Document()
    plain.core_properties.author = ""
    plain.core_properties.created = CREATED.replace(tzinfo=None)
    plain.core_properties.modified = CREATED.replace(tzinfo=None)
    plain.add_paragraph("Vorwort ohne Überschrift.")
    plain.add_heading("Einleitung", level=1)
    plain.add_paragraph("Text der Einleitung.")
    _save(plain, "untitled.docx")


if __name__ == "__main__":
    make_pdfs()
    make_docx()
