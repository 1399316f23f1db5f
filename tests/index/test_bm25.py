"""BM25 must equal a reference implementation over the same tokens, and never return zero scores."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from beleg.index.analyzer import analyze, analyze_query
from beleg.index.bm25 import BM25Index, top_k

CORPUS = [
    "Failed webhooks are retried for 72 hours. The retry window is set by retry_window_hours.",
    "E-4012 means the X-Ferrolink-Signature header did not match the payload.",
    "POST /v5/queues/{id}/redrive moves dead-lettered messages back to the queue.",
    "Die Nachrichtengröße ist auf 1 MB begrenzt. Größere Nachrichten werden abgelehnt.",
    "Use /api/v3 for all new integrations; /api/v2 is deprecated since v2.4.",
    "Every response carries an X-Request-Id header for support requests.",
    "Rate limits: E-4290 is returned when a plan's request budget is exhausted.",
]
QUERIES = ["retry window hours", "E-4012", "X-Request-Id header", "/api/v3", "redrive queue", "Nachrichtengröße", "v2.4"]


def _build(token_lists: list[list[str]]) -> tuple[BM25Index, dict[str, int]]:
    vocab: dict[str, int] = {}
    ids, tfs = [], []
    for tokens in token_lists:
        u, c = np.unique(np.array([vocab.setdefault(t, len(vocab)) for t in tokens], dtype=np.int64), return_counts=True)
        ids.append(u)
        tfs.append(c)
    return BM25Index(ids, tfs, len(vocab)), vocab


@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (1.2, 0.75), (0.9, 0.4)])
def test_scores_equal_bm25s_lucene_on_same_tokens(k1: float, b: float) -> None:
    tokens = [analyze(t, "de" if "Nachricht" in t else "en") for t in CORPUS]
    vocab: dict[str, int] = {}
    ids, tfs = [], []
    for toks in tokens:
        u, c = np.unique(np.array([vocab.setdefault(t, len(vocab)) for t in toks]), return_counts=True)
        ids.append(u)
        tfs.append(c)
    index = BM25Index(ids, tfs, len(vocab), k1=k1, b=b)
    reference = bm25s.BM25(method="lucene", k1=k1, b=b)
    reference.index(tokens, show_progress=False)
    for query in QUERIES:
        q = [t for t in analyze_query(query) if t in vocab]
        ours = index.scores([vocab[t] for t in q])
        theirs = reference.get_scores(q)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6, err_msg=query)


def test_zero_score_rows_are_never_hits() -> None:
    index, vocab = _build([["a", "b"], ["c"], ["a"]])
    rows, scores = index.search([vocab["a"]], k=10)
    assert sorted(rows.tolist()) == [0, 2]
    assert (scores > 0).all()
    rows, _ = index.search([vocab["c"]], k=10, mask=np.array([True, False, True]))
    assert rows.tolist() == []


def test_mask_applies_before_top_k() -> None:
    # Row 0 is the best match but not eligible: the eligible rows must still fill k.
    index, vocab = _build([["x", "x", "x"], ["x", "y"], ["x", "z", "w"], ["q"]])
    rows, _ = index.search([vocab["x"]], k=2, mask=np.array([False, True, True, True]))
    assert sorted(rows.tolist()) == [1, 2]


def test_top_k_breaks_ties_by_index() -> None:
    rows, vals = top_k(np.array([1.0, 3.0, 3.0, 2.0, 3.0]), 2)
    assert rows.tolist() == [1, 2]
    assert vals.tolist() == [3.0, 3.0]


def _reference_search(index: BM25Index, ids: list[int], k: int, mask: np.ndarray | None):
    """The search as it was: every row scored, the mask applied, then top-k of the positive scores."""
    scores = index.scores(ids)
    if mask is not None:
        scores = np.where(mask, scores, 0.0)
    return top_k(scores, k, positive_only=True)


def test_search_over_only_the_named_rows_equals_scoring_every_row_bit_for_bit(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    zipf = 1.0 / np.arange(1, 2001) ** 1.1
    docs = [[f"t{int(w)}" for w in rng.choice(2000, size=int(rng.integers(5, 40)), p=zipf / zipf.sum())]
            for _ in range(4000)]
    index, vocab = _build(docs)
    masks = [None, rng.random(4000) < 0.3, rng.random(4000) < 0.01]
    rare = [[vocab[f"t{r}"] for r in rng.choice(range(500, 2000), size=3) if f"t{r}" in vocab] for _ in range(30)]
    common = [[vocab["t0"], vocab["t1"]], [vocab["t0"], vocab["t7"], vocab["t1500"]] if "t1500" in vocab else [vocab["t0"]]]
    real = BM25Index.scores
    calls = []
    monkeypatch.setattr(BM25Index, "scores", lambda self, ids: calls.append(1) or real(self, ids))
    for query in rare + common:
        for mask in masks:
            for k in (1, 10, 50):
                calls.clear()
                got = index.search(query, k, mask)
                rows_named = sum(int(index._indptr[t + 1] - index._indptr[t]) for t in set(query))
                assert bool(calls) == (rows_named * 8 >= index.n_rows), "rare terms must not score every row"
                want = _reference_search(index, query, k, mask)
                assert got[0].tolist() == want[0].tolist()
                assert got[1].tobytes() == want[1].tobytes(), "scores must be identical, not just close"
    assert index.search([], 10)[0].tolist() == []
