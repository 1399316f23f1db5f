"""Readers on real files: checked-in fixtures under tests/data/readers and raw bytes.

The PDF/DOCX fixtures are written by tests/data/readers/make_fixtures.py.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from beleg.errors import IngestError, NoContent, UnsupportedFormatError
from beleg.ingest.readers import reader_for, supported_suffixes
from beleg.ingest.readers.docx import DocxReader
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MarkdownReader
from beleg.ingest.readers.pdf import PdfReader
from beleg.ingest.readers.text import TextReader
from beleg.types import ParsedDocument

DATA = Path(__file__).resolve().parents[1] / "data" / "readers"
GARBAGE = bytes(range(256)) * 4  # NUL bytes and invalid UTF-8


def read(name: str, **kwargs: str) -> ParsedDocument:
    path = DATA / name
    return reader_for(path).read(path.read_bytes(), path, **kwargs)


def assert_heading_lines(doc: ParsedDocument) -> None:
    """Every heading starts a line of ``text`` and that line carries its title."""
    for h in doc.headings:
        assert h.start == 0 or doc.text[h.start - 1] == "\n", h
        line = doc.text[h.start :].split("\n", 1)[0]
        assert h.title.split()[0] in line, (h, line)


# --- registry ----------------------------------------------------------------------


def test_registry_maps_suffixes_case_insensitively() -> None:
    assert supported_suffixes() == (".docx", ".htm", ".html", ".markdown", ".md", ".pdf", ".text", ".txt")
    assert isinstance(reader_for(Path("a/README.MD")), MarkdownReader)
    assert isinstance(reader_for(Path("x.htm")), HtmlReader)
    assert isinstance(reader_for(Path("x.txt")), TextReader)
    assert isinstance(reader_for(Path("x.Pdf")), PdfReader)
    assert isinstance(reader_for(Path("x.docx")), DocxReader)


@pytest.mark.parametrize("name", ["table.xlsx", "Makefile", "archive.tar.gz"])
def test_registry_rejects_unsupported_suffix(name: str) -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        reader_for(Path(name))
    message = str(info.value)
    assert "unsupported" in message and ".md" in message and ".pdf" in message
    assert isinstance(info.value, IngestError)


# --- markdown ------------------------------------------------------------------------


def test_markdown_front_matter_headings_and_title() -> None:
    doc = read("sample.md")
    assert doc.metadata == {
        "title": "Zustellung von Päckchen",
        "date": "2024-03-05",
        "tags": ["post", "zustellung"],
        "author": "Erika Mustermann",
    }
    assert doc.title == "Zustellung von Päckchen"
    assert doc.text.startswith("# Zustellung\n")  # front matter and blank line are gone
    assert "Größere Päckchen" in doc.text
    assert [(h.level, h.title) for h in doc.headings] == [
        (1, "Zustellung"),
        (2, "Zustellversuche"),
        (3, "Gebühren für Nachsendung"),  # link markup and closing '#'s removed
        (2, "Hinweise"),  # setext
    ]
    assert doc.text[doc.headings[1].start :].startswith("## Zustellversuche\n")
    assert doc.text[doc.headings[2].start :].startswith("### Gebühren für [Nachsendung]")
    assert doc.text[doc.headings[3].start :].startswith("Hinweise\n--------")
    assert_heading_lines(doc)
    # Inside fences and without a space after '#', nothing is a heading.
    assert "# kein Titel" in doc.text and "## auch kein Titel" in doc.text


def test_markdown_title_falls_back_to_first_h1() -> None:
    doc = MarkdownReader().read(b"Intro\n\n## Teil\n\n# Haupttitel\n\ntext\n", Path("a.md"))
    assert doc.title == "Haupttitel"
    assert doc.metadata == {}
    assert MarkdownReader().read(b"## nur H2\n", Path("a.md")).title is None


def test_markdown_front_matter_keys_lowercased_and_datetimes_are_dates() -> None:
    raw = "---\nUpdated: 2024-01-02 10:30:00\nNested: {Key: 2023-12-24}\n---\nBody\n"
    doc = MarkdownReader().read(raw.encode(), Path("a.md"))
    assert doc.metadata == {"updated": "2024-01-02", "nested": {"key": "2023-12-24"}}
    assert doc.text == "Body"


def test_markdown_invalid_yaml_names_the_line() -> None:
    raw = "---\ntitle: ok\nauthor: x: y\n---\nBody\n"  # line 3 of the file is wrong
    with pytest.raises(IngestError, match=r"front matter is not valid YAML \(line 3: "):
        MarkdownReader().read(raw.encode(), Path("a.md"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("---\n- a\n- b\n---\nBody\n", r"lines 2-3.*mapping"),
        ("---\ntitle: x\nBody without end\n", r"never closed"),
        ("---\ndate: 2024-13-45\n---\nBody\n", r"front matter .*not valid YAML"),
    ],
)
def test_markdown_bad_front_matter(raw: str, expected: str) -> None:
    with pytest.raises(IngestError, match=expected):
        MarkdownReader().read(raw.encode(), Path("a.md"))


def test_markdown_latin1_needs_encoding() -> None:
    raw = "# Überschrift\n\nGrüße aus Köln\n".encode("latin-1")
    with pytest.raises(IngestError, match="--encoding"):
        MarkdownReader().read(raw, Path("alt.md"))
    doc = MarkdownReader().read(raw, Path("alt.md"), encoding="latin-1")
    assert doc.text == "# Überschrift\n\nGrüße aus Köln"
    assert doc.title == "Überschrift"


def test_markdown_only_front_matter_is_an_error() -> None:
    with pytest.raises(IngestError, match="no text after the front matter"):
        MarkdownReader().read(b"---\ntitle: x\n---\n\n", Path("a.md"))


# --- plain text ----------------------------------------------------------------------


def test_text_round_trips_german() -> None:
    doc = read("sample.txt")
    expected = (DATA / "sample.txt").read_text(encoding="utf-8").strip()
    assert doc.text == expected
    assert "Öffnungszeiten" in doc.text and "8–12" in doc.text
    assert doc.headings == () and doc.metadata == {} and doc.title is None


def test_text_crlf_and_bom_are_normalised() -> None:
    doc = TextReader().read(b"\xef\xbb\xbfeins\r\nzwei\r\n", Path("a.txt"))
    assert doc.text == "eins\nzwei"


@pytest.mark.parametrize("reader", [TextReader(), MarkdownReader(), HtmlReader()])
def test_text_formats_reject_binary_garbage(reader: TextReader) -> None:
    with pytest.raises(IngestError, match="binary"):
        reader.read(GARBAGE, Path("x.bin"))


def test_text_invalid_utf8_without_nul_is_an_error() -> None:
    with pytest.raises(IngestError, match="not valid utf-8"):
        TextReader().read(b"caf\xe9 \xff\xfe", Path("a.txt"))


@pytest.mark.parametrize(
    "reader", [TextReader(), MarkdownReader(), HtmlReader(), PdfReader(), DocxReader()]
)
def test_every_reader_rejects_an_empty_file(reader: TextReader) -> None:
    with pytest.raises(IngestError, match="empty"):
        reader.read(b"", Path("empty"))


@pytest.mark.parametrize("reader", [TextReader(), MarkdownReader(), HtmlReader()])
def test_whitespace_only_is_an_error(reader: TextReader) -> None:
    with pytest.raises(IngestError, match=r"whitespace|no text|no readable text"):
        reader.read(b" \n\n\t\n", Path("blank"))


# --- HTML ------------------------------------------------------------------------------


def test_html_keeps_main_content_and_drops_boilerplate() -> None:
    doc = read("sample.html")
    for marker in ("NAV-", "SITE-BANNER", "COOKIE", "BREADCRUMB", "SIDEBAR", "FOOTER", "ASIDE",
                   "FORM-SUCHE", "TRACKING", "KOMMENTAR", "font-family"):  # fmt: skip
        assert marker not in doc.text, marker
    assert "Die Zustellung erfolgt werktags. Größere Päckchen werden an der Filiale hinterlegt." in doc.text
    assert "- Erster Versuch am Werktag\n- Zweiter Versuch\n  - nur nach Absprache" in doc.text
    assert "if versuch > 2:\n    hinterlegen()" in doc.text  # <pre> verbatim
    assert "| Leistung | Preis |\n| --- | --- |\n| Nachsendung | 5 € |" in doc.text
    assert "Adresse:\nPoststraße 1\n50667 Köln" in doc.text  # <br> is a line break
    assert [(h.level, h.title) for h in doc.headings] == [
        (1, "Zustellung von Päckchen"),  # inside <article><header>: kept
        (2, "Zustellversuche"),
        (3, "Gebühren"),
    ]
    assert doc.text[doc.headings[1].start :].startswith("## Zustellversuche\n")
    assert_heading_lines(doc)


def test_html_metadata_and_title() -> None:
    doc = read("sample.html")
    assert doc.title == "Zustellung – Poststelle Köln"
    assert doc.metadata == {
        "description": "Wie die Zustellung von Päckchen funktioniert.",
        "keywords": ["Zustellung", "Päckchen", "Filiale"],
        "author": "Erika Mustermann",
        "language": "de",
    }


def test_html_without_main_uses_body_and_first_h1_as_title() -> None:
    raw = (
        b"<html><body class='has-sidebar'><div id='main-menu'>MENU</div>"
        b"<div class='content'><h1>Titel</h1><p>Inhalt</p></div>"
        b"<div role='contentinfo'>INFO</div></body></html>"
    )
    doc = HtmlReader().read(raw, Path("a.html"))
    assert doc.text == "# Titel\n\nInhalt"
    assert doc.title == "Titel"
    assert doc.headings[0].start == 0


def test_html_class_words_do_not_remove_the_content_itself() -> None:
    raw = (
        b"<html><body><div class='wrapper with-sidebar'><div class='sidebar'>WIDGET</div>"
        b"<h2>Abschnitt</h2><p>Der eigentliche Inhalt des Artikels, lang genug.</p>"
        b"<table><tr class='header'><th>Spalte</th><th>Wert</th></tr><tr><td>a</td><td>1</td></tr></table>"
        b"</div></body></html>"
    )
    doc = HtmlReader().read(raw, Path("a.html"))
    assert doc.text == "## Abschnitt\n\nDer eigentliche Inhalt des Artikels, lang genug.\n\n| Spalte | Wert |\n| --- | --- |\n| a | 1 |"


def test_html_honours_meta_charset() -> None:
    raw = '<html><head><meta charset="iso-8859-1"></head><body><p>Grüße</p></body></html>'.encode("latin-1")
    assert HtmlReader().read(raw, Path("a.html")).text == "Grüße"
    raw_http_equiv = (
        '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>Maß</p>'
    ).encode("cp1252")
    assert HtmlReader().read(raw_http_equiv, Path("a.html")).text == "Maß"


def test_html_decoding_failures_are_ingest_errors() -> None:
    with pytest.raises(IngestError, match="--encoding"):
        HtmlReader().read("<p>Grüße</p>".encode("latin-1"), Path("a.html"))
    with pytest.raises(IngestError, match="unknown encoding"):
        HtmlReader().read(b'<meta charset="klingon-8"><p>x</p>', Path("a.html"))


def test_html_with_only_boilerplate_is_an_error() -> None:
    with pytest.raises(IngestError, match="no readable text"):
        HtmlReader().read(b"<nav>Start</nav><footer>Impressum</footer>", Path("a.html"))


# --- PDF -----------------------------------------------------------------------------


def test_pdf_text_metadata_and_hyphenation() -> None:
    doc = read("sample.pdf")
    assert "Zustellversuche ist im Jahr 2023" in doc.text  # "Zustell-\nversuche" joined
    assert "Zustell-" not in doc.text
    assert "Ein- und Ausgänge" in doc.text  # a suspended compound keeps its hyphen
    # Lines of one paragraph are joined; the sentence-final line keeps its break.
    assert "deutlich gestiegen, vor allem in ländlichen Gebieten mit großen Entfernungen.\n" in doc.text
    # Pages are joined by a blank line.
    assert doc.text.endswith("geprüft.\n\nSeite zwei: Übergabe an Nachbarn ist zulässig.")
    assert doc.title == "Zustellbericht 2023"
    assert doc.metadata == {
        "title": "Zustellbericht 2023",
        "author": "Erika Mustermann",
        "date": "2024-03-05",
        "language": "de",
    }
    assert doc.headings == ()


def test_pdf_without_text_layer() -> None:
    with pytest.raises(IngestError, match=r"no text layer \(scanned PDF\?\); OCR it first"):
        read("scanned.pdf")


def test_pdf_encrypted() -> None:
    with pytest.raises(IngestError, match="password-protected"):
        read("encrypted.pdf")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (GARBAGE, "not a PDF"),
        (b"%PDF-1.4\n" + GARBAGE, "corrupt or unreadable PDF: "),
        ((DATA / "sample.pdf").read_bytes()[:300], "corrupt or unreadable PDF: "),
    ],
)
def test_pdf_corrupt(data: bytes, expected: str) -> None:
    with pytest.raises(IngestError, match=expected):
        PdfReader().read(data, Path("bad.pdf"))


# --- DOCX ----------------------------------------------------------------------------


def test_docx_headings_lists_tables_and_metadata() -> None:
    doc = read("sample.docx")
    assert [(h.level, h.title) for h in doc.headings] == [
        (1, "Handbuch Zustellung"),  # Title style
        (1, "Zustellversuche"),
        (2, "Gebühren"),
        (2, "Rückfragen"),  # German style name "Überschrift 2"
    ]
    for h in doc.headings:
        assert doc.text[h.start :].startswith("#" * h.level + " " + h.title + "\n")
    assert "Dieses Handbuch beschreibt die Zustellung von Päckchen." in doc.text
    assert "- Erster Versuch am Werktag\n- Zweiter Versuch am Folgetag" in doc.text
    assert "## Gebühren\n\n| Leistung | Preis |\n| --- | --- |\n| Nachsendung | 5 € |\n| Lagerung | 2 € |\n\n## Rückfragen" in doc.text
    assert doc.title == "Handbuch Zustellung"
    assert doc.metadata == {
        "title": "Handbuch Zustellung",
        "author": "Erika Mustermann",
        "language": "de",
        "date": "2024-03-05",
    }


def test_docx_title_falls_back_to_first_heading_1() -> None:
    doc = read("untitled.docx")
    assert doc.title == "Einleitung"
    assert doc.text == "Vorwort ohne Überschrift.\n\n# Einleitung\n\nText der Einleitung."
    assert "title" not in doc.metadata


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (GARBAGE, "not a .docx file"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + GARBAGE, "legacy Word 97-2003"),
        (b"PK\x03\x04" + GARBAGE, "corrupt or invalid .docx"),
        (_zip({"hello.txt": b"not a word document"}), "corrupt or invalid .docx"),
        ((DATA / "sample.docx").read_bytes()[:2000], "corrupt or invalid .docx"),
    ],
)
def test_docx_corrupt(data: bytes, expected: str) -> None:
    with pytest.raises(IngestError, match=expected):
        DocxReader().read(data, Path("bad.docx"))


# --- all formats ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sample.md", "sample.txt", "sample.html", "sample.pdf", "sample.docx"])
def test_reading_is_deterministic_and_text_is_clean(name: str) -> None:
    first, second = read(name), read(name)
    assert first == second
    assert first.text == first.text.strip()
    assert "\n\n\n" not in first.text
    assert "ä" in first.text or "ö" in first.text or "ü" in first.text  # umlauts survived


# --- encodings -----------------------------------------------------------------------

UMLAUTS = "# Größe\n\nMaße und Grüße aus Köln\n"


@pytest.mark.parametrize("reader", [TextReader(), MarkdownReader()])
def test_valid_utf8_is_read_as_utf8_even_with_a_latin1_fallback(reader: TextReader) -> None:
    doc = reader.read(UMLAUTS.encode("utf-8"), Path("a"), encoding="latin-1")
    assert "Größe" in doc.text and "Ã" not in doc.text
    # The fallback still serves the files that are not UTF-8.
    assert "Größe" in reader.read(UMLAUTS.encode("latin-1"), Path("a"), encoding="latin-1").text


def test_html_valid_utf8_is_read_as_utf8_even_with_a_latin1_fallback() -> None:
    raw = "<p>Größe</p>".encode()
    assert HtmlReader().read(raw, Path("a.html"), encoding="latin-1").text == "Größe"
    assert HtmlReader().read("<p>Größe</p>".encode("latin-1"), Path("a.html"), encoding="latin-1").text == "Größe"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-32-be", "utf-8-sig"])
@pytest.mark.parametrize("reader", [TextReader(), MarkdownReader(), HtmlReader()])
def test_byte_order_marks_decide_the_encoding(codec: str, reader: TextReader) -> None:
    bom = {"utf-16-be": b"\xfe\xff", "utf-32-be": b"\x00\x00\xfe\xff"}.get(codec, b"")
    raw = bom + "Grüße\r\naus Köln".encode(codec)
    assert reader.read(raw, Path("a"), encoding="latin-1").text.replace("\n\n", "\n") in (
        "Grüße\naus Köln",
        "Grüße aus Köln",  # HTML collapses the line break
    )


def test_explicit_utf16_without_a_mark_is_used_as_given() -> None:
    assert TextReader().read("Grüße".encode("utf-16-le"), Path("a.txt"), encoding="utf-16-le").text == "Grüße"


@pytest.mark.parametrize(
    ("data", "encoding", "expected"),
    [
        (b"\xff\xfeG\x00r", None, r"not valid utf-16-le despite its UTF-16-LE byte-order mark"),
        (b"caf\xe9 \x81", "cp1252", r"neither valid utf-8 nor valid cp1252 \(byte 0x81 at offset 5\)"),
        (b"text", "klingon-8", "unknown encoding 'klingon-8'"),
        (b"text", "base64", "'base64' is not a character encoding"),
    ],
)
def test_undecodable_text_has_a_clear_reason(data: bytes, encoding: str | None, expected: str) -> None:
    with pytest.raises(IngestError, match=expected):
        TextReader().read(data, Path("a.txt"), encoding=encoding)


def test_html_meta_declaring_utf16_means_utf8() -> None:
    raw = '<meta charset="utf-16"><p>Grüße</p>'.encode()  # found by an ASCII scan: cannot be UTF-16
    assert HtmlReader().read(raw, Path("a.html")).text == "Grüße"


# --- intentionally empty files are NoContent (skipped), broken ones are not -----------


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (TextReader(), b""),
        (PdfReader(), b""),
        (DocxReader(), b""),
        (TextReader(), b" \n\t\n"),
        (MarkdownReader(), b"\n\n  \n"),
        (MarkdownReader(), b"---\ntitle: Moved\naliases: [/old/]\nredirect: /new/\n---\n\n"),
        (HtmlReader(), b"  \n"),
        (HtmlReader(), b'<html><head><meta http-equiv="refresh" content="0; url=/neu"></head><body></body></html>'),
    ],
)
def test_intentionally_empty_files_raise_no_content(reader: TextReader, data: bytes) -> None:
    with pytest.raises(NoContent):
        reader.read(data, Path("stub"))


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (HtmlReader(), b"<nav>Start</nav><footer>Impressum</footer>"),
        (MarkdownReader(), b"---\ntitle: [unclosed\n---\nBody\n"),
        (TextReader(), GARBAGE),
    ],
)
def test_broken_or_emptied_files_are_not_no_content(reader: TextReader, data: bytes) -> None:
    with pytest.raises(IngestError) as info:
        reader.read(data, Path("x"))
    assert not isinstance(info.value, NoContent)
