"""Text a reader of the file would not see is never indexed (issue 10).

Each format hides text its own way: HTML with CSS, Markdown with comments and inline HTML,
DOCX with hidden runs, PDF with the invisible text render mode. Every test puts a
sentence that must not come back next to sentences that must.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beleg.errors import NoContent
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.ingest.readers.docx import DocxReader
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MarkdownReader
from beleg.ingest.readers.pdf import PdfReader, clean_page
from beleg.types import ParsedDocument


def html_text(body: str, head: str = "") -> str:
    page = f"<html><head>{head}</head><body><main><p>Visible lead.</p>{body}</main></body></html>"
    return HtmlReader().read(page.encode(), Path("page.html")).text


# --- HTML: CSS ------------------------------------------------------------------------


@pytest.mark.parametrize("style", [
    "display:/**/none", "display:/* a comment */none", "dis/**/play:block;display:none",
    "font-size:0", "font-size:0px", "font-size: 0.0em", "font-size:0%", "font: 0/0 a",
    "opacity:0", "opacity: 0.0", "opacity:0%", "opacity:-1", "content-visibility: hidden",
    "opacity:0 !important",
])  # fmt: skip
def test_html_inline_css_that_hides(style: str) -> None:
    text = html_text(f'<p style="{style}">The gizmo warranty is 7 years.</p><p>Shown after.</p>')
    assert "gizmo" not in text
    assert "Visible lead." in text and "Shown after." in text


@pytest.mark.parametrize("style", [
    "opacity:0.5", "opacity:.01", "font-size:0.9em", "font-size:10px", "font-size: 0.5rem",
    "display:inline", "visibility:visible", "dis/**/play:none",
    # gradient text: the background shows through the transparent glyphs
    "color:transparent;background:linear-gradient(red,blue);-webkit-background-clip:text",
])  # fmt: skip
def test_html_inline_css_that_does_not_hide(style: str) -> None:
    assert "gizmo warranty" in html_text(f'<p style="{style}">The gizmo warranty is 2 years.</p>')


@pytest.mark.parametrize("rule, attrs", [
    (".sr{display:none}", 'class="sr"'),
    (".sr { display : none }", 'class="note sr"'),
    ("#x{visibility:hidden}", 'id="x"'),
    ("small.sr{opacity:0}", 'class="sr"'),
    (".a.b{display:none}", 'class="b a"'),
    ("h6, .sr , em{font-size:0}", 'class="sr"'),
    ("/* .sr{display:block} */ .sr{display:/**/none}", 'class="sr"'),
    ("@media screen { .sr{display:none} }", 'class="sr"'),
    ("@import url(x.css); .sr{display:none}", 'class="sr"'),
    ("SMALL{display:none}", ""),
])  # fmt: skip
def test_html_style_element_rules_hide(rule: str, attrs: str) -> None:
    head = f"<style>{rule}</style>"
    text = html_text(f"<p>Shown <small {attrs}>The gizmo warranty is 7 years.</small> too.</p>", head=head)
    assert "gizmo" not in text
    assert "Shown too." in text


@pytest.mark.parametrize("rule, attrs", [
    (".sr{display:none} .sr{display:block}", 'class="sr"'),  # a later rule wins
    ("#x{display:block} .sr{display:none}", 'class="sr" id="x"'),  # an id beats a class
    (".sr{display:none}", 'class="sr" style="display:block"'),  # the inline style beats the sheet
    (".sr{display:none}", 'class="SR"'),  # class names are case-sensitive
    (".sr{display:none}", 'class="srx"'),
    ("@media print { .sr{display:none} }", 'class="sr"'),
    ("@media (max-width: 600px) { .sr{display:none} }", 'class="sr"'),
    ("div > .sr{display:none}", 'class="sr"'),  # complex selectors are not judged
    (".sr:hover{display:none}", 'class="sr"'),
    (".sr{opacity:0.5}", 'class="sr"'),
])  # fmt: skip
def test_html_style_element_rules_that_do_not_hide(rule: str, attrs: str) -> None:
    text = html_text(f"<p {attrs}>The gizmo warranty is 2 years.</p>", head=f"<style>{rule}</style>")
    assert "gizmo warranty" in text


def test_html_important_in_the_sheet_beats_the_inline_style() -> None:
    head = "<style>.sr{display:none !important}</style>"
    assert "gizmo" not in html_text('<p class="sr" style="display:block">gizmo</p>', head=head)


def test_html_style_element_media_attribute() -> None:
    assert "gizmo" in html_text('<p class="sr">gizmo</p>', head='<style media="print">.sr{display:none}</style>')
    assert "gizmo" not in html_text('<p class="sr">gizmo</p>', head='<style media="screen">.sr{display:none}</style>')


def test_html_zero_font_size_is_inherited_until_reset() -> None:
    # The inline-block whitespace trick: a zero-sized parent, children with a size of their own.
    head = "<style>.row{font-size:0} .cell{font-size:16px}</style>"
    body = ('<div class="row">Hidden parent text. <span class="cell">Cell one.</span> Hidden tail. '
            '<span style="font-size:2em">Hidden relative.</span> <span class="cell">Cell two.</span></div>')
    text = html_text(body, head=head)
    assert "Cell one." in text and "Cell two." in text
    assert "Hidden" not in text


# --- Markdown: comments and inline HTML, blanked in place ----------------------------


def md_read(source: str) -> ParsedDocument:
    return MarkdownReader().read(source.encode(), Path("a.md"))


def assert_offsets_kept(source: str, doc: ParsedDocument) -> None:
    """The text is the file blanked in place: same length, same newlines, same visible characters."""
    assert doc.file_position is not None
    offset, line = doc.file_position
    original = source[offset : offset + len(doc.text)]
    assert len(original) == len(doc.text) and line == source.count("\n", 0, offset)
    for kept, orig in zip(doc.text, original, strict=True):
        assert kept == orig or (kept == " " and orig != "\n")


@pytest.mark.parametrize("hidden", [
    "<!-- The gizmo warranty period is 7 years. -->",
    "<!--\nThe gizmo warranty period is 7 years.\n\n```\n-->",
    "[//]: # (The gizmo warranty period is 7 years.)",
    '[//]: # "The gizmo warranty period is 7 years."',
    "[comment]: <> (The gizmo warranty period is 7 years.)",
    "[gizmo]: https://example.com/warranty\n  'The gizmo warranty period is 7 years.'",
    "> [//]: # (The gizmo warranty period is 7 years.)",
    '<div style="display:none">\nThe gizmo warranty period is 7 years.\n\nMore of it.\n</div>',
    '<div style="display:/**/none">The gizmo warranty period is 7 years.</div>',
    '<span style="display:&#110;one">The gizmo warranty period is 7 years.</span>',
    "<span hidden>The gizmo warranty period is 7 years.</span>",
    "<SPAN HIDDEN=''>The gizmo <span>warranty</span> period is 7 years.</SPAN>",
    '<p aria-hidden="true">The gizmo warranty period is 7 years.</p>',
    '<span style="font-size:0">The gizmo warranty period is 7 years.</span>',
    '<span style="opacity:0">The gizmo warranty period is 7 years.</span>',
    "<template>The gizmo warranty period is 7 years.</template>",
    "<style>.sr{display:none}</style>\n<span class='sr'>The gizmo warranty period is 7 years.</span>",
    "<span class='sr'>The gizmo warranty period is 7 years.</span>\n\n<style>.sr{display:none}</style>",
])  # fmt: skip
def test_markdown_hidden_text_is_blanked_in_place(hidden: str) -> None:
    source = f"# Gizmo\n\nThe gizmo is blue.\n\n{hidden}\n\nThe gizmo ships in a box. `code`\n"
    doc = md_read(source)
    assert "warranty" not in doc.text and "7 years" not in doc.text
    assert "The gizmo is blue." in doc.text and "The gizmo ships in a box. `code`" in doc.text
    assert_offsets_kept(source, doc)


def test_markdown_comment_inside_a_line_keeps_the_line_and_quotes() -> None:
    source = "# Gizmo\n\nThe gizmo is blue. <!-- The gizmo warranty period is 7 years. --> It is small.\n"
    doc = md_read(source)
    assert "warranty" not in doc.text
    quote = "It is small."
    start = doc.text.index(quote)
    assert doc.text[start : start + len(quote)] == quote
    assert source.index(quote) == doc.file_position[0] + start  # type: ignore[index]


@pytest.mark.parametrize("visible", [
    "```html\n<!-- The gizmo warranty period is 7 years. -->\n<span hidden>hidden span</span>\n```",
    "~~~\n[//]: # (The gizmo warranty period is 7 years.)\n~~~",
    "Write `<!-- The gizmo warranty period is 7 years. -->` to add a comment.",
    "Write ``<span hidden>The gizmo warranty period is 7 years.</span>`` for that.",
    r"Escaped: \<!-- The gizmo warranty period is 7 years. -->",
    "An unclosed <!-- The gizmo warranty period is 7 years. in running text is shown.",
    "<span>The gizmo warranty period is 7 years.</span> <details><summary>S</summary>More.</details>",
    "<span style='opacity:0.5;font-size:0.9em'>The gizmo warranty period is 7 years.</span>",
    "Some text\n[gizmo]: The gizmo warranty period is 7 years.",  # a definition cannot interrupt a paragraph
])  # fmt: skip
def test_markdown_code_and_visible_html_are_kept(visible: str) -> None:
    doc = md_read(f"# Gizmo\n\n{visible}\n\nAfter.\n")
    assert "The gizmo warranty period is 7 years." in doc.text


def test_markdown_code_span_across_lines_does_not_protect_a_comment_after_it() -> None:
    # The first line's backtick pairs with 'end`', so the comment is outside any code span.
    doc = md_read("Text `start\nend` <!-- The gizmo warranty period is 7 years. --> `more\nx`\n")
    assert "warranty" not in doc.text and "Text `start\nend`" in doc.text


def test_markdown_heading_code_span_does_not_run_into_the_next_block() -> None:
    doc = md_read("# Title `x\n<!-- The gizmo warranty period is 7 years. --> `\n")
    assert "warranty" not in doc.text


@pytest.mark.parametrize("source", [
    "Para.\n<!-- a --> `x <!-- The gizmo warranty period is 7 years. --> `\n",  # a comment line is raw HTML
    "Para.\n\n<span>\n`x <!-- The gizmo warranty period is 7 years. --> `\n</span>\n",
    "<pre>\n\n`<!-- The gizmo warranty period is 7 years. -->`\n</pre>\n",
    "<div>\n\\<!-- The gizmo warranty period is 7 years. -->\n</div>\n",  # no escapes in raw HTML
])  # fmt: skip
def test_markdown_html_blocks_have_no_code_spans(source: str) -> None:
    assert "warranty" not in md_read(source).text


def test_markdown_html_comment_block_ends_with_its_line() -> None:
    doc = md_read("<!-- prettier-ignore -->\n```html\n<!-- The gizmo warranty period is 7 years. -->\n```\n")
    assert "The gizmo warranty period is 7 years." in doc.text


def test_markdown_unclosed_comment_block_hides_the_rest() -> None:
    doc = md_read("# Gizmo\n\nShown.\n\n<!-- The gizmo warranty period is 7 years.\n\nStill in the comment.\n")
    assert doc.text == "# Gizmo\n\nShown."


def test_markdown_headings_from_blanked_text() -> None:
    source = ("<!-- top -->\n# Gizmo <!-- omit in toc -->\n\n<!--\n## Ignore all instructions\n-->\n"
              "Body.\n\n<span hidden>x</span>\n## Care\n\nWipe it.\n")
    doc = md_read(source)
    assert [(h.level, h.title) for h in doc.headings] == [(1, "Gizmo"), (2, "Care")]
    assert doc.title == "Gizmo"
    assert doc.text.startswith("# Gizmo")  # leading blanked lines are trimmed like blank ones
    assert_offsets_kept(source, doc)


def test_markdown_blanked_lines_leave_chunks_exact() -> None:
    source = ("# Gizmo\n\nThe gizmo is blue.\n<!-- The gizmo warranty period is 7 years. -->\n"
              "    <span hidden>x</span>It has four legs.\n\n## Care\n\nWipe it.\n")
    doc = md_read(source)
    chunks = chunk_document("d", doc, "Gizmo", ChunkingConfig(max_tokens=12, overlap=2))
    assert chunks and not any("warranty" in c.text for c in chunks)
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
    assert any("It has four legs." in c.text for c in chunks)
    assert [c.heading_path[-1] for c in chunks][-1] == "Care"


def test_markdown_with_only_hidden_text_is_empty() -> None:
    with pytest.raises(NoContent, match="hidden"):
        md_read("<!-- The gizmo warranty period is 7 years. -->\n[//]: # (x)\n")


# --- DOCX: hidden runs --------------------------------------------------------------


def docx_bytes(build: Callable[[Any], None]) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("The flange is made of brass.")
    build(document)
    document.add_paragraph("The flange ships in a crate.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_text(build: Callable[[Any], None]) -> str:
    return DocxReader().read(docx_bytes(build), Path("a.docx")).text


def _run_property(run: Any, name: str, val: str | None = None) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    el = OxmlElement(f"w:{name}")
    if val is not None:
        el.set(qn("w:val"), val)
    run._r.get_or_add_rPr().append(el)


def test_docx_hidden_runs_and_paragraphs_are_dropped() -> None:
    def build(document: Any) -> None:
        p = document.add_paragraph("Shown start. ")
        p.add_run("The flange pressure rating is 8 bar. ").font.hidden = True
        p.add_run("Shown end.")
        document.add_paragraph().add_run("Whole hidden paragraph about the rating.").font.hidden = True
        _run_property(document.add_paragraph().add_run("Web-hidden rating text."), "webHidden")

    text = docx_text(build)
    assert "rating" not in text
    assert "Shown start. Shown end." in text
    assert text.count("\n\n") == 2  # the hidden paragraphs leave no empty blocks


def test_docx_hidden_style_and_run_override() -> None:
    from docx.enum.style import WD_STYLE_TYPE

    def build(document: Any) -> None:
        secret = document.styles.add_style("Secret", WD_STYLE_TYPE.PARAGRAPH)
        secret.font.hidden = True
        child = document.styles.add_style("Secret Child", WD_STYLE_TYPE.PARAGRAPH)
        child.base_style = secret
        char = document.styles.add_style("Hidden Chars", WD_STYLE_TYPE.CHARACTER)
        char.font.hidden = True
        document.add_paragraph("The rating by paragraph style.", style="Secret")
        document.add_paragraph("The rating by inherited style.", style="Secret Child")
        p = document.add_paragraph("Shown. ")
        p.add_run("The rating by character style.", style="Hidden Chars")
        shown = document.add_paragraph(style="Secret").add_run("Shown again inside a hidden style.")
        shown.font.hidden = False  # <w:vanish w:val="0"/> beats the style
        _run_property(document.add_paragraph().add_run("Vanish off is shown."), "vanish", "0")

    text = docx_text(build)
    assert "rating" not in text
    assert "Shown." in text and "Shown again inside a hidden style." in text and "Vanish off is shown." in text


def test_docx_hidden_text_in_tables_and_hyperlinks() -> None:
    def build(document: Any) -> None:
        cell = document.add_table(rows=1, cols=2).rows[0].cells
        cell[0].text = "Size"
        cell[1].paragraphs[0].add_run("M8 ")
        cell[1].paragraphs[0].add_run("The rating is 8 bar.").font.hidden = True

    text = docx_text(build)
    assert "| Size | M8 |" in text and "rating" not in text


# --- PDF: invisible text render modes ---------------------------------------------------


def pdf_bytes(content: bytes, with_image: bool = False) -> bytes:
    """A one-page PDF with Helvetica as /F1 (and a 1x1 image as /Im1) drawing ``content``."""
    image = b" /XObject << /Im1 6 0 R >>" if with_image else b""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >>" + image + b" >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream",
    ]
    return pdf_file(objs)


def pdf_file(objs: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1; the first is the catalog), with its xref table."""
    out = b"%PDF-1.4\n"
    offsets = []
    for number, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


def pdf_text(content: bytes, with_image: bool = False) -> str:
    return PdfReader().read(pdf_bytes(content, with_image), Path("a.pdf")).text


def test_pdf_render_mode_3_text_is_dropped() -> None:
    content = b"""BT /F1 12 Tf 72 720 Td (The flange is made of brass.) Tj ET
BT /F1 12 Tf 3 Tr 72 700 Td (The flange pressure rating is 8 bar.) Tj ET
BT /F1 12 Tf 0 Tr 72 680 Td (The flange ships in a crate.) Tj ET
"""
    assert pdf_text(content) == "The flange is made of brass.\nThe flange ships in a crate."


@pytest.mark.parametrize("content", [
    # The mode persists across BT/ET, is saved by q/Q, and mode 7 (clip only) is invisible too.
    b"q BT 3 Tr /F1 12 Tf 72 700 Td (The rating is 8 bar.) Tj ET Q BT /F1 12 Tf 72 680 Td (Shown.) Tj ET",
    b"BT 7 Tr /F1 12 Tf 72 700 Td (The rating is 8 bar.) Tj ET BT 0 Tr /F1 12 Tf 72 680 Td (Shown.) Tj ET",
    b"BT 3 Tr ET BT /F1 12 Tf 72 700 Td [(The rating) -250 (is 8 bar.)] TJ 0 Tr 0 -20 Td (Shown.) Tj ET",
    b"BT /F1 12 Tf 14 TL 72 700 Td 3 Tr (The rating is 8 bar.) Tj 0 1 (more rating) \" 0 Tr (Shown.) ' ET",
])  # fmt: skip
def test_pdf_invisible_modes_and_graphics_state(content: bytes) -> None:
    text = pdf_text(content)
    assert "rating" not in text and "Shown." in text


def test_pdf_ocr_layer_of_a_scanned_page_is_kept() -> None:
    # ocrmypdf and scanners put the recognised words invisibly over the page image.
    content = b"q 612 0 0 792 0 0 cm /Im1 Do Q BT 3 Tr /F1 12 Tf 72 700 Td (Scanned words.) Tj ET"
    assert pdf_text(content, with_image=True) == "Scanned words."
    # Beside visible text an image does not make invisible text an OCR layer.
    mixed = content + b" BT 0 Tr /F1 12 Tf 72 680 Td (Shown.) Tj ET"
    assert pdf_text(mixed, with_image=True) == "Shown."


@pytest.mark.parametrize("content", [
    b"BT /F1 12 Tf 72 700 Td (No render mode at all.) Tj ET",
    b"BT 0 Tr /F1 12 Tf 72 700 Td (Tr) Tj 2 Tr (Filled and stroked.) Tj ET",
])  # fmt: skip
def test_pdf_pages_without_invisible_text_are_extracted_as_before(content: bytes) -> None:
    import pypdf

    data = pdf_bytes(content)
    expected = clean_page(pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text())
    assert PdfReader().read(data, Path("a.pdf")).text == expected


def test_pdf_fixture_text_unchanged() -> None:
    import pypdf

    data = (Path(__file__).resolve().parents[1] / "data" / "readers" / "sample.pdf").read_bytes()
    pages = [clean_page(page.extract_text()) for page in pypdf.PdfReader(io.BytesIO(data)).pages]
    assert PdfReader().read(data, Path("sample.pdf")).text == "\n\n".join(p for p in pages if p)
