"""Split Markdown / plain text into citable spans with exact character offsets.

The extractive answerer quotes sentences verbatim and cites them as ``text[start:end]``,
so every :class:`Span` satisfies ``text[span.start:span.end] == span.text``. Markdown
structure decides the coarse blocks (headings, list items, table rows, fenced code,
paragraphs); inside a paragraph or list item a rule-based splitter finds sentence ends.

The splitter is deliberately conservative: a missed split only makes a cited sentence
longer, while a wrong split can cut an answer in half. So a boundary needs terminal
punctuation, whitespace, *and* a plausible sentence start (capital letter, digit, quote,
markup) after it, and it is vetoed after known abbreviations (English and German),
single-letter initials ("z. B.", "J. R."), German ordinals ("am 15. Januar", "im
19. Jahrhundert"), ellipses and inside inline code.

Ingest (semantic chunking), retrieval (compression), strategies and answers all cut text
with it, so it sits outside those packages and imports nothing of Beleg: none of them
has to import another to share it (no import cycles).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["Span", "is_table_header", "sentence_containing", "split_sentences", "table_header"]


@dataclass(frozen=True, slots=True)
class Span:
    """A citable piece of text: ``text[start:end] == self.text``.

    ``kind`` is one of ``"sentence"``, ``"heading"``, ``"list-item"``, ``"table-row"``
    or ``"code"`` so the answerer can prefer prose and skip code.
    """

    start: int
    end: int
    text: str
    kind: str


# --- block level -----------------------------------------------------------------------

_QUOTE_PREFIX = re.compile(r"[ \t]*(?:>[ \t]?)+")
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})")
_HEADING = re.compile(r"[ \t]{0,3}(#{1,6})(?:[ \t]+|$)")
_HEADING_CLOSE = re.compile(r"[ \t]+#+[ \t]*$")
_THEMATIC_BREAK = re.compile(r"[ \t]{0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_ROW = re.compile(r"[ \t]*\|")
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?$")
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+(?=\S)")

_MONTHS = (
    "januar|jänner|februar|märz|april|mai|juni|juli|august|september|oktober|november|"
    "dezember|january|february|march|may|june|july|october|december|"
    "jan|feb|mär|mar|apr|jun|jul|aug|sep|sept|okt|oct|nov|dez|dec"
)
_MONTH_WORD = re.compile(rf"(?:{_MONTHS})\b\.?", re.IGNORECASE)
_ORDINAL_LIST_GUARD = re.compile(rf"[ \t]*\d{{1,2}}\.[ \t]+(?:{_MONTHS})\b", re.IGNORECASE)

# --- sentence level --------------------------------------------------------------------

# Terminal punctuation plus whatever closes the sentence with it (quotes, brackets,
# emphasis markers), followed by whitespace or a citation marker ("1870.[1]").
_TERMINAL = re.compile(r"(\.{2,}|…|[.!?]+)([\"'”“»«’)\]*_]*)(?=\s|\[)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# Citation markers after the full stop belong to the sentence they cite.
_CITATION_TAIL = re.compile(r"(?:[ \t]*\[(?:S?\d+(?:[,;] ?S?\d+)*|citation needed)\])+")
_OPENERS = frozenset("\"'„“«»‚‘([*_`¡¿")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_TOKEN_STRIP = "([{\"'„“‚«»*_`"

# Lower-cased, without the final period. Multi-part abbreviations are stored without
# inner spaces ("z.b"), because the splitter also joins "z. B." into one token.
_ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "fig", "figs", "dr", "mr", "mrs",
        "ms", "prof", "st", "jr", "sr", "vol", "pp", "ca", "co", "dept",
        "est", "max", "incl", "excl", "resp", "esp", "z.b", "d.h", "bzw", "usw", "inkl",
        "ggf", "u.a", "s", "vgl", "evtl", "sog", "bspw", "z.t", "u.u", "o.ä", "zzgl",
        "str", "tel", "gem", "lt", "bzgl", "ggü", "mio", "mrd", "hr", "fr", "hl", "jh",
        "jhd", "jhs", "chr", "ff",
    }
)
# Abbreviations that only ever stand before a number ("No. 5", "Nr. 12", "Abs. 2"): at
# the end of a sentence the same letters are an ordinary word ("The answer is no.").
_NUMBER_ABBREVIATIONS = frozenset(
    {
        "no", "nos", "nr", "art", "abs", "pp", "vol", "fig", "figs", "bd",
    }
)
_INITIALS = re.compile(r"^(?:[^\W\d_]\.)*[^\W\d_]$")
_DIGITS = re.compile(r"^\d{1,4}$")
# German words before an ordinal number ("am 3. Werktag", "im 19. Jahrhundert").
_ORDINAL_PRECEDERS = frozenset(
    {
        "am", "im", "zum", "zur", "vom", "beim", "dem", "den", "des", "der", "die", "das",
        "jeden", "jedem", "jedes", "jeder", "seinem", "seinen", "seiner", "ihrem", "ihren",
        "ihrer",
    }
)
_ORDINAL_SERIES = re.compile(r"\b\d{1,2}\.(?:,\s*|\s+(?:und|oder|bis|u\.)\s+)\Z")
_ORDINAL_NOUNS = re.compile(
    r"(?:jahrhundert|jahrtausend|jahrestag|lebensjahr|werktag|tag|mal|platz|stock|"
    r"auflage|klasse|kalenderwoche|weltkrieg|geburtstag|quartal|monat|woche|rang|"
    r"liga|armee|division|regiment|symphonie|sinfonie|dynastie|kreuzzug)(?:e?s)?\b",
    re.IGNORECASE,
)


@dataclass(slots=True)
class _Block:
    start: int
    end: int
    kind: str
    quoted: bool


def split_sentences(text: str) -> list[Span]:
    """Split ``text`` into spans in document order; offsets are exact.

    A YAML front-matter block at the very start is skipped (it is metadata, not prose),
    as are blank lines, thematic breaks and table separator rows.
    """
    spans: list[Span] = []
    para: _Block | None = None

    def flush() -> None:
        nonlocal para
        if para is not None:
            spans.extend(_split_block(text, para))
            para = None

    pos = _front_matter_end(text)
    fence: tuple[str, int, int] | None = None  # (fence chars, start offset, last end)
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        line_end = n if nl < 0 else nl
        next_pos = n if nl < 0 else nl + 1
        if line_end > pos and text[line_end - 1] == "\r":
            line_end -= 1  # CRLF files: keep "\r" out of every span
        quote = _QUOTE_PREFIX.match(text, pos, line_end)
        quoted = quote is not None
        cpos = quote.end() if quote is not None else pos
        line = text[cpos:line_end]

        if fence is not None:
            marker, fstart, _ = fence
            stripped = line.strip()
            if stripped.startswith(marker) and not stripped.strip(marker[0]):
                _emit(spans, text, fstart, line_end, "code")
                fence = None
            else:
                fence = (marker, fstart, line_end)
            pos = next_pos
            continue

        if not line.strip():
            flush()
        elif m := _FENCE_OPEN.match(line):
            flush()
            fence = (m.group(1), cpos + len(line) - len(line.lstrip()), line_end)
        elif m := _HEADING.match(line):
            flush()
            body_end = line_end
            close = _HEADING_CLOSE.search(line)
            if close:
                body_end = cpos + close.start()
            _emit(spans, text, cpos + m.end(), body_end, "heading")
        elif _THEMATIC_BREAK.match(line):
            flush()
        elif _TABLE_ROW.match(line):
            flush()
            if not _TABLE_SEPARATOR.match(line):
                _emit(spans, text, cpos, line_end, "table-row")
        elif (m := _LIST_MARKER.match(line)) and not _ORDINAL_LIST_GUARD.match(line):
            flush()
            para = _Block(cpos + m.end(), line_end, "list-item", quoted)
        elif para is not None and para.quoted == quoted:
            para.end = line_end
        else:  # a new paragraph, or a block quote starting or ending without a blank line
            flush()
            para = _Block(cpos, line_end, "sentence", quoted)
        pos = next_pos

    if fence is not None:  # unclosed fence runs to the end of the text
        _emit(spans, text, fence[1], fence[2], "code")
    flush()
    return spans


def sentence_containing(text: str, offset: int) -> Span | None:
    """The span of ``split_sentences(text)`` that contains ``offset``.

    Returns None when the offset falls between spans (whitespace, list markers,
    front matter) or outside the text.
    """
    spans = split_sentences(text)
    starts = [s.start for s in spans]
    i = bisect.bisect_right(starts, offset) - 1
    if i >= 0 and spans[i].start <= offset < spans[i].end:
        return spans[i]
    return None


def is_table_header(text: str, span: Span) -> bool:
    """Whether a table-row span is its table's header: the line after it is a separator row
    (``|---|---|``). A header names the columns; it states nothing about any one row."""
    if span.kind != "table-row":
        return False
    nl = text.find("\n", span.end)
    if nl < 0:
        return False
    after = text[nl + 1:].split("\n", 1)[0].rstrip("\r")
    return _TABLE_SEPARATOR.match(after) is not None


def table_top(text: str, at: int) -> int:
    """The offset of the first line of the table whose line holds offset ``at``: up through
    the lines above it while they are table rows."""
    top = text.rfind("\n", 0, at) + 1
    while top > 0:
        prev = text.rfind("\n", 0, top - 1) + 1
        if not _TABLE_ROW.match(text, prev):
            break
        top = prev
    return top


def continued_table_header(text: str, at: int) -> str | None:
    """The header row's text of a table that goes on at offset ``at`` from lines above it (a
    chunk that opens between two rows of a long table), when that table has a header; else None."""
    if at <= 0 or not _TABLE_ROW.match(text, at):
        return None
    header = table_header(text, Span(at, at, "", "table-row"))  # a row opening at ``at``
    return header.text if header is not None else None


def table_header(text: str, row: Span) -> Span | None:
    """The header row of the table a data row belongs to (a table-row span of ``text``, with
    its offsets), when the header is in ``text`` and is not the row itself; else None."""
    if row.kind != "table-row":
        return None
    top = table_top(text, row.start)
    line_end = text.find("\n", top)
    line_end = len(text) if line_end < 0 else line_end
    head = Span(top, line_end, text[top:line_end], "table-row")
    if top >= row.start or not is_table_header(text, head):
        return None
    start = top + len(head.text) - len(head.text.lstrip())
    end = line_end - (len(head.text) - len(head.text.rstrip()))
    return Span(start, end, text[start:end], "table-row")


# --- helpers ---------------------------------------------------------------------------


def _front_matter_end(text: str) -> int:
    """Offset after a leading ``---`` ... ``---`` YAML block, or 0 if there is none."""
    if not text.startswith(("---\n", "---\r\n")):
        return 0
    m = _FRONT_MATTER_CLOSE.search(text, 4)
    if m is None:
        return 0
    return m.end()


def _emit(spans: list[Span], text: str, start: int, end: int, kind: str) -> None:
    """Append the whitespace-trimmed span ``[start, end)`` unless it is empty."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append(Span(start, end, text[start:end], kind))


def _split_block(text: str, block: _Block) -> list[Span]:
    """Split one paragraph or list item into sentence spans."""
    start, end = block.start, block.end
    code = [(m.start(), m.end()) for m in _INLINE_CODE.finditer(text, start, end)]
    spans: list[Span] = []
    cur = start
    for m in _TERMINAL.finditer(text, start, end):
        if _inside(code, m.start()):
            continue
        tail = _CITATION_TAIL.match(text, m.end(), end)  # "... attempt." [S1]
        if tail is None and text[m.end()] == "[":
            continue  # "see [docs]" or "a.[b": only a citation marker may follow without a space
        cut = tail.end() if tail else m.end()
        if not _is_boundary(text, m, cut, cur, end):
            continue
        _emit_sentence(spans, text, cur, cut, block)
        cur = cut
    _emit_sentence(spans, text, cur, end, block)
    return spans


def _emit_sentence(spans: list[Span], text: str, start: int, end: int, block: _Block) -> None:
    if block.quoted:  # continuation lines of a block quote start with "> "
        while start < end and (text[start].isspace() or text[start] == ">"):
            start += 1
    _emit(spans, text, start, end, block.kind)


def _inside(intervals: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in intervals)


def _is_boundary(text: str, m: re.Match[str], cut: int, cur: int, end: int) -> bool:
    """Decide whether the terminal punctuation in ``m`` (sentence ends at ``cut``) ends a sentence."""
    punct = m.group(1)
    if punct.startswith("..") or punct == "…":
        return False  # ellipsis: usually a pause or an elided URL/command, not an end
    nxt = _sentence_start(text, cut, end)
    if nxt is None:
        return False  # next word starts lower-case (or nothing follows in this block)
    if "." not in punct:
        return True  # ? and ! are unambiguous
    token = _token_before(text, m.start(), cur)
    low = token.lower()
    if low in _ABBREVIATIONS or _INITIALS.match(token):
        return False
    if low in _NUMBER_ABBREVIATIONS and text[nxt].isdigit():
        return False
    if _DIGITS.match(token) and not m.group(2):
        ahead = text[nxt : nxt + 25]
        if _MONTH_WORD.match(ahead) or _ORDINAL_NOUNS.match(ahead):
            return False  # "15. Januar 2026", "3. Werktag"
        prev = _token_before(text, m.start() - len(token), cur).lower()
        if prev in _ORDINAL_PRECEDERS:
            return False  # "im 19. Jahrhundert", "am 3. des Monats"
        if _ORDINAL_SERIES.search(text, max(cur, m.start() - len(token) - 20), m.start() - len(token)):
            return False  # "die 2., 3. und 4. Zeitachse"
    return True


def _sentence_start(text: str, pos: int, end: int) -> int | None:
    """Index of the next word if it can start a sentence, else None.

    Lower-case continuations are never sentence starts; that single rule already keeps
    most abbreviations, "e.g. the", "approx. ten" and file names together.
    """
    i = pos
    crossed_newline = False
    while i < end and (text[i].isspace() or (crossed_newline and text[i] == ">")):
        crossed_newline = crossed_newline or text[i] == "\n"
        i += 1
    if i >= end:
        return None
    c = text[i]
    if c.isupper() or c.isdigit() or c in _OPENERS or (c.isalpha() and not c.islower()):
        return i
    return None


def _token_before(text: str, pos: int, floor: int) -> str:
    """The whitespace-delimited token ending at ``pos``, stripped of opening marks."""
    i = pos
    while i > floor and text[i - 1].isspace():
        i -= 1
    j = i
    while j > floor and not text[j - 1].isspace():
        j -= 1
    return text[j:i].lstrip(_TOKEN_STRIP)
