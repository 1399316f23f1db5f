"""Core values passed between the pipeline stages.

They are frozen so that a value seen in a trace is the value that was used. Character
offsets (``start``/``end``) always index into the owning document's ``text``, so a quote
can be checked against the exact span it claims to come from.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading found by a reader: its level (1 = top), title and offset in the text."""

    level: int
    title: str
    start: int


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """What a reader returns: clean text, its headings, and metadata the format carried.

    ``text`` is the document's canonical text; every chunk offset points into it.
    ``metadata`` holds what the file itself declared (front matter, HTML ``<meta>``,
    PDF/DOCX properties); ingest rules and defaults are merged later.
    """

    text: str
    headings: tuple[Heading, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    #: Where ``text`` starts in the decoded file, as (character offset, lines before it), for
    #: readers that keep the text as written (Markdown, plain text); None for extracted text.
    #: Ingest stores it in the document's metadata under the reserved keys below.
    file_position: tuple[int, int] | None = None


#: Reserved document metadata keys (set by readers that keep the text as written, never shown
#: as metadata): where the document text starts in the decoded file, as a character offset
#: and as the number of file lines before it.
BODY_OFFSET_KEY, BODY_LINE_KEY = "_body_offset", "_body_line"
#: Reserved too: the encoding (``--encoding``) a text file that is not UTF-8 was read with, so
#: the next ingest of the edited file reads it the same way without the option being repeated.
ENCODING_KEY = "_encoding"
RESERVED_METADATA_KEYS = frozenset({BODY_OFFSET_KEY, BODY_LINE_KEY, ENCODING_KEY})
#: What ``start``/``end`` count in, in every JSON output.
OFFSETS = "document-text"


def stored_file_position(metadata: dict[str, Any]) -> tuple[int, int] | None:
    """The (offset, line) a document's metadata records, or None."""
    offset, line = metadata.get(BODY_OFFSET_KEY), metadata.get(BODY_LINE_KEY)
    if type(offset) is int and type(line) is int and offset >= 0 and line >= 0:
        return offset, line
    return None


def with_file_position(metadata: dict[str, Any], position: tuple[int, int] | None) -> dict[str, Any]:
    """``metadata`` with the reserved keys set from ``position`` only: a front-matter key or an
    ingest rule cannot claim a file position."""
    out = {k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS}
    if position is not None:
        out[BODY_OFFSET_KEY], out[BODY_LINE_KEY] = position
    return out


def shown_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata for display and JSON: keys starting with ``_`` are Beleg's own bookkeeping
    (the reserved keys above), never the document's metadata."""
    return {k: v for k, v in metadata.items() if not k.startswith("_")}


def file_position(metadata: dict[str, Any], document_text: str | None, start: int | None,
                  end: int | None) -> dict[str, Any]:
    """Where document offsets ``[start, end)`` lie in the file: character offsets in the decoded
    file (``file_start``/``file_end``) and 1-based lines (``line_start``/``line_end``, the
    lines of the first and last character). Null, with ``file_offsets`` saying why, when the
    reader does not keep the file's text as written (HTML, PDF, DOCX) or the document was
    indexed before readers recorded it (re-ingest to get them)."""
    position = stored_file_position(metadata)
    known = position is not None and start is not None and end is not None
    out: dict[str, Any] = {"offsets": OFFSETS, "file_start": None, "file_end": None,
                           "line_start": None, "line_end": None}
    if not known:
        out["file_offsets"] = ("unknown: the document text is extracted from the file (HTML, PDF, DOCX) "
                               "or was indexed before file offsets were recorded")
        return out
    assert position is not None and start is not None and end is not None
    offset, line = position
    out["file_start"], out["file_end"] = offset + start, offset + end
    if document_text is not None:
        out["line_start"] = line + document_text.count("\n", 0, start) + 1
        out["line_end"] = line + document_text.count("\n", 0, max(start, end - 1)) + 1
    out["file_offsets"] = "decoded file characters (newlines as \\n, no byte-order mark)"
    return out


def add_file_positions(items: list[dict[str, Any]], document: Any) -> list[dict[str, Any]]:
    """Fill :func:`file_position` fields into JSON objects that carry ``doc_id``/``start``/``end``
    (search hits, answer citations and sources); ``document(doc_id)`` returns the stored
    :class:`Document` or None. Returns ``items``, updated in place."""
    docs: dict[str, Any] = {}
    for item in items:
        doc_id = item.get("doc_id")
        if doc_id is not None and doc_id not in docs:
            docs[doc_id] = document(doc_id)
        doc = docs.get(doc_id) if doc_id is not None else None
        position = file_position(doc.metadata if doc else {}, doc.text if doc else None, item.get("start"),
                                 item.get("end"))
        item.update(position)
    return items


@dataclass(frozen=True, slots=True)
class Document:
    """A source document as stored in the index."""

    doc_id: str
    source: str
    text: str
    metadata: dict[str, Any]
    content_hash: str

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or self.source)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable span of a document.

    ``chunk_id`` is a content hash (document id, heading path, text, occurrence), so
    re-ingesting unchanged content yields the same ids.
    """

    chunk_id: str
    doc_id: str
    ordinal: int
    start: int
    end: int
    heading_path: tuple[str, ...]
    text: str
    #: Ingest-time findings, e.g. ``"instruction-like:override"`` (possible prompt injection).
    flags: tuple[str, ...] = ()

    @property
    def heading_path_str(self) -> str:
        return " > ".join(self.heading_path)


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a chunk, its document's identity and metadata, and a score.

    ``score`` is the score of the stage that produced the final ranking (BM25 score,
    cosine similarity, fused RRF score, ...); ``scores`` keeps each leg's score and rank
    so a person can see why the chunk ranked where it did.
    """

    chunk_id: str
    doc_id: str
    source: str
    title: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    score: float
    text: str
    metadata: dict[str, Any]
    scores: dict[str, float] = field(default_factory=dict)
    #: Ingest-time findings on the chunk (see :attr:`Chunk.flags`).
    flags: tuple[str, ...] = ()
    #: When the hit was widened (parent-child, neighbour expansion) or narrowed (compression):
    #: the document offsets of the span that actually matched the query.
    matched: tuple[int, int] | None = None

    def to_json(self, document_text: str | None = None) -> dict[str, Any]:
        """The `search --json` contract for one hit. ``start``/``end`` count characters of the
        document text (``"offsets": "document-text"``); ``file_start``/``file_end`` and, given
        the document's text, ``line_start``/``line_end`` say where that is in the file."""
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "heading_path": " > ".join(self.heading_path),
            "start": self.start,
            "end": self.end,
            **file_position(self.metadata, document_text, self.start, self.end),
            "score": self.score,
            "text": self.text,
            "metadata": shown_metadata(self.metadata),
            "scores": self.scores,
            "flags": list(self.flags),
            **({"matched": {"start": self.matched[0], "end": self.matched[1]}} if self.matched else {}),
        }


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking. Every search is filtered to what this principal may read.

    A document with a ``tenant`` is visible only to a principal of that tenant; a
    document with an ``acl`` only to a principal one of whose groups is listed, or whose
    user is listed as ``user:NAME``. Users and groups are separate namespaces: a user
    called ``ops`` does not get the access of the group ``ops``. Both conditions must
    hold. Tenants and names compare case-folded and stripped (:meth:`fold`), the same rule
    ingest applies. The anonymous principal (the default) sees public documents only:
    access fails closed.
    """

    user: str | None = None
    tenant: str | None = None
    groups: tuple[str, ...] = ()

    @staticmethod
    def fold(name: str) -> str:
        """The one comparison form of tenants and ACL names: ``" ACME "`` → ``"acme"``.

        Unicode-normalised (NFKC) around the case fold, so a name typed on macOS (decomposed
        ``ö``) or with fullwidth letters (``ａｃｍｅ``) is the name typed elsewhere; ingest and
        query fold with this same function, so both sides always agree.
        """
        return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()).strip()

    @staticmethod
    def acl_entry(entry: str) -> str:
        """An ACL entry in canonical form: ``"user:NAME"`` for a user, the bare name for a group
        (``"group:NAME"`` and ``"NAME"`` are the same group).

        A group whose name itself starts with ``user:`` or ``group:`` keeps its ``group:``
        prefix (``"group:user:alice"``): stripping it would turn a group into the user
        alice the next time the entry is read. So the canonical form is a fixed point
        (``acl_entry(acl_entry(e)) == acl_entry(e)``) and an entry read at query time means
        what it meant at ingest. Ingest refuses such ambiguous entries
        (:func:`beleg.ingest.metadata.normalize`); this only keeps old or hand-made ones safe.
        """
        folded = Principal.fold(entry)
        kind, sep, name = folded.partition(":")
        name = name.strip()
        if sep and kind == "user" and name:
            return f"user:{name}"
        if sep and kind == "group" and name:
            return f"group:{name}" if Principal.namespaced(name) else name
        return folded

    @staticmethod
    def namespaced(name: str) -> bool:
        """Whether a folded name starts with a namespace prefix (``user:`` or ``group:``)."""
        kind, sep, _ = name.partition(":")
        return bool(sep) and kind.strip() in ("user", "group")

    def acl_names(self) -> set[str]:
        """The ACL entries that grant this principal access."""
        # A group spelled "user:x" must not pass for the user x.
        names = {g for g in (self.acl_entry(g) for g in self.groups) if not g.startswith("user:")}
        if self.user and self.user.strip():
            names.add(f"user:{self.fold(self.user)}")
        return names

    @property
    def access_key(self) -> tuple[str | None, str | None, tuple[str, ...]]:
        """What decides visibility; caches of visible sets are keyed by it."""
        fold = lambda name: None if name is None else self.fold(name)  # noqa: E731
        return (fold(self.user), fold(self.tenant), tuple(sorted(self.acl_names())))

    def may_read(self, metadata: dict[str, Any]) -> bool:
        tenant = metadata.get("tenant")
        if tenant is not None and (self.tenant is None or self.fold(str(tenant)) != self.fold(self.tenant)):
            return False
        acl = metadata.get("acl")
        if acl is not None:
            entries = {self.acl_entry(str(a)) for a in (acl if isinstance(acl, (list, tuple)) else [acl])}
            if not self.acl_names() & entries:
                return False
        return True


ANONYMOUS = Principal()
