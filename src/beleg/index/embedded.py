"""The embedded backend: the ports of :mod:`beleg.index.ports` over one SQLite catalog
(:class:`~beleg.index.catalog.Catalog`) and its in-memory snapshot
(:class:`~beleg.index.snapshot.Snapshot`).

Catalog row numbers and snapshot array positions stay inside this module; callers see
chunk and document ids only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from beleg.index.catalog import Catalog
from beleg.index.filters import Expr
from beleg.index.ports import (
    ChunkRecord,
    ChunkWrite,
    DocumentRecord,
    ErasureSummary,
    ScoredChunk,
    TermStatistics,
)
from beleg.index.snapshot import Snapshot
from beleg.types import Document, Heading, Principal

#: The embedding width assumed for an empty index before any vector was stored.
DEFAULT_DIM = 384


class EmbeddedEligibility:
    """A chunk mask over one snapshot's positions (None: every chunk is eligible)."""

    __slots__ = ("mask", "_index")

    def __init__(self, mask: np.ndarray | None, index: EmbeddedSearchIndex) -> None:
        self.mask = mask
        self._index = index

    @property
    def count(self) -> int:
        return len(self._index) if self.mask is None else int(self.mask.sum())

    def __contains__(self, chunk_id: object) -> bool:
        pos = self._index.position(str(chunk_id))
        return pos is not None and (self.mask is None or bool(self.mask[pos]))


class EmbeddedSearchIndex:
    """A :class:`~beleg.index.ports.SearchIndex` over one snapshot (one catalog generation).

    Search structures, metadata and chunk ids come from one read transaction; chunk display
    data is read from the catalog by chunk id when asked for, so a chunk deleted since the
    view was taken is never shown.
    """

    def __init__(self, snapshot: Snapshot, chunk_ids: Sequence[str], catalog: Catalog) -> None:
        self.snapshot = snapshot
        self._chunk_ids = chunk_ids  # a list, or the view's StringTable (decoded per hit)
        self._catalog = catalog
        self._positions: dict[str, int] | None = None
        self._doc_positions: dict[str, int] | None = None
        self._records = [DocumentRecord(d, s, m) for d, s, m in
                         zip(snapshot.doc_ids, snapshot.doc_sources, snapshot.doc_metadata)]
        #: (key, access key) → values: self-query asks for versions, products, ... on every
        #: search, and a view never changes, so each is collected once per view (~5 ms at 3k documents).
        self._metadata_values: dict[tuple[str, Any], frozenset[str]] = {}

    @classmethod
    def load(cls, catalog: Catalog, dim: int = DEFAULT_DIM) -> EmbeddedSearchIndex:
        """Build the view of the catalog's last commit (snapshot and chunk ids in one read)."""
        own = not catalog.db.in_transaction
        if own:
            catalog.db.execute("BEGIN")
        try:
            snapshot = Snapshot.load(catalog, dim)
            # A persisted view records its chunk ids; one built in memory is read here, in the
            # same read transaction, so ids and arrays are of one commit.
            chunk_ids = getattr(snapshot, "chunk_ids", None)
            if chunk_ids is None:
                chunk_ids = [r[0] for r in catalog.db.execute("SELECT chunk_id FROM chunks ORDER BY row")]
        finally:
            if own and catalog.db.in_transaction:
                catalog.db.execute("ROLLBACK")  # read-only
        return cls(snapshot, chunk_ids, catalog)

    # ------------------------------------------------------------------ identity
    @property
    def generation(self) -> int:
        return self.snapshot.generation

    def __len__(self) -> int:
        return len(self.snapshot)

    def position(self, chunk_id: str) -> int | None:
        if self._positions is None:
            self._positions = {cid: i for i, cid in enumerate(self._chunk_ids)}
        return self._positions.get(chunk_id)

    def _scored(self, idx: np.ndarray, scores: np.ndarray) -> list[ScoredChunk]:
        docs = self.snapshot.doc_ids
        return [ScoredChunk(self._chunk_ids[i], docs[int(self.snapshot.chunk_doc[i])], float(s))
                for i, s in zip(idx.tolist(), scores.tolist())]

    # ------------------------------------------------------------------ search
    def eligible(self, expr: Expr | None, principal: Principal) -> EmbeddedEligibility:
        return EmbeddedEligibility(self.snapshot.chunk_mask(expr, principal), self)

    def mask(self, eligible: Any) -> np.ndarray | None:
        """The boolean chunk mask of an eligibility this view made (refuses another view's)."""
        if not isinstance(eligible, EmbeddedEligibility) or eligible._index is not self:
            raise TypeError("an Eligibility is only valid for the SearchIndex view that made it")
        return eligible.mask

    def dense_top_k(self, query: np.ndarray, k: int, eligible: Any) -> list[ScoredChunk]:
        mask = self.mask(eligible)
        if mask is not None and not mask.any():
            return []
        return self._scored(*self.snapshot.dense_search(np.asarray(query, dtype=np.float32), k, mask))

    def lexical_top_k(self, terms: Sequence[str], k: int, eligible: Any) -> list[ScoredChunk]:
        mask = self.mask(eligible)
        if mask is not None and not mask.any():
            return []
        return self._scored(*self.snapshot.bm25_search(list(terms), k, mask))

    def term_statistics(self, terms: Sequence[str], eligible: Any) -> TermStatistics:
        mask = self.mask(eligible)
        snap = self.snapshot
        idf: dict[str, float] = {}
        for term in dict.fromkeys(terms):
            tid = snap.vocab.get(term)
            if tid is not None and tid < len(snap.bm25.idf) and snap.bm25.occurs_in(tid, mask):
                idf[term] = float(snap.bm25.idf[tid])
        return TermStatistics(len(snap), idf)

    def vectors(self, chunk_ids: Sequence[str]) -> np.ndarray:
        positions = [self.position(c) for c in chunk_ids]
        missing = [c for c, p in zip(chunk_ids, positions) if p is None]
        if missing:
            raise KeyError(f"chunk {missing[0]!r} is not in this view (generation {self.generation})")
        return self.snapshot.vectors[[p for p in positions if p is not None]]

    # ------------------------------------------------------------------ records
    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        return chunk_records(self._catalog, chunk_ids)

    def documents(self, principal: Principal, doc_ids: Sequence[str] | None = None) -> list[DocumentRecord]:
        mask = self.snapshot.access_mask(principal)
        if doc_ids is None:
            return [r for r, ok in zip(self._records, mask.tolist()) if ok]
        if self._doc_positions is None:
            self._doc_positions = {d: i for i, d in enumerate(self.snapshot.doc_ids)}
        found = sorted({p for p in (self._doc_positions.get(d) for d in doc_ids) if p is not None})
        return [self._records[p] for p in found if mask[p]]

    def document_chunks(self, doc_id: str, principal: Principal) -> list[ChunkRecord]:
        if not self.documents(principal, [doc_id]):
            return []
        d = self._doc_positions[doc_id] if self._doc_positions else self.snapshot.doc_ids.index(doc_id)
        ids = [self._chunk_ids[i] for i in np.flatnonzero(self.snapshot.chunk_doc == d).tolist()]
        records = self.chunks(ids)
        return sorted((r for r in records.values() if r.doc_id == doc_id), key=lambda r: r.ordinal)

    def all_documents(self) -> list[DocumentRecord]:
        return list(self._records)

    def chunk_documents(self) -> Iterator[tuple[str, str]]:
        docs = self.snapshot.doc_ids
        for cid, d in zip(self._chunk_ids, self.snapshot.chunk_doc.tolist()):
            yield cid, docs[d]

    def metadata_values(self, key: str, principal: Principal) -> set[str]:
        cache_key = (key, principal.access_key)
        values = self._metadata_values.get(cache_key)
        if values is None:
            values = frozenset(str(r.metadata[key]) for r in self.documents(principal)
                               if r.metadata.get(key) not in (None, ""))
            self._metadata_values[cache_key] = values
        return set(values)


def chunk_records(catalog: Catalog, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
    """Display data of chunks by id, read from the catalog (ids it lacks are left out)."""
    out: dict[str, ChunkRecord] = {}
    ids = list(dict.fromkeys(str(c) for c in chunk_ids))
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        q = ('SELECT chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags FROM chunks '
             f"WHERE chunk_id IN ({','.join('?' * len(part))})")
        for r in catalog.db.execute(q, part):
            out[r[0]] = ChunkRecord(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6],
                                    tuple(json.loads(r[7])))
    return out


class EmbeddedStore:
    """A :class:`~beleg.index.ports.Store` over one catalog file (one index version)."""

    def __init__(self, catalog: Catalog, dim: int = DEFAULT_DIM) -> None:
        self.catalog = catalog
        self.dim = dim
        self._view: EmbeddedSearchIndex | None = None

    # ------------------------------------------------------------------ commits
    @property
    def generation(self) -> int:
        return self.catalog.generation

    def transaction(self) -> AbstractContextManager[None]:
        return self.catalog.transaction()

    def get_meta(self, key: str) -> str | None:
        return self.catalog.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.catalog.set_meta(key, value)

    def read_view(self) -> EmbeddedSearchIndex:
        generation = self.catalog.generation
        if self._view is None or self._view.generation != generation:
            self._view = EmbeddedSearchIndex.load(self.catalog, self.dim)
        return self._view

    def forget_view(self) -> None:
        """Drop the cached view (after an erasure, so no erased text stays in memory)."""
        self._view = None

    # ------------------------------------------------------------------ documents
    def document(self, doc_id: str) -> Document | None:
        return self.catalog.document(doc_id)

    def document_records(self) -> list[DocumentRecord]:
        rows = self.catalog.db.execute(
            "SELECT doc_id, source, metadata FROM documents ORDER BY doc_id").fetchall()
        return [DocumentRecord(r[0], r[1], json.loads(r[2])) for r in rows]

    def upsert_document(self, document: Document, chunks: Sequence[ChunkWrite],
                        headings: Sequence[Heading] = ()) -> None:
        vocab = self.catalog.term_ids([t for c in chunks for t in c.terms], create=True)
        postings = [(np.array([vocab[t] for t in c.terms], dtype=np.int32),
                     np.array(list(c.terms.values()), dtype=np.int32)) for c in chunks]
        self.catalog.put_vectors({c.embed_hash: np.asarray(c.vector, dtype=np.float32) for c in chunks})
        self.catalog.upsert_document(document, [c.chunk for c in chunks], [c.embed_hash for c in chunks],
                                     postings, headings)

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        self.catalog.update_metadata(doc_id, source, metadata)

    def erase(self, doc_ids: Sequence[str]) -> ErasureSummary:
        """One transaction, then the write-ahead log is checkpointed and truncated (SQLite's
        ``secure_delete`` has already overwritten the freed pages) and the persisted search
        view is rebuilt without the erased documents."""
        totals = {"documents": 0, "chunks": 0, "vectors": 0}
        present = {doc_id for doc_id, _, _ in self.catalog.documents_meta()}
        with self.catalog.transaction():
            for doc_id in dict.fromkeys(doc_ids):
                if doc_id in present:
                    for key, n in self.catalog.delete_document(doc_id).items():
                        totals[key] += n
            terms = self.catalog.drop_orphan_terms()
        self.forget_view()
        complete = self.catalog.checkpoint()
        # The search view persisted beside the catalog holds chunk terms and vectors too: it is
        # rebuilt without the erased documents now (older view folders are deleted).
        from beleg.index import persisted_view

        persisted_view.refresh(self.catalog, create=False)
        return ErasureSummary(totals["documents"], totals["chunks"], totals["vectors"], terms, complete=complete)

    # ------------------------------------------------------------------ file locations
    def location(self, doc_id: str) -> str | None:
        return self.catalog.location(doc_id)

    def locations(self) -> dict[str, str]:
        return self.catalog.locations()

    def doc_ids_at(self, location: str) -> list[str]:
        return self.catalog.doc_ids_at(location)

    def set_location(self, doc_id: str, location: str | None) -> None:
        self.catalog.set_location(doc_id, location)

    # ------------------------------------------------------------------ inspection
    def stored_terms(self, terms: Sequence[str]) -> set[str]:
        return set(self.catalog.term_ids(list(terms), create=False))

    def vector_count(self) -> int:
        return self.catalog.counts()["embeddings"]

    def close(self) -> None:
        self.catalog.close()
