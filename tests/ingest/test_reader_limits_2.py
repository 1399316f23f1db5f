"""Readers against hostile input, continued: codecs, backtracking patterns, DOCX parts.

Companion to ``test_reader_limits.py`` (which is long enough): each test here is a red-team
finding that failed before its fix.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from beleg.errors import IngestError
from beleg.ingest.readers import markdown_hidden
from beleg.ingest.readers.base import decode_as
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MarkdownReader, _clean_title, atx_heading, find_headings
from beleg.ingest.readers.text import TextReader

# --- codecs: only character encodings, and never half a character ----------------------

_UTF7_PAGE = (
    b'<html><head><meta charset="utf-7"></head><body><p>Refund policy +2AA- summary.</p>'
    b"<p>Refunds are paid within 30 days.</p></body></html>"
)


def test_html_declaring_utf7_is_refused_not_cut_short() -> None:
    # Before: decoded as UTF-7, '+2AA-' became U+D800 and lxml stopped there ("Refund policy").
    with pytest.raises(IngestError, match=r"declares 'utf-7', which is not an encoding HTML allows"):
        HtmlReader().read(_UTF7_PAGE, Path("page.html"))


def test_html_declaring_utf7_with_encoding_given_reads_the_whole_page() -> None:
    text = HtmlReader().read(_UTF7_PAGE, Path("page.html"), encoding="latin-1").text
    assert text == "Refund policy +2AA- summary.\n\nRefunds are paid within 30 days."


@pytest.mark.parametrize(
    "label", ["utf-7", "utf-32", "unicode_escape", "raw_unicode_escape", "rot13", "base64", "idna"]
)
def test_html_meta_charset_must_be_one_html_allows(label: str) -> None:
    page = f'<meta charset="{label}"><p>Text \\ud800 here</p>'.encode()
    with pytest.raises(IngestError, match="not an encoding HTML allows"):
        HtmlReader().read(page, Path("page.html"))


@pytest.mark.parametrize(
    ("label", "codec", "word"),
    [
        ("windows-1252", "cp1252", "Maß"),
        ("windows-874", "cp874", "ภาษา"),
        ("shift_jis", "shift_jis", "日本"),
        ("koi8-r", "koi8-r", "Привет"),
        ("x-mac-cyrillic", "mac-cyrillic", "Привет"),
    ],
)
def test_html_meta_charsets_of_the_standard_still_work(label: str, codec: str, word: str) -> None:
    page = f'<meta charset="{label}"><p>{word}</p>'.encode(codec)
    assert HtmlReader().read(page, Path("page.html")).text == word


@pytest.mark.parametrize("encoding", ["unicode_escape", "raw_unicode_escape", "rot13", "base64", "hex", "zlib"])
def test_encoding_option_accepts_only_character_encodings(encoding: str) -> None:
    # Latin-1 bytes, so the --encoding fallback is used; unicode_escape read '\x00' as a NUL.
    data = "caf\xe9 \\x00 \\ud800".encode("latin-1")
    for reader, name in ((TextReader(), "a.txt"), (MarkdownReader(), "a.md"), (HtmlReader(), "a.html")):
        with pytest.raises(IngestError, match="is not a character encoding"):
            reader.read(data, Path(name), encoding=encoding)


def test_decoded_lone_surrogates_fail_the_file() -> None:
    with pytest.raises(IngestError, match=r"unpaired surrogate \(U\+D800\) at character 4"):
        decode_as(b"abc +2AA- def", "utf-7")
    assert decode_as("Grüße".encode("cp1252"), "cp1252") == "Grüße"


# --- Markdown: patterns that backtracked ------------------------------------------------

# The patterns the hand-written scans replaced; kept here as the reference they must equal.
_OLD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_OLD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_OLD_EMPHASIS = re.compile(r"(\*{1,3}|_{2,3})(\S(?:.*?\S)?)\1")
_OLD_CODE = re.compile(r"`+([^`]*)`+")


def _old_clean_title(raw: str) -> str:
    title = _OLD_LINK.sub(r"\1", raw)
    title = _OLD_CODE.sub(r"\1", title)
    title = _OLD_EMPHASIS.sub(r"\2", title)
    return " ".join(title.split())


def _old_atx(line: str) -> tuple[int, str] | None:
    match = _OLD_ATX.match(line)
    return (len(match.group(1)), match.group(2) or "") if match else None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Title ##", (1, "Title")),
        ("# Title#", (1, "Title#")),
        ("#5 bolt", None),
        ("####### seven", None),
        ("    # code", None),
        ("   ### Three  ###   ", (3, "Three")),
        ("#", (1, "")),
        ("## \t", (2, "")),
        ("# ###", (1, "###")),  # the old pattern's reading, kept (CommonMark would say empty)
        ("#\tTab", (1, "Tab")),
        ("# a # b #", (1, "a # b")),
    ],
)
def test_atx_headings_read_as_before(line: str, expected: tuple[int, str] | None) -> None:
    assert atx_heading(line) == expected == _old_atx(line)


def test_atx_and_title_cleaning_equal_the_old_patterns_on_random_lines() -> None:
    # Short lines over the characters that matter, so the old patterns stay fast.
    rng = random.Random(4)
    alphabet = " \t#*_[]()!`ab"
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert atx_heading(line) == _old_atx(line), repr(line)
        assert _clean_title(line) == _old_clean_title(line), repr(line)


def test_title_cleaning_keeps_ordinary_markup_readable() -> None:
    raw = "See [the **guide**](https://x.example/a_b) and ![logo](l.png) `code` __bold__ *it*"
    assert _clean_title(raw) == "See the guide and logo code bold it" == _old_clean_title(raw)
    assert [h.title for h in find_headings("# Refunds ##\n\nText\n\nSetext *title*\n---\n")] == [
        "Refunds",
        "Setext title",
    ]


_PATHOLOGICAL_LINES = {
    "heading, spaces, then no closing run": "# a" + " " * 200_000 + "x",
    "heading of opening brackets": "# " + "[" * 200_000,
    "heading of unclosed emphasis": "# " + "__a " * 50_000,
    "setext title of unclosed links": "[a](" * 50_000 + "\n---",
    "thematic break with trailing spaces": "x\n---" + " " * 200_000 + "x",
    "reference definition, spaces before '<'": "[a]:" + " " * 200_000 + "<",
    "reference definition label never closed": "[" + "a " * 100_000,
    "block quote markers": "> " * 100_000 + "x",  # 22 of them took 0.4 s, doubling with each
    "list markers": "- " * 100_000 + "x",
}


@pytest.mark.parametrize("text", _PATHOLOGICAL_LINES.values(), ids=_PATHOLOGICAL_LINES.keys())
def test_pathological_markdown_lines_read_in_linear_time(text: str) -> None:
    # About 200 KB each. Measured: 0.01-0.08 s each after the fix; before it, the first
    # took 66 s per 100 KB, the brackets, emphasis, break and definition lines seconds to
    # minutes (quadratic), and the marker lines would not have finished (exponential).
    # 2 s leaves room for a slow CI machine.
    start = time.process_time()
    MarkdownReader().read(text.encode(), Path("slow.md"))
    assert time.process_time() - start < 2


def test_link_reference_definitions_are_still_blanked() -> None:
    text = '[//]: # (a comment)\n> - [label]: https://x.example "Title"\n[ ]: not-a-definition\nText\n'
    blanked = markdown_hidden.blank_hidden(text)
    assert [line.strip() for line in blanked.split("\n")[:2]] == ["", ""]
    assert len(blanked) == len(text)
    assert "[ ]: not-a-definition" in blanked  # a blank label defines nothing
