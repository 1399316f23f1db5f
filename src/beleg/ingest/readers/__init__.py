"""Document readers and the registry that picks one by file suffix.

Each reader turns a file's bytes into a :class:`~beleg.types.ParsedDocument`; see
:mod:`beleg.ingest.readers.base` for the contract.
"""

from __future__ import annotations

from pathlib import Path

from beleg.errors import UnsupportedFormatError
from beleg.ingest.readers.base import Reader, decode_text
from beleg.ingest.readers.docx import DocxReader
from beleg.ingest.readers.html import HtmlReader
from beleg.ingest.readers.markdown import MarkdownReader
from beleg.ingest.readers.pdf import PdfReader
from beleg.ingest.readers.text import TextReader

# Readers are stateless, so one shared instance per format is enough.
_READERS: tuple[Reader, ...] = (MarkdownReader(), TextReader(), HtmlReader(), PdfReader(), DocxReader())
_BY_SUFFIX: dict[str, Reader] = {suffix: r for r in _READERS for suffix in r.suffixes}

#: Every file suffix (lower case, with dot) some reader handles, sorted.
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(sorted(_BY_SUFFIX))


def reader_for(path: Path) -> Reader:
    """The reader for ``path``'s suffix (case-insensitive).

    Raises :class:`UnsupportedFormatError` listing the supported suffixes otherwise.
    """
    suffix = Path(path).suffix.lower()
    reader = _BY_SUFFIX.get(suffix)
    if reader is None:
        shown = f"suffix {suffix!r}" if suffix else "no file suffix"
        raise UnsupportedFormatError(
            f"unsupported file type ({shown}); supported: {', '.join(SUPPORTED_SUFFIXES)}"
        )
    return reader


__all__ = [
    "SUPPORTED_SUFFIXES",
    "DocxReader",
    "HtmlReader",
    "MarkdownReader",
    "PdfReader",
    "Reader",
    "TextReader",
    "decode_text",
    "reader_for",
]
