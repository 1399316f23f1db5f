"""HTML pages: the main content as Markdown-like text, without navigation and chrome.

Headings become ``#`` lines so that HTML, DOCX and Markdown documents chunk alike.
"""

from __future__ import annotations

import codecs
import logging
import re
from pathlib import Path
from typing import Any

from beleg.errors import IngestError, missing_dependency
from beleg.ingest.readers.base import decode_text, language_code, normalize_newlines, require_content
from beleg.types import Heading, ParsedDocument

logger = logging.getLogger(__name__)

_DROP_TAGS = (
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe",
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
_BREAK = "\ue000"  # stands for <br> until whitespace is collapsed


def _decode(data: bytes, path: Path, encoding: str | None) -> str:
    """Decode with, in order: the caller's encoding, a BOM, ``<meta charset>``, UTF-8."""
    if encoding is None:
        if data.startswith(codecs.BOM_UTF8):
            return decode_text(data, path, "utf-8")  # a BOM outranks <meta charset>
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            try:  # decode_text would reject UTF-16 for its NUL bytes
                return normalize_newlines(data.decode("utf-16"))
            except UnicodeDecodeError as exc:
                raise IngestError(f"not valid UTF-16 despite its byte-order mark ({exc.reason})") from None
        declared = _CHARSET.search(data[:4096])
        if declared is not None:
            encoding = declared.group(1).decode("ascii").lower()
            try:
                codecs.lookup(encoding)
            except LookupError:
                raise IngestError(
                    f"<meta charset> declares unknown encoding {encoding!r}; pass --encoding"
                ) from None
    return decode_text(data, path, encoding)


def _words(value: str) -> set[str]:
    return set(re.split(r"[\s_-]+", value.lower()))


def _inside(el: Any, tags: set[str]) -> bool:
    return any(a.tag in tags for a in el.iterancestors())


def _is_boilerplate(el: Any, root_chars: int) -> bool:
    if el.tag in _NEVER_DROP or el.find(".//main") is not None or el.find(".//article") is not None:
        return False  # a wrapper around the content is never boilerplate, whatever its role
    tag = el.tag
    role = (el.get("role") or "").strip().lower()
    words: set[str] = set()
    if tag not in _NO_CLASS_MATCH:
        words = _words(f"{el.get('class') or ''} {el.get('id') or ''}") & _BOILERPLATE_WORDS
    headerish = tag == "header" or role == "banner" or words == {"header"}
    if headerish and _inside(el, _SECTIONING):
        return False
    if tag in _DROP_TAGS or role in _BOILERPLATE_ROLES or el.get("hidden") is not None:
        return True
    if not words:
        return False
    # Class names are only a hint: a "with-sidebar" wrapper holding the page's h1 or most
    # of its text is the content itself.
    return el.find(".//h1") is None and len(el.text_content()) * 2 < root_chars


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


class _TextBuilder:
    """Collects blocks (paragraphs, headings, list items, rows) in document order."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, str, int]] = []  # (kind, text, heading level or 0)
        self._inline: list[str] = []
        self._prefix = ""  # "- " before the next paragraph of a list item

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

    def walk(self, el: Any, list_depth: int = 0) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""  # comments and PIs have no tag name
        if not tag:
            pass
        elif tag in _HEADINGS:
            title = " ".join(el.text_content().split())
            self.add("heading", title, _HEADINGS[tag])
        elif tag == "pre":
            self.add("pre", el.text_content().strip("\n").rstrip())
        elif tag == "table":
            self._table(el)
        elif tag == "br":
            self._inline.append(_BREAK)
        elif tag == "li":
            self.flush()
            self._prefix = "  " * max(list_depth - 1, 0) + "- "
            self._children(el, list_depth)
            self.flush()
            self._prefix = ""
        else:
            block = tag in _BLOCKS
            if block:
                self.flush()
            self._children(el, list_depth + (tag in ("ul", "ol")))
            if block:
                self.flush()
        if el.tail:
            self._inline.append(el.tail)

    def _children(self, el: Any, list_depth: int) -> None:
        if el.text:
            self._inline.append(el.text)
        for child in el:
            self.walk(child, list_depth)

    def _table(self, table: Any) -> None:
        self.flush()
        caption = table.find("caption")
        if caption is not None:
            self.add("para", " ".join(caption.text_content().split()))
        for row in table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr"):
            cells = [" ".join(c.text_content().split()) for c in row if c.tag in ("td", "th")]
            if any(cells):
                # The kind names the table, so two adjacent tables stay two blocks.
                self.add(f"row-{id(table)}", " | ".join(cells))

    def result(self) -> tuple[str, tuple[Heading, ...]]:
        self.flush()
        parts: list[str] = []
        headings: list[Heading] = []
        offset = 0
        previous = ""
        for kind, text, level in self.blocks:
            # Consecutive list items and table rows stay together; everything else is a paragraph.
            together = kind == previous and kind.startswith(("item", "row"))
            sep = "" if not parts else ("\n" if together else "\n\n")
            offset += len(sep)
            if kind == "heading":
                text = f"{'#' * level} {text}"
                headings.append(Heading(level, text[level + 1 :], offset))
            parts.append(sep + text)
            offset += len(text)
            previous = kind
        return "".join(parts), tuple(headings)


def _metadata(doc: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    meta_language = None
    for el in doc.iter("meta"):
        name = (el.get("name") or el.get("http-equiv") or "").strip().lower()
        content = " ".join((el.get("content") or "").split())
        if not content or name in meta:
            continue  # the first declaration wins, as in browsers
        if name in ("description", "author"):
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
            raise IngestError("file contains only whitespace; nothing to index")
        try:
            doc = lxml.html.document_fromstring(source)
        except (etree.LxmlError, ValueError) as exc:
            raise IngestError(f"cannot parse HTML: {exc}") from None

        title_el = doc.find("head/title")
        title = " ".join(title_el.text_content().split()) if title_el is not None else ""
        metadata = _metadata(doc)

        root = _content_root(doc)
        root_chars = len(root.text_content())
        # Snapshot the list first: dropping while iterating would skip siblings.
        for el in [e for e in root.iter() if e is not root and isinstance(e.tag, str)]:
            if el.getparent() is not None and _is_boilerplate(el, root_chars):
                el.drop_tree()  # keeps the tail text, which belongs to the parent
        builder = _TextBuilder()
        builder.walk(root)
        text, headings = builder.result()
        if not text:
            raise IngestError("no readable text left after removing navigation and page chrome")
        if not title:
            title = next((h.title for h in headings if h.level == 1), "")
        logger.debug("read %s: %d headings, %d characters", path.name, len(headings), len(text))
        return ParsedDocument(text=text, headings=headings, metadata=metadata, title=title or None)
