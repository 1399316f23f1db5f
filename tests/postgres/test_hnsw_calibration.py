"""The writer measures how deep the HNSW index must search (beleg.index.postgres.hnsw_calibration):
dense search uses the measured ``ef_search``, searches exactly where no level reaches the
recall target, and measures again when the corpus has grown by a quarter."""

from __future__ import annotations

from collections import Counter

import numpy as np

from beleg.index.ports import ChunkWrite
from beleg.index.postgres import bulk, hnsw_calibration, search
from beleg.index.postgres.store import PostgresStore
from beleg.types import ANONYMOUS, Chunk, Document

DIM = 64


def items(n_docs: int, vectors: np.ndarray, first: int = 0) -> list:
    """Documents of 4 chunks each, the chunks' vectors taken from ``vectors`` in order."""
    out = []
    for d in range(first, first + n_docs):
        doc_id = f"d-{d:05d}"
        writes = []
        for c in range(4):
            text = f"chunk {c} of document {d}"
            chunk = Chunk(f"{doc_id}-{c}", doc_id, c, 0, len(text), ("T",), text)
            writes.append(ChunkWrite(chunk, f"h-{doc_id}-{c}", vectors[(d - first) * 4 + c], Counter(text.split())))
        out.append((Document(doc_id, f"docs/{doc_id}.md", "\n\n".join(w.chunk.text for w in writes), {},
                             f"c-{d}"), writes, ()))
    return out


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(n: int, seed: int) -> np.ndarray:
    """Tight clusters of 20: easy for a graph index."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n // 20 + 1, DIM))
    return unit(np.repeat(centres, 20, axis=0)[:n] + 0.05 * rng.normal(size=(n, DIM)))


def exact_top(vectors: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    return sorted(vectors, key=lambda c: -float(vectors[c] @ query))[:k]


def test_the_measured_depth_is_stored_and_used(pg_location: str, monkeypatch) -> None:
    monkeypatch.setattr(hnsw_calibration, "CALIBRATE_FROM", 400)
    store = PostgresStore(pg_location, exact_below=400)
    try:
        vectors = clustered(1200, seed=1)
        bulk.bulk_load(store, items(300, vectors))
        index = store.read_view()
        cal = index.calibration
        assert cal is not None and cal.rows == 1200
        assert set(cal.ef) == set(hnsw_calibration.DEPTHS)
        for depth, ef in cal.ef.items():  # every level up to the chosen one was measured
            assert ef is not None and cal.recall[depth][ef] >= hnsw_calibration.TARGET
            assert all(r < hnsw_calibration.TARGET for e, r in cal.recall[depth].items() if e < ef)
        levels = []
        original = search.PostgresSearchIndex._approximate
        monkeypatch.setattr(search.PostgresSearchIndex, "_approximate",
                            lambda self, elig, q, k, ef: levels.append((k, ef)) or original(self, elig, q, k, ef))
        query = vectors[17]
        found = index.dense_top_k(query, 10, index.eligible(None, ANONYMOUS))
        assert levels == [(10, cal.ef[10])]
        by_id = {f"d-{i // 4:05d}-{i % 4}": v for i, v in enumerate(vectors)}
        assert len({h.chunk_id for h in found} & set(exact_top(by_id, query, 10))) >= 9
        index.dense_top_k(query, 30, index.eligible(None, ANONYMOUS))
        index.dense_top_k(query, 80, index.eligible(None, ANONYMOUS))  # deeper than measured: the default
        assert levels[1:] == [(30, cal.ef[50]), (80, 320)]
    finally:
        store.close()


def test_an_index_that_cannot_reach_the_target_is_searched_exactly(pg_location: str, monkeypatch) -> None:
    """Near-random vectors in 64 dimensions: the graph finds fewer of the exact neighbours.
    With a target no level can reach, every search is exact and equals exact search."""
    monkeypatch.setattr(hnsw_calibration, "CALIBRATE_FROM", 400)
    monkeypatch.setattr(hnsw_calibration, "TARGET", 1.01)
    monkeypatch.setattr(hnsw_calibration, "EF_LEVELS", (40, 100))
    store = PostgresStore(pg_location, exact_below=400)
    try:
        rng = np.random.default_rng(2)
        vectors = unit(rng.normal(size=(1200, DIM)))
        bulk.bulk_load(store, items(300, vectors))
        index = store.read_view()
        assert index.calibration is not None and index.calibration.ef == {10: None, 50: None}
        assert set(index.calibration.recall[10]) == {40, 100}
        monkeypatch.setattr(search.PostgresSearchIndex, "_approximate",
                            lambda *a: (_ for _ in ()).throw(AssertionError("the HNSW path was taken")))
        by_id = {f"d-{i // 4:05d}-{i % 4}": v for i, v in enumerate(vectors)}
        for q in (5, 600, 1111):
            found = index.dense_top_k(vectors[q], 10, index.eligible(None, ANONYMOUS))
            assert [h.chunk_id for h in found] == exact_top(by_id, vectors[q], 10)
    finally:
        store.close()


def test_the_depth_is_measured_again_after_the_corpus_grew_by_a_quarter(pg_location: str, monkeypatch) -> None:
    monkeypatch.setattr(hnsw_calibration, "CALIBRATE_FROM", 400)
    store = PostgresStore(pg_location, exact_below=0)
    try:
        vectors = clustered(2000, seed=3)
        bulk.bulk_load(store, items(100, vectors))  # 400 chunks: measured
        assert store.read_view().calibration.rows == 400
        for d in range(100, 124):  # +96 chunks: under a quarter, not measured again
            document, writes, _ = items(1, vectors[4 * d:], first=d)[0]
            store.upsert_document(document, writes)
        assert store.read_view().calibration.rows == 400
        document, writes, _ = items(1, vectors[4 * 124:], first=124)[0]
        store.upsert_document(document, writes)  # 500 chunks
        assert store.read_view().calibration.rows == 500
    finally:
        store.close()


def test_status_shows_the_measurement(pg_location: str, monkeypatch) -> None:
    import beleg
    from beleg.cli.render import render_status

    monkeypatch.setattr(hnsw_calibration, "CALIBRATE_FROM", 400)
    with beleg.open(pg_location) as kb:
        before = kb.status()["vector_index"]
        assert before["measured"] is False and "not measured" in render_status(kb.status())
        kb.store.exact_below = 400
        bulk.bulk_load(kb.store, items(100, clustered(400, seed=4)))
        status = kb.status()
    measured = status["vector_index"]
    assert measured["measured"] and measured["at_chunks"] == 400 and set(measured["ef_search"]) == {"k<=10", "k<=50"}
    assert "ef_search k<=10:" in render_status(status)
