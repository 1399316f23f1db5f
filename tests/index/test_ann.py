"""The IVF lists of the persisted view: recall against exact search, the exact fallback,
incremental updates without re-clustering, and erasure that leaves nothing in the IVF files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from beleg.index import ann, persisted_view
from beleg.index.catalog import Catalog
from beleg.index.filters import parse
from beleg.index.snapshot import Snapshot
from beleg.types import ANONYMOUS, Chunk, Document, Principal

DIM = 32
CLUSTERS = 40


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _store(catalog: Catalog, doc_id: str, vectors: np.ndarray, metadata: dict) -> None:
    with catalog.transaction():
        ids = catalog.term_ids(["common", f"only{doc_id}"], create=True)
        chunks, hashes, postings = [], [], []
        for c in range(len(vectors)):
            chunks.append(Chunk(f"{doc_id}-{c}", doc_id, c, 10 * c, 10 * c + 9, ("T",), f"common only{doc_id}"))
            hashes.append(f"h-{doc_id}-{c}")
            postings.append((np.array(sorted(ids.values()), dtype=np.int32), np.array([1, 1], dtype=np.int32)))
        catalog.put_vectors(dict(zip(hashes, vectors)))
        catalog.upsert_document(Document(doc_id, f"src/{doc_id}.md", "x" * (10 * len(vectors)), metadata,
                                         f"hash-{doc_id}"), chunks, hashes, postings)


def _metadata(d: int) -> dict:
    # 1 in 4 documents current; 1 in 40 of tenant acme, all current (a selective filter below)
    return {"status": "current" if d % 4 == 0 else "draft", **({"tenant": "acme"} if d % 40 == 4 else {})}


def _clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    """Chunks of one document: near one of the topic centres (real embeddings cluster by topic)."""
    centre = centres[rng.integers(len(centres))]
    return _unit(centre + rng.normal(scale=0.35 / np.sqrt(DIM), size=(n, DIM)) + 0.15 * _unit(rng.normal(size=DIM)))


@pytest.fixture()
def small_ann(monkeypatch):
    """IVF from 1,000 chunks on (50,000 in production), so tests stay small."""
    monkeypatch.setattr(ann, "ANN_FROM", 1000)
    monkeypatch.setattr(ann, "RESCORE_MIN", 32)


def _index(tmp_path: Path, docs: int, clustered: bool = True, seed: int = 0) -> Catalog:
    rng = np.random.default_rng(seed)
    centres = _unit(rng.normal(size=(CLUSTERS, DIM)))
    catalog = Catalog(tmp_path / "catalog.sqlite")
    for d in range(docs):
        n = int(rng.integers(8, 17))
        vectors = _clustered(rng, centres, n) if clustered else _unit(rng.normal(size=(n, DIM)))
        _store(catalog, f"doc{d:04d}", vectors, _metadata(d))
    return catalog


def _queries(view: Snapshot, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picked = np.asarray(view.vectors)[rng.choice(len(view), n, replace=False)]
    return _unit(picked + rng.normal(scale=0.3 / np.sqrt(DIM), size=picked.shape))


def _recall(view: Snapshot, queries: np.ndarray, mask: np.ndarray | None, k: int = 10) -> float:
    exact = dataclasses.replace(view, codes=None, code_scales=None, ann=None, _access={})
    found = []
    for q in queries:
        want = set(exact.dense_search(q, k, mask)[0].tolist())
        got = view.dense_search(q, k, mask)[0].tolist()
        assert len(got) == len(want), "the IVF must return as many hits as exact search"
        if mask is not None:
            assert mask[got].all(), "the IVF returned a row the filter excludes"
        found.append(len(want & set(got)) / len(want))
    return float(np.mean(found))


def _ivf_searches(monkeypatch) -> list[bool]:
    """Record, for each dense search, whether the IVF answered it (False: the exact path did)."""
    used: list[bool] = []
    real = ann.IVF.search

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(ann.IVF, "search", spy)
    return used


def test_clustered_vectors_get_a_usable_ivf_with_recall_at_10_of_099_under_every_filter(tmp_path, small_ann,
                                                                                         monkeypatch):
    catalog = _index(tmp_path, 300)
    view = Snapshot.load(catalog, DIM)
    assert view.ann is not None and view.ann.usable, view.ann and view.ann.meta()
    assert view.ann.probe_share <= 0.3 and len(view.ann.members) == len(view)
    assert sorted(np.asarray(view.ann.members).tolist()) == list(range(len(view)))
    used = _ivf_searches(monkeypatch)
    queries = _queries(view, 60, seed=1)
    broad = view.chunk_mask(parse("status = draft"), ANONYMOUS)
    assert _recall(view, queries, None) >= 0.99
    assert _recall(view, queries, broad) >= 0.99
    assert used and all(used), "no filter and a broad filter must be answered from the IVF lists"
    used.clear()
    selective = view.chunk_mask(parse("tenant = acme and status = current"), Principal("u", "acme"))
    assert selective is not None and selective.sum() < 0.05 * len(view)
    assert _recall(view, queries, selective) == 1.0
    assert not any(used), "a selective filter must be searched exactly (scanning its rows is cheaper)"
    catalog.close()


def _counting(codes, read: list[int]):
    """``codes`` that append the number of rows of every read to ``read``."""

    class Counting:
        shape, dtype = codes.shape, codes.dtype

        def __getitem__(self, key):
            part = codes[key]
            read.append(len(part))
            return part

    return Counting()

def test_the_ivf_reads_only_some_lists(tmp_path, small_ann, monkeypatch):
    catalog = _index(tmp_path, 300)
    view = Snapshot.load(catalog, DIM)
    assert view.ann is not None
    read: list[int] = []
    view.ann.codes = _counting(view.ann.codes, read)  # type: ignore[assignment]
    view.dense_search(_queries(view, 1, seed=3)[0], 10, None)
    assert 0 < sum(read) < 0.5 * len(view), f"read {sum(read)} of {len(view)} codes"
    catalog.close()


def test_near_random_vectors_get_an_unusable_ivf_and_exact_results(tmp_path, small_ann, monkeypatch):
    catalog = _index(tmp_path, 150, clustered=False)
    view = Snapshot.load(catalog, DIM)
    assert view.ann is not None and not view.ann.usable, "random vectors cannot be probed cheaply"
    assert view.ann.probe_share > ann.MAX_PROBE_SHARE
    files = [p.name for p in persisted_view.view_files(tmp_path)]
    assert not [f for f in files if f.startswith("ivf_")], "an unusable IVF stores no lists"
    used = _ivf_searches(monkeypatch)
    assert _recall(view, _queries(view, 20, seed=2), None) == 1.0
    assert not any(used)
    catalog.close()


def test_below_the_threshold_there_is_no_ivf(tmp_path):
    catalog = _index(tmp_path, 60)
    view = Snapshot.load(catalog, DIM)
    assert view.ann is None and len(view) < ann.ANN_FROM
    catalog.close()


def test_new_rows_go_to_the_unassigned_list_until_it_exceeds_its_share(tmp_path, small_ann):
    catalog = _index(tmp_path, 300)
    first = Snapshot.load(catalog, DIM)
    assert first.ann is not None and first.ann.usable
    built = first.ann.built_rows
    centroids = np.array(first.ann.centroids)
    rng = np.random.default_rng(5)
    late = _unit(rng.normal(size=(6, DIM)))
    _store(catalog, "late", late, {"status": "current"})
    second = Snapshot.load(catalog, DIM)
    assert second.ann is not None and second.ann.built_rows == built, "one more document must not re-cluster"
    np.testing.assert_array_equal(second.ann.centroids, centroids)
    late_rows = [i for i, d in enumerate(second.chunk_doc.tolist()) if second.doc_ids[d] == "late"]
    assert sorted(np.asarray(second.ann.unassigned).tolist()) == late_rows
    for i, vector in zip(late_rows, late):  # found although no list holds them
        assert second.dense_search(vector, 1, None)[0].tolist() == [i]
    # Documents until the unassigned rows pass their share: then the lists are built anew.
    shares = []
    for d in range(1000, 1100):
        _store(catalog, f"doc{d}", _unit(rng.normal(size=(12, DIM))), {"status": "draft"})
        view = Snapshot.load(catalog, DIM)
        if view.ann.built_rows != built:
            break
        shares.append(len(view.ann.unassigned) / len(view))
    assert view.ann.built_rows == len(view) != built and len(view.ann.unassigned) == 0
    assert len(shares) > 3 and max(shares) <= ann.REBUILD_SHARE < shares[-1] + 12 / len(view) + 1e-9
    catalog.close()


def test_erased_rows_leave_the_ivf_files_and_the_centroids_they_shaped(tmp_path, small_ann):
    catalog = _index(tmp_path, 300)
    before = Snapshot.load(catalog, DIM)
    assert before.ann is not None and before.ann.usable
    gone = [f"doc{d:04d}" for d in (3, 17, 150)]
    gone_rows = [i for i, d in enumerate(before.chunk_doc.tolist()) if before.doc_ids[d] in gone]
    gone_codes = [bytes(np.asarray(before.codes[i]).tobytes()) for i in gone_rows]
    gone_vectors = [bytes(np.asarray(before.vectors[i]).tobytes()) for i in gone_rows]
    with catalog.transaction():
        for doc_id in gone:
            catalog.delete_document(doc_id)
    after = Snapshot.load(catalog, DIM)
    assert after.ann is not None and after.ann.built_rows == before.ann.built_rows, "an erasure remaps, not rebuilds"
    assert sorted(np.asarray(after.ann.members).tolist()) == list(range(len(after)))
    ivf_files = [p for p in persisted_view.view_files(tmp_path) if p.name.startswith("ivf_")]
    assert {p.name for p in ivf_files} == {f"ivf_{k}.npy" for k in ann.FILES}
    data = b"".join(p.read_bytes() for p in (tmp_path / "view").rglob("*") if p.is_file())
    for code, vector in zip(gone_codes, gone_vectors):
        assert code not in data and vector not in data, "an erased chunk's codes or vector survived"
    # The centroid of every list that lost rows is the unit mean of the rows it still has.
    ivf = after.ann
    at = np.flatnonzero(np.isin(np.asarray(before.ann.members), gone_rows))
    touched = set((np.searchsorted(np.asarray(before.ann.offsets), at, side="right") - 1).tolist())
    assert touched
    for lst in touched:
        rows = np.asarray(ivf.members[ivf.offsets[lst] : ivf.offsets[lst + 1]])
        mean = np.asarray(after.vectors[np.sort(rows)], dtype=np.float64).sum(axis=0)
        np.testing.assert_allclose(ivf.centroids[lst], mean / np.linalg.norm(mean), atol=1e-5)
    assert _recall(after, _queries(after, 30, seed=4), None) >= 0.99
    catalog.close()


def test_an_ivf_of_fewer_rows_than_lists_is_built_without_error():
    vectors = _unit(np.random.default_rng(8).normal(size=(10, DIM)))
    codes, scales = persisted_view.int8_codes(vectors)
    ivf = ann.build(vectors, codes, scales)
    assert len(ivf.centroids) <= 10 and ivf.built_rows == 10


def test_a_filtered_query_reads_the_share_calibrated_for_its_depth_and_beyond_it_goes_exact(tmp_path, small_ann,
                                                                                              monkeypatch):
    catalog = _index(tmp_path, 300)
    view = Snapshot.load(catalog, DIM)
    ivf = view.ann
    assert ivf is not None and ivf.usable
    depths = [d for d, _ in ivf.stats["depth_shares"]]
    shares = [s for _, s in ivf.stats["depth_shares"]]
    assert depths == [10, 40, 160, 640] and shares == sorted(shares)
    assert ivf.share_for_depth(10) == shares[0] and ivf.share_for_depth(640) == shares[-1]
    assert ivf.share_for_depth(700) is None, "deeper than calibrated must not be trusted"
    # A filter leaving 1 in 4 rows: depth 40, read at least that share of the rows.
    mask = np.zeros(len(view), dtype=bool)
    mask[::4] = True
    read: list[int] = []
    ivf.codes = _counting(ivf.codes, read)  # type: ignore[assignment]
    query = _queries(view, 1, seed=6)[0]
    assert ivf.search(query, 10, mask, len(view), view.vectors, view.codes, view.code_scales) is not None
    assert sum(read) >= ivf.share_for_depth(40) * len(view)
    # A filter leaving 1 in 100 rows needs depth 1000: exact, whatever the cost.
    rare = np.zeros(len(view), dtype=bool)
    rare[::100] = True
    assert ivf.search(query, 10, rare, len(view), view.vectors, view.codes, view.code_scales) is None
    catalog.close()


def test_a_filter_of_whole_documents_keeps_recall_at_10_of_099(tmp_path, small_ann):
    """Eligible rows that come in clumps (a few documents per topic), as a tenant's do."""
    catalog = _index(tmp_path, 300)
    view = Snapshot.load(catalog, DIM)
    for share in (0.05, 0.15, 0.4):
        docs = np.random.default_rng(int(share * 100)).random(len(view.doc_ids)) < share
        mask = docs[view.chunk_doc]
        assert _recall(view, _queries(view, 40, seed=7), mask) >= 0.99, f"documents filter of share {share}"
    catalog.close()


def test_a_filter_of_whole_documents_over_many_small_topics_keeps_recall(monkeypatch):
    """Many more topics than lists, a filter of whole documents: the eligible top 10 lies far
    deeper than the unfiltered one (probing until a share of the eligible rows was seen, the
    first rule, found 0.6 of it here at 5 %)."""
    monkeypatch.setattr(ann, "RESCORE_MIN", 32)
    rng = np.random.default_rng(0)
    dim = 64
    centres = _unit(rng.normal(size=(600, dim)))
    vectors, doc_of = [], []
    for d in range(2000):
        n = int(rng.integers(8, 17))
        centre = centres[rng.integers(len(centres))]
        vectors.append(_unit(centre + rng.normal(scale=0.35 / np.sqrt(dim), size=(n, dim))
                             + 0.15 * _unit(rng.normal(size=dim))))
        doc_of += [d] * n
    matrix, docs = np.concatenate(vectors), np.array(doc_of)
    codes, scales = persisted_view.int8_codes(matrix)
    ivf = ann.build(matrix, codes, scales)
    assert ivf.usable
    ivf.codes = np.concatenate(list(ivf.codes.blocks()))  # type: ignore[attr-defined]  # as saved
    queries = _unit(matrix[rng.choice(len(matrix), 40, replace=False)]
                    + rng.normal(scale=0.3 / np.sqrt(dim), size=(40, dim)))
    used = 0
    for share in (0.05, 0.15, 0.4):
        mask = (np.random.default_rng(int(share * 100)).random(2000) < share)[docs]
        eligible = np.flatnonzero(mask)
        found = []
        for q in queries:
            want = set(eligible[np.argsort(-(matrix[eligible] @ q))[:10]].tolist())
            got = ivf.search(q, 10, mask, len(matrix), matrix, codes, scales)
            used += got is not None
            found.append(1.0 if got is None else len(want & set(got[0].tolist())) / 10)
        assert np.mean(found) >= 0.99, f"recall@10 {np.mean(found)} under a documents filter of share {share}"
    assert used, "the IVF must answer some of the broader filters (else this tests only the exact path)"
