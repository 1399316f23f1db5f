"""Word ``.docx`` files: body paragraphs and tables in document order.

Heading styles become ``#`` lines (as for HTML) so every format chunks alike. Page
headers, footers, comments and footnotes are left out: they are page furniture or
annotations, not the document's running text.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

from beleg.errors import IngestError, missing_dependency
from beleg.ingest.readers.base import iso_date, language_code, require_content
from beleg.types import Heading, ParsedDocument

logger = logging.getLogger(__name__)

# Style names as Word stores them: English built-ins, or localised names in German templates.
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift)\s*(\d)$", re.IGNORECASE)
_TITLE_STYLES = {"title", "titel"}
_MAX_LEVEL = 6  # Word has Heading 7-9; Markdown-style lines stop at six '#'
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc (and other OLE files)


def _style_name(paragraph: Any) -> str:
    try:
        style = paragraph.style
    except Exception:  # a paragraph pointing at a style that does not exist
        return ""
    return (style.name or "") if style is not None else ""


def _heading_level(style_name: str) -> int | None:
    name = style_name.strip()
    if name.lower() in _TITLE_STYLES:
        return 1
    match = _HEADING_STYLE.match(name)
    return min(int(match.group(1)), _MAX_LEVEL) if match and int(match.group(1)) > 0 else None


def _is_list_item(paragraph: Any, style_name: str) -> bool:
    if style_name.lower().startswith(("list", "liste", "aufzählung")):
        return True
    # Direct numbering (w:numPr) without a list style, as pasted lists often have.
    ppr = paragraph._p.pPr
    return ppr is not None and ppr.numPr is not None


def _paragraph_text(paragraph: Any) -> str:
    # Keep manual line breaks (Shift+Enter) but collapse runs of spaces and tabs.
    lines = (" ".join(line.split()) for line in paragraph.text.split("\n"))
    return "\n".join(line for line in lines if line)


def _table_rows(table: Any) -> list[str]:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A horizontally merged cell is returned once per grid column; count it once.
            if previous is not None and cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


def _core_metadata(document: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    try:
        props = document.core_properties
        for key in ("title", "author"):
            value = getattr(props, key)
            if isinstance(value, str) and value.strip():
                meta[key] = " ".join(value.split())
        language = language_code(props.language)
        if language:
            meta["language"] = language
        created = iso_date(props.created)
        if created:
            meta["date"] = created
    except Exception as exc:  # a malformed core.xml must not cost the body text
        logger.debug("unreadable DOCX core properties: %s", exc)
    return meta


class DocxReader:
    """Reads ``.docx`` files with python-docx."""

    suffixes: tuple[str, ...] = (".docx",)

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        """Body text with heading lines, tables as ``a | b`` rows, core properties as metadata.

        ``encoding`` is ignored: DOCX is XML with its own declared encoding.
        """
        try:
            import docx
        except ImportError as exc:
            raise missing_dependency("python-docx", "docx", exc) from exc
        require_content(data)
        if data.startswith(_OLE_MAGIC):
            raise IngestError("this is a legacy Word 97-2003 .doc file; save it as .docx and ingest that")
        if not data.startswith(b"PK"):
            raise IngestError("not a .docx file (not a zip archive); is it misnamed or damaged?")
        # python-docx and zipfile raise assorted types on damaged input (BadZipFile,
        # KeyError, ValueError, lxml errors); each one is a per-file IngestError.
        try:
            document = docx.Document(io.BytesIO(data))
            blocks = self._blocks(document)
        except Exception as exc:
            raise IngestError(f"corrupt or invalid .docx: {str(exc) or type(exc).__name__}") from None

        parts: list[str] = []
        headings: list[Heading] = []
        first_heading: str | None = None
        offset = 0
        previous_kind = ""
        for kind, text, level in blocks:
            # List items and rows of one table stay on consecutive lines.
            together = kind == previous_kind and kind.startswith(("item", "row"))
            sep = "" if not parts else ("\n" if together else "\n\n")
            offset += len(sep)
            if kind == "heading":
                headings.append(Heading(level, text, offset))
                first_heading = first_heading or (text if level == 1 else None)
                text = f"{'#' * level} {text}"
            parts.append(sep + text)
            offset += len(text)
            previous_kind = kind
        if not parts:
            raise IngestError("document body has no text; nothing to index")
        metadata = _core_metadata(document)
        title = metadata.get("title") or first_heading
        logger.debug("read %s: %d headings, %d blocks", path.name, len(headings), len(blocks))
        return ParsedDocument(text="".join(parts), headings=tuple(headings), metadata=metadata, title=title)

    @staticmethod
    def _blocks(document: Any) -> list[tuple[str, str, int]]:
        """(kind, text, heading level) for each non-empty paragraph and table row."""
        from docx.table import Table

        blocks: list[tuple[str, str, int]] = []
        for number, item in enumerate(document.iter_inner_content()):
            if isinstance(item, Table):
                # The kind names the table, so two adjacent tables stay two blocks.
                blocks.extend((f"row-{number}", row, 0) for row in _table_rows(item))
                continue
            text = _paragraph_text(item)
            if not text:
                continue
            style = _style_name(item)
            level = _heading_level(style)
            if level is not None:
                blocks.append(("heading", " ".join(text.split()), level))
            elif _is_list_item(item, style):
                blocks.append(("item", "- " + text.replace("\n", " "), 0))
            else:
                blocks.append(("para", text, 0))
        return blocks
