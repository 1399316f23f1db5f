"""HTML pages: the main content as Markdown-like text, without navigation and chrome.

Headings become ``#`` lines so that HTML, DOCX and Markdown documents chunk alike, and data
tables Markdown pipe tables with their header row (:mod:`beleg.ingest.readers.tables` says
how spans and layout tables are read). Text a
reader of the page would not see is left out too: comments, ``<template>``, and elements
hidden by attributes, inline styles or the page's own ``<style>`` rules
(:mod:`beleg.ingest.readers.hidden` says which).

Pages are parsed whole or not at all: libxml2 silently drops everything below nesting
level 256 unless asked for its "huge" mode, so that mode is used (up to its own limit of
2048 levels, past which the page is refused with that reason), and the tree is walked
without recursion.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from beleg.errors import IngestError, NoContent, missing_dependency
from beleg.ingest.readers.base import (
    bom_encoding,
    decode_as,
    decode_text,
    language_code,
    normalize_newlines,
    require_content,
)
from beleg.ingest.readers.hidden import (
    Ink,
    StyleSheet,
    computed_style,
    hides_subtree,
    invisible_ink,
    media_applies,
    revealed_style,
    text_ink,
    zero_font,
)
from beleg.ingest.readers.tables import GridCell, Row, cell_line, pipe_table
from beleg.types import Heading, ParsedDocument

logger = logging.getLogger(__name__)

_DROP_TAGS = (
    "head", "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe",
    "svg", "template", "button", "select", "textarea", "canvas", "object", "embed",
)  # fmt: skip
_BOILERPLATE_ROLES = {"navigation", "banner", "contentinfo"}
# Matched against class/id tokens split at '-' and '_' ("site-nav", "cookie_banner").
_BOILERPLATE_WORDS = {
    "nav", "navbar", "navigation", "menu", "sidebar", "breadcrumb", "breadcrumbs",
    "cookie", "cookies", "footer", "header",
}  # fmt: skip
# A header inside these is the article's own header (its h1), not the site banner; HTML
# gives such headers no banner role either.
_SECTIONING = {"article", "main", "section"}
_NEVER_DROP = {"html", "body", "main", "article"}
# Class/id words are not trusted on these: a <th class="header"> is content.
_NO_CLASS_MATCH = {
    "table", "thead", "tbody", "tfoot", "tr", "th", "td", "h1", "h2", "h3", "h4", "h5", "h6",
    "p", "pre", "code", "span", "a", "em", "strong", "b", "i",
}  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {
    "p", "div", "section", "article", "main", "blockquote", "dl", "dt", "dd", "figure",
    "figcaption", "address", "details", "summary", "center", "fieldset", "body", "hr", "ul",
    "ol", "caption", "legend",
}  # fmt: skip
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
# What lxml refuses in text set through its API (XML 1.0 forbids it), though its parser lets it in.
_UNSETTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_BREAK = "\ue000"  # stands for <br> until whitespace is collapsed
#: Huge mode lifts libxml2's size limits, so Beleg sets its own: the pipeline's default
#: --max-file-mb is 50, and a page that large is already far beyond any real one.
MAX_HTML_CHARS = 64 * 1024 * 1024
#: Elements per page; the longest real pages (a large Wikipedia article) have ~100k.
MAX_HTML_ELEMENTS = 1_000_000
_PARSER_MAX_DEPTH = 2048  # libxml2's nesting limit in huge mode
# The encodings the WHATWG Encoding Standard allows a page to declare, as Python names
# them. Python knows many more (UTF-7, UTF-32, rot13, base64, unicode_escape...): a page
# declaring one of those is read as declaring an unknown encoding, as browsers do. Under
# UTF-7, '+2AA-' decoded to half a surrogate pair and lxml silently stopped there.
_HTML_CODECS = {
    "utf-8", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "tis-620",
    "iso8859-1", "ascii", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6",
    "iso8859-7", "iso8859-8", "iso8859-9", "iso8859-10", "iso8859-11", "iso8859-13",
    "iso8859-14", "iso8859-15", "iso8859-16", "cp1250", "cp1251", "cp1252", "cp1253",
    "cp1254", "cp1255", "cp1256", "cp1257", "cp1258", "gbk", "gb2312", "gb18030", "big5",
    "big5hkscs", "euc_jp", "iso2022_jp", "shift_jis", "cp932", "euc_kr", "cp949",
}  # fmt: skip
# The standard's labels that Python does not know by that name.
_HTML_LABELS = {
    "windows-874": "cp874", "dos-874": "cp874", "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-ukrainian": "mac-cyrillic", "iso-8859-8-i": "iso8859-8", "csiso88598i": "iso8859-8",
    "windows-31j": "cp932", "x-sjis": "shift_jis", "windows-949": "cp949",
    **{f"x-cp125{n}": f"cp125{n}" for n in range(9)},
}  # fmt: skip
# Labels the standard decodes with a wider encoding than their name says: a page declaring
# iso-8859-1 or us-ascii is read as windows-1252 by every browser ("€", curly quotes), one
# declaring shift_jis or gb2312 by its Microsoft superset.
_WHATWG_DECODER = {
    "iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874",
    "tis-620": "cp874", "gb2312": "gbk", "euc_kr": "cp949", "shift_jis": "cp932", "big5": "big5hkscs",
}  # fmt: skip
# The HTML standard: a <meta> found by an ASCII scan cannot truly declare UTF-16.
_ASCII_INCOMPATIBLE = ("utf-16",)


def _decode(data: bytes, path: Path, encoding: str | None) -> str:
    """Decode with, in order: a BOM, ``<meta charset>``, UTF-8, the caller's ``encoding``."""
    if bom_encoding(data) is not None or b"\x00" in data[:8192]:
        return decode_text(data, path, encoding)  # the mark decides; NUL bytes are refused there
    declared = _declared_charset(data, encoding)
    if declared is None:
        return decode_text(data, path, encoding)
    try:
        return normalize_newlines(decode_as(data, declared))
    except UnicodeDecodeError as exc:
        if encoding is not None:
            return decode_text(data, path, encoding)  # the caller's fallback for wrongly declared pages
        bad = data[exc.start : exc.start + 1].hex()
        raise IngestError(
            f"<meta charset> declares {declared} but the page is not valid {declared} "
            f"(byte 0x{bad} at offset {exc.start}); fix the declaration or pass --encoding"
        ) from None


def _declared_charset(data: bytes, encoding: str | None) -> str | None:
    """The codec ``<meta charset>`` names; ``None`` without a usable declaration."""
    found = _CHARSET.search(data[:4096])
    if found is None:
        return None
    label = found.group(1).decode("ascii").lower()
    try:
        name = codecs.lookup(_HTML_LABELS.get(label, label)).name
    except LookupError:
        name = None
    if name is not None and name.startswith(_ASCII_INCOMPATIBLE):
        return "utf-8"
    if name in _HTML_CODECS:
        return _WHATWG_DECODER.get(name, name)
    if encoding is not None:
        return None  # the caller said what to use
    if name is None:
        raise IngestError(f"<meta charset> declares unknown encoding {label!r}; pass --encoding")
    raise IngestError(
        f"<meta charset> declares {label!r}, which is not an encoding HTML allows (WHATWG Encoding "
        "Standard); re-save the page as UTF-8 or pass --encoding"
    )


_PICTURES = frozenset({"img", "picture", "video", "canvas", "svg", "iframe", "object", "embed"})


def _drop_invisible(doc: Any, sheet: StyleSheet, own_styles_only: bool) -> None:
    """Remove comments, processing instructions and hidden elements (tails stay).

    Text of a zero font size, or painted in the colour of its background, is removed
    without its element: children that set a size or colour of their own again (the
    inline-block whitespace trick) are still shown. An ancestor's background counts only
    when ``own_styles_only``: an external style sheet may paint any element in between.
    """
    stack = [(child, False, Ink()) for child in doc]
    while stack:
        el, parent_zero, parent_ink = stack.pop()
        if not isinstance(el.tag, str):
            _drop(el)
            continue
        if el.tag == "head":
            continue  # not content (its <title> and <style> are read before this)
        # Text a reader can show with a click, a link or the pointer (an accordion's panel) is
        # content: it is judged as it looks then too (revealed_style).
        looks = [computed_style(el.tag, el.get, sheet)]
        revealed = revealed_style(el.tag, el.get, sheet)
        if revealed is not None:
            looks.append(revealed)
        looks = [style for style in looks if not hides_subtree(el.get, style, el.tag)]
        if not looks:
            _drop(el)  # its subtree goes with it, so it is not visited
            continue
        if not own_styles_only or any(isinstance(c.tag, str) and c.tag.lower() in _PICTURES for c in el):
            # Another sheet, or a picture in this element that may lie under its text (a hero
            # title over an <img>): what the text is drawn on is not known.
            parent_ink = replace(parent_ink, backdrop=None)
        painted = [(zero_font(style, parent_zero), text_ink(el.tag, el.get, style, parent_ink)) for style in looks]
        zero, ink = next(((z, i) for z, i in painted if not (z or invisible_ink(i))), painted[0])
        if zero or invisible_ink(ink):
            el.text = None
            for child in el:
                child.tail = None  # a child's tail is this element's text
        stack.extend((child, zero, ink) for child in el)


def _drop(el: Any) -> None:
    """Remove ``el`` and its subtree, keeping its tail text in place."""
    previous, parent = el.getprevious(), el.getparent()
    joined = previous.tail if previous is not None else parent.text if parent is not None else ""
    if not el.tail or not _UNSETTABLE.search((joined or "") + el.tail):
        el.drop_tree()
        return
    # drop_tree joins the tail onto the previous node's text, and lxml refuses to set text
    # holding control characters (which its parser let in), failing half-way with that
    # text already cleared: empty the element where it stands instead, texts untouched.
    if isinstance(el.tag, str):
        el.clear(keep_tail=True)
        el.tag = "span"
    else:
        el.text = ""  # a comment or processing instruction: never shown anyway


def _style_sheet(doc: Any) -> StyleSheet:
    """The page's own ``<style>`` rules that apply on a screen (``media`` all or screen)."""
    return StyleSheet([el.text or "" for el in doc.iter("style") if media_applies(el.get("media"))])


def _has_external_styles(doc: Any) -> bool:
    """Does the page load CSS we do not read (``<link rel=stylesheet>``, ``@import``)?"""
    if any("stylesheet" in (el.get("rel") or "").lower().split() for el in doc.iter("link")):
        return True
    return any("@import" in (el.text or "").lower() for el in doc.iter("style"))


def _words(value: str) -> set[str]:
    return set(re.split(r"[\s_-]+", value.lower()))


def _is_boilerplate(el: Any, root_chars: int, in_sectioning: bool) -> bool:
    tag = el.tag
    role = (el.get("role") or "").strip().lower()
    words: set[str] = set()
    if tag not in _NO_CLASS_MATCH:
        words = _words(f"{el.get('class') or ''} {el.get('id') or ''}") & _BOILERPLATE_WORDS
    if tag not in _DROP_TAGS and role not in _BOILERPLATE_ROLES and not words:
        return False  # checked first: the subtree searches below are only paid for candidates
    if tag in _NEVER_DROP or el.find(".//main") is not None or el.find(".//article") is not None:
        return False  # a wrapper around the content is never boilerplate, whatever its role
    headerish = tag == "header" or role == "banner" or words == {"header"}
    if headerish and in_sectioning:
        return False
    if tag in _DROP_TAGS or role in _BOILERPLATE_ROLES:
        return True
    # Class names are only a hint: a "with-sidebar" wrapper holding the page's h1 or most
    # of its text is the content itself.
    return el.find(".//h1") is None and len(el.text_content()) * 2 < root_chars


def _drop_boilerplate(root: Any) -> None:
    """Remove navigation and page chrome below ``root``, outermost first."""
    root_chars = len(root.text_content())
    in_root_section = any(a.tag in _SECTIONING for a in (root, *root.iterancestors()))
    stack = [(child, in_root_section) for child in root]
    while stack:
        el, in_sectioning = stack.pop()
        if _is_boilerplate(el, root_chars, in_sectioning):
            el.drop_tree()  # keeps the tail text, which belongs to the parent
            continue
        inside = in_sectioning or el.tag in _SECTIONING
        stack.extend((child, inside) for child in el)


def _content_root(doc: Any) -> Any:
    """``<main>`` (or ``role=main``), else a single ``<article>``, else ``<body>``."""
    main = doc.find(".//main")
    if main is None:
        main = next(iter(doc.xpath(".//*[@role='main']")), None)
    if main is not None:
        return main
    articles = doc.findall(".//article")
    if len(articles) == 1:
        return articles[0]
    body = doc.find("body")
    return body if body is not None else doc


# A layout table's parts are read as blocks: each cell is a paragraph of its own.
_LAYOUT_TABLE_PARTS = {"table", "thead", "tbody", "tfoot", "tr", "td", "th"}
# The HTML standard's limits on spans: larger values are read as these.
_MAX_COLSPAN, _MAX_ROWSPAN = 1000, 65534
# Inside a cell these start a new line of text, which the cell folds to a space.
_CELL_BREAKS = _BLOCKS | _LAYOUT_TABLE_PARTS | {"li", "br", "pre", *_HEADINGS}


def _is_layout(table: Any) -> bool:
    """A table that arranges the page rather than holding data: marked so, or with a heading
    or another table in a cell (the first one found ends the search)."""
    if (table.get("role") or "").strip().lower() in ("presentation", "none"):
        return True
    inside = table.iter("table", *_HEADINGS)
    next(inside)  # the table itself
    return next(inside, None) is not None


def _span(value: str | None, least: int, most: int) -> int:
    """A colspan/rowspan attribute as a browser reads it: leading digits, else 1."""
    digits = re.match(r"\s*\+?(\d+)", value or "")
    return min(max(int(digits.group(1)[:6]), least), most) if digits else 1


def _cell_text(cell: Any) -> str:
    """A cell's text on one line (:func:`~beleg.ingest.readers.tables.cell_line`), with blocks
    and line breaks inside it kept apart by a space."""
    from lxml import etree  # loaded already: the page was parsed with it

    parts: list[str] = []
    for event, el in etree.iterwalk(cell, events=("start", "end")):
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in _CELL_BREAKS:
            parts.append(" ")
        if event == "start":
            parts.append(el.text or "")
        elif el is not cell:
            parts.append(el.tail or "")
    return cell_line("".join(parts))


class _TextBuilder:
    """Collects blocks (paragraphs, headings, list items, rows) in document order."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, str, int]] = []  # (kind, text, heading level or 0)
        self._inline: list[str] = []
        self._prefix = ""  # "- " before the next paragraph of a list item
        self._cells_left = MAX_HTML_ELEMENTS  # grid positions all tables together may span

    def flush(self) -> None:
        lines = (" ".join(part.split()) for part in "".join(self._inline).split(_BREAK))
        text = "\n".join(line for line in lines if line)
        self._inline.clear()
        if text:
            kind = "item" if self._prefix else "para"
            self.blocks.append((kind, self._prefix + text, 0))
            self._prefix = ""

    def add(self, kind: str, text: str, level: int = 0) -> None:
        self.flush()
        if text:
            self.blocks.append((kind, text, level))

    def walk(self, root: Any) -> None:
        """Visit ``root``'s subtree in document order with an explicit stack (no recursion)."""
        stack: list[tuple[bool, Any, int]] = [(False, root, 0)]  # (closing?, element, list depth)
        while stack:
            closing, el, list_depth = stack.pop()
            if closing:
                self._close(el)
                continue
            tag = el.tag if isinstance(el.tag, str) else ""  # entities and the like have no tag name
            if tag in _HEADINGS:
                title = " ".join(el.text_content().split())
                self.add("heading", title, _HEADINGS[tag])
            elif tag == "pre":
                self.add("pre", el.text_content().strip("\n").rstrip())
            elif tag == "table" and self._table(el):
                pass
            elif tag == "br":
                self._inline.append(_BREAK)
            elif tag:
                self._open(el, tag, list_depth)
                stack.append((True, el, list_depth))
                depth = list_depth + (tag in ("ul", "ol"))
                stack.extend((False, child, depth) for child in reversed(el))
                continue  # the tail follows when the element closes
            if el.tail:
                self._inline.append(el.tail)

    def _open(self, el: Any, tag: str, list_depth: int) -> None:
        if tag == "li":
            self.flush()
            self._prefix = "  " * max(list_depth - 1, 0) + "- "
        elif tag in _BLOCKS or tag in _LAYOUT_TABLE_PARTS:
            self.flush()
        if el.text:
            self._inline.append(el.text)

    def _close(self, el: Any) -> None:
        if el.tag == "li":
            self.flush()
            self._prefix = ""
        elif el.tag in _BLOCKS or el.tag in _LAYOUT_TABLE_PARTS:
            self.flush()
        if el.tail:
            self._inline.append(el.tail)

    def _table(self, table: Any) -> bool:
        """Write a data table as a pipe table (:mod:`beleg.ingest.readers.tables`); ``False``
        for a layout table, whose cells the caller then reads as ordinary blocks."""
        if _is_layout(table):
            return False
        rows, header = self._grid(table)
        text = pipe_table(rows, header)
        if text is None:
            return False
        self.flush()
        caption = table.find("caption")
        if caption is not None:
            self.add("para", _cell_text(caption))
        self.add("table", text)
        return True

    def _grid(self, table: Any) -> tuple[list[Row], list[bool]]:
        """The table's grid, with each spanned cell repeated in every position it covers, and
        which rows are header rows."""
        parts = (table.xpath("./thead/tr"), table.xpath("./tr | ./tbody/tr"), table.xpath("./tfoot/tr"))
        trs = [tr for part in parts for tr in part]  # a browser shows <tfoot> last, wherever it stands
        # A cell spans rows of its own group (<thead>, body, <tfoot>) only, as in a browser.
        group_end = [sum(len(p) for p in parts[: g + 1]) for g, part in enumerate(parts) for _ in part]
        rows: list[Row] = [[] for _ in trs]
        cell_rows: list[list[Any]] = [[c for c in tr if c.tag in ("td", "th")] for tr in trs]
        for r, cells in enumerate(cell_rows):
            column = 0
            for cell in cells:
                while column < len(rows[r]) and rows[r][column] is not None:
                    column += 1  # taken by a cell spanning down from a row above
                colspan = _span(cell.get("colspan"), 1, _MAX_COLSPAN)
                rowspan = _span(cell.get("rowspan"), 0, _MAX_ROWSPAN) or group_end[r] - r  # 0: to the group's end
                placed = GridCell(_cell_text(cell), id(cell))
                for below in range(r, min(r + rowspan, group_end[r])):
                    row = rows[below]
                    # The positions written and any gap before them are charged before any is
                    # allocated: a cell spanning down into a short row pads it to its column.
                    self._charge(colspan + max(column - len(row), 0))
                    row.extend([None] * (column + colspan - len(row)))
                    row[column : column + colspan] = [placed] * colspan
                column += colspan
        width = max((len(row) for row in rows), default=0)
        # Every row is padded to the widest, so one wide row over many short ones makes a
        # grid of width x rows positions: charged before it is allocated, not after.
        self._charge(sum(width - len(row) for row in rows))
        for row in rows:
            row.extend([None] * (width - len(row)))
        head = len(parts[0])
        if not head:
            # Leading rows of <th> only (an empty corner cell may be a <td>); with no <th> at
            # all, the first row. Where <th> cells only name rows (a key/value table), no row
            # names the columns.
            all_th = [
                any(c.tag == "th" for c in cells) and all(c.tag == "th" or not c.text_content().strip() for c in cells)
                for cells in cell_rows
            ]
            head = next((n for n, is_th in enumerate(all_th) if not is_th), len(all_th))
            if not head and not any(c.tag == "th" for cells in cell_rows for c in cells):
                head = 1
        return rows, [r < head for r in range(len(trs))]

    def _charge(self, positions: int) -> None:
        self._cells_left -= positions
        if self._cells_left < 0:
            raise IngestError(
                f"the page's tables span more than {MAX_HTML_ELEMENTS:,} cells (colspan/rowspan), the most "
                "Beleg lays out; split it"
            )

    def result(self) -> tuple[str, tuple[Heading, ...]]:
        self.flush()
        parts: list[str] = []
        headings: list[Heading] = []
        offset = 0
        previous = ""
        for kind, text, level in self.blocks:
            # Consecutive list items stay together; everything else is a paragraph.
            together = kind == previous == "item"
            sep = "" if not parts else ("\n" if together else "\n\n")
            offset += len(sep)
            if kind == "heading":
                text = f"{'#' * level} {text}"
                headings.append(Heading(level, text[level + 1 :], offset))
            parts.append(sep + text)
            offset += len(text)
            previous = kind
        return "".join(parts), tuple(headings)


#: ``<meta name>``s read as the document's own metadata, normalised and checked by ingest like
#: front matter. Never the access keys (tenant, acl, id, ...): a web page, often fetched from
#: elsewhere, must not decide who may read it or which stored document it replaces.
DESCRIPTIVE_META = ("product", "version", "status", "authority", "date")


def _metadata(doc: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    meta_language = None
    for el in doc.iter("meta"):
        name = (el.get("name") or el.get("http-equiv") or "").strip().lower()
        content = " ".join((el.get("content") or "").split())
        if not content or name in meta:
            continue  # the first declaration wins, as in browsers
        if name in ("description", "author") or name in DESCRIPTIVE_META:
            meta[name] = content
        elif name == "keywords":
            meta[name] = [k.strip() for k in content.split(",") if k.strip()]
        elif name in ("language", "content-language") and meta_language is None:
            meta_language = content
    # <html lang> is the standard declaration; <meta> language is the older fallback.
    declared = (doc.get("lang") or "").strip() or meta_language
    if declared:
        code = language_code(declared)
        if code:
            meta["language"] = code
        else:
            logger.debug("ignoring language %r: not a language tag", declared)
    return meta


class HtmlReader:
    """Reads ``.html``/``.htm`` files with lxml."""

    suffixes: tuple[str, ...] = (".html", ".htm")
    decodes_text = True

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        """Extract the main content, its headings, ``<meta>`` metadata and ``<title>``."""
        try:
            import lxml.html
            from lxml import etree
        except ImportError as exc:
            raise missing_dependency("lxml", "html", exc) from exc
        require_content(data)
        source = _XML_DECLARATION.sub("", _decode(data, path, encoding).replace(_BREAK, " "))
        if not source.strip():
            raise NoContent("file contains only whitespace; nothing to index")
        if len(source) > MAX_HTML_CHARS:
            raise IngestError(
                f"HTML page is {len(source):,} characters, over the {MAX_HTML_CHARS:,} Beleg parses; split it"
            )
        doc = _parse(source, lxml.html, etree)
        body = doc.find("body")
        if body is None or not body.text_content().strip():
            raise NoContent("page body has no text (a redirect or placeholder page?); nothing to index")

        title_el = doc.find("head/title")
        title = " ".join(title_el.text_content().split()) if title_el is not None else ""
        metadata = _metadata(doc)

        sheet = _style_sheet(doc)
        sheet.find_interactions(
            ((el.tag, el.get) for el in doc.iter() if isinstance(el.tag, str)),
            ((el.get("href") or "").strip()[1:] for el in doc.iter("a", "area") if (el.get("href") or "").strip().startswith("#")),
        )
        _drop_invisible(doc, sheet, own_styles_only=not _has_external_styles(doc) and not sheet.paints_unjudged)
        root = _content_root(doc)
        _drop_boilerplate(root)
        builder = _TextBuilder()
        builder.walk(root)
        text, headings = builder.result()
        if not text:
            raise IngestError("no readable text left after removing navigation, page chrome and hidden elements")
        if not title:
            title = next((h.title for h in headings if h.level == 1), "")
        logger.debug("read %s: %d headings, %d characters", path.name, len(headings), len(text))
        return ParsedDocument(text=text, headings=headings, metadata=metadata, title=title or None)


def _parse(source: str, html: Any, etree: Any) -> Any:
    """The whole tree of ``source``, or an :class:`IngestError` saying why it cannot be had."""
    parser = html.HTMLParser(huge_tree=True)
    try:
        doc = html.document_fromstring(source, parser=parser)
    except (etree.LxmlError, ValueError) as exc:
        raise IngestError(f"cannot parse HTML: {' '.join(str(exc).split())}") from None
    if any("Excessive depth" in entry.message for entry in parser.error_log):
        raise IngestError(
            f"HTML nests elements more than {_PARSER_MAX_DEPTH} levels deep; the parser stops there and "
            "Beleg does not index a truncated page (unclosed tags?)"
        )
    count = sum(1 for _ in doc.iter())
    if count > MAX_HTML_ELEMENTS:
        raise IngestError(f"HTML page has {count:,} elements, over the {MAX_HTML_ELEMENTS:,} Beleg reads; split it")
    return doc
