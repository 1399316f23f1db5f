"""Plain text files: decoded strictly, otherwise left as the author wrote them."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from beleg.errors import NoContent
from beleg.ingest.readers.base import decode_text, require_content
from beleg.types import ParsedDocument

logger = logging.getLogger(__name__)

# Blank (or whitespace-only) lines at the very start carry no content; dropping them
# keeps offsets stable when an editor adds or removes them.
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def trim_blank_edges(text: str) -> str:
    """Drop leading blank lines and trailing whitespace, keeping the first line's indent."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def body_position(decoded: str, body: str) -> tuple[int, int]:
    """Where the text starts in the file (:attr:`beleg.types.ParsedDocument.file_position`): for a body that
    is a suffix of ``decoded``, after :func:`trim_blank_edges` drops its leading blank lines,
    ``text == decoded[offset:offset + len(text)]`` and its first line is file line ``line + 1``."""
    offset = len(decoded) - len(body) + (len(body) - len(_LEADING_BLANK_LINES.sub("", body)))
    return offset, decoded.count("\n", 0, offset)


class TextReader:
    """Reads ``.txt``/``.text`` files. Plain text declares no headings, metadata or title."""

    suffixes: tuple[str, ...] = (".txt", ".text")
    decodes_text = True

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        """Decode ``data`` (UTF-8 unless ``encoding`` is given) and return it as the text."""
        require_content(data)
        decoded = decode_text(data, path, encoding)
        text = trim_blank_edges(decoded)
        if not text:
            raise NoContent("file contains only whitespace; nothing to index")
        logger.debug("read %s: %d characters of plain text", path.name, len(text))
        return ParsedDocument(text=text, file_position=body_position(decoded, decoded))
