"""Bounded fuzzing of every reader: whatever the bytes, only IngestError escapes, memory stays bounded.

Inputs are random bytes, mutations of the sample files in tests/data/readers (and of the
XML inside the DOCX), random YAML-ish front matter and random HTML nesting. The run is
derandomized so CI is reproducible and about a minute at most on two cores; for a longer
local hunt set a seed and more examples::

    BELEG_FUZZ_SEED=123 BELEG_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest -q tests/ingest/test_fuzz_readers.py
"""

from __future__ import annotations

import io
import os
import resource
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from beleg.errors import IngestError
from beleg.ingest.readers import reader_for
from beleg.ingest.readers.docx import DocxReader
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MarkdownReader, split_front_matter
from beleg.ingest.readers.pdf import PdfReader
from beleg.ingest.readers.text import TextReader
from beleg.types import ParsedDocument

DATA = Path(__file__).resolve().parents[1] / "data" / "readers"
SAMPLES = {p.name: p.read_bytes() for p in sorted(DATA.iterdir()) if p.suffix != ".py"}
READERS = [TextReader(), MarkdownReader(), HtmlReader(), PdfReader(), DocxReader()]
# Growth of the process's peak resident memory the whole fuzz run may cause.
MAX_RSS_GROWTH_MIB = 400

# 2,000 examples per property: about 35 s on 2 idle cores, the "about a minute in CI" budget.
_EXAMPLES = int(os.environ.get("BELEG_FUZZ_EXAMPLES", "2000"))
_SEED = os.environ.get("BELEG_FUZZ_SEED")


def fuzz(examples: int = _EXAMPLES):  # noqa: ANN201 - returns a decorator
    """Hypothesis settings for these tests: reproducible by default, seedable for long runs."""

    def apply(test):  # noqa: ANN001, ANN202
        configured = settings(
            max_examples=examples,
            deadline=None,  # a shared CI core makes single examples slow now and then
            derandomize=_SEED is None,
            database=None,  # no .hypothesis folder in the working tree
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )(test)
        return seed(int(_SEED))(configured) if _SEED is not None else configured

    return apply


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@pytest.fixture(scope="module", autouse=True)
def bounded_memory():  # noqa: ANN201
    """Warm up every reader on its sample, then hold the peak RSS growth of the module."""
    for name, data in SAMPLES.items():
        try:
            reader_for(Path(name)).read(data, Path(name))
        except IngestError:
            pass  # scanned.pdf, encrypted.pdf
    before = _peak_rss_mib()
    yield
    grown = _peak_rss_mib() - before
    assert grown < MAX_RSS_GROWTH_MIB, f"peak RSS grew by {grown:.0f} MiB while fuzzing"


def check(reader, data: bytes, name: str = "fuzz") -> None:  # noqa: ANN001
    """The reader's contract under arbitrary input."""
    try:
        doc = reader.read(data, Path(name))
    except IngestError as exc:
        assert str(exc) and "\n" not in str(exc), repr(exc)  # one clear line
        return
    assert isinstance(doc, ParsedDocument)
    assert doc.text.strip(), "a document was returned without text"
    for heading in doc.headings:
        assert 0 <= heading.start < len(doc.text), heading
        assert heading.start == 0 or doc.text[heading.start - 1] == "\n", heading


# --- mutations ------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after a few random edits: flips, deletions, insertions, duplications, cuts."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "duplicate", "truncate"]))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == "flip" and out:
            out[at] = draw(st.integers(0, 255))
        elif kind == "delete":
            del out[at : at + draw(st.integers(1, 64))]
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=32))
        elif kind == "duplicate":
            piece = out[at : at + draw(st.integers(1, 256))]
            out[at:at] = piece * draw(st.integers(1, 50))
        else:
            del out[at:]
    return bytes(out)


def _rezip(original: bytes, name: str, replacement: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, replacement if info.filename == name else src.read(info))
    return buf.getvalue()


_DOCX = SAMPLES["sample.docx"]
with zipfile.ZipFile(io.BytesIO(_DOCX)) as _zf:
    _DOCX_XML = _zf.read("word/document.xml")


# --- strategies for structured text ----------------------------------------------------

_YAML_TOKENS = st.sampled_from(
    ["title", "version", "id", "acl", "tags", "date", ": ", "- ", "\n", "\n  ", "[", "]", "{", "}", ", ",
     "&a ", "*a", "&b ", "*b", "!!binary ", "!!float ", "!!set ", "!!python/object ", "? ", "| ", "> ",
     "'", '"', "#", "2.10", "007", "0x1F", "2024-13-45", "2024-01-02", "~", "null", "yes", "1e400",
     ".inf", "<<: ", "---", "...", "\t", "é", "\\u0000", "%YAML 1.1\n"]  # fmt: skip
)
front_matter = st.lists(_YAML_TOKENS, max_size=60).map("".join)

_TAGS = ["div", "p", "span", "main", "article", "section", "nav", "header", "footer", "aside", "h1", "h2",
         "h3", "ul", "ol", "li", "table", "tr", "td", "th", "pre", "br", "template", "noscript", "script",
         "style", "details", "a", "b"]  # fmt: skip
_ATTRS = st.sampled_from(
    ["", " hidden", ' hidden="until-found"', ' aria-hidden="true"', ' style="display:none"',
     ' style="visibility: hidden; display: block"', ' class="sidebar"', ' id="nav"', ' role="main"',
     ' role="navigation"', ' class="header"', " style=';:;'"]  # fmt: skip
)
_TEXT = st.sampled_from(["Text", "Größe", " ", "\n", "&amp;", "&#0;", "<!-- c -->", "<![CDATA[x]]>", "<", "\ue000"])


@st.composite
def html_tree(draw: st.DrawFn, depth: int = 0) -> str:
    """Random nesting, with unclosed and stray end tags now and then."""
    tag = draw(st.sampled_from(_TAGS))
    parts = [f"<{tag}{draw(_ATTRS)}>"]
    for _ in range(draw(st.integers(0, 4 if depth < 6 else 0))):
        parts.append(draw(html_tree(depth + 1)) if draw(st.booleans()) else draw(_TEXT))
    ending = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", "", "</div>"]))
    return "".join(parts) + ending


deep_html = st.integers(1, 4000).map(lambda n: "<div>" * n + "x" + "</div>" * (n // 2))


# --- the fuzz tests -------------------------------------------------------------------


@fuzz()
@given(data=st.binary(max_size=4096), reader=st.sampled_from(READERS))
def test_random_bytes(data: bytes, reader) -> None:  # noqa: ANN001
    check(reader, data)


@fuzz()
@given(name=st.sampled_from(sorted(SAMPLES)), data=st.data())
def test_mutated_sample_files(name: str, data: st.DataObject) -> None:
    check(reader_for(Path(name)), data.draw(mutated(SAMPLES[name])), name)


@fuzz(examples=max(_EXAMPLES // 2, 10))
@given(xml=mutated(_DOCX_XML))
def test_mutated_docx_xml(xml: bytes) -> None:
    check(DocxReader(), _rezip(_DOCX, "word/document.xml", xml), "mutated.docx")


@fuzz()
@given(yaml_text=front_matter, body=st.sampled_from(["", "Body", "# H\n\ntext"]))
def test_random_front_matter(yaml_text: str, body: str) -> None:
    text = f"---\n{yaml_text}\n---\n{body}"
    try:
        split_front_matter(text)
    except IngestError as exc:
        assert "\n" not in str(exc), repr(exc)
    check(MarkdownReader(), text.encode(), "fuzz.md")


@fuzz()
@given(tree=html_tree(), encoding=st.sampled_from([None, "latin-1"]))
def test_random_html_nesting(tree: str, encoding: str | None) -> None:
    try:
        doc = HtmlReader().read(f"<html><body>{tree}</body></html>".encode(), Path("fuzz.html"), encoding)
    except IngestError as exc:
        assert "\n" not in str(exc), repr(exc)
        return
    for heading in doc.headings:
        assert doc.text[heading.start :].startswith("#" * heading.level + " " + heading.title)


@fuzz(examples=max(_EXAMPLES // 6, 5))
@given(page=deep_html)
def test_deep_html_is_read_whole_or_refused(page: str) -> None:
    try:
        doc = HtmlReader().read(page.encode(), Path("deep.html"))
    except IngestError as exc:
        assert "levels deep" in str(exc), str(exc)
        return
    assert doc.text == "x"
