"""The reader protocol: bytes of one file in, a :class:`ParsedDocument` out.

Readers never guess metadata they were not given: they report what the format itself
declares (front matter, ``<meta>`` tags, PDF/DOCX properties) and leave defaults and
ingest rules to :mod:`beleg.ingest.metadata`.
"""

from __future__ import annotations

import datetime as _dt
import re
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
        raise IngestError("looks binary (contains NUL bytes), not a text file")
    enc = encoding or "utf-8"
    try:
        text = data.decode(enc)
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise IngestError(
            f"not valid {enc} (byte 0x{bad} at offset {exc.start}); "
            "re-save it as UTF-8 or pass --encoding (e.g. latin-1)"
        ) from None
    except LookupError:
        raise IngestError(f"unknown encoding {enc!r}; use a Python codec name such as utf-8 or latin-1") from None
    text = text.removeprefix("\ufeff")
    return normalize_newlines(text)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --- helpers shared by several readers -------------------------------------------------
# They live here so that every format normalises dates, languages and empty input the
# same way; a filter such as ``date >= 2024-01-01`` must mean the same for all of them.


def require_content(data: bytes) -> None:
    """Reject a zero-byte file before a parser produces a less helpful error for it."""
    if not data:
        raise IngestError("file is empty (0 bytes); nothing to index")


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
