"""Text a reader of the file would not see is never indexed (issue 10).

Each format hides text its own way: HTML with CSS, Markdown with comments and inline HTML,
DOCX with hidden runs, PDF with the invisible text render mode. Every test puts a
sentence that must not come back next to sentences that must.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beleg.ingest.readers.html import HtmlReader


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
    "display:inline", "visibility:visible", "dis/**/play:none", "color:transparent",
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
