"""An immutable, in-memory view of one catalog generation, shaped for fast search.

Dense vectors sit in one ``(chunks, dim)`` float32 matrix and search is exact: at 100k
chunks one matrix-vector product reads 146 MiB and takes ~15 ms on one core, and exact
search can never miss a filtered-in chunk the way an ANN index does under selective
filters (see ``benchmarks/store_candidates.py``). BM25 postings are
precomputed arrays. Metadata is dictionary-encoded per document; a filter becomes a
document mask, then a chunk mask, before any top-k is taken.

A snapshot opened from disk (:mod:`beleg.index.persisted_view`) also carries an int8 copy
of the vectors: dense search then scores every eligible row on the int8 codes (a quarter
of the bytes, faster than the float32 product) and re-scores the best candidates exactly
in float32, so its scores and order are those of exact search.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beleg.blas import one_blas_thread
from beleg.index import int8_pass
from beleg.index.bm25 import BM25Index, top_k
from beleg.index.catalog import Catalog
from beleg.index.filters import Expr, MetadataColumns
from beleg.types import ANONYMOUS, Principal

# Below this share of eligible chunks, scoring only the eligible rows beats scoring all
# (float32 product and int8 pass alike: 1M rows, 25 % eligible, simsimd on 2 threads:
# 17 ms gathered, 24 ms scanning all).
_GATHER_BELOW = 0.25
#: Compact (int8) first pass from this many chunks on; below it the exact product is cheap.
COMPACT_FROM = 20_000
#: Candidates the int8 pass keeps for exact re-scoring: at least this many, and 8 per hit.
_RESCORE_MIN = 256
_RESCORE_PER_HIT = 8
#: Rows per int8 block: the float32 copy of one block (6 MiB) stays in cache.
_CODE_BLOCK = int8_pass.BLOCK
#: From this many rows the int8 pass is split across the cores this process may use: numpy's
#: widening is compute-bound, so two cores nearly halve it (1M rows: 80 -> 43 ms), and
#: simsimd's kernel comes nearer the memory-read ceiling on two (22 -> 15 ms, ceiling 13 ms;
#: benchmarks/dense_scan.py), while the float32 product alone is memory-bound and gains
#: nothing from a second BLAS thread (see beleg.blas).
PARALLEL_FROM = 200_000
#: Threads of the int8 pass over large views (the CPUs this process may use, at most 4).
SCAN_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def parallel_rows(work: Callable[[int, int], None], n: int, threads: int | None = None) -> None:
    """Run ``work(lo, hi)`` over ``[0, n)``: in one call below :data:`PARALLEL_FROM` rows, else
    in block-aligned parts on a shared pool (numpy releases the GIL in the conversion and the
    product). ``work`` must write only its own part."""
    threads = SCAN_THREADS if threads is None else threads
    if n < PARALLEL_FROM or n <= _CODE_BLOCK or threads <= 1:
        work(0, n)
        return
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=SCAN_THREADS, thread_name_prefix="beleg-scan")
    per_thread = -(-n // threads)
    step = -(-per_thread // _CODE_BLOCK) * _CODE_BLOCK  # whole blocks per part
    parts = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    futures = [_pool.submit(work, lo, hi) for lo, hi in parts[1:]]
    try:
        work(*parts[0])  # this thread takes a part too
    finally:
        for future in futures:
            future.result()


#: Every this-many-th first-pass score estimates where the best ``keep`` of them begin.
_SAMPLE_STRIDE = 16


def best_positions(scores: np.ndarray, keep: int) -> np.ndarray:
    """Positions of (at least) the ``keep`` highest scores, in no particular order.

    ``np.argpartition`` over 1M first-pass scores takes ~10 ms, as long as the int8 pass
    itself. Instead, every 16th score sets a cut that about twice ``keep`` scores should
    reach, and one comparison pass takes every score at or above it (~0.6 ms). The result is
    a superset of the best ``keep`` (more candidates for exact re-scoring, never fewer); when
    fewer than ``keep`` reach the cut (an unlucky sample), or far more (ties, masked rows),
    argpartition decides as before.
    """
    n = len(scores)
    if keep >= n:
        return np.arange(n)
    want = -(-2 * keep // _SAMPLE_STRIDE)
    sample = scores[::_SAMPLE_STRIDE]
    if want < len(sample):
        cut = np.partition(sample, len(sample) - want)[len(sample) - want]
        found = np.flatnonzero(scores >= cut)
        if keep <= len(found) <= 8 * keep:
            return found
    return np.argpartition(-scores, keep - 1)[:keep]


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
    #: term → term id: a dict when built from the catalog, a :class:`~beleg.index.string_table.TermIds` when opened from disk.
    vocab: Mapping[str, int]
    #: int8 vectors and per-row scales (``vectors ≈ codes * code_scales[:, None]``), or None.
    codes: np.ndarray | None = None
    code_scales: np.ndarray | None = None
    #: Chunk id of each position, when the view recorded them (a persisted view does), else None.
    chunk_ids: Sequence[str] | None = None
    #: The IVF lists of a persisted view from ``ann.ANN_FROM`` chunks on (:mod:`beleg.index.ann`), or None.
    ann: Any = None
    #: Visible-document masks per principal access key (see :class:`Principal`).
    _access: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)
    #: The memory-mapped arrays of a persisted view (the base of its next incremental rebuild).
    _arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, catalog: Catalog, dim: int, k1: float = 1.5, b: float = 0.75,
             persist: bool = True) -> Snapshot:
        """The search view of the catalog's last commit.

        With ``persist`` (and a catalog in a file) it is opened from the memory-mapped view
        beside the catalog, which is brought up to date first when it is older
        (:mod:`beleg.index.persisted_view`); otherwise it is built in memory from SQLite.
        """
        if persist and str(catalog.path) != ":memory:":
            from beleg.index import persisted_view

            return persisted_view.open_view(catalog, Path(catalog.path).parent, dim, k1=k1, b=b)
        return cls.build(catalog, dim, k1=k1, b=b)

    @classmethod
    def build(cls, catalog: Catalog, dim: int, k1: float = 1.5, b: float = 0.75) -> Snapshot:
        """Build the view in memory from the catalog (every vector and posting read from SQLite)."""
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
        if self.ann is not None and self.codes is not None and self.code_scales is not None:
            found = self.ann.search(query, k, mask, len(self.rows), self.vectors, self.codes, self.code_scales)
            if found is not None:  # None: the exact scan is cheaper (small eligible set, unusable IVF)
                return found  # type: ignore[no-any-return]
        if self.codes is not None and len(self.rows) >= COMPACT_FROM:
            return self._compact_search(query, k, mask)
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

    def _compact_search(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """int8 scores of the eligible rows, then exact float32 scores of the best candidates.

        Per-row int8 codes (and, with the simsimd kernel, an int8 query: see
        :mod:`beleg.index.int8_pass`) put a dot product within ~1e-3 of the exact one; re-scoring
        max(256, 8k) candidates exactly leaves the top k as exact search finds it (recall@10
        1.0 in tests and ``benchmarks/open_latency.py``) while reading a quarter of the bytes.
        """
        assert self.codes is not None and self.code_scales is not None
        query = np.asarray(query, dtype=np.float32)
        eligible = None if mask is None else np.flatnonzero(mask)
        if mask is not None and eligible is not None and len(eligible) >= _GATHER_BELOW * len(mask):
            eligible = None  # scanning every row in order beats gathering most of them
        n = len(self.rows) if eligible is None else len(eligible)
        if n == 0 or k <= 0 or (mask is not None and not mask.any()):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        coarse = np.empty(n, dtype=np.float32)
        codes, code_scales = self.codes, self.code_scales
        prepared = int8_pass.prepare(query)

        def score_rows(lo: int, hi: int) -> None:
            for a in range(lo, hi, _CODE_BLOCK):
                b = min(a + _CODE_BLOCK, hi)
                if eligible is None:
                    int8_pass.score(codes[a:b], code_scales[a:b], prepared, coarse[a:b])
                else:
                    int8_pass.score(codes, code_scales, prepared, coarse[a:b], rows=eligible[a:b])

        with one_blas_thread():
            parallel_rows(score_rows, n)
        if eligible is None and mask is not None:
            np.copyto(coarse, -np.inf, where=~mask)
        best = best_positions(coarse, max(_RESCORE_MIN, _RESCORE_PER_HIT * k))
        candidates = np.sort(best if eligible is None else eligible[best])
        if eligible is None and mask is not None:
            candidates = candidates[mask[candidates]]  # fewer eligible rows than `keep`
        exact = self.vectors[candidates] @ query
        idx, vals = top_k(exact, k)
        return candidates[idx], vals

    def bm25_search(self, terms: list[str], k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        # One lookup per term: on an opened view each is a binary search over the string table.
        ids = [i for i in (self.vocab.get(t) for t in terms) if i is not None]
        return self.bm25.search(ids, k, mask)
