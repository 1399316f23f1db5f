"""The reader protocol: bytes of one file in, a :class:`ParsedDocument` out.

Readers never guess metadata they were not given: they report what the format itself
declares (front matter, ``<meta>`` tags, PDF/DOCX properties) and leave defaults and
ingest rules to :mod:`beleg.ingest.metadata`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from beleg.errors import IngestError
from beleg.types import ParsedDocument


class Reader(Protocol):
    """Parse one file. Raise :class:`IngestError` with a reason a person can act on."""

    #: File name suffixes (lower case, with dot) this reader handles.
    suffixes: tuple[str, ...]

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument: ...


def decode_text(data: bytes, path: Path, encoding: str | None = None) -> str:
    """Decode a text file strictly; a wrong encoding is an error, never mojibake.

    A UTF-8 byte-order mark is dropped. NUL bytes mean the file is binary.
    """
    if b"\x00" in data[:8192]:
        raise IngestError(f"{path.name}: looks binary (contains NUL bytes), not a text file")
    enc = encoding or "utf-8"
    try:
        text = data.decode(enc)
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise IngestError(
            f"{path.name}: not valid {enc} (byte 0x{bad} at offset {exc.start}); "
            "re-save it as UTF-8 or pass --encoding (e.g. latin-1)"
        ) from None
    except LookupError:
        raise IngestError(f"unknown encoding {enc!r}; use a Python codec name such as utf-8 or latin-1") from None
    text = text.removeprefix("\ufeff")
    return normalize_newlines(text)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
