"""Readers against hostile and oversized input: each limit refuses with its reason, cheaply.

The bombs are built here (never committed): YAML alias bombs, zip bombs written with a
repeated full-flush deflate block (a gibibyte costs a megabyte and no time), a PDF whose
content stream inflates past pypdf's limit, and HTML nested past libxml2's default depth.
"""

from __future__ import annotations

import io
import re
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

import beleg
from beleg.errors import ConfigError, IngestError
from beleg.ingest.metadata import load_rules
from beleg.ingest.readers import docx as docx_reader
from beleg.ingest.readers import html as html_reader
from beleg.ingest.readers.docx import DocxReader
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MAX_FRONT_MATTER_CHARS, MarkdownReader, split_front_matter
from beleg.ingest.readers.pdf import PdfReader
from beleg.yamlfile import load_yaml, read_yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "readers"
SRC = Path(beleg.__file__).resolve().parents[1]  # the beleg under test, for the child process

# The classic ~340-byte YAML "billion laughs": nine levels of nine aliases, 9**9 strings expanded.
BILLION_LAUGHS = textwrap.dedent("""\
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    """)


def front(yaml_text: str, body: str = "Body\n") -> bytes:
    return f"---\n{yaml_text}\n---\n{body}".encode()


def peak_mib(fn, *args):  # noqa: ANN001, ANN202 - a tiny measuring helper
    """Run ``fn(*args)``; return (result or raised exception, peak Python heap in MiB)."""
    tracemalloc.start()
    try:
        try:
            outcome = fn(*args)
        except Exception as exc:  # the caller asserts on it
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --- YAML front matter ------------------------------------------------------------------


def test_billion_laughs_is_refused_without_expanding() -> None:
    assert len(BILLION_LAUGHS.encode()) < 350
    # In a child process under a 1 GiB address-space cap and a timeout: a regression
    # that expands the aliases fails here instead of hanging or swapping the test run.
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        sys.path.insert(0, {str(SRC)!r})
        from pathlib import Path
        from beleg.errors import IngestError
        from beleg.ingest.readers.markdown import MarkdownReader
        data = sys.stdin.buffer.read()
        try:
            MarkdownReader().read(data, Path("bomb.md"))
        except IngestError as exc:
            print("REFUSED", exc)
        else:
            print("READ")
    """)
    run = subprocess.run(
        [sys.executable, "-c", code], input=front(BILLION_LAUGHS), capture_output=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    out = run.stdout.decode()
    assert out.startswith("REFUSED front matter uses YAML aliases (&name/*name), which Beleg does not expand")
    assert "line 3" in out  # the first alias, counted in the file's lines


def test_small_alias_bomb_is_refused_in_process() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcd", "bcde")
    )  # 10**5 strings when expanded
    outcome, peak = peak_mib(MarkdownReader().read, front(bomb), Path("a.md"))
    assert isinstance(outcome, IngestError) and "aliases" in str(outcome), outcome
    assert peak < 5


@pytest.mark.parametrize("yaml_text", ["a: &a [*a]", "a: &a {b: *a}", "x: &x 1\ny: *x"])
def test_any_alias_is_an_ingest_error_not_a_recursion(yaml_text: str) -> None:
    with pytest.raises(IngestError, match=r"aliases \(&name/\*name\)"):
        MarkdownReader().read(front(yaml_text), Path("a.md"))


def test_anchors_without_aliases_are_fine() -> None:
    assert MarkdownReader().read(front("title: &t Hallo"), Path("a.md")).metadata == {"title": "Hallo"}


@pytest.mark.parametrize("nested", ["x: " + "[" * 5000 + "1", "x: " + "{a: " * 5000 + "1", "- " * 5000 + "1"])
def test_deep_nesting_is_refused_not_a_recursion_error(nested: str) -> None:
    with pytest.raises(IngestError, match="deeper than 32 levels"):
        MarkdownReader().read(front(nested), Path("a.md"))


def test_front_matter_size_is_capped() -> None:
    big = "tags: [" + ", ".join(["x"] * (MAX_FRONT_MATTER_CHARS // 3 + 10)) + "]"
    with pytest.raises(IngestError, match="front matter .* characters, over the"):
        MarkdownReader().read(front(big), Path("a.md"))


def test_version_like_labels_keep_their_written_form() -> None:
    meta, _ = split_front_matter(
        "---\nversion: 2.10\nVersions: [1.0, 2.10, 3]\nid: 007\ntenant: 0042\nacl: [0042, 17]\n"
        "product: 1.5\nweight: 2.10\ncount: 007\nnested: {version: 3}\ntitle: 2.10\n---\nBody"
    )
    assert meta == {
        "title": "2.10",  # a page titled "2.10" (release notes) is not "2.1"
        "version": "2.10",
        "versions": ["1.0", "2.10", "3"],
        "id": "007",
        "tenant": "0042",
        "acl": ["0042", "17"],
        "product": "1.5",
        "weight": 2.1,  # not a label: numbers elsewhere stay numbers
        "count": 7,  # YAML 1.1 octal, as PyYAML reads it
        "nested": {"version": "3"},
    }


@pytest.mark.parametrize(("written", "expected"), [("2.10", "2.10"), ("3", "3"), ("1.0", "1.0"), ('"2.10"', "2.10")])
def test_version_values(written: str, expected: str) -> None:
    doc = MarkdownReader().read(front(f"version: {written}"), Path("a.md"))
    assert doc.metadata["version"] == expected


def test_binary_front_matter_value_is_an_ingest_error() -> None:
    with pytest.raises(IngestError, match="binary"):
        MarkdownReader().read(front("blob: !!binary aGVsbG8="), Path("a.md"))


def test_tagged_number_that_is_no_number_is_an_ingest_error() -> None:
    for value in ("!!float abc", "!!float", "!!int 0xzz", "!!timestamp 2024-99-99", "2024-13-45"):
        with pytest.raises(IngestError, match=r"front matter is not valid YAML \(line 2: cannot read "):
            MarkdownReader().read(front(f"x: {value}"), Path("a.md"))


def test_rules_files_and_gold_sets_use_the_same_loader(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - match: "*.md"\n    metadata: {version: 2.10, product: ferrolink}\n')
    assert load_rules(rules)[0].metadata == {"version": "2.10", "product": "ferrolink"}
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BILLION_LAUGHS)
    with pytest.raises(ConfigError, match=r"uses YAML aliases \(&name/\*name\) at line 2"):
        read_yaml(bomb, "gold set")
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 3000)
    with pytest.raises(ConfigError, match="deeper than 32"):
        read_yaml(deep, "rules file")
    assert load_yaml("a: [1, {b: 2.5}]") == {"a": [1, {"b": 2.5}]}


# --- DOCX / ZIP ---------------------------------------------------------------------------


def _deflate_repeated(head: bytes, chunk: bytes, times: int, tail: bytes, level: int = 9) -> bytes:
    """Raw deflate of head + chunk*times + tail, built in O(len(chunk)).

    After a full flush the compressor starts afresh, so every repeat of ``chunk``
    compresses to the same bytes, which are simply repeated.
    """
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    start = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    return start + block * times + c.compress(tail) + c.flush()


def _crc_repeated(head: bytes, chunk: bytes, times: int, tail: bytes) -> int:
    crc = zlib.crc32(head)
    for _ in range(times):
        crc = zlib.crc32(chunk, crc)
    return zlib.crc32(tail, crc)


def _raw_zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip archive of (name, raw deflate bytes, uncompressed size, CRC-32) members."""
    out = io.BytesIO()
    central = []
    for name, payload, size, crc in members:
        offset, encoded = out.tell(), name.encode()
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(payload), size,
                              len(encoded), 0) + encoded + payload)  # fmt: skip
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc,
                                   len(payload), size, len(encoded), 0, 0, 0, 0, 0, offset) + encoded)  # fmt: skip
    start = out.tell()
    out.write(b"".join(central))
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return out.getvalue()


def _docx_with_body(head: bytes, chunk: bytes, times: int, tail: bytes, level: int = 9) -> bytes:
    """sample.docx with word/document.xml replaced by head + chunk*times + tail."""
    members = []
    with zipfile.ZipFile(DATA / "sample.docx") as original:
        for info in original.infolist():
            if info.filename == "word/document.xml":
                payload = _deflate_repeated(head, chunk, times, tail, level)
                size = len(head) + len(chunk) * times + len(tail)
                members.append((info.filename, payload, size, _crc_repeated(head, chunk, times, tail)))
            else:
                blob = original.read(info)
                c = zlib.compressobj(6, zlib.DEFLATED, -15)
                members.append((info.filename, c.compress(blob) + c.flush(), len(blob), zlib.crc32(blob)))
    return _raw_zip(members)


_BODY_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w='
    b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
)
_BODY_TAIL = b"</w:body></w:document>"


def test_docx_that_inflates_to_a_gibibyte_is_refused_cheaply() -> None:
    # Runs of spaces deflate best (distance-1 matches carry no extra bits): about 1000:1.
    chunk = b"<w:p/>" * 16 + b" " * (2**20 - 96)  # 1 MiB of XML
    bomb = _docx_with_body(_BODY_HEAD, chunk, 1024, _BODY_TAIL)  # 1 GiB of XML
    assert len(bomb) < 1.5 * 2**20
    outcome, peak = peak_mib(DocxReader().read, bomb, Path("bomb.docx"))
    assert isinstance(outcome, IngestError), outcome
    assert re.search(r"expands to 1,02\d MiB uncompressed, over the 200 MiB", str(outcome))
    assert peak < 20  # nothing was inflated


def test_docx_with_8_million_paragraphs_is_refused_cheaply() -> None:
    chunk = b"<w:p/>" * 1000
    bomb = _docx_with_body(_BODY_HEAD, chunk, 8000, _BODY_TAIL)  # 8 M paragraphs in ~46 MiB
    outcome, peak = peak_mib(DocxReader().read, bomb, Path("bomb.docx"))
    assert isinstance(outcome, IngestError), outcome
    assert "member 'word/document.xml' expands" in str(outcome) and "zip bomb" in str(outcome)
    assert peak < 20


def test_docx_paragraph_count_is_capped_even_when_it_compresses_normally() -> None:
    # Distinct paragraphs compress about 4:1, so neither size nor ratio stops them.
    paragraphs = b"".join(b"<w:p><w:r><w:t>%x</w:t></w:r></w:p>" % (n * 2654435761 % 2**32)
                          for n in range(docx_reader.MAX_PARAGRAPHS + 10))  # fmt: skip
    bomb = _docx_with_body(_BODY_HEAD, paragraphs, 1, _BODY_TAIL, level=1)
    outcome, peak = peak_mib(DocxReader().read, bomb, Path("many.docx"))
    assert isinstance(outcome, IngestError), outcome
    assert f"more than {docx_reader.MAX_PARAGRAPHS:,} paragraphs" in str(outcome)
    assert peak < 30  # streamed, not parsed


def test_docx_member_count_and_xml_size_are_capped() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n in range(docx_reader.MAX_MEMBERS + 1):
            zf.writestr(f"word/media/image{n}.png", b"")
    with pytest.raises(IngestError, match=r"5,001 members, over the 5,000"):
        DocxReader().read(buf.getvalue(), Path("many.docx"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:  # stored: ratio 1:1
        zf.writestr("word/document.xml", b"<w:p/>" * (docx_reader.MAX_XML_BYTES // 6 + 1))
    with pytest.raises(IngestError, match=r"holds 64 MiB of XML, over the 64 MiB"):
        DocxReader().read(buf.getvalue(), Path("big.docx"))


def test_docx_paragraph_tags_are_counted_across_read_chunks_and_prefixes() -> None:
    # Exactly the limit passes the scan (python-docx then rejects the non-document).
    body = b"<x:p>" + b"<x:pPr/>" * (2**20 // 8) + b"<w:p w:rsidR='1'/>" * 3  # tags straddle 1 MiB reads
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("word/document.xml", body)
    counts = docx_reader._TagCounts()
    with zipfile.ZipFile(buf) as zf:
        docx_reader._scan_member(zf, zf.getinfo("word/document.xml"), counts)
    assert counts.paragraphs == 4


def test_real_docx_passes_the_archive_check() -> None:
    docx_reader.check_archive((DATA / "sample.docx").read_bytes())  # raises if not


# --- PDF ----------------------------------------------------------------------------------


def _pdf_with_content(stream: bytes) -> bytes:
    """A one-page PDF whose content stream is ``stream`` (already Flate-compressed)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def test_pdf_small_page_reads() -> None:
    doc = PdfReader().read(_pdf_with_content(zlib.compress(b"BT /F1 12 Tf 72 700 Td (Hallo Welt) Tj ET")), Path("a.pdf"))
    assert doc.text == "Hallo Welt"


def test_pdf_decompression_limit_is_the_reason_given() -> None:
    c = zlib.compressobj(9)
    filler = b" " * 2**20
    stream = c.compress(b"BT /F1 12 Tf 72 700 Td (x) Tj ET") + b"".join(c.compress(filler) for _ in range(80)) + c.flush()
    with pytest.raises(IngestError, match=r"page 1: PDF hits pypdf's decompression/size limit \(.+\)"):
        PdfReader().read(_pdf_with_content(stream), Path("bomb.pdf"))


def test_pdf_errors_are_one_line() -> None:
    broken = _pdf_with_content(b"not zlib at all")
    try:
        PdfReader().read(broken, Path("broken.pdf"))
    except IngestError as exc:
        assert "\n" not in str(exc)


# --- HTML ---------------------------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return ("<html><body>" + "<div>" * depth + "<p>TIEF</p>" + "</div>" * depth
            + "<h2>Danach</h2><p>DANACH</p></body></html>").encode()  # fmt: skip


@pytest.mark.parametrize("depth", [300, 2000])
def test_html_deeper_than_256_is_read_whole(depth: int) -> None:
    doc = HtmlReader().read(_nested(depth), Path("deep.html"))
    assert doc.text == "TIEF\n\n## Danach\n\nDANACH"
    assert doc.text[doc.headings[0].start :].startswith("## Danach")


def test_html_deeper_than_the_parser_reads_is_refused_with_that_reason() -> None:
    with pytest.raises(IngestError, match="more than 2048 levels deep.*truncated"):
        HtmlReader().read(_nested(3000), Path("deep.html"))


def test_html_size_and_element_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_reader, "MAX_HTML_ELEMENTS", 50)
    with pytest.raises(IngestError, match=r"has \d+ elements, over the 50"):
        HtmlReader().read(b"<p>x</p>" * 60, Path("a.html"))
    monkeypatch.setattr(html_reader, "MAX_HTML_CHARS", 100)
    with pytest.raises(IngestError, match="characters, over the 100"):
        HtmlReader().read(b"<p>x</p>" * 20, Path("a.html"))


HIDDEN_PAGE = b"""<html><body><main>
<h1>Titel<span style="display:none">VERSTECKT-1</span></h1>
<p>sichtbar <span hidden>VERSTECKT-2</span><span hidden="until-found">AUFKLAPPBAR</span></p>
<div aria-hidden="true">VERSTECKT-3</div><div style="color: red; visibility: hidden !important">VERSTECKT-4</div>
<div style="display:none; display: block">SICHTBAR-2</div><!-- VERSTECKT-5 -->
<template><p>VERSTECKT-6</p></template><noscript>VERSTECKT-7</noscript><script>VERSTECKT-8</script>
<table><tr><td>a<span style="DISPLAY : NONE">VERSTECKT-9</span></td><td>b</td></tr></table>
<section style="display:none"><h2>VERSTECKT-10</h2><p>x</p></section>
<h2>Zwei</h2><p>Ende<span aria-hidden="false">, offen</span></p></main></body></html>"""


def test_html_drops_what_a_reader_would_not_see() -> None:
    doc = HtmlReader().read(HIDDEN_PAGE, Path("a.html"))
    assert "VERSTECKT" not in doc.text
    assert doc.text == "# Titel\n\nsichtbar AUFKLAPPBAR\n\nSICHTBAR-2\n\n| a | b |\n\n## Zwei\n\nEnde, offen"
    assert [(h.level, h.title) for h in doc.headings] == [(1, "Titel"), (2, "Zwei")]
    for h in doc.headings:
        assert doc.text[h.start :].startswith("#" * h.level + " " + h.title + "\n")


def test_html_hidden_main_is_not_the_content_root() -> None:
    raw = b"<body><main hidden><p>ALT</p></main><div><p>Neu und sichtbar</p></div></body>"
    assert HtmlReader().read(raw, Path("a.html")).text == "Neu und sichtbar"


def test_html_only_hidden_text_is_an_error_that_says_so() -> None:
    with pytest.raises(IngestError, match="hidden elements"):
        HtmlReader().read(b"<body><p hidden>nichts</p></body>", Path("a.html"))
