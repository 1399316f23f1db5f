"""Hidden text, round 4: what a tester's probes of the hidden-text rules found.

Pathological inputs that made a pre-check or a style lookup super-linear, values a browser
or Word ignores that raised instead, and PDF pages whose rewrite lost their font encoding.
The speed tests use no timers: each input is sized so that the fixed code reads it at once
while the old code did not finish (minutes to hours), which a suite timeout would show.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beleg.ingest.readers.markdown_hidden import blank_hidden
from beleg.ingest.readers.pdf import PdfReader
from tests.ingest.test_hidden_text import docx_text, html_text, pdf_file, pdf_text
from tests.ingest.test_hidden_text_3 import _rpr

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

# --- PDF: the pre-check that decides whether a page is parsed ---------------------------


@pytest.mark.parametrize("shown", [
    b"(" + b"7" * 3000 + b") Tj",  # a digit run: 2000 digits took 14 s, 20000 hours
    b"<" + b"0024" * 1000 + b"> Tj",  # a hex glyph string is a digit run too
    b"(" + b"1 " * 5 + b"7" * 3000 + b" ) Tj",  # five numbers, then the run as the sixth
])  # fmt: skip
def test_pdf_precheck_is_linear_on_long_digit_runs(shown: bytes) -> None:
    content = b"BT /F1 12 Tf 72 700 Td (Shown.) Tj 0 -20 Td " + shown + b" ET"
    assert pdf_text(content).startswith("Shown.")


# --- DOCX: long basedOn chains and many styles -------------------------------------------


def _docx_with_styles(styles_xml: str, build: Callable[[Any], None]) -> str:
    """Read a document whose styles part also holds ``styles_xml`` (``w:style`` elements)."""
    from docx.oxml import parse_xml

    def add(document: Any) -> None:
        wrapper = parse_xml(f'<w:x xmlns:w="{_W}">{styles_xml}</w:x>')
        document.styles.element.extend(list(wrapper))
        build(document)

    return docx_text(add)


def _style(style_id: str, based_on: str, rpr: str = "") -> str:
    return (
        f'<w:style w:type="paragraph" w:styleId="{style_id}"><w:name w:val="{style_id}"/>'
        f'<w:basedOn w:val="{based_on}"/><w:rPr>{rpr}</w:rPr></w:style>'
    )


def _styled(document: Any, text: str, style_id: str) -> None:
    from docx.oxml import parse_xml

    document.element.body.append(
        parse_xml(
            f'<w:p xmlns:w="{_W}"><w:pPr><w:pStyle w:val="{style_id}"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>'
        )
    )


def test_docx_long_basedon_chain_is_resolved_once_and_cycles_end() -> None:
    # 20,000 styles, each based on the next, the last one white; then a basedOn cycle.
    # Walking the chain anew from each style took minutes, and so did python-docx's style
    # lookup (it scans every style) for each paragraph.
    n = 20_000
    chain = "".join(_style(f"S{i}", f"S{i + 1}") for i in range(n - 1))
    chain += _style(f"S{n - 1}", "Normal", '<w:color w:val="FFFFFF"/>')
    cycle = _style("C0", "C1") + _style("C1", "C0")

    def build(document: Any) -> None:
        _styled(document, "Hidden by the chain.", "S0")
        for i in range(0, n, 100):
            _styled(document, f"Hidden too {i}.", f"S{i}")
        _styled(document, "Shown in a cycle.", "C0")
        document.add_heading("Shown heading.", 2)

    text = _docx_with_styles(chain + cycle, build)
    assert "Hidden" not in text
    assert "Shown in a cycle." in text and "## Shown heading." in text


# --- HTML and HTML in Markdown: function values, empty values ----------------------------


@pytest.mark.parametrize("transform", [
    "a" * 100_000,  # 20,000 letters took 4 s, 100,000 took 87 s
    "translate(0) " + "b" * 100_000 + " scale(1)",
])  # fmt: skip
def test_function_values_are_read_in_linear_time(transform: str) -> None:
    body = f'<p style="transform: {transform}">Shown transformed.</p>'
    assert "Shown transformed." in html_text(body)
    assert "Shown transformed." in blank_hidden(f"Lead.\n\n{body}\n")


@pytest.mark.parametrize("style", [
    "-webkit-text-stroke:", "-webkit-text-stroke: !important", "-webkit-text-stroke-width:",
    "-webkit-text-stroke-width: !important;font-weight:bold", "color:;-webkit-text-stroke: ",
])  # fmt: skip
def test_empty_values_are_ignored_as_a_browser_does(style: str) -> None:
    # Before: IndexError, and the whole page (or Markdown file) failed to read.
    assert "Shown stroked." in html_text(f'<p style="{style}">Shown stroked.</p>')
    assert "Shown stroked." in html_text('<p class="x">Shown stroked.</p>', f"<style>.x{{{style}}}</style>")
    assert "Shown stroked." in blank_hidden(f'Lead.\n\n<span style="{style}">Shown stroked.</span>\n')
    # Ignored, not read as an outline: white on white stays unseen, and 'display:' does not
    # undo an earlier 'display:none'.
    for hiding in (f"color:#fff;background:#fff;{style}", f"display:none;display:;{style}"):
        assert "Secret" not in html_text(f'<p style="{hiding}">Secret.</p>')
        assert "Secret" not in blank_hidden(f'Lead.\n\n<span style="{hiding}">Secret.</span>\n')


# --- DOCX: numbers Word would not write -----------------------------------------------------


@pytest.mark.parametrize("size", ["²", "٣", "abc", "", "1e5", "-5", "2.5", "24 ", "9" * 30, "\uff12"])
def test_docx_odd_font_sizes_are_not_judged(size: str) -> None:
    # Before: '²'.isdigit() let int() raise, and the whole document failed to read.
    def build(document: Any) -> None:
        p = document.add_paragraph("Lead. ")
        _rpr(p.add_run("Shown odd size."), f'<w:sz w:val="{size}"/>')
        _rpr(document.add_paragraph().add_run("Secret tiny."), '<w:sz w:val="2"/>')

    text = docx_text(build)
    assert "Shown odd size." in text and "Secret" not in text


# --- PDF: pages with two-byte (Type0, Identity-H) fonts -----------------------------------


def _type0_pdf(lines: list[tuple[bytes, str]]) -> bytes:
    """A page showing each ``(state, text)`` line in a Type0/Identity-H font, as fpdf2, Word
    and LibreOffice embed TrueType: two-byte glyph codes (1, 2, ... per character, so some
    are control bytes), mapped back to text by a ToUnicode CMap. ``state`` is content put
    before the text in its BT block (a colour, a render mode)."""
    chars = sorted({c for _, text in lines for c in text})
    code = {c: i + 1 for i, c in enumerate(chars)}

    def shown(text: str) -> bytes:
        raw = b"".join(code[c].to_bytes(2, "big") for c in text)
        return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)").replace(b"\r", b"\\r")

    # The font is set in a block of its own, as fpdf2 writes it: Tf outlives ET.
    content = b"BT /F1 12 Tf ET\n" + b"".join(
        b"BT 72 %d Td %s (%s) Tj ET\n" % (700 - 20 * i, state, shown(text)) for i, (state, text) in enumerate(lines)
    )
    bfchar = b"".join(b"<%04X> <%04X>\n" % (code[c], ord(c)) for c in chars)
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        b"/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n"
        b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
        b"%d beginbfchar\n%sendbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end"
        % (len(chars), bfchar)
    )
    return pdf_file([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+DejaVuSans /Encoding /Identity-H "
        b"/DescendantFonts [6 0 R] /ToUnicode 7 0 R >>",
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+DejaVuSans /CIDToGIDMap /Identity "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 600 >>",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    ])  # fmt: skip


_TYPE0_LINES = [
    (b"", "Shown first: Grüße, café (naïve)."),
    (b"1 1 1 rg", "Secret in white."),
    (b"0 g", "Shown last."),
]


def test_pdf_type0_page_keeps_its_text_when_hidden_text_is_left_out() -> None:
    # Before: the rewritten page extracted as control characters ('\x01\x02\x03...').
    text = PdfReader().read(_type0_pdf(_TYPE0_LINES), Path("a.pdf")).text
    assert text == "Shown first: Grüße, café (naïve).\nShown last."


def test_pdf_rewrite_that_garbles_the_text_falls_back_to_the_page_as_it_is(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A rewrite that loses the encoding (as the old one did: strings parsed as text) must
    # not be indexed: the page is extracted unchanged, and that is logged.
    from pypdf.generic import ContentStream, NameObject

    from beleg.ingest.readers import pdf

    def garbling_rewrite(page: Any, reader: Any) -> bool:
        stream = ContentStream(None, reader)
        stream.operations = ContentStream(page.get_contents(), reader).operations
        page[NameObject("/Contents")] = stream
        return True

    monkeypatch.setattr(pdf, "drop_invisible_text", garbling_rewrite)
    text = PdfReader().read(_type0_pdf(_TYPE0_LINES), Path("a.pdf")).text
    assert text == "Shown first: Grüße, café (naïve).\nSecret in white.\nShown last."
    assert "garbled" in caplog.text


# --- Markdown: children that show their text again ------------------------------------------


@pytest.mark.parametrize("body", [
    '<div style="color:transparent">Secret own text. <span style="color:#000">Shown child.</span> Secret tail.</div>',
    '<p style="font-size:0">Secret. <span style="font-size:16px">Shown child.</span></p>',
    '<div style="color:#fff;background:#fff">Secret. <em><b style="color:#123">Shown grandchild.</b> Secret.</em></div>',
    '<div style="color:transparent"><span>Secret inherited. <i style="color:red">Shown.</i></span> Secret.</div>',
    # an inherited fill colour paints over any 'color': still unseen
    '<div style="-webkit-text-fill-color:transparent">Secret. <span style="color:#000">Secret child.</span></div>',
    '<div style="color:transparent">Secret. <span style="color:#000">Shown, unclosed.</div> After.',
])  # fmt: skip
def test_markdown_keeps_children_that_show_again_like_html(body: str) -> None:
    # Before: Markdown blanked the whole element, children that set a colour or size again
    # included; the HTML reader keeps them. Both now judge alike.
    markdown = blank_hidden(f"Lead.\n\n{body}\n")
    html = html_text(body)
    assert "Secret" not in markdown and "Secret" not in html
    shown = [w for w in ("Shown child.", "Shown grandchild.", "Shown.", "Shown, unclosed.", "After.") if w in body]
    for words in shown:
        assert words in markdown and words in html


def test_markdown_deeply_nested_unseen_elements_are_blanked_whole() -> None:
    # Past MAX_UNSEEN_NESTING levels an element is blanked whole, its children included.
    nested = '<span style="color:transparent">Secret ' * 5_000 + '<b style="color:#000">Deep.</b>' + "</span>" * 5_000
    out = blank_hidden(f"Lead.\n\n{nested}\n\nAfter.\n")
    assert "Secret" not in out and "Deep." not in out and "Lead." in out and "After." in out
