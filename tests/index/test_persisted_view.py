"""The memory-mapped search view: equal to the in-memory one, current or rebuilt, crash-safe, erasing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from beleg.index import int8_pass, persisted_view
from beleg.index import snapshot as snapshot_module
from beleg.index.catalog import Catalog
from beleg.index.filters import parse
from beleg.index.snapshot import Snapshot
from beleg.types import Chunk, Document

DIM = 16


def _add(catalog: Catalog, doc_id: str, n_chunks: int, seed: int, metadata: dict | None = None) -> np.ndarray:
    """Store a document of ``n_chunks`` chunks with random unit vectors and random terms; return its vectors."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n_chunks, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = [f"w{int(i)}" for i in rng.integers(0, 40, size=n_chunks * 6)] + [f"only{doc_id}"]
    with catalog.transaction():
        ids = catalog.term_ids(words, create=True)
        chunks, hashes, postings = [], [], []
        for c in range(n_chunks):
            terms = words[c * 6 : c * 6 + 6] + ([f"only{doc_id}"] if c == 0 else [])
            unique, counts = np.unique([ids[t] for t in terms], return_counts=True)
            chunks.append(Chunk(f"{doc_id}-{c}", doc_id, c, 10 * c, 10 * c + 9, ("T",), " ".join(terms)))
            hashes.append(f"h-{doc_id}-{c}-{seed}")
            postings.append((unique.astype(np.int32), counts.astype(np.int32)))
        catalog.put_vectors(dict(zip(hashes, vectors)))
        doc = Document(doc_id, f"src/{doc_id}.md", "x" * (10 * n_chunks), metadata or {}, f"hash-{doc_id}-{seed}")
        catalog.upsert_document(doc, chunks, hashes, postings)
    return vectors


@pytest.fixture()
def catalog(tmp_path: Path):
    cat = Catalog(tmp_path / "catalog.sqlite")
    for d in range(6):
        _add(cat, f"doc{d}", 3 + d, seed=d, metadata={"status": "current" if d % 2 else "draft",
                                                      **({"tenant": "acme"} if d == 4 else {})})
    yield cat
    cat.close()


def _assert_same(a: Snapshot, b: Snapshot) -> None:
    assert a.generation == b.generation
    assert a.rows.tolist() == b.rows.tolist() and a.chunk_doc.tolist() == b.chunk_doc.tolist()
    assert (a.doc_ids, a.doc_sources, a.doc_metadata) == (b.doc_ids, b.doc_sources, b.doc_metadata)
    assert a.vocab == b.vocab
    np.testing.assert_array_equal(a.vectors, b.vectors)
    for terms in (["w1", "w2"], ["onlydoc3"], ["w5", "w5", "nothere"]):
        np.testing.assert_array_equal(a.bm25.scores([a.vocab[t] for t in terms if t in a.vocab]),
                                      b.bm25.scores([b.vocab[t] for t in terms if t in b.vocab]))
    np.testing.assert_array_equal(a.bm25.idf, b.bm25.idf)


def test_persisted_view_equals_the_in_memory_build_and_reopens_without_sqlite_chunk_reads(catalog, monkeypatch):
    first = Snapshot.load(catalog, DIM)
    assert persisted_view.view_files(catalog.path.parent), "the view must be written beside the catalog"
    _assert_same(first, Snapshot.build(catalog, DIM))

    def no_reads(*args, **kwargs):
        raise AssertionError("a current view must open from its files, not from the chunk table")

    monkeypatch.setattr(persisted_view, "_chunks_after", no_reads)
    again = Snapshot.load(catalog, DIM)
    assert isinstance(np.load(catalog.path.parent / "view" / (catalog.path.parent / "view" / "CURRENT")
                              .read_text().strip() / "vectors.npy", mmap_mode="r"), np.memmap)
    _assert_same(again, Snapshot.build(catalog, DIM))
    principal_filter = parse("status = current")
    mask = again.chunk_mask(principal_filter)
    query = again.vectors[4] + 0.1
    for got, want in ((again.dense_search(query, 5, mask), first.dense_search(query, 5, mask)),
                      (again.bm25_search(["w3", "w7"], 5, mask), first.bm25_search(["w3", "w7"], 5, mask))):
        assert got[0].tolist() == want[0].tolist()
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_an_older_view_is_detected_and_rebuilt_from_the_new_rows_only(catalog, monkeypatch):
    old = Snapshot.load(catalog, DIM)
    old_max = int(old.rows.max())
    _add(catalog, "doc9", 4, seed=9)
    reads: list[int] = []
    real = persisted_view._chunks_after
    monkeypatch.setattr(persisted_view, "_chunks_after",
                        lambda cat, after, dim: reads.append(after) or real(cat, after, dim))
    new = Snapshot.load(catalog, DIM)
    assert new.generation == catalog.generation != old.generation
    assert reads == [old_max], "only rows added since the old view are read from SQLite"
    _assert_same(new, Snapshot.build(catalog, DIM))
    assert "onlydoc9" in new.vocab


def test_replacing_and_deleting_documents_updates_the_view_and_leaves_no_bytes_of_them(catalog):
    Snapshot.load(catalog, DIM)
    gone = catalog.cached_vectors([f"h-doc2-{c}-2" for c in range(5)])
    replaced = catalog.cached_vectors([f"h-doc1-{c}-1" for c in range(4)])
    assert len(gone) == 5 and len(replaced) == 4
    with catalog.transaction():
        catalog.delete_document("doc2")
        catalog.drop_orphan_terms()
    _add(catalog, "doc1", 2, seed=77)  # a new version of doc1: its old chunks and vectors go
    view = Snapshot.load(catalog, DIM)
    _assert_same(view, Snapshot.build(catalog, DIM))
    assert "doc2" not in view.doc_ids and "onlydoc2" not in view.vocab
    folder = catalog.path.parent / "view"
    data = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    for vector in [*gone.values(), *replaced.values()]:
        assert vector.tobytes()[:32] not in data, "an erased vector survived in the view files"
        codes, _ = persisted_view.int8_codes(vector[None, :])
        assert codes.tobytes() not in data, "an erased vector's int8 codes survived in the view files"
    assert b"onlydoc2" not in data and b"src/doc2.md" not in data
    assert len([p for p in folder.iterdir() if p.is_dir()]) == 1, "older view folders must be deleted"


def test_a_crash_before_the_swap_leaves_the_last_good_view(catalog, monkeypatch):
    good = Snapshot.load(catalog, DIM)
    _add(catalog, "doc9", 4, seed=9)

    def crash(root, name):
        raise KeyboardInterrupt("killed between writing the new view and the rename")

    monkeypatch.setattr(persisted_view, "_swap", crash)
    with pytest.raises(KeyboardInterrupt):
        Snapshot.load(catalog, DIM)
    monkeypatch.undo()
    root = catalog.path.parent / "view"
    survivor = persisted_view._load(root / persisted_view._current_name(root), None, None)
    assert survivor.generation == good.generation, "CURRENT still names the last complete view"
    fresh = Snapshot.load(catalog, DIM)  # the stale view is not used: it is rebuilt
    _assert_same(fresh, Snapshot.build(catalog, DIM))
    assert len([p for p in root.iterdir() if p.is_dir()]) == 1


def test_a_torn_view_file_is_detected_and_rebuilt_not_used(catalog):
    Snapshot.load(catalog, DIM)
    vectors = next(p for p in persisted_view.view_files(catalog.path.parent) if p.name == "vectors.npy")
    with open(vectors, "r+b") as fh:
        fh.truncate(vectors.stat().st_size - 64)
    view = Snapshot.load(catalog, DIM)
    _assert_same(view, Snapshot.build(catalog, DIM))


def test_a_view_of_another_catalog_is_not_reused(tmp_path):
    """Same generation and row count, other content: the row check refuses the old files."""
    a = Catalog(tmp_path / "catalog.sqlite")
    _add(a, "first", 3, seed=1)
    Snapshot.load(a, DIM)
    a.close()
    (tmp_path / "catalog.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"catalog.sqlite{suffix}").unlink(missing_ok=True)
    b = Catalog(tmp_path / "catalog.sqlite")
    _add(b, "other", 2, seed=2)  # generation 1 again, but fewer rows
    try:
        view = Snapshot.load(b, DIM)
        assert view.doc_ids == ["other"]
        _assert_same(view, Snapshot.build(b, DIM))
    finally:
        b.close()


@pytest.mark.parametrize("kernel", ["numpy", "simsimd"])
@pytest.mark.parametrize("split", [False, True], ids=["one-thread", "split-across-threads"])
def test_compact_int8_search_returns_exactly_the_exact_top_k(tmp_path, monkeypatch, split, kernel):
    monkeypatch.setattr(int8_pass, "KERNEL", kernel)
    cat = Catalog(tmp_path / "catalog.sqlite")
    try:
        for d in range(40):
            _add(cat, f"d{d:02d}", 50, seed=100 + d, metadata={"status": "current" if d % 7 == 0 else "draft"})
        monkeypatch.setattr(snapshot_module, "COMPACT_FROM", 0)
        if split:  # 2,000 rows in blocks of 64, in three parts on the scan pool
            monkeypatch.setattr(snapshot_module, "PARALLEL_FROM", 0)
            monkeypatch.setattr(snapshot_module, "_CODE_BLOCK", 64)
            monkeypatch.setattr(snapshot_module, "SCAN_THREADS", 3)
        compact = Snapshot.load(cat, DIM)
        exact = Snapshot.build(cat, DIM)
        assert compact.codes is not None and exact.codes is None
        rng = np.random.default_rng(5)
        masks = [None, compact.chunk_mask(parse("status = current")), rng.random(len(compact)) < 0.5]
        for _ in range(30):
            query = rng.normal(size=DIM).astype(np.float32)
            query /= np.linalg.norm(query)
            for mask in masks:
                got, want = compact.dense_search(query, 10, mask), exact.dense_search(query, 10, mask)
                assert got[0].tolist() == want[0].tolist()
                np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    finally:
        cat.close()


def test_compact_search_with_fewer_eligible_rows_than_candidates_returns_only_eligible(tmp_path, monkeypatch):
    cat = Catalog(tmp_path / "catalog.sqlite")
    try:
        for d in range(10):
            _add(cat, f"d{d}", 12, seed=300 + d, metadata={"status": "current" if d < 4 else "draft"})
        monkeypatch.setattr(snapshot_module, "COMPACT_FROM", 0)
        compact, exact = Snapshot.load(cat, DIM), Snapshot.build(cat, DIM)
        mask = compact.chunk_mask(parse("status = current"))  # 40%: every row is scanned, 48 < 256 kept
        query = compact.vectors[70] + 0.05
        got, want = compact.dense_search(query, 60, mask), exact.dense_search(query, 60, mask)
        assert len(got[0]) == int(mask.sum()) == 48 and mask[got[0]].all()
        assert got[0].tolist() == want[0].tolist()
    finally:
        cat.close()


def test_parallel_rows_covers_every_row_once_in_whole_blocks(monkeypatch):
    monkeypatch.setattr(snapshot_module, "PARALLEL_FROM", 0)
    monkeypatch.setattr(snapshot_module, "_CODE_BLOCK", 100)
    for n, threads in ((1050, 3), (100, 2), (99, 4), (1, 2), (0, 2), (1050, 1)):
        seen = np.zeros(n, dtype=int)
        parts = []

        def work(lo: int, hi: int, seen=seen, parts=parts) -> None:
            parts.append((lo, hi))
            seen[lo:hi] += 1

        snapshot_module.parallel_rows(work, n, threads)
        assert (seen == 1).all(), (n, threads)
        assert all(lo % 100 == 0 for lo, _ in parts) and len(parts) <= max(1, threads)


def test_the_view_holds_the_catalogs_chunk_ids_and_a_view_of_another_format_is_rebuilt(catalog):
    view = Snapshot.load(catalog, DIM)
    expected = [r[0] for r in catalog.db.execute("SELECT chunk_id FROM chunks ORDER BY row")]
    assert view.chunk_ids is not None and list(view.chunk_ids) == expected
    assert [view.chunk_ids[i] for i in range(len(expected))] == expected
    current = persisted_view.view_files(catalog.path.parent)[0].parent
    manifest = current / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(
        f'"format": {persisted_view.FORMAT}', '"format": 1'), encoding="utf-8")
    reopened = Snapshot.load(catalog, DIM)
    assert persisted_view.view_files(catalog.path.parent)[0].parent != current  # rebuilt into a new folder
    _assert_same(reopened, Snapshot.build(catalog, DIM))
    assert list(reopened.chunk_ids or []) == expected
