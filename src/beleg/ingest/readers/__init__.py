"""Document readers, looked up by file suffix in one :class:`~beleg.registry.Registry`.

Each reader turns a file's bytes into a :class:`~beleg.types.ParsedDocument`; see
:mod:`beleg.ingest.readers.base` for the contract. A reader module is imported the first
time a file of one of its suffixes is read. Another package adds a format without touching
Beleg, through an entry point named by the suffix (lower case, with its dot)::

    [project.entry-points."beleg.readers"]
    ".rst" = "my_package.rst:RstReader"

or at import time with ``register_reader(".rst", "my_package.rst:RstReader")``. The target
is a reader class that takes no arguments; one instance serves every file (readers are
stateless).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, UnsupportedFormatError
from beleg.ingest.readers.base import Reader, decode_text
from beleg.registry import Registry

_MARKDOWN = ("beleg.ingest.readers.markdown", "MarkdownReader", "Markdown with YAML front matter")
_TEXT = ("beleg.ingest.readers.text", "TextReader", "plain text")
_HTML = ("beleg.ingest.readers.html", "HtmlReader", "HTML (title, meta tags, headings)")

#: File suffix (lower case, with its dot) → reader class.
READERS = Registry("readers", {
    ".md": _MARKDOWN,
    ".markdown": _MARKDOWN,
    ".txt": _TEXT,
    ".text": _TEXT,
    ".html": _HTML,
    ".htm": _HTML,
    ".pdf": ("beleg.ingest.readers.pdf", "PdfReader", "PDF text layer and properties"),
    ".docx": ("beleg.ingest.readers.docx", "DocxReader", "Word documents (headings, tables, properties)"),
}, noun="reader for suffix")


def suffix_key(suffix: str) -> str:
    """``"RST"``, ``".rst"`` → ``".rst"``: how a suffix is named in :data:`READERS`."""
    key = suffix.strip().lower()
    key = key if key.startswith(".") else "." + key
    if len(key) < 2 or any(c in key[1:] for c in "./\\ "):
        raise ConfigError(f"a reader suffix looks like '.rst' (one dot, no spaces or slashes), got {suffix!r}")
    return key


def register_reader(suffix: str, target: str, description: str = "") -> None:
    """Read files ending in ``suffix`` with ``target`` (``"package.module:ReaderClass"``),
    replacing any reader of that suffix; ``beleg ingest`` then picks such files up in folders."""
    READERS.register(suffix_key(suffix), target, description)


def supported_suffixes() -> tuple[str, ...]:
    """Every file suffix some registered reader handles (lower case, with dot), sorted."""
    return tuple(sorted(READERS))


def reader_for(path: Path) -> Reader:
    """The reader for ``path``'s suffix (case-insensitive).

    Raises :class:`UnsupportedFormatError` listing the supported suffixes otherwise.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in READERS:
        shown = f"suffix {suffix!r}" if suffix else "no file suffix"
        hint = READERS.hint(suffix) if suffix else ""
        raise UnsupportedFormatError(
            f"unsupported file type ({shown}); supported: {', '.join(supported_suffixes())}.{hint}"
        )
    return _instance(READERS.load(suffix))


@functools.cache
def _instance(reader_class: Any) -> Reader:
    reader: Reader = reader_class()
    return reader


__all__ = ["READERS", "Reader", "decode_text", "reader_for", "register_reader", "suffix_key", "supported_suffixes"]
