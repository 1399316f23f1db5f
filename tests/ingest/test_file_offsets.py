"""Readers that keep the text as written say where it starts in the file, so a document
offset can be turned into a file offset and a line number."""

from __future__ import annotations

from pathlib import Path

from beleg.ingest.readers.markdown import MarkdownReader
from beleg.ingest.readers.text import TextReader
from beleg.types import BODY_LINE_KEY, BODY_OFFSET_KEY, Hit, file_position, with_file_position


def _check(decoded: str, doc: object) -> tuple[int, int]:
    position = doc.file_position  # type: ignore[attr-defined]
    assert position is not None
    offset, line = position
    text = doc.text  # type: ignore[attr-defined]
    assert decoded[offset:offset + len(text)] == text
    assert line == decoded.count("\n", 0, offset)
    return offset, line


def test_markdown_body_offset_skips_front_matter_and_leading_blank_lines() -> None:
    raw = "---\ntitle: T\nversion: 2.4\n---\n\n\n# Heading\n\nBody line.\n"
    doc = MarkdownReader().read(raw.encode(), Path("a.md"))
    offset, line = _check(raw, doc)
    assert raw[offset:].startswith("# Heading") and line == 6
    assert BODY_OFFSET_KEY not in doc.metadata  # the position is a field, not declared metadata


def test_markdown_without_front_matter_and_with_bom_and_crlf() -> None:
    raw = "\ufeff\r\n# Title\r\n\r\nSecond paragraph.\r\n".encode()
    doc = MarkdownReader().read(raw, Path("a.md"))
    decoded = "\n# Title\n\nSecond paragraph.\n"  # the decoded file: no mark, newlines as \n
    assert _check(decoded, doc) == (1, 1)


def test_text_reader_records_its_offset() -> None:
    raw = "\n  \nplain text\nsecond line\n"
    doc = TextReader().read(raw.encode(), Path("a.txt"))
    assert _check(raw, doc) == (4, 2)


def test_file_position_fields_and_lines() -> None:
    text = "# H\n\nfirst\nsecond line here\n"
    meta = with_file_position({"title": "x"}, (30, 5))
    start = text.index("second")
    pos = file_position(meta, text, start, start + len("second line here"))
    assert pos["offsets"] == "document-text"
    assert (pos["file_start"], pos["file_end"]) == (30 + start, 30 + start + 16)
    assert (pos["line_start"], pos["line_end"]) == (5 + 4, 5 + 4)
    whole = file_position(meta, text, 0, len(text) - 1)  # ends at the last line's newline
    assert (whole["line_start"], whole["line_end"]) == (6, 9)


def test_extracted_text_has_no_file_position_and_says_why() -> None:
    pos = file_position({"title": "x"}, "text", 0, 4)
    assert pos["file_start"] is None and pos["line_start"] is None and "unknown" in pos["file_offsets"]


def test_metadata_cannot_claim_a_file_position() -> None:
    declared = {"title": "x", BODY_OFFSET_KEY: 999, BODY_LINE_KEY: 9}
    assert BODY_OFFSET_KEY not in with_file_position(declared, None)
    assert with_file_position(declared, (3, 1))[BODY_OFFSET_KEY] == 3


def test_hit_json_says_what_offsets_count_and_hides_reserved_keys() -> None:
    meta = with_file_position({"language": "en"}, (10, 2))
    data = Hit("c", "d", "a.md", "A", (), 4, 8, 1.0, "text", meta).to_json("abcdtext")
    assert data["offsets"] == "document-text" and data["file_start"] == 14 and data["line_start"] == 3
    assert data["metadata"] == {"language": "en"}
