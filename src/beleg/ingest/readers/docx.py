"""Word ``.docx`` files: body paragraphs and tables in document order.

Heading styles become ``#`` lines (as for HTML) so every format chunks alike, and tables
Markdown pipe tables with their header row (:mod:`beleg.ingest.readers.tables`; a merged
cell is repeated in each row and column it covers). Page
headers, footers, comments and footnotes are left out: they are page furniture or
annotations, not the document's running text. Runs formatted as hidden are left out too
(directly or by style), as Word does not show or print them, and so are runs no reader can
see: 1pt or smaller, or coloured like what they are drawn on (``_HiddenText`` says when).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beleg.errors import IngestError, missing_dependency
from beleg.ingest.readers.base import SAME_COLOUR, iso_date, language_code, require_content
from beleg.ingest.readers.tables import GridCell, Row, cell_line, pipe_table
from beleg.types import Heading, ParsedDocument

logger = logging.getLogger(__name__)

# Style names as Word stores them: English built-ins, or localised names in German templates.
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift)\s*(\d)$", re.IGNORECASE)
_TITLE_STYLES = {"title", "titel"}
_MAX_LEVEL = 6  # Word has Heading 7-9; Markdown-style lines stop at six '#'
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc (and other OLE files)
_HIDING = ("w:vanish", "w:webHidden", "w:specVanish")
_OFF = {"0", "false", "off"}  # an on/off property's w:val that turns it off
#: Font sizes (``w:sz``, in half-points) at or below this are unreadable: 1pt.
TINY_HALF_POINTS = 2
_WHITE = "FFFFFF"
_UNKNOWN = "unknown"  # a background we cannot tell (a pattern, a table style, an image)
_NO_FILL = "none"
_HEX_COLOUR = re.compile(r"^[0-9A-Fa-f]{6}\Z")  # \Z: '$' also matches before a final newline
_DIGITS = re.compile(r"[0-9]{1,9}")
# w:highlight's named colours (ST_HighlightColor).
_HIGHLIGHTS = {
    "black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF",
    "red": "FF0000", "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080",
    "darkGreen": "008000", "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000",
    "darkGray": "808080", "lightGray": "C0C0C0",
}  # fmt: skip

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


def _heading_level(style_name: str) -> int | None:
    name = style_name.strip()
    if name.lower() in _TITLE_STYLES:
        return 1
    match = _HEADING_STYLE.match(name)
    return min(int(match.group(1)), _MAX_LEVEL) if match and int(match.group(1)) > 0 else None


def _is_list_item(p: Any, style_name: str) -> bool:
    if style_name.lower().startswith(("list", "liste", "aufzählung")):
        return True
    # Direct numbering (w:numPr) without a list style, as pasted lists often have.
    ppr = p.pPr
    return ppr is not None and ppr.numPr is not None


def _hidden_flag(rpr: Any) -> bool | None:
    """Run properties: hidden (True), explicitly shown (False), or not said (None)."""
    if rpr is None:
        return None
    from docx.oxml.ns import qn

    flags = [el.get(qn("w:val"), "true").lower() not in _OFF for name in _HIDING if (el := rpr.find(qn(name))) is not None]
    return any(flags) if flags else None


def _shading(shd: Any) -> str | None:
    """The colour a ``w:shd`` paints: a hex colour, ``none``, ``unknown``; ``None`` if absent."""
    if shd is None:
        return None
    from docx.oxml.ns import qn

    pattern = shd.get(qn("w:val"), "clear")
    if pattern == "nil":
        return _NO_FILL
    if pattern == "clear":  # the fill alone
        fill = shd.get(qn("w:fill"), "auto")
        return fill.upper() if _HEX_COLOUR.match(fill) else _NO_FILL
    if pattern == "solid":  # the pattern colour over all of it
        colour = shd.get(qn("w:color"), "auto")
        return colour.upper() if _HEX_COLOUR.match(colour) else _UNKNOWN
    return _UNKNOWN  # a mix of two colours (pct25, stripes...)


def _child_val(rpr: Any, name: str) -> str | None:
    if rpr is None:
        return None
    from docx.oxml.ns import qn

    el = rpr.find(qn(name))
    return None if el is None else el.get(qn("w:val"))


def _font_colour(rpr: Any) -> str | None:
    value = _child_val(rpr, "w:color")
    return None if value is None else value.upper() if _HEX_COLOUR.match(value) else "auto"


def _font_size(rpr: Any) -> int | None:
    value = _child_val(rpr, "w:sz")
    # ASCII digits only: '²'.isdigit() is true but int() refuses it, and one such run failed the
    # whole document. Anything else (a unit, a sign, a fraction) is not a size we judge.
    return int(value) if value is not None and _DIGITS.fullmatch(value) else None


def _run_background(rpr: Any) -> str | None:
    """What a run is drawn on by its own formatting: its highlight, else its shading."""
    highlight = _child_val(rpr, "w:highlight")
    if highlight is not None and highlight != "none":
        return _HIGHLIGHTS.get(highlight, _UNKNOWN)
    if rpr is None:
        return None
    from docx.oxml.ns import qn

    shading = _shading(rpr.find(qn("w:shd")))
    return None if shading == _NO_FILL else shading


def _run_properties(style: Any) -> Any:
    from docx.oxml.ns import qn

    return None if style is None else style.find(qn("w:rPr"))


_RUN_LOOKS: dict[str, Callable[[Any], Any]] = {
    "hidden": _hidden_flag, "colour": _font_colour, "size": _font_size, "background": _run_background,
}  # fmt: skip


class _HiddenText:
    """Which runs Word does not show, or shows where no reader can see them.

    Hidden runs: ``w:vanish`` (Hidden font), ``w:webHidden`` (hidden in web layout) and
    ``w:specVanish``. Unseen runs: a font of at most 1pt, or a font colour equal to what the
    run is drawn on: its highlight or shading, its paragraph's or table cell's shading, else
    the white paper, but only where nothing else may lie under the text (a page colour, an
    image or shape behind the text, a table style's shading make the paper unknown). White
    text on dark shading is seen, and ``auto`` colour is never unseen (Word picks black or
    white against the background).

    Each run property is set on the run, its character style or its paragraph's style (each
    through its ``basedOn`` chain), else the document defaults (``w:docDefaults``). The
    nearest one that says wins, so a run set back to shown inside a hidden style is shown."""

    def __init__(self, document: Any) -> None:
        from docx.oxml.ns import qn

        styles_element = document.styles.element
        own: dict[str, Any] = {}
        based_on: dict[str, str] = {}
        self.default_paragraph_style: str | None = None
        # The last fallback of Word's cascade: hiding every run there and showing some again
        # on the run hides the rest of the document from a reader.
        defaults = styles_element.find(f"{qn('w:docDefaults')}/{qn('w:rPrDefault')}/{qn('w:rPr')}")
        self.document_default = {name: look(defaults) for name, look in _RUN_LOOKS.items()}
        # For style names, the first style of an id and the last default paragraph style,
        # as python-docx finds them (its lookup scans every style for each paragraph: a
        # document with thousands of styles and paragraphs took minutes).
        self._first_styles: dict[str, Any] = {}
        self._default_paragraph_element: Any = None
        for style in styles_element.findall(qn("w:style")):
            style_id = style.get(qn("w:styleId"), "")
            self._first_styles.setdefault(style_id, style)
            own[style_id] = style
            parent = style.find(qn("w:basedOn"))
            if parent is not None:
                based_on[style_id] = parent.get(qn("w:val"), "")
            if style.get(qn("w:type")) == "paragraph" and style.get(qn("w:default"), "").lower() in ("1", "true", "on"):
                self.default_paragraph_style = style_id
                self._default_paragraph_element = style
        self._based_on = based_on
        # Per run property, per style: the value its nearest style in the basedOn chain says.
        self.styles: dict[str, dict[str, Any]] = {
            name: self._resolve({sid: look(_run_properties(el)) for sid, el in own.items()})
            for name, look in _RUN_LOOKS.items()
        }
        self.paragraph_shading = self._resolve(
            {sid: _shading(el.find(f"{qn('w:pPr')}/{qn('w:shd')}")) for sid, el in own.items()}
        )
        # Per style: unknown if it or a style it is based on shades any part of a table.
        self._style_shades = self._resolve(
            {sid: _UNKNOWN if any(_shading(shd) != _NO_FILL for shd in el.iter(qn("w:shd"))) else None
             for sid, el in own.items()}
        )  # fmt: skip
        self.paper = _WHITE if _nothing_behind_the_text(document) else _UNKNOWN
        self._table_backgrounds: dict[int, str | None] = {}

    def _resolve(self, own: dict[str, Any]) -> dict[str, Any]:
        """Per style, the value the nearest style of its basedOn chain says (``None``: none).

        Each style's value is stored when first found and shared by every style walked to
        it, so each chain is walked once: walking it anew from every style was quadratic (a
        chain of 20,000 styles took minutes)."""
        resolved: dict[str, Any] = {}
        for style_id in own:
            path: list[str] = []
            on_path: set[str] = set()
            current: str | None = style_id
            while current is not None and current not in resolved and own.get(current) is None:
                if current in on_path:  # a basedOn cycle in a damaged file says nothing
                    current = None
                    break
                path.append(current)
                on_path.add(current)
                current = self._based_on.get(current)
            value = None if current is None else resolved[current] if current in resolved else own[current]
            for walked in path or [style_id]:
                resolved[walked] = value
        return resolved

    def style_name(self, p: Any) -> str:
        """The name of paragraph element ``p``'s style (its default if it names none or a
        style that is not a paragraph style), as python-docx's ``paragraph.style.name``."""
        from docx.oxml.ns import qn

        ppr = p.pPr
        style_id = ppr.pStyle.val if ppr is not None and ppr.pStyle is not None else None
        style = self._first_styles.get(style_id) if style_id else None
        if style is None or style.get(qn("w:type")) != "paragraph":
            style = self._default_paragraph_element
        name = style.find(qn("w:name")) if style is not None else None
        return (name.get(qn("w:val")) or "") if name is not None else ""

    def paragraph_text(self, p: Any) -> str:
        """The text of the shown runs of paragraph element ``p`` (hyperlinks included)."""

        ppr = p.pPr
        para_style = ppr.pStyle.val if ppr is not None and ppr.pStyle is not None else self.default_paragraph_style
        below: str | None = None  # what the paragraph is drawn on, found at the first coloured run
        parts: list[str] = []
        for run in p.xpath("w:r | w:hyperlink/w:r"):
            rpr = run.rPr
            char_style = _child_val(rpr, "w:rStyle") or ""
            look = {
                name: _first_said(
                    value(rpr), self.styles[name].get(char_style), self.styles[name].get(para_style or ""),
                    self.document_default[name],
                )
                for name, value in _RUN_LOOKS.items()
            }  # fmt: skip
            if look["hidden"] or (look["size"] is not None and look["size"] <= TINY_HALF_POINTS):
                continue
            colour = look["colour"]
            if colour is not None and colour != "auto":
                if below is None:
                    below = self._paragraph_background(p, para_style)
                if _same_colour(colour, look["background"] or below):
                    continue
            parts.append(run.text)
        return "".join(parts)

    def _paragraph_background(self, p: Any, para_style: str | None) -> str:
        """What the paragraph's runs are drawn on without shading of their own."""
        from docx.oxml.ns import qn

        ppr = p.pPr
        shading = _first_said(
            _shading(ppr.find(qn("w:shd")) if ppr is not None else None), self.paragraph_shading.get(para_style or "")
        )
        if shading is not None and shading != _NO_FILL:
            return str(shading)
        cell = next(p.iterancestors(qn("w:tc")), None)
        if cell is None:
            return self.paper
        shading = _shading(cell.find(f"{qn('w:tcPr')}/{qn('w:shd')}"))
        if shading is not None and shading != _NO_FILL:
            return shading
        table = next(cell.iterancestors(qn("w:tbl")), None)
        return self._table_background(table) or self.paper

    def _table_background(self, table: Any) -> str | None:
        """A table's own shading, ``unknown`` if its style shades any part of it (a header
        row in a dark accent colour), else ``None``."""
        from docx.oxml.ns import qn

        if table is None:
            return None
        if id(table) not in self._table_backgrounds:
            shading = _shading(table.find(f"{qn('w:tblPr')}/{qn('w:shd')}"))
            style_id = _child_val(table.find(qn("w:tblPr")), "w:tblStyle")
            if (shading is None or shading == _NO_FILL) and style_id:
                shading = self._style_shades.get(style_id) or shading
            self._table_backgrounds[id(table)] = None if shading == _NO_FILL else shading
        return self._table_backgrounds[id(table)]


def _first_said(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _same_colour(colour: str, background: str) -> bool:
    if not _HEX_COLOUR.match(colour) or not _HEX_COLOUR.match(background):
        return False  # 'unknown': the text may well show
    return all(abs(int(colour[i : i + 2], 16) - int(background[i : i + 2], 16)) <= SAME_COLOUR for i in (0, 2, 4))


def _nothing_behind_the_text(document: Any) -> bool:
    """Is the page plain paper? Not with a page colour (``w:background``), an image or shape
    placed behind the text (often in the header, as a full-page background) or VML shapes."""
    from lxml import etree

    namespaces = {
        "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
        "wp": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
        "v": "urn:schemas-microsoft-com:vml",
    }
    behind = etree.XPath(
        "//w:background | //wp:anchor[@behindDoc='1' or @behindDoc='true'] | //v:*", namespaces=namespaces
    )
    parts = [document.part]
    for rel in document.part.rels.values():
        if not rel.is_external and rel.reltype.endswith(("/header", "/footer")):
            parts.append(rel.target_part)
    for part in parts:
        element = getattr(part, "element", None)
        if element is not None and etree.iselement(element) and behind(element):
            return False
    return True


def _paragraph_text(p: Any, hidden: _HiddenText) -> str:
    # Keep manual line breaks (Shift+Enter) but collapse runs of spaces and tabs.
    lines = (" ".join(line.split()) for line in hidden.paragraph_text(p).split("\n"))
    return "\n".join(line for line in lines if line)


#: Grid positions (a cell spanning n columns takes n) all tables of a document may have
#: together; Word's tables have at most 63 columns, so real documents stay far below.
MAX_TABLE_POSITIONS = MAX_ELEMENTS
_WORD_MAX_COLUMNS = 63


class _Tables:
    """Word tables as pipe tables (:mod:`beleg.ingest.readers.tables`), or as their cells'
    paragraphs where the table is layout."""

    def __init__(self, hidden: _HiddenText) -> None:
        self.hidden = hidden
        self._positions_left = MAX_TABLE_POSITIONS

    def pipe_table(self, tbl: Any) -> str | None:
        if self._is_layout(tbl):
            return None
        from docx.oxml.ns import qn

        rows: list[Row] = []
        header: list[bool] = []
        heading = True  # leading rows marked "repeat as header row" (w:tblHeader)
        for r, tr in enumerate(tbl.iterchildren(qn("w:tr"))):
            trpr = tr.find(qn("w:trPr"))
            flag = trpr.find(qn("w:tblHeader")) if trpr is not None else None
            heading = heading and flag is not None and flag.get(qn("w:val"), "true").lower() not in _OFF
            header.append(heading)
            skipped = self._grid_value(trpr, "w:gridBefore")
            self._charge(skipped)
            row: Row = [None] * skipped
            for tc in tr.iterchildren(qn("w:tc")):
                tcpr = tc.find(qn("w:tcPr"))
                span = max(self._grid_value(tcpr, "w:gridSpan"), 1)
                column = len(row)
                above = rows[r - 1][column] if r and column < len(rows[r - 1]) else None
                merge = tcpr.find(qn("w:vMerge")) if tcpr is not None else None
                if merge is not None and merge.get(qn("w:val"), "continue") == "continue" and above is not None:
                    cell = above  # the rows of a vertical merge each repeat its text
                else:
                    text = " ".join(self.hidden.paragraph_text(p) for p in tc.iterchildren(qn("w:p")))
                    cell = GridCell(cell_line(text), id(tc))
                self._charge(span)
                row.extend([cell] * span)
            rows.append(row)
        if header and not any(header):
            header[0] = True  # no row marked: the first row names the columns
        width = max((len(row) for row in rows), default=0)
        # Every row is padded to the widest, so one wide row over many short ones makes a
        # grid of width x rows positions: charged before it is allocated, not after.
        self._charge(sum(width - len(row) for row in rows))
        for row in rows:
            row.extend([None] * (width - len(row)))
        return pipe_table(rows, header)

    def _charge(self, positions: int) -> None:
        """Count grid positions against the document's budget before they are allocated."""
        self._positions_left -= positions
        if self._positions_left < 0:
            raise IngestError(f"tables span more than {MAX_TABLE_POSITIONS:,} cells, the most Beleg lays out")

    @staticmethod
    def _grid_value(properties: Any, name: str) -> int:
        """A row's skipped grid columns or a cell's span, at most Word's column count."""
        value = _child_val(properties, name)
        return min(int(value), _WORD_MAX_COLUMNS) if value is not None and _DIGITS.fullmatch(value) else 0

    def _is_layout(self, tbl: Any) -> bool:
        """A table with another table or a heading in a cell arranges the page, not data."""
        from docx.oxml.ns import qn

        if next(tbl.iterdescendants(qn("w:tbl")), None) is not None:
            return True
        return any(
            _heading_level(self.hidden.style_name(p)) is not None and _paragraph_text(p, self.hidden)
            for p in tbl.iterdescendants(qn("w:p"))
        )


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
        """Body text with heading lines, tables as pipe tables, core properties as metadata.

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
        except IngestError:
            raise  # a limit of ours, already saying why: the file is not corrupt
        except Exception as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise IngestError(f"corrupt or invalid .docx: {reason}") from None

        parts: list[str] = []
        headings: list[Heading] = []
        first_heading: str | None = None
        offset = 0
        previous_kind = ""
        for kind, text, level in blocks:
            # List items stay on consecutive lines.
            together = kind == previous_kind == "item"
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
        """(kind, text, heading level) for each non-empty paragraph and table."""
        hidden = _HiddenText(document)
        blocks: list[tuple[str, str, int]] = []
        _read_blocks(document.element.body, hidden, _Tables(hidden), blocks)
        return blocks


def _read_blocks(container: Any, hidden: _HiddenText, tables: _Tables, blocks: list[tuple[str, str, int]]) -> None:
    """Append the blocks of the paragraphs and tables directly in ``container`` (the body,
    or a cell of a layout table, read in place of the table)."""
    from docx.oxml.ns import qn

    for item in container.iterchildren(qn("w:p"), qn("w:tbl")):
        if item.tag == qn("w:tbl"):
            text = tables.pipe_table(item)
            if text is not None:
                blocks.append(("table", text, 0))
            else:
                for tr in item.iterchildren(qn("w:tr")):
                    for tc in tr.iterchildren(qn("w:tc")):
                        _read_blocks(tc, hidden, tables, blocks)
            continue
        text = _paragraph_text(item, hidden)
        if not text:
            continue
        style = hidden.style_name(item)
        level = _heading_level(style)
        if level is not None:
            blocks.append(("heading", " ".join(text.split()), level))
        elif _is_list_item(item, style):
            blocks.append(("item", "- " + text.replace("\n", " "), 0))
        else:
            blocks.append(("para", text, 0))
