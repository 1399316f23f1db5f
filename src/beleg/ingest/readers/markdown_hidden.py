"""Blank the text of a Markdown file that a reader of the rendered page would not see.

Markdown passes HTML through, so a file can carry text no rendered page shows: HTML
comments and what a browser reads as one (``<![CDATA[``, ``<?...?>``, ``<!X...>``),
elements hidden the ways the HTML reader recognises (:mod:`beleg.ingest.readers.hidden`),
``<script>``/``<style>``/``<template>``, and link reference definitions, which
``[//]: # (a comment)`` abuses as a comment (GFM footnotes, ``[^1]: ...``, are shown).

The text is blanked in place, never cut: every hidden character becomes a space and
newlines stay, so document offsets, file offsets and line numbers of the visible text
do not move. A blanked line is a whitespace-only line, which Markdown and the chunker both
read as a blank line.

Code is visible, so nothing inside a fenced code block or an inline code span is blanked.
The scan follows CommonMark where a mistake could leak text and errs towards blanking
where it could not: an inline code span protects its content only when it opens and
closes on one line (a span across lines is also blanked inside), and indented code
blocks are not recognised (telling them from list continuation needs a full parser), so
a comment inside one is blanked although the page shows it.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass

from beleg.ingest.readers.hidden import (
    Ink,
    StyleSheet,
    computed_style,
    hides_subtree,
    invisible_ink,
    media_applies,
    text_ink,
    zero_font,
)

# Block quote markers before a fence ('> ```'); deeper quotes inside count too.
_QUOTE_PREFIX = re.compile(r"(?: {0,3}>[ ]?)*")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
# A setext underline or thematic break ends a paragraph; what follows starts a new block.
# No pattern here may let two runs of one character class meet (``[ \t]*[ \t]*$``, ``(x ?)*
# ?x``): on a line that fails at its end, backtracking tries every split between them, and
# one long line then costs quadratic time (or, inside a repetition, exponential: 22 '> '
# took 0.4 s and every two more four times that).
_BLOCK_END = re.compile(r" {0,3}(?:=+[ \t]*|-+[ \t]*|(?:[-*_][ \t]*){3,})$")
# A link reference definition, also inside block quotes and list items. Its label is kept
# on one line, must not be blank, and its title must not span a blank line (both checked
# after matching).
_LINK_REFERENCE = re.compile(
    r"[ ]{0,3}(?:(?:>|[-*+]|\d{1,9}[.)])[ ]{0,4})*\[(?P<label>(?:[^\[\]\\\n]|\\.)*)\]:"
    r"[ \t]*(?:\n[ \t]*)?(?:<[^<>\n]*>|[^\s<]\S*)"
    r"""(?:(?:[ \t]+|[ \t]*\n[ \t]*)(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)))?[ \t]*(?=\n|\Z)"""
)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# A line that may start an HTML block, in which Markdown (code spans, escapes, fences) is
# not parsed until the block ends. CommonMark lets only some tags start one; taking every
# tag can only blank more (a comment in a code span on such a line), never leak.
_HTML_BLOCK = re.compile(r" {0,3}(?:(<!--)|<(?:(pre|script|style|textarea)(?=[\s>]|$)|[A-Za-z/?!]))", re.IGNORECASE)
# CommonMark's open tag, whose attributes may span lines; '<!--' and '</x>' are handled apart.
_OPEN_TAG = re.compile(
    r"<([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s\"'=<>`]+|'[^']*'|\"[^\"]*\"))?)*)\s*/?>"
)
_ATTRIBUTE = re.compile(r"([A-Za-z_:][\w.:-]*)(?:\s*=\s*(?:([^\s\"'=<>`]+)|'([^']*)'|\"([^\"]*)\"))?")
_OTHER_TAG = re.compile(r"</[A-Za-z][A-Za-z0-9-]*\s*>|<[A-Za-z][A-Za-z0-9.+-]{1,31}:[^\s<>]*>")  # close tag, autolink
_BOGUS_COMMENT = re.compile(r"<!\[CDATA\[|<\?|<![A-Za-z]")
_BOGUS_END = {"<![": "]]>", "<?": "?>", "<!": ">"}
_BACKTICKS = re.compile(r"`+")
_ESCAPABLE = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_NEVER_SHOWN = {"script", "style", "template"}
#: Elements followed inside an element whose own text is unseen; deeper ones are blanked whole
#: (each level costs a search for its end tag).
MAX_UNSEEN_NESTING = 32
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def blank_hidden(text: str) -> str:
    """``text`` with hidden characters replaced by spaces (newlines kept), same length."""
    spans, styles = _Scan(text, StyleSheet()).run()
    if styles:  # a <style> element applies to the whole page, also above itself
        spans, _ = _Scan(text, StyleSheet(styles)).run()
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


@dataclass(slots=True)
class _Open:
    """An element inside which text is judged by inheritance: one whose own text is unseen
    (transparent, coloured like its background, or of size zero), or one inside such."""

    end: int  # after its end tag (or the end of the text)
    ink: Ink
    zero: bool
    unseen: bool


class _Scan:
    def __init__(self, text: str, sheet: StyleSheet) -> None:
        self.text = text
        self.sheet = sheet
        self.hidden: list[tuple[int, int]] = []
        self.styles: list[str] = []
        # Searches that failed once fail again from any later position: remembered, so that
        # many unclosed '<!--' or '<span hidden>' cost one scan of the rest, not one each.
        self._no_comment_end = False
        self._unclosed: set[str] = set()
        self._runs: dict[int, list[int]] = {}
        self._absent: set[str] = set()
        self._code_until = 0  # the end of the last code span across lines scanned inside  # end markers of bogus comments not found after some point
        self._open: list[_Open] = []  # innermost last
        self._blank_from: int | None = None  # where the innermost one's unseen text began

    def run(self) -> tuple[list[tuple[int, int]], list[str]]:
        text, pos, at_line_start = self.text, 0, True
        while pos < len(text):
            eol = _line_end(text, pos)
            if at_line_start:
                line = text[pos:eol]
                quote = _QUOTE_PREFIX.match(line)
                fence = _fence(line[quote.end() :])  # type: ignore[union-attr]
                if fence is not None:
                    # Code, shown as written; in a block quote it ends with the quote.
                    pos = _after_fence(text, eol, fence, quote.group().count(">"))  # type: ignore[union-attr]
                    continue
                html_start = _HTML_BLOCK.match(line)
                if html_start is not None:
                    pos, at_line_start = self._html(pos, self._html_block_end(pos, eol, html_start))
                    continue
                ref = _LINK_REFERENCE.match(text, pos)
                label = ref.group("label") if ref is not None else ""
                # '[^1]: ...' is a GFM footnote, which GitHub, GitLab and mkdocs show: kept.
                if (
                    ref is not None
                    and label.strip()
                    and not label.startswith("^")
                    and not _BLANK_LINE.search(ref.group())
                ):
                    self.hidden.append((pos, ref.end()))
                    pos = ref.end() + 1  # it ends at the end of a line
                    continue
                if not line.strip():
                    pos = eol + 1
                    continue
            pos, at_line_start = self._inline(pos, self._block_end(pos))
        self._close_before(len(text) + 1)
        return self.hidden, self.styles

    def _close_before(self, pos: int) -> None:
        """Close the followed elements that end at or before ``pos``."""
        while self._open and self._open[-1].end <= pos:
            self._inner_changes(self._open.pop().end)

    def _inner_changes(self, at: int) -> None:
        """The innermost followed element changed at ``at``: text is blanked while it is unseen."""
        unseen = bool(self._open) and self._open[-1].unseen
        if unseen and self._blank_from is None:
            self._blank_from = at
        elif not unseen and self._blank_from is not None:
            self.hidden.append((self._blank_from, at))
            self._blank_from = None

    def _html_block_end(self, pos: int, eol: int, start: re.Match[str]) -> int:
        """Where an HTML block that starts at ``pos`` ends (CommonMark's end conditions)."""
        text = self.text
        if start.group(1):  # a comment: the block ends with the line that closes it
            close = -1 if self._no_comment_end else _comment_end(text, text.index("<!--", pos))
            self._no_comment_end = close < 0
            return len(text) if close < 0 else _line_end(text, close)
        end = _paragraph_end(text, eol)
        name = (start.group(2) or "").lower()
        if name:  # <pre>, <script>, <style>, <textarea> end at their end tag, blank lines or not
            end_tag = None if name in self._unclosed else re.compile(f"</{name}", re.IGNORECASE).search(text, pos)
            if end_tag is None:
                self._unclosed.add(name)
            end = max(end, len(text) if end_tag is None else _line_end(text, end_tag.start()))
        return end

    def _html(self, pos: int, end: int) -> tuple[int, bool]:
        """Scan raw HTML in ``text[pos:end]``: no code spans or escapes, only comments and tags."""
        text = self.text
        while True:
            found = text.find("<", pos, end)
            if found < 0:
                return end + 1, True
            jumped = self._markup(found, in_html=True)
            if jumped > end:
                if jumped >= len(text) or text[jumped - 1] == "\n":
                    return jumped, True
                end = _paragraph_end(text, jumped)  # the rest of the line is raw HTML too
            pos = max(jumped, found + 1)

    def _block_end(self, pos: int) -> int:
        """The end of the paragraph-like block from ``pos``: inline code cannot span past it."""
        text = self.text
        eol = _line_end(text, pos)
        if _ATX.match(text, text.rfind("\n", 0, pos) + 1):
            return eol  # a heading is one line
        while eol < len(text):
            start = eol + 1
            nxt = _line_end(text, start)
            line = text[start:nxt]
            fence = _fence(line[_QUOTE_PREFIX.match(line).end() :])  # type: ignore[union-attr]
            if not line.strip() or fence is not None or _ATX.match(line) or _HTML_BLOCK.match(line):
                return eol
            if _BLOCK_END.match(line):
                return nxt
            eol = nxt
        return eol

    def _inline(self, pos: int, end: int) -> tuple[int, bool]:
        """Scan ``text[pos:end]`` left to right, as CommonMark's inline parser does; returns
        where to go on and whether that is a line start."""
        text = self.text
        literal: set[int] = set()  # closing backtick runs of spans that were scanned inside
        runs: dict[int, list[int]] | None = None  # built at the first backtick
        while pos < end:
            char = text[pos]
            if char == "\\" and pos + 1 < end and text[pos + 1] in _ESCAPABLE:
                pos += 2
            elif char == "`":
                if runs is None:
                    runs = _backtick_runs(text, pos, end)
                run = _BACKTICKS.match(text, pos).end() - pos  # type: ignore[union-attr]
                same = runs.get(run, [])
                after = bisect.bisect_right(same, pos)
                close = same[after] if after < len(same) and pos not in literal else -1
                if close >= 0 and "\n" not in text[pos:close]:
                    pos = close + run  # a code span on one line: shown as written
                else:
                    if close >= 0:
                        literal.add(close)
                        # Code across lines is blanked inside (see the module docstring), but
                        # a <style> shown in it must not apply to the whole page.
                        self._code_until = max(self._code_until, close)
                    pos += run
            elif char == "<":
                jumped = self._markup(pos)
                if jumped > end:
                    return jumped, text[jumped - 1] == "\n" if jumped < len(text) else True
                pos = max(jumped, pos + 1)
            else:
                pos += 1
        return end + 1, True

    def _markup(self, pos: int, in_html: bool = False) -> int:
        """Handle the comment or tag at ``pos``; the position after it (``pos`` if none)."""
        text = self.text
        if text.startswith("<!--", pos):
            close = -1 if self._no_comment_end else _comment_end(text, pos)
            self._no_comment_end = close < 0
            if close < 0:
                if not in_html:
                    return pos  # not a block: CommonMark shows an unclosed '<!--' inside text
                close = len(text)  # an unclosed comment block hides the rest of the page
            self.hidden.append((pos, close))
            return close
        bogus = _BOGUS_COMMENT.match(text, pos)
        if bogus is not None:
            # CDATA, processing instructions and declarations are raw HTML to CommonMark and
            # (bogus) comments to a browser: never shown.
            marker = _BOGUS_END[bogus.group()[:3] if bogus.group().startswith("<![") else bogus.group()[:2]]
            close = -1 if marker in self._absent else text.find(marker, bogus.end())
            if close < 0:
                self._absent.add(marker)  # absent after here, so after any later start too
                if not in_html:
                    return pos  # CommonMark shows an unclosed one inside text
                close = len(text)  # an unclosed HTML block runs to the end of the page
            else:
                close += len(marker)
            self.hidden.append((pos, close))
            return close
        tag = _OPEN_TAG.match(text, pos)
        if tag is None:
            other = _OTHER_TAG.match(text, pos)
            return other.end() if other else pos
        name = tag.group(1).lower()
        if name in _VOID:
            return tag.end()
        attrs = _attributes(tag.group(2))
        self._close_before(pos)
        parent = self._open[-1] if self._open else None
        follow = False
        if name not in _NEVER_SHOWN and len(self._open) < MAX_UNSEEN_NESTING:
            style = computed_style(name, attrs.get, self.sheet)
            # Outside a followed element, judged alone: the renderer's own CSS (a dark theme)
            # decides what lies around it. Inside one, colour, size and background are
            # inherited from it, as in the HTML reader for a page's own styles.
            zero = zero_font(style, parent is not None and parent.zero)
            inherited = parent.ink if parent is not None else Ink()
            ink = text_ink(name, attrs.get, style, inherited)
            unseen = zero or invisible_ink(ink)
            if not hides_subtree(attrs.get, style, name):
                if parent is None and not unseen:
                    return tag.end()  # its content is scanned like any text
                follow = True
        close = len(text) if name in self._unclosed else _element_end(text, tag.end(), name, self._runs)
        if close == len(text):
            self._unclosed.add(name)
        if follow:
            # Its own text is blanked, and so is what its children inherit unseen, but a child
            # that sets a visible colour or size again is shown (as the HTML reader does).
            # A browser closes it with its parent at the latest.
            close = min(close, parent.end) if parent is not None else close
            self._open.append(_Open(close, ink, zero, unseen))
            self._inner_changes(pos)
            return tag.end()  # its content is scanned like any text
        if name == "style" and pos >= self._code_until and media_applies(attrs.get("media")):
            self.styles.append(text[tag.end() : close])
        # Unclosed, the element runs to the end: a browser nests everything after it inside.
        self.hidden.append((pos, close))
        return close


def _paragraph_end(text: str, pos: int) -> int:
    """The end of the line before the next blank line after ``pos`` (or the end of the text)."""
    blank = _BLANK_LINE.search(text, pos)
    return len(text) if blank is None else blank.start()


def _line_end(text: str, pos: int) -> int:
    eol = text.find("\n", pos)
    return len(text) if eol < 0 else eol


def _fence(line: str) -> str | None:
    opened = _FENCE_OPEN.fullmatch(line)
    if opened is None or (opened.group(1)[0] == "`" and "`" in opened.group(2)):
        return None
    return opened.group(1)


def _after_fence(text: str, eol: int, fence: str, quotes: int = 0) -> int:
    """The line start after the fence opened on the line ending at ``eol`` closes (or the end).

    A fence opened inside ``quotes`` levels of block quote also ends at the first line with
    fewer '>' markers: the quote ends there and so does its code block (no lazy lines)."""
    while eol < len(text):
        start = eol + 1
        eol = _line_end(text, start)
        line = text[start:eol]
        if quotes:
            quote = _QUOTE_PREFIX.match(line)
            if quote.group().count(">") < quotes:  # type: ignore[union-attr]
                return start
            line = line[quote.end() :]  # type: ignore[union-attr]
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return eol + 1
    return len(text)


def _backtick_runs(text: str, pos: int, end: int) -> dict[int, list[int]]:
    """Start positions of the backtick runs in ``text[pos:end]``, by run length (ascending)."""
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS.finditer(text, pos, end):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    return runs


def _comment_end(text: str, pos: int) -> int:
    # '<!-->' and '<!--->' are complete (empty) comments in CommonMark and in browsers.
    for empty in ("<!-->", "<!--->"):
        if text.startswith(empty, pos):
            return pos + len(empty)
    close = text.find("-->", pos + 4)
    return close + 3 if close >= 0 else -1


def _attributes(source: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for match in _ATTRIBUTE.finditer(source):
        value = next((v for v in match.groups()[1:] if v is not None), "")
        # A browser decodes character references in attributes: style="display:&#110;one" hides.
        attrs.setdefault(match.group(1).lower(), html.unescape(value))
    return attrs


# What may stand between a hidden element's start and end tags and hide an end tag from a
# browser: a comment, a bogus comment ('<![CDATA[', '<?', '<!X'), a code span (Markdown
# turns '</span>' there into '&lt;/span&gt;') and an escaped '<'.
_ELEMENT_INNER = re.compile(r"<!--|<!\[CDATA\[|<[?!]|`+|\\<")
_RAW_TEXT = {"script", "style"}  # end at the first end tag, whatever stands before it


def _element_end(text: str, pos: int, name: str, runs: dict[int, list[int]] | None = None) -> int:
    """The position after the end tag that closes an element opened before ``pos``, else the end.

    A wrong guess here leaks text if the end is put too early and only loses text if it is
    put too late, so anything that might make a '</name>' not an end tag skips it: comments,
    bogus comments and code spans are stepped over whole, and '\\</name>' is not an end tag.
    In an HTML block these are not special to Markdown, so this can hide more than a browser.
    """
    tags = re.compile(rf"<(/?){re.escape(name)}(?=[\s/>])[^>]*>", re.IGNORECASE)
    if name in _RAW_TEXT:
        end = re.compile(rf"</{re.escape(name)}(?=[\s/>])[^>]*>", re.IGNORECASE).search(text, pos)
        return len(text) if end is None else end.end()
    depth = 1
    # Backtick runs by length, found once per text (the caller keeps them across elements).
    runs = {} if runs is None else runs
    tag: re.Match[str] | None = None
    while True:
        if tag is None or tag.start() < pos:  # kept while still ahead: each search scans new text
            tag = tags.search(text, pos)
        if tag is None:
            return len(text)
        # '+ 1' takes in the backslash of an escaped '\\</name>'.
        inner = _ELEMENT_INNER.search(text, pos, tag.start() + 1)
        if inner is None:
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                return tag.end()
            pos = tag.end()
            continue
        pos = _after_inner(text, inner, runs)
        if pos < 0:
            return len(text)  # unclosed: it hides the rest, as in a browser or worse


def _after_inner(text: str, inner: re.Match[str], runs: dict[int, list[int]]) -> int:
    """Where the construct ``inner`` found inside a hidden element ends; -1 if never."""
    token, start = inner.group(), inner.start()
    if token == "<!--":
        return _comment_end(text, start)
    if token.startswith("<![CDATA["):
        close = text.find("]]>", inner.end())
        return close + 3 if close >= 0 else -1
    if token in ("<?", "<!"):
        close = text.find("?>" if token == "<?" else ">", inner.end())
        return close + len(token) if close >= 0 else -1
    if token == "\\<":
        return inner.end()
    if not runs:
        runs.update(_backtick_runs(text, 0, len(text)))
    same = runs.get(len(token), [])
    after = bisect.bisect_right(same, start)
    # A run closed by a later run of the same length is a code span; else literal backticks.
    return same[after] + len(token) if after < len(same) else inner.end()
