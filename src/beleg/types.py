"""Core values passed between the pipeline stages.

They are frozen so that a value seen in a trace is the value that was used. Character
offsets (``start``/``end``) always index into the owning document's ``text``, so a quote
can be checked against the exact span it claims to come from.
"""

from __future__ import annotations

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

    def to_json(self) -> dict[str, Any]:
        """The `search --json` contract for one hit."""
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "heading_path": " > ".join(self.heading_path),
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "text": self.text,
            "metadata": self.metadata,
            "scores": self.scores,
            "flags": list(self.flags),
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
        """The one comparison form of tenants and ACL names: ``" ACME "`` → ``"acme"``."""
        return name.strip().casefold()

    @staticmethod
    def acl_entry(entry: str) -> str:
        """An ACL entry in canonical form: ``"user:NAME"`` for a user, the bare name for a group
        (``"group:NAME"`` and ``"NAME"`` are the same group)."""
        kind, sep, name = Principal.fold(entry).partition(":")
        if sep and kind == "user" and name.strip():
            return f"user:{name.strip()}"
        if sep and kind == "group" and name.strip():
            return name.strip()
        return Principal.fold(entry)

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
