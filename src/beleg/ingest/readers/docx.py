"""Word ``.docx`` files: body paragraphs and tables in document order.

Heading styles become ``#`` lines (as for HTML) so every format chunks alike. Page
headers, footers, comments and footnotes are left out: they are page furniture or
annotations, not the document's running text. Runs formatted as hidden are left out too
(directly or by style), as Word does not show or print them.

A .docx is a zip archive, and python-docx inflates and parses every part of it in memory,
so the archive is checked first from its directory (which zipfile then holds every member
to): total size, members, compression ratio, XML size and paragraph count. A 1.5 MB file
that would inflate to a gibibyte is refused in milliseconds instead.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
import zlib
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
_HIDING = ("w:vanish", "w:webHidden", "w:specVanish")
_OFF = {"0", "false", "off"}  # an on/off property's w:val that turns it off

#: Uncompressed size of all members together (the pipeline's default file limit is 50 MB;
#: real documents with images inflate to a few times their size).
MAX_UNCOMPRESSED_BYTES = 200 * 2**20
#: Members in the archive; a Word document has a dozen, a few hundred with many images.
MAX_MEMBERS = 5_000
#: Inflation ratio allowed for each member over RATIO_CHECK_BYTES and for the archive as a
#: whole; Word's XML compresses 5-20:1, images hardly at all. Below that size a high ratio
#: is harmless (and common: a short, repetitive settings.xml).
MAX_RATIO = 100
RATIO_CHECK_BYTES = 64 * 2**10
#: XML (and .rels) parts that python-docx parses with lxml, together.
MAX_XML_BYTES = 64 * 2**20
#: Paragraphs (w:p elements) over all XML parts; a 1,000-page manual has about 30,000.
MAX_PARAGRAPHS = 250_000
#: Elements (start tags) over all XML parts. lxml holds about 130 bytes per element: 60
#: headers of 1 MiB of ``<w:r/>`` each (10.5 million elements, a 142 KB file) took 1.3 GB.
#: Word writes some 10-30 elements a paragraph, so this is a few thousand pages, at most
#: about 260 MB parsed; it bounds memory however well the parts compress.
MAX_ELEMENTS = 2_000_000
# A start tag of a paragraph under any namespace prefix (bounded, so a match has a bounded
# length across read chunks): <w:p>, <w:p w14:paraId=...>, <w:p/>; not <w:pPr>.
_PARAGRAPH_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]{0,31}:)?p[\s/>]")
# A document type declaration, or an entity reference other than XML's five and character
# references. Word never writes them, and python-docx does not expand entities: the text
# after '&co;' (or an external, XXE, entity) was silently dropped, indexing a prefix.
_DTD_OR_ENTITY = re.compile(rb"<!DOCTYPE|&(?!(?:amp|lt|gt|quot|apos|#[0-9]{1,10}|#x[0-9A-Fa-f]{1,8});)")
_MAX_TAG_BYTES = 64


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


def _hidden_flag(rpr: Any) -> bool | None:
    """Run properties: hidden (True), explicitly shown (False), or not said (None)."""
    if rpr is None:
        return None
    from docx.oxml.ns import qn

    flags = [el.get(qn("w:val"), "true").lower() not in _OFF for name in _HIDING if (el := rpr.find(qn(name))) is not None]
    return any(flags) if flags else None


class _HiddenText:
    """Which runs Word does not show: ``w:vanish`` (Hidden font), ``w:webHidden`` (hidden in
    web layout) and ``w:specVanish``, set on the run, its character style or its paragraph's
    style (each through its ``basedOn`` chain), else the document defaults (``w:docDefaults``).
    The nearest one that says wins, so a run set back to shown inside a hidden style is shown."""

    def __init__(self, document: Any) -> None:
        from docx.oxml.ns import qn

        own: dict[str, bool | None] = {}
        based_on: dict[str, str] = {}
        self.default_paragraph_style: str | None = None
        # The last fallback of Word's cascade: hiding every run there and showing some again
        # on the run hides the rest of the document from a reader.
        defaults = document.styles.element.find(f"{qn('w:docDefaults')}/{qn('w:rPrDefault')}/{qn('w:rPr')}")
        self.document_default = _hidden_flag(defaults)
        for style in document.styles.element.findall(qn("w:style")):
            style_id = style.get(qn("w:styleId"), "")
            own[style_id] = _hidden_flag(style.find(qn("w:rPr")))
            parent = style.find(qn("w:basedOn"))
            if parent is not None:
                based_on[style_id] = parent.get(qn("w:val"), "")
            if style.get(qn("w:type")) == "paragraph" and style.get(qn("w:default"), "").lower() in ("1", "true", "on"):
                self.default_paragraph_style = style_id
        self.styles: dict[str, bool | None] = {}
        for style_id in own:
            seen: set[str] = set()
            current: str | None = style_id
            while current is not None and current not in seen and own.get(current) is None:
                seen.add(current)  # a basedOn cycle in a damaged file ends the walk
                current = based_on.get(current)
            self.styles[style_id] = own.get(current) if current is not None else None

    def paragraph_text(self, p: Any) -> str:
        """The text of the shown runs of paragraph element ``p`` (hyperlinks included)."""
        from docx.oxml.ns import qn

        ppr = p.pPr
        para_style = ppr.pStyle.val if ppr is not None and ppr.pStyle is not None else self.default_paragraph_style
        inherited = self.styles.get(para_style or "")
        parts: list[str] = []
        for run in p.xpath("w:r | w:hyperlink/w:r"):
            rpr = run.rPr
            hidden = _hidden_flag(rpr)
            if hidden is None and rpr is not None and (char_style := rpr.find(qn("w:rStyle"))) is not None:
                hidden = self.styles.get(char_style.get(qn("w:val"), ""))
            if hidden is None:
                hidden = self.document_default if inherited is None else inherited
            if not hidden:
                parts.append(run.text)
        return "".join(parts)


def _paragraph_text(paragraph: Any, hidden: _HiddenText) -> str:
    # Keep manual line breaks (Shift+Enter) but collapse runs of spaces and tabs.
    lines = (" ".join(line.split()) for line in hidden.paragraph_text(paragraph._p).split("\n"))
    return "\n".join(line for line in lines if line)


def _table_rows(table: Any, hidden: _HiddenText) -> list[str]:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A horizontally merged cell is returned once per grid column; count it once.
            if previous is not None and cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(" ".join(hidden.paragraph_text(p._p) for p in cell.paragraphs).split()))
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


def check_archive(data: bytes) -> None:
    """Refuse archives python-docx must not be given, from the zip directory and a streamed scan.

    zipfile stops each member at its declared size (and fails its CRC past that), so the
    directory's sizes bound what inflating can produce.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise IngestError(f"corrupt or invalid .docx: {exc}") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise IngestError(f".docx archive has {len(members):,} members, over the {MAX_MEMBERS:,} Beleg opens")
        total = sum(m.file_size for m in members)
        if total > MAX_UNCOMPRESSED_BYTES:
            raise IngestError(
                f".docx expands to {_mib(total)} uncompressed, over the {_mib(MAX_UNCOMPRESSED_BYTES)} Beleg "
                "inflates (a zip bomb, or a document with huge embedded media?)"
            )
        for m in members:
            ratio = m.file_size / max(m.compress_size, 1)
            if m.file_size > RATIO_CHECK_BYTES and ratio > MAX_RATIO:
                raise IngestError(
                    f".docx member {m.filename!r} expands {ratio:,.0f}:1 (to {_mib(m.file_size)}), over the "
                    f"{MAX_RATIO}:1 Beleg accepts; that is a zip bomb, not a document"
                )
        # Many members each under RATIO_CHECK_BYTES add up: 60 MiB from a 142 KB file.
        ratio = total / max(sum(m.compress_size for m in members), 1)
        if total > 16 * RATIO_CHECK_BYTES and ratio > MAX_RATIO:
            raise IngestError(
                f".docx expands {ratio:,.0f}:1 as a whole (to {_mib(total)}), over the {MAX_RATIO}:1 Beleg "
                "accepts; that is a zip bomb, not a document"
            )
        xml = [m for m in members if m.filename.lower().endswith((".xml", ".rels"))]
        xml_bytes = sum(m.file_size for m in xml)
        if xml_bytes > MAX_XML_BYTES:
            raise IngestError(
                f".docx holds {_mib(xml_bytes)} of XML, over the {_mib(MAX_XML_BYTES)} Beleg parses; split the document"
            )
        counts = _TagCounts()
        for m in xml:
            _scan_member(archive, m, counts)


class _TagCounts:
    """Paragraphs and elements seen so far over the archive's XML parts."""

    def __init__(self) -> None:
        self.paragraphs = 0
        self.elements = 0

    def check(self) -> None:
        if self.paragraphs > MAX_PARAGRAPHS:
            raise IngestError(
                f".docx has more than {MAX_PARAGRAPHS:,} paragraphs, the most Beleg reads; split the document"
            )
        if self.elements > MAX_ELEMENTS:
            raise IngestError(
                f".docx has more than {MAX_ELEMENTS:,} XML elements, the most Beleg parses (its memory grows "
                "with them); split the document"
            )


def _scan_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, counts: _TagCounts) -> None:
    """Count ``member``'s paragraphs and elements into ``counts`` and refuse DTDs and entities,
    reading it in 1 MiB pieces; raises as soon as a limit is passed."""
    carry = b""
    try:
        with archive.open(member) as stream:
            while True:
                chunk = stream.read(2**20)
                buf = carry + chunk
                # Matches starting in the last few bytes may be cut off: count them next round.
                cut = max(len(buf) - _MAX_TAG_BYTES, 0) if chunk else len(buf)
                bad = _DTD_OR_ENTITY.search(buf, 0, len(buf))
                if bad is not None and bad.start() < cut:
                    _refuse_dtd_or_entity(member, buf[bad.start() : bad.start() + 40])
                counts.paragraphs += sum(1 for match in _PARAGRAPH_TAG.finditer(buf) if match.start() < cut)
                # Start tags; an end tag's '</' split between two pieces counts once too many.
                counts.elements += chunk.count(b"<") - chunk.count(b"</")
                counts.check()
                carry = buf[cut:]
                if not chunk:
                    return
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
        # RuntimeError: an encrypted member; NotImplementedError: an unsupported compression method;
        # zlib.error: a damaged deflate stream.
        raise IngestError(f"corrupt or invalid .docx: member {member.filename!r}: {exc}") from None


def _refuse_dtd_or_entity(member: zipfile.ZipInfo, found: bytes) -> None:
    what = found.split(b">")[0] if found.startswith(b"<!") else found.split(b";")[0] + b";"
    shown = what.decode("ascii", "backslashreplace")[:40]
    raise IngestError(
        f".docx member {member.filename!r} declares a DTD or uses an entity ({shown!r}), which Word never "
        "writes and python-docx does not expand (the text after it would be lost); re-save it in Word"
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size:,} bytes"


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
        check_archive(data)
        # python-docx and zipfile raise assorted types on damaged input (BadZipFile,
        # KeyError, ValueError, lxml errors); each one is a per-file IngestError.
        try:
            document = docx.Document(io.BytesIO(data))
            blocks = self._blocks(document)
        except Exception as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise IngestError(f"corrupt or invalid .docx: {reason}") from None

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

        hidden = _HiddenText(document)
        blocks: list[tuple[str, str, int]] = []
        for number, item in enumerate(document.iter_inner_content()):
            if isinstance(item, Table):
                # The kind names the table, so two adjacent tables stay two blocks.
                blocks.extend((f"row-{number}", row, 0) for row in _table_rows(item, hidden))
                continue
            text = _paragraph_text(item, hidden)
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
