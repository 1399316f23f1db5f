"""BM25 over integer term ids, scored eagerly so a query is one ``bincount``.

Scoring follows Lucene's BM25 (the ``lucene`` method of bm25s)::

    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d,q) = sum over unique t in q of idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))

Because N, df and avgdl are fixed for one snapshot of the index, every posting's
contribution is computed once at build time; a query then sums the contributions of its
terms' postings. Filters arrive as a boolean mask and are applied before top-k.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Score only the rows the postings name when they are fewer than one in this many rows
#: (``np.unique`` sorts them: cheaper than a pass over every row only while they are few).
_SPARSE_BELOW = 8


class BM25Index:
    """Postings of one index snapshot: ``term id → (rows, precomputed weights)``."""

    def __init__(self, term_ids: Sequence[np.ndarray], term_tfs: Sequence[np.ndarray], n_terms: int,
                 k1: float = 1.5, b: float = 0.75) -> None:
        """Build from per-row term ids and their in-row frequencies.

        Args:
            term_ids: For each row (chunk), the unique term ids it contains.
            term_tfs: For each row, the frequency of each of those terms.
            n_terms: Size of the vocabulary (ids are ``0..n_terms-1``).
            k1, b: BM25 parameters.
        """
        self.k1, self.b = k1, b
        self.n_rows = len(term_ids)
        lengths = np.array([int(t.sum()) for t in term_tfs], dtype=np.float64)
        self.doc_lengths = lengths
        if self.n_rows == 0 or not any(len(t) for t in term_ids):
            self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
            self._rows = np.zeros(0, dtype=np.int32)
            self._weights = np.zeros(0, dtype=np.float32)
            self.idf = np.zeros(n_terms, dtype=np.float64)
            return
        counts = np.fromiter((len(t) for t in term_ids), dtype=np.int64, count=self.n_rows)
        rows = np.repeat(np.arange(self.n_rows, dtype=np.int32), counts)
        terms = np.concatenate(term_ids).astype(np.int64)
        tfs = np.concatenate(term_tfs).astype(np.float64)
        avgdl = lengths.mean()
        df = np.bincount(terms, minlength=n_terms).astype(np.float64)
        self.idf = np.log1p((self.n_rows - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[rows] / avgdl)
        weights = self.idf[terms] * tfs / (tfs + norm)
        order = np.argsort(terms, kind="stable")
        self._rows = rows[order]
        self._weights = weights[order].astype(np.float32)
        self._indptr = np.concatenate([[0], np.cumsum(df.astype(np.int64))])

    def occurs_in(self, term_id: int, mask: np.ndarray | None) -> bool:
        """Whether the term occurs in any row the mask allows (any row at all without a mask)."""
        if term_id < 0 or term_id + 1 >= len(self._indptr):
            return False
        rows = self._rows[self._indptr[term_id]: self._indptr[term_id + 1]]
        return bool(len(rows)) if mask is None else bool(mask[rows].any())

    def scores(self, query_term_ids: Sequence[int]) -> np.ndarray:
        """BM25 score of every row for a query given as term ids (duplicates count once)."""
        out = np.zeros(self.n_rows, dtype=np.float64)
        ids = [t for t in dict.fromkeys(query_term_ids) if 0 <= t < len(self._indptr) - 1]
        if not ids:
            return out
        rows = np.concatenate([self._rows[self._indptr[t] : self._indptr[t + 1]] for t in ids])
        weights = np.concatenate([self._weights[self._indptr[t] : self._indptr[t + 1]] for t in ids])
        return np.bincount(rows, weights=weights.astype(np.float64), minlength=self.n_rows)

    def search(self, query_term_ids: Sequence[int], k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows among those allowed by ``mask``; rows scoring 0 are never returned.

        When the query terms' postings name few rows (rare terms, the usual case at 1M
        chunks), only those rows are scored: the sums are the ones :meth:`scores` computes
        (the same weights added in the same order), without an array over every row.
        """
        ids = [t for t in dict.fromkeys(query_term_ids) if 0 <= t < len(self._indptr) - 1]
        postings = sum(int(self._indptr[t + 1] - self._indptr[t]) for t in ids)
        if postings * _SPARSE_BELOW < self.n_rows:
            return self._search_postings(ids, k, mask)
        scores = self.scores(ids)
        if mask is not None:
            scores[~mask] = 0.0
        return top_k(scores, k, allowed=np.flatnonzero(scores > 0))

    def _search_postings(self, ids: list[int], k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rows = np.concatenate([self._rows[self._indptr[t] : self._indptr[t + 1]] for t in ids])
        weights = np.concatenate([self._weights[self._indptr[t] : self._indptr[t + 1]] for t in ids])
        named, slot = np.unique(rows, return_inverse=True)  # named rows ascending: ties still by row
        sums = np.bincount(slot, weights=weights.astype(np.float64), minlength=len(named))
        if mask is not None:
            keep = mask[named]
            named, sums = named[keep], sums[keep]
        idx, vals = top_k(sums, k, positive_only=True)
        return named[idx].astype(np.int64), vals


def top_k(scores: np.ndarray, k: int, positive_only: bool = False, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the k largest scores, best first; ties broken by lower index.

    ``allowed`` (indices) restricts the candidates; ``positive_only`` drops scores <= 0.
    """
    idx = allowed if allowed is not None else np.arange(len(scores))
    vals = scores[idx]
    if positive_only:
        keep = vals > 0
        idx, vals = idx[keep], vals[keep]
    if k <= 0 or len(idx) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype)
    if len(idx) > k:
        part = np.argpartition(-vals, k - 1)[:k]
        # Widen the cut to every row tied with the k-th score so ties resolve by index.
        kth = vals[part].min()
        part = np.flatnonzero(vals >= kth)
        idx, vals = idx[part], vals[part]
    order = np.lexsort((idx, -vals))[:k]
    return idx[order], vals[order]
