"""The reader protocol: bytes of one file in, a :class:`ParsedDocument` out.

Readers never guess metadata they were not given: they report what the format itself
declares (front matter, ``<meta>`` tags, PDF/DOCX properties) and leave defaults and
ingest rules to :mod:`beleg.ingest.metadata`.
"""

from __future__ import annotations

import codecs
import datetime as _dt
import re
from pathlib import Path
from typing import Protocol

from beleg.errors import IngestError, NoContent
from beleg.ingest.metadata import LONE_SURROGATE
from beleg.types import ParsedDocument


class Reader(Protocol):
    """Parse one file. Raise :class:`IngestError` with a reason a person can act on."""

    #: File name suffixes (lower case, with dot) this reader handles.
    suffixes: tuple[str, ...]
    # A reader that decodes text with decode_text also says ``decodes_text = True``: ingest
    # then remembers the ``encoding`` a file needed (beleg.types.ENCODING_KEY).

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument: ...


# UTF-32 first: its little-endian mark begins with UTF-16's (FF FE).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_UTF8_NAMES = {"utf-8", "utf-8-sig"}


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    """(codec, length of the mark) when ``data`` starts with a Unicode byte-order mark."""
    return next(((name, len(bom)) for bom, name in _BOMS if data.startswith(bom)), None)


def needs_encoding(data: bytes) -> bool:
    """Whether :func:`decode_text` reads ``data`` with its ``encoding`` fallback: no byte-order
    mark, no NUL bytes, and not valid UTF-8."""
    if bom_encoding(data) is not None or b"\x00" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def decode_text(data: bytes, path: Path, encoding: str | None = None) -> str:
    """Decode a text file strictly; a wrong encoding is an error, never mojibake.

    Order: a byte-order mark (UTF-8, UTF-16, UTF-32) decides; otherwise the file is read
    as UTF-8 if it is valid UTF-8, and only then with ``encoding`` (``--encoding``), which
    is a fallback for the files that are not. Text that decodes as UTF-8 is practically
    never Latin-1 (``Ã¶`` sequences do not occur in real text), so one ``--encoding latin-1``
    over a mixed folder no longer turns the UTF-8 files' "Größe" into "GrÃ¶ÃŸe".
    An ``encoding`` of the UTF-16/32 family without a mark is used as given. NUL bytes
    in a file without a mark mean it is binary.
    """
    fallback = _codec_name(encoding)
    bom = bom_encoding(data)
    if bom is not None:
        return _decode_strict(data[bom[1] :], bom[0], f"despite its {bom[0].upper()} byte-order mark")
    if fallback is not None and fallback.startswith(("utf-16", "utf-32")):
        return _decode_strict(data, fallback, "(the --encoding given)")
    if b"\x00" in data[:8192]:
        raise IngestError("looks binary (contains NUL bytes), not a text file")
    try:
        return normalize_newlines(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        if fallback is None or fallback in _UTF8_NAMES:
            raise IngestError(
                f"not valid utf-8 ({_bad_byte(data, exc)}); re-save it as UTF-8 or pass --encoding (e.g. latin-1)"
            ) from None
    try:
        return normalize_newlines(decode_as(data, fallback))
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"neither valid utf-8 nor valid {fallback} ({_bad_byte(data, exc)}); pass the file's real encoding "
            "with --encoding"
        ) from None


def _codec_name(encoding: str | None) -> str | None:
    if encoding is None:
        return None
    return text_codec(encoding)


#: Codecs that Python counts as text encodings but that read escapes or host names, not
#: characters: ``unicode_escape`` turns the four bytes ``\x00`` into a NUL and ``\ud800``
#: into half a character.
_NOT_CHARACTER_ENCODINGS = {"unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined"}


def text_codec(encoding: str) -> str:
    """Python's name of ``encoding`` (``--encoding``), refused unless it is a character encoding.

    Python's codec registry also holds transforms (rot13, base64, zlib, hex), which do not
    turn bytes into text, and escape decoders, which turn text into other text.
    """
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise IngestError(f"unknown encoding {encoding!r}; use a Python codec name such as utf-8 or latin-1") from None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARACTER_ENCODINGS:
        raise IngestError(
            f"{encoding!r} is not a character encoding (Python's codec registry also holds transforms "
            "such as rot13, base64 and unicode_escape); use one such as utf-8 or latin-1"
        )
    return info.name


#: Text is unseen when no colour channel differs from what it is drawn on by more than this
#: (of 255): '#fefefe' on white is as unreadable as '#fff'. One rule for HTML, DOCX and PDF.
SAME_COLOUR = 8


def decode_as(data: bytes, codec: str) -> str:
    """``data.decode(codec)``, refusing text with unpaired surrogates; raises :exc:`UnicodeDecodeError`.

    UTF-7 (``+2AA-``) and escape codecs can produce half of a surrogate pair, which is not a
    character: lxml silently stops parsing at it, and nothing can store or encode it, so
    the file would be indexed as a prefix of itself.
    """
    text = data.decode(codec)
    bad = LONE_SURROGATE.search(text)
    if bad is not None:
        raise IngestError(
            f"decoding as {codec} gives an unpaired surrogate (U+{ord(bad.group()):04X}) at character "
            f"{bad.start():,}, which is not text; re-save the file as UTF-8"
        )
    return text


def _decode_strict(data: bytes, codec: str, why: str) -> str:
    try:
        text = decode_as(data, codec)
    except UnicodeDecodeError as exc:
        raise IngestError(f"not valid {codec} {why} ({_bad_byte(data, exc)}); re-save it as UTF-8") from None
    if "\x00" in text:
        raise IngestError(f"contains NUL characters after decoding as {codec}; not a text file")
    return normalize_newlines(text)


def _bad_byte(data: bytes, exc: UnicodeDecodeError) -> str:
    return f"byte 0x{data[exc.start : exc.start + 1].hex()} at offset {exc.start}"


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --- helpers shared by several readers -------------------------------------------------
# They live here so that every format normalises dates, languages and empty input the
# same way; a filter such as ``date >= 2024-01-01`` must mean the same for all of them.


def require_content(data: bytes) -> None:
    """Reject a zero-byte file before a parser produces a less helpful error for it.

    Raises :class:`NoContent`: an empty file is intentionally empty, so it is skipped, not failed.
    """
    if not data:
        raise NoContent("file is empty (0 bytes); nothing to index")


def iso_date(value: object) -> str | None:
    """``date``/``datetime`` as ``YYYY-MM-DD``; anything else gives ``None``.

    The time of day is dropped on purpose: metadata filters compare dates, and a
    creation timestamp to the second would make ``date = 2024-03-01`` never match.
    """
    if isinstance(value, _dt.date):  # datetime is a subclass of date
        return value.isoformat()[:10]
    return None


_LANGUAGE_TAG = re.compile(r"^([A-Za-z]{2})(?:[-_][A-Za-z0-9]{1,8})*$")


def language_code(value: object) -> str | None:
    """The two-letter primary subtag of a language tag (``de-DE`` -> ``de``), else ``None``.

    Values that are no language tag (``German``, ``deu``) are dropped rather than guessed.
    """
    if not isinstance(value, str):
        return None
    match = _LANGUAGE_TAG.match(value.strip())
    return match.group(1).lower() if match else None
