"""The two ports every index backend implements: :class:`Store` (writes, erasure, the
source of truth) and :class:`SearchIndex` (one consistent read view, shaped for search).

Retrieval, strategies, answering and evaluation use only these ports and the typed
records below: ids are strings (``chunk_id``, ``doc_id``), never a backend's row numbers
or array positions, and no record is a positional tuple. The embedded backend
(:mod:`beleg.index.embedded`, SQLite + an in-memory snapshot) implements them; a second
backend (PostgreSQL) implements the same protocols and passes the same conformance suite
(:mod:`beleg.testing.conformance`).

Permissions are part of the contract, not of the callers: every read that takes a
``principal`` returns only what that principal may read (:meth:`Principal.may_read`), and
fails closed (no principal means public documents only; a tenant no document has sees
nothing restricted).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from beleg.index.filters import Expr
from beleg.registry import Registry
from beleg.types import Chunk, Document, Heading, Principal

# ---------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A stored document without its text: what search and filters need of it."""

    doc_id: str
    source: str
    metadata: dict[str, Any]

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or self.source)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A stored chunk as it is shown: offsets index into its document's text."""

    chunk_id: str
    doc_id: str
    ordinal: int
    start: int
    end: int
    heading_path: tuple[str, ...]
    text: str
    flags: tuple[str, ...] = ()

    def to_chunk(self) -> Chunk:
        return Chunk(self.chunk_id, self.doc_id, self.ordinal, self.start, self.end, self.heading_path, self.text,
                     self.flags)

    @classmethod
    def from_chunk(cls, chunk: Chunk) -> ChunkRecord:
        return cls(chunk.chunk_id, chunk.doc_id, chunk.ordinal, chunk.start, chunk.end, tuple(chunk.heading_path),
                   chunk.text, tuple(chunk.flags))


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """One result of a top-k: which chunk, of which document, with what score."""

    chunk_id: str
    doc_id: str
    score: float


@dataclass(frozen=True, slots=True)
class ChunkWrite:
    """Everything a store keeps of one chunk: its record, its vector (with the hash of the
    text that was embedded, so equal texts share one vector) and its BM25 term frequencies
    (terms as Beleg's analyzer produced them, :mod:`beleg.index.analyzer`)."""

    chunk: Chunk
    embed_hash: str
    vector: np.ndarray
    terms: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ErasureSummary:
    """What an erasure removed from one store (one index version).

    ``complete`` is False when something of the erased text may still sit outside the live
    tables (the embedded backend: a concurrent reader kept old pages in the write-ahead
    log); running the erasure or ``beleg gc`` again once readers are gone finishes it.
    """

    documents: int = 0
    chunks: int = 0
    vectors: int = 0
    terms: int = 0
    complete: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"documents": self.documents, "chunks": self.chunks, "vectors": self.vectors, "terms": self.terms,
                "complete": self.complete}


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """BM25 statistics of some query terms as one principal (under one filter) sees them.

    ``idf`` holds only the terms that occur in a chunk the eligibility allows; a term that
    occurs only in chunks the principal may not read is absent, exactly like a term that
    occurs nowhere, so no statistic tells a reader whether a hidden word exists. The idf
    values themselves are the ones lexical scoring uses (see :meth:`SearchIndex.lexical_top_k`).
    ``chunks`` is the N of those statistics.
    """

    chunks: int
    idf: Mapping[str, float] = field(default_factory=dict)

    @property
    def unseen_idf(self) -> float:
        """The idf BM25 gives a term in no chunk: the largest any term can have."""
        return math.log1p((max(self.chunks, 1) + 0.5) / 0.5)

    def known(self, term: str) -> bool:
        return term in self.idf

    def idf_of(self, term: str) -> float:
        """The term's idf; :attr:`unseen_idf` for a term the principal cannot see."""
        return self.idf.get(term, self.unseen_idf)


class Eligibility(Protocol):
    """Which chunks one search may consider: a filter AND a principal's access, resolved by
    a :class:`SearchIndex` for its own view. Opaque to callers except for these two facts."""

    @property
    def count(self) -> int:
        """How many chunks are eligible."""
        ...

    def __contains__(self, chunk_id: object) -> bool: ...


# ---------------------------------------------------------------------- ports


@runtime_checkable
class SearchIndex(Protocol):
    """One consistent, read-only view of an index.

    Eligibility, both top-k searches, term statistics, documents, metadata values and
    vectors answer from the one commit the view was taken at; :meth:`chunks` (display data)
    is read when called and leaves out chunks deleted since, so a hit is never a ghost.

    Contract (checked by :class:`beleg.testing.conformance.SearchIndexConformance`):

    - No result, count, statistic or value ever includes a chunk or document the principal
      of the :class:`Eligibility` may not read; a filter only narrows access, never widens it.
    - Dense search is exact cosine (dot product of L2-normalised vectors) top-k among the
      eligible chunks, ties broken by a stable order; an approximate backend must fall back
      to exact search whenever it could miss an eligible chunk.
    - Lexical search is BM25 with Beleg's analyzer and Lucene's formula
      (:mod:`beleg.index.bm25`): ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``,
      ``k1``/``b`` from the index configuration. N, df and the average chunk length are
      taken over every chunk of the view (corpus-wide, as docs/permissions.md states: a
      visible chunk's score may shift slightly with restricted content sharing its terms).
      Chunks scoring 0 are never returned; equal scores agree across backends to 1e-6.
    - A view never changes under its reader; a new commit is seen by taking a new view.
    """

    @property
    def generation(self) -> int:
        """The commit this view shows (a cache key: equal generations mean equal content)."""
        ...

    def __len__(self) -> int:
        """Number of chunks in the view (all of them, not only the readable ones)."""
        ...

    def eligible(self, expr: Expr | None, principal: Principal) -> Eligibility:
        """The chunks of documents that ``principal`` may read and ``expr`` matches."""
        ...

    def dense_top_k(self, query: np.ndarray, k: int, eligible: Eligibility) -> list[ScoredChunk]:
        """The ``k`` eligible chunks whose vectors are most similar to ``query``, best first."""
        ...

    def lexical_top_k(self, terms: Sequence[str], k: int, eligible: Eligibility) -> list[ScoredChunk]:
        """The ``k`` eligible chunks with the highest BM25 score for ``terms`` (analysed query
        terms; a duplicate counts once), best first."""
        ...

    def term_statistics(self, terms: Sequence[str], eligible: Eligibility) -> TermStatistics:
        """BM25 idf of those ``terms`` that occur in an eligible chunk (see :class:`TermStatistics`)."""
        ...

    def vectors(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``chunk_ids`` as rows of one matrix (for MMR); call it only
        with ids this view returned."""
        ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """Display data of the given chunks by id; ids not in the store are left out (a
        chunk deleted since this view was taken is never returned)."""
        ...

    def documents(self, principal: Principal, doc_ids: Sequence[str] | None = None) -> list[DocumentRecord]:
        """Every document ``principal`` may read (only those among ``doc_ids`` when given),
        ordered by ``doc_id``."""
        ...

    def document_chunks(self, doc_id: str, principal: Principal) -> list[ChunkRecord]:
        """The document's chunks in order (``ordinal``); empty when it does not exist or
        ``principal`` may not read it (the two look the same)."""
        ...

    def all_documents(self) -> list[DocumentRecord]:
        """Every document of the view regardless of permission, ordered by ``doc_id``: only for
        derived indexes (the entity graph) that apply :meth:`eligible` before showing anything."""
        ...

    def chunk_documents(self) -> Iterator[tuple[str, str]]:
        """``(chunk_id, doc_id)`` of every chunk of the view, in a stable order (for derived
        indexes such as the entity graph, which apply :meth:`eligible` before showing anything)."""
        ...

    def metadata_values(self, key: str, principal: Principal) -> set[str]:
        """Distinct non-empty values (as text) of metadata ``key`` among readable documents."""
        ...


@runtime_checkable
class Store(Protocol):
    """The source of truth of one index version: documents, chunks, vectors and terms.

    Every write happens inside :meth:`transaction` and becomes visible to new views at
    once, with a new :attr:`generation`, or not at all: a writer killed mid-transaction
    leaves the last commit readable and no half document. Blue/green index versions are
    separate stores (see :mod:`beleg.index.versions`); a backend lists and opens them.
    """

    @property
    def generation(self) -> int:
        """Number of the last commit (grows with every committed transaction)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together, or none do."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def document(self, doc_id: str) -> Document | None:
        """A stored document with its text (no permission check: callers check it)."""
        ...

    def document_records(self) -> list[DocumentRecord]:
        """Every stored document without text, ordered by ``doc_id`` (administrative view)."""
        ...

    def upsert_document(self, document: Document, chunks: Sequence[ChunkWrite],
                        headings: Sequence[Heading] = ()) -> None:
        """Replace a document and all its chunks, vectors and postings (inside a transaction).
        Vectors and terms only the replaced chunks used leave the store with the commit."""
        ...

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        """Replace a document's metadata and source, keeping its chunks (inside a transaction)."""
        ...

    def erase(self, doc_ids: Sequence[str]) -> ErasureSummary:
        """Delete these documents (those present) in one transaction with their chunks, the
        vectors and terms nothing else uses, and anything else of their text the backend
        keeps, so that nothing of them can be read or recovered from the store."""
        ...

    def location(self, doc_id: str) -> str | None:
        """Where a file document's file was when last ingested: its resolved absolute path
        (None for a text, or a row from before locations were recorded). The ingest pipeline
        tells files apart by it, never by ``source`` (the path as typed, relative to a
        working directory that is not recorded)."""
        ...

    def locations(self) -> dict[str, str]:
        """``doc_id → location`` of the documents whose location is recorded."""
        ...

    def doc_ids_at(self, location: str) -> list[str]:
        """Ids of the documents whose file was at ``location`` (usually none or one)."""
        ...

    def set_location(self, doc_id: str, location: str | None) -> None:
        """Record where a document's file is (inside a transaction, after its upsert)."""
        ...

    def stored_terms(self, terms: Sequence[str]) -> set[str]:
        """Which of ``terms`` the store keeps anywhere (vocabulary, postings, statistics);
        administrative, for erasure checks: a term no stored chunk contains is never kept."""
        ...

    def vector_count(self) -> int:
        """How many distinct vectors are stored."""
        ...

    def read_view(self) -> SearchIndex:
        """A consistent view of the last commit (reused while nothing was committed)."""
        ...

    def close(self) -> None: ...


#: Index backends by name (``beleg.stores`` entry points add more); see docs/backends.md.
STORES = Registry("stores", {
    "embedded": ("beleg.index.embedded", "EmbeddedStore", "SQLite catalog + in-memory or memory-mapped search view"),
    "postgresql": ("beleg.index.postgres.store", "PostgresStore",
                   "PostgreSQL + pgvector, row-level security (postgresql:// index URLs)"),
}, noun="store")
