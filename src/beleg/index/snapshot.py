"""An immutable, in-memory view of one catalog generation, shaped for fast search.

Dense vectors sit in one ``(chunks, dim)`` float32 matrix and search is exact: at 100k
chunks one matrix-vector product reads 146 MiB and takes ~15 ms on one core, and exact
search can never miss a filtered-in chunk the way an ANN index does under selective
filters (see ``benchmarks/store_candidates.py``). BM25 postings are
precomputed arrays. Metadata is dictionary-encoded per document; a filter becomes a
document mask, then a chunk mask, before any top-k is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beleg.blas import one_blas_thread
from beleg.index.bm25 import BM25Index, top_k
from beleg.index.catalog import Catalog
from beleg.index.filters import Expr, MetadataColumns
from beleg.types import ANONYMOUS, Principal

# Below this share of eligible chunks, scoring only the eligible rows beats scoring all.
_GATHER_BELOW = 0.25

@dataclass
class Snapshot:
    generation: int
    rows: np.ndarray  # catalog row of each chunk position
    chunk_doc: np.ndarray  # document position of each chunk
    doc_ids: list[str]
    doc_sources: list[str]
    doc_metadata: list[dict[str, Any]]
    columns: MetadataColumns
    vectors: np.ndarray
    bm25: BM25Index
    vocab: dict[str, int]
    #: Visible-document masks per principal access key (see :class:`Principal`).
    _access: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)

    @classmethod
    def load(cls, catalog: Catalog, dim: int, k1: float = 1.5, b: float = 0.75) -> "Snapshot":
        # One read transaction for every read: in autocommit mode each SELECT may see a
        # later commit (WAL), pairing chunks with documents or terms of another generation.
        own = not catalog.db.in_transaction
        if own:
            catalog.db.execute("BEGIN")
        try:
            generation = catalog.generation
            docs = catalog.documents_meta()
            doc_pos = {doc_id: i for i, (doc_id, _, _) in enumerate(docs)}
            rows, chunk_doc, term_ids, term_tfs, vectors = [], [], [], [], []
            for row, doc_id, ids, tfs, vector in catalog.chunk_rows():
                rows.append(row)
                chunk_doc.append(doc_pos[doc_id])
                term_ids.append(np.frombuffer(ids, dtype=np.int32))
                term_tfs.append(np.frombuffer(tfs, dtype=np.int32))
                vectors.append(np.frombuffer(vector, dtype=np.float32) if vector is not None
                               else np.zeros(0, np.float32))
            vocab = catalog.all_terms()
        finally:
            if own and catalog.db.in_transaction:
                catalog.db.execute("ROLLBACK")  # read-only: nothing to commit
        if vectors:
            dim = len(vectors[0])
            # Rows without a stored vector (none should exist) must not break the stack.
            vectors = [v if len(v) == dim else np.zeros(dim, dtype=np.float32) for v in vectors]
        n_terms = (max(vocab.values()) + 1) if vocab else 0
        matrix = np.vstack(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
        return cls(
            generation=generation,
            rows=np.array(rows, dtype=np.int64),
            chunk_doc=np.array(chunk_doc, dtype=np.int32),
            doc_ids=[d[0] for d in docs],
            doc_sources=[d[1] for d in docs],
            doc_metadata=[d[2] for d in docs],
            columns=MetadataColumns([d[2] for d in docs]),
            vectors=np.ascontiguousarray(matrix, dtype=np.float32),
            bm25=BM25Index(term_ids, term_tfs, n_terms, k1=k1, b=b),
            vocab=vocab,
        )

    def __len__(self) -> int:
        return len(self.rows)

    def access_mask(self, principal: Principal) -> np.ndarray:
        """Documents ``principal`` may read (cached per access key for this snapshot)."""
        key = principal.access_key
        mask = self._access.get(key)
        if mask is None:
            mask = np.fromiter((principal.may_read(m) for m in self.doc_metadata), dtype=bool,
                               count=len(self.doc_metadata))
            self._access[key] = mask
        return mask

    def chunk_mask(self, expr: Expr | None, principal: Principal = ANONYMOUS) -> np.ndarray | None:
        """Eligible chunks: the filter AND the principal's access (None when all are eligible).

        The access mask is applied here, under every retriever, so a user filter can only
        narrow what the principal may read, never widen it.
        """
        docs = self.access_mask(principal)
        if expr is not None:
            docs = docs & self.columns.mask(expr)
        if docs.all():
            return None
        return docs[self.chunk_doc]

    def dense_search(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine top-k among eligible chunks (vectors are L2-normalised)."""
        if len(self.rows) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        with one_blas_thread():
            if mask is None:
                return top_k(self.vectors @ query, k)
            eligible = np.flatnonzero(mask)
            if len(eligible) < _GATHER_BELOW * len(mask):
                scores = np.full(len(mask), -np.inf, dtype=np.float32)
                scores[eligible] = self.vectors[eligible] @ query
            else:
                scores = self.vectors @ query
        return top_k(scores, k, allowed=eligible)

    def bm25_search(self, terms: list[str], k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        ids = [self.vocab[t] for t in terms if t in self.vocab]
        return self.bm25.search(ids, k, mask)
