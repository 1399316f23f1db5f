"""PDF files: pypdf's text layer, page by page, with typesetting undone conservatively.

Text no reader sees is left out: drawn invisibly (render mode 3 or 7), in white on the bare
white page, or under 1pt; except where it is a scanned page's OCR layer
(:func:`drop_invisible_text`).

A PDF stores lines, not paragraphs. Lines are joined only where that is clearly right
(a hyphenated word, a full-width line running on); anything doubtful keeps its newline,
because a wrongly merged heading or list is worse for retrieval than a line break.
"""

from __future__ import annotations

import io
import logging
import math
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from beleg.errors import IngestError, missing_dependency
from beleg.ingest.readers.base import SAME_COLOUR, iso_date, language_code, require_content
from beleg.types import ParsedDocument

logger = logging.getLogger(__name__)

_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
_SOFT_HYPHEN = "\u00ad"
# Words after which a trailing hyphen is a suspended compound ("Ein- und Ausgänge"),
# whose hyphen and space must both stay.
_CONJUNCTIONS = {"und", "oder", "bis", "bzw", "sowie", "noch", "als", "and", "or", "nor", "to"}
# Letters only: "2023-\n2024" is a range, not a hyphenated word.
_HYPHENATED = re.compile(r"([^\W\d_])-\n([^\W\d_]+)")
_BULLET = re.compile(r"^\s*(?:[•◦▪·‣*–—-]\s|\(?\d{1,3}[.)]\s|\(?[a-zA-Z][.)]\s)")
_SENTENCE_END = (".", "!", "?", ":", ";")
# A line at least this share of the page's longest line is taken to run on to the next.
_FULL_LINE = 0.6
_SHOW_TEXT = {b"Tj", b"TJ", b"'", b'"'}
_INVISIBLE_MODES = {3, 7}  # neither filled nor stroked (7 only adds to the clipping path)


def _dehyphenate(match: re.Match[str]) -> str:
    left, word = match.group(1), match.group(2)
    if word.lower() in _CONJUNCTIONS:
        return f"{left}- {word}"
    if word[0].isupper():
        return f"{left}-{word}"  # a real hyphen in a compound: "Nord-Süd", "E-Mail-Adresse"
    return left + word  # "Zustell-\nversuche" -> "Zustellversuche"


def _join_lines(lines: list[str], longest: int) -> str:
    out: list[str] = []
    last = ""  # the previous physical line; out[-1] may already hold several joined ones
    for line in lines:
        runs_on = (
            out
            and last
            and line
            and len(last) >= _FULL_LINE * longest
            and not last.endswith(_SENTENCE_END)
            and not _BULLET.match(line)
        )
        if runs_on:
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
        last = line
    return "\n".join(out)


def clean_page(raw: str) -> str:
    """Tidy one page of extracted text: ligatures, hyphenation, run-on lines, spaces."""
    text = raw.translate(_LIGATURES).replace(_SOFT_HYPHEN, "").replace("\x00", "")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [" ".join(line.split()) for line in text.split("\n")]
    # Measured before dehyphenation, which lengthens lines beyond the page width.
    longest = max((len(line) for line in lines), default=0)
    text = _HYPHENATED.sub(_dehyphenate, "\n".join(lines))
    paragraphs = (_join_lines(p.split("\n"), longest).strip() for p in re.split(r"\n{2,}", text))
    return "\n\n".join(p for p in paragraphs if p)


#: Text drawn smaller than this (in points, after the text and page matrices) is unreadable.
MIN_TEXT_SIZE = 1.0
# A colour channel within SAME_COLOUR/255 of white counts as white, as for HTML and DOCX.
_NEAR_WHITE = 1 - SAME_COLOUR / 255
_FILL_PAINTING = {b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"}
_STROKE_PAINTING = {b"S", b"s", b"B", b"B*", b"b", b"b*"}
_FILLING_MODES = {0, 2, 4, 6}
_STROKING_MODES = {1, 2, 5, 6}
# What makes a page worth parsing: a render mode, a white colour, a font size under 1, a
# horizontal scaling, or a matrix that shrinks (its operands are checked after matching).
_WHITE_HINT = re.compile(rb"(?<![\w.])(?:1(?:\.0*)?|0?\.9[6-9]\d*)\s+(?:g|rg|sc|scn|G|RG|SC|SCN)\b|(?<![\w.])0(?:\.0*)?\s+[kK]\b")
_SMALL_FONT_HINT = re.compile(rb"(?<![\w.])-?(?:0*\.\d+|0+)\s+Tf\b|\bTz\b|\bTr\b")
# Linear on any input: a number starts only where a PDF token may start (after whitespace or
# a delimiter, never inside a digit run), and its parts match possessively, so a long digit
# run is not split and re-split on every failure (which made "\d+\.?\d*" cubic: a 758-byte
# page of digits took minutes). The two hints above are linear already: their lookbehind lets
# a number start only once per run. So the pre-check is one linear pass per page, and the
# parse after it is bounded by pypdf's own per-stream token limit.
_MATRIX = re.compile(rb"(?<![^\s()<>\[\]{}/%])((?:[-+]?+(?:\d++(?:\.\d*+)?+|\.\d++)\s++){6})(?:Tm|cm)\b")


def _worth_parsing(data: bytes) -> bool:
    if _SMALL_FONT_HINT.search(data) or _WHITE_HINT.search(data):
        return True
    for match in _MATRIX.finditer(data):
        a, b, c, d = (float(x) for x in match.group(1).split()[:4])
        if abs(a * d - b * c) < 1 or any(0 < abs(x) < 1 for x in (a, b, c, d)):
            return True  # it may shrink text in some direction
    return False


_Matrix = tuple[float, float, float, float]  # a, b, c, d: a matrix without its translation
_IDENTITY: _Matrix = (1.0, 0.0, 0.0, 1.0)


@dataclass(slots=True)
class _GraphicsState:
    """What q/Q save of the state that decides whether text shows (PDF 32000, 8.4)."""

    mode: int = 0
    fill_white: bool = False  # the initial colour is black
    stroke_white: bool = False
    fill_space: str = "/DeviceGray"
    stroke_space: str = "/DeviceGray"
    font_size: float = 12.0  # no text shows without 'Tf'; any readable size until then
    horizontal_scale: float = 100.0
    ctm: _Matrix = _IDENTITY  # the current transformation matrix (its linear part)


def drop_invisible_text(page: Any, reader: Any) -> bool:
    """Remove text no reader sees from ``page``'s content: text shown in an invisible render
    mode (``3 Tr``, ``7 Tr``), text filled (and stroked) in white on a page that has painted
    nothing under it yet (the paper is the background), and text drawn under 1pt (the font
    size times the scale of the text and page matrices, or squeezed by ``Tz``).

    White text is judged only until the page paints anything that is not white (a filled
    or stroked path, a shading, an image, a form): it may lie on that. Only pages whose
    content could hold such text are parsed, and only pages where text is removed are
    changed, so every other page is extracted exactly as before. A page whose text is all
    removed and which paints an image keeps it: that is the OCR text layer of a scanned page
    (ocrmypdf and scanners write it in mode 3), and the reader sees the same words in the
    image. Returns whether the page was changed.

    The content is parsed with its strings kept as bytes, as pypdf's text extraction parses
    it: otherwise pypdf decodes each string as text when parsing, and extraction then uses
    that text instead of decoding the bytes through the font (two-byte glyph codes of a
    Type0/Identity-H font, the usual embedded TrueType, came out as control characters).
    """
    from pypdf.generic import ContentStream, NameObject

    contents = page.get_contents()
    if contents is None or not _worth_parsing(contents.get_data()):
        return False
    state, saved = _GraphicsState(), []
    text_matrix = _IDENTITY  # its linear part; BT resets it
    painted = False  # has the page painted anything but white, under which white text may show?
    kept: list[tuple[list[Any], bytes]] = []
    dropped = visible = image = False
    seen: dict[int, tuple[bool, bool]] = {}  # per XObject: a form drawn many times is read once
    for operands, operator in ContentStream(contents, reader, "bytes").operations:
        if operator == b"q":
            saved.append(replace(state))
        elif operator == b"Q" and saved:
            state = saved.pop()
        elif operator in _SHOW_TEXT:
            if not _text_shows(state, text_matrix, painted):
                dropped = True
                # ' and " also move to the next line (and " sets the spacings): keep that part.
                if operator == b'"' and len(operands) == 3:
                    kept += [([operands[0]], b"Tw"), ([operands[1]], b"Tc")]
                if operator in (b"'", b'"'):
                    kept.append(([], b"T*"))
                continue
            visible = True
        elif operator == b"BT":
            text_matrix = _IDENTITY
        elif operator == b"Tm" and len(operands) == 6:
            text_matrix = _matrix(operands) or text_matrix
        elif operator == b"cm" and len(operands) == 6:
            state.ctm = _times(_matrix(operands) or _IDENTITY, state.ctm)
        elif operator in (b"Tr", b"Tf", b"Tz") and operands:
            _set_text_state(state, operator, operands)
        elif operator in _COLOUR_OPERATORS:
            _set_colour(state, operator, operands)
        elif operator in _FILL_PAINTING or operator in _STROKE_PAINTING:
            fills_colour = operator in _FILL_PAINTING and not state.fill_white
            painted = painted or fills_colour or (operator in _STROKE_PAINTING and not state.stroke_white)
        elif operator in (b"sh", b"INLINE IMAGE"):
            painted = True
            image = image or operator == b"INLINE IMAGE"
        elif operator == b"Do" and operands:
            painted = True  # an image or a form: what it paints is not followed
            # Only an image counts: an (empty) form XObject drawn on a page of invisible text
            # made it look like a scan. A form is looked into, a few levels deep, for an image
            # (counts) and for text (shown, so the page is not a scan's text layer).
            drawn_image, drawn_text = _xobject_draws(page.get("/Resources"), operands[0], reader, 0, seen)
            image, visible = image or drawn_image, visible or drawn_text
        kept.append((operands, operator))
    if not dropped or (image and not visible):
        return False
    stream = ContentStream(None, reader, "bytes")
    stream.operations = kept
    # Set on the reader's in-memory page (replace_contents() is for pages of a writer).
    page[NameObject("/Contents")] = stream
    return True


def _text_shows(state: _GraphicsState, text_matrix: _Matrix, painted: bool) -> bool:
    if state.mode in _INVISIBLE_MODES:
        return False
    # The em box's width along the line and height across it, in points: the font size
    # through the text and page matrices (a flattened or squeezed box is as unreadable).
    a, b, c, d = _times(text_matrix, state.ctm)
    along = math.hypot(a, b)
    height = abs(state.font_size) * abs(a * d - b * c) / along if along else 0.0
    width = abs(state.font_size * state.horizontal_scale / 100) * along
    if min(height, width) < MIN_TEXT_SIZE:
        return False
    if painted or state.mode not in range(8):
        return True  # it may lie on what was painted (or the mode is not one PDF defines)
    filled = state.mode in _FILLING_MODES and not state.fill_white
    return filled or (state.mode in _STROKING_MODES and not state.stroke_white)


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def _matrix(operands: list[Any]) -> _Matrix | None:
    a, b, c, d = (_number(x, math.nan) for x in operands[:4])
    return None if math.isnan(a + b + c + d) else (a, b, c, d)


def _times(first: _Matrix, then: _Matrix) -> _Matrix:
    """``first`` followed by ``then``, as PDF concatenates matrices (row vectors)."""
    a1, b1, c1, d1 = first
    a2, b2, c2, d2 = then
    return (a1 * a2 + b1 * c2, a1 * b2 + b1 * d2, c1 * a2 + d1 * c2, c1 * b2 + d1 * d2)


def _set_text_state(state: _GraphicsState, operator: bytes, operands: list[Any]) -> None:
    if operator == b"Tr":
        state.mode = int(_number(operands[0], state.mode))
    elif operator == b"Tf" and len(operands) == 2:
        state.font_size = _number(operands[1], state.font_size)
    elif operator == b"Tz":
        state.horizontal_scale = _number(operands[0], state.horizontal_scale)


_COLOUR_OPERATORS = {b"g", b"rg", b"k", b"cs", b"sc", b"scn", b"G", b"RG", b"K", b"CS", b"SC", b"SCN"}
_SPACE_OF = {b"g": "/DeviceGray", b"rg": "/DeviceRGB", b"k": "/DeviceCMYK"}


def _set_colour(state: _GraphicsState, operator: bytes, operands: list[Any]) -> None:
    """Follow the fill (lower-case operators) and stroke (upper-case) colour: white or not."""
    stroke = operator.isupper()
    name = operator.lower()
    if name == b"cs":
        space = str(operands[0]) if operands else ""
        white = False  # a new colour space starts at its initial colour: black, or not white
    else:
        space = _SPACE_OF.get(name) or (state.stroke_space if stroke else state.fill_space)
        white = _is_white(space, [_number(x, math.nan) for x in operands])
    if stroke:
        state.stroke_space, state.stroke_white = space, white
    else:
        state.fill_space, state.fill_white = space, white


def _is_white(space: str, components: list[float]) -> bool:
    """White in a device colour space; a colour in any other space (ICC, pattern, separation)
    is taken as not white, so text in it is kept."""
    if space == "/DeviceGray" and len(components) == 1:
        return components[0] >= _NEAR_WHITE
    if space == "/DeviceRGB" and len(components) == 3:
        return all(c >= _NEAR_WHITE for c in components)
    if space == "/DeviceCMYK" and len(components) == 4:
        return all(c <= 1 - _NEAR_WHITE for c in components)
    return False


_MAX_FORM_DEPTH = 3  # forms nested deeper are not looked into (they count as neither)


def _xobject_draws(
    resources: Any, name: Any, reader: Any, depth: int, seen: dict[int, tuple[bool, bool]]
) -> tuple[bool, bool]:
    """(draws an image, shows text) for the XObject ``name`` of ``resources``."""
    from pypdf.generic import ContentStream

    try:
        xobject = resources.get_object()["/XObject"].get_object()[name].get_object()
        subtype = xobject.get("/Subtype")
    except Exception:  # noqa: BLE001 - a missing or broken resource draws nothing we can tell
        return False, False
    if subtype == "/Image":
        return True, False
    if subtype != "/Form" or depth >= _MAX_FORM_DEPTH:
        return False, False
    if id(xobject) in seen:  # pypdf hands out one object per indirect reference
        return seen[id(xobject)]
    seen[id(xobject)] = (False, False)  # a form that draws itself adds nothing
    image = text = False
    try:
        for operands, operator in ContentStream(xobject, reader).operations:
            if operator == b"INLINE IMAGE":
                image = True
            elif operator in _SHOW_TEXT:
                text = True  # the render mode is not followed into forms: counted as shown
            elif operator == b"Do" and operands:
                inner = _xobject_draws(xobject.get("/Resources", resources), operands[0], reader, depth + 1, seen)
                image, text = image or inner[0], text or inner[1]
    except Exception:  # noqa: BLE001 - an unreadable form draws nothing we can tell
        pass
    seen[id(xobject)] = (image, text)
    return image, text


def _metadata(reader: Any) -> dict[str, Any]:
    """/Title, /Author, /CreationDate and the catalogue's /Lang, where present and sane."""
    meta: dict[str, Any] = {}
    try:
        info = reader.metadata
    except Exception as exc:  # a broken info dictionary must not cost the text
        logger.debug("unreadable PDF info dictionary: %s", exc)
        info = None
    if info is not None:
        for key, attr in (("title", "title"), ("author", "author")):
            try:
                value = getattr(info, attr)
            except Exception:  # undecodable string objects
                value = None
            if isinstance(value, str) and value.strip():
                meta[key] = " ".join(value.split())
        try:
            created = iso_date(info.creation_date)
        except Exception:  # pypdf raises on malformed "D:..." strings
            created = None
        if created:
            meta["date"] = created
    try:
        lang = language_code(str(reader.trailer["/Root"].get("/Lang") or ""))
    except Exception:
        lang = None
    if lang:
        meta["language"] = lang
    return meta


class PdfReader:
    """Reads ``.pdf`` files with pypdf. Scanned PDFs without a text layer are refused."""

    suffixes: tuple[str, ...] = (".pdf",)

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        """Extract each page's text, join pages with blank lines, report the properties.

        ``encoding`` is ignored: a PDF declares its own text encodings.
        """
        try:
            import pypdf
            from pypdf.errors import DependencyError, LimitReachedError
        except ImportError as exc:
            raise missing_dependency("pypdf", "pdf", exc) from exc
        require_content(data)
        if b"%PDF-" not in data[:1024]:  # where the PDF spec allows the header to be
            raise IngestError("not a PDF (no %PDF- header); is the file misnamed?")
        # pypdf raises many exception types on damaged input (KeyError, ValueError, ...);
        # each must become a per-file IngestError, so this boundary catches broadly.
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                self._decrypt(reader, DependencyError)
            pages = list(reader.pages)
        except IngestError:
            raise
        except LimitReachedError as exc:
            raise IngestError(_limit_reason(exc)) from None
        except Exception as exc:
            raise IngestError(f"corrupt or unreadable PDF: {_one_line(exc)}") from None
        if not pages:
            raise IngestError("PDF has no pages")

        texts: list[str] = []
        failures: list[str] = []
        for number, page in enumerate(pages, start=1):
            try:
                original = page.get("/Contents")
                rewritten = drop_invisible_text(page, reader)
                raw = page.extract_text() or ""
                if rewritten:
                    logger.debug("%s: page %d: invisible, white or tiny text left out", path.name, number)
                    raw = _unless_garbled(page, original, raw, f"{path.name}: page {number}")
            except LimitReachedError as exc:
                # A resource limit is not damage: indexing the other pages would hide that
                # this file is a decompression bomb (or needs the limit raised).
                raise IngestError(f"page {number}: {_limit_reason(exc)}") from None
            except Exception as exc:  # one damaged page should not hide the others
                logger.warning("%s: page %d: text extraction failed (%s); skipped", path.name, number, _one_line(exc))
                failures.append(f"page {number}: {_one_line(exc)}")
                continue
            cleaned = clean_page(raw)
            if cleaned:
                texts.append(cleaned)
        if not texts and failures:
            raise IngestError(f"text extraction failed on {len(failures)} of {len(pages)} pages ({failures[0]})")
        if not texts:
            raise IngestError("no text layer (scanned PDF?); OCR it first")
        metadata = _metadata(reader)
        logger.debug("read %s: %d of %d pages with text", path.name, len(texts), len(pages))
        return ParsedDocument(text="\n\n".join(texts), metadata=metadata, title=metadata.get("title"))

    @staticmethod
    def _decrypt(reader: Any, dependency_error: type[Exception]) -> None:
        # Many PDFs are "encrypted" only to restrict printing, with an empty user password.
        try:
            opened = reader.decrypt("")
        except dependency_error:
            raise IngestError(
                "PDF is AES-encrypted and the 'cryptography' package is missing; "
                "pip install cryptography, or decrypt the file first"
            ) from None
        if not opened:
            raise IngestError(
                "PDF is password-protected; save an unprotected copy (e.g. qpdf --decrypt) and ingest that"
            )


#: A share of control characters (of the non-space text) past which a page's extraction is
#: taken as garbage: text is letters, digits, punctuation, symbols.
_GARBLED = 0.2


def _control_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(unicodedata.category(c) == "Cc" for c in chars) / len(chars) if chars else 0.0


def _unless_garbled(page: Any, original: Any, rewritten: str, where: str) -> str:
    """``rewritten``, unless it is mostly control characters where the page's own content
    extracts as text: then leaving out hidden text broke the fonts' encoding (a case not
    foreseen), and the page is extracted unchanged, hidden text included, rather than
    indexing garbage."""
    from pypdf.generic import NameObject

    if _control_share(rewritten) <= _GARBLED:
        return rewritten
    page[NameObject("/Contents")] = original
    unchanged = page.extract_text() or ""
    if _control_share(unchanged) > _GARBLED:
        return rewritten  # garbled either way (a font without a usable ToUnicode map)
    logger.warning("%s: leaving out hidden text garbled the page's text; extracted unchanged", where)
    return unchanged


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one short line: pypdf messages can span lines or quote whole objects."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _limit_reason(exc: BaseException) -> str:
    return (
        f"PDF hits pypdf's decompression/size limit ({_one_line(exc)}); a stream inflates past what "
        "Beleg allows (a decompression bomb?), so the file is not read"
    )
