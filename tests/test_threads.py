"""One KnowledgeBase shared by threads: searches while another thread ingests, per-thread lock tokens."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import beleg
from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.index import versions
from beleg.index.catalog import Catalog
from beleg.index.versions import IndexBusyError
from beleg.ingest.pipeline import TextSource


class HashEmbedder(BaseEmbedder):
    """Deterministic word-hash vectors: no model, so the test is about threads only."""

    spec = "hash-test"
    dim = 32
    fingerprint = "hash-test-1"

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out + 1e-3


def _doc(i: int) -> TextSource:
    return TextSource(f"notes/relay-{i}.md", f"# Relay {i}\n\nRelay note {i} about queue redrive and retries. "
                      f"Marker term batch{i}.\n", {"status": "current"}, f"Relay {i}")


def test_threads_search_one_knowledge_base_while_another_thread_ingests(tmp_path: Path) -> None:
    kb = beleg.open(tmp_path / "kb", embedder=HashEmbedder())
    kb.ingest_texts([_doc(0)], progress=False)
    stop = threading.Event()
    errors: list[BaseException] = []
    seen_counts: list[int] = []

    def searcher(mode: str) -> None:
        try:
            while not stop.is_set():
                hits = kb.search("relay note redrive", mode=mode, k=50, self_query=False)
                assert hits, "the first document is always there"
                assert all(h.text and "Relay note" in h.text for h in hits), "a hit must be hydrated from its own commit"
                seen_counts.append(len({h.doc_id for h in hits}))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(mode,)) for mode in ("bm25", "hybrid", "dense", "bm25")]
    for t in threads:
        t.start()
    try:
        for i in range(1, 13):  # twelve commits while four threads search
            kb.ingest_texts([_doc(i)], progress=False)
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, f"a searching thread failed: {errors[0]!r}"
    assert seen_counts and max(seen_counts) > 1, "the searches must have seen later commits"
    final: list[int] = []
    reader = threading.Thread(target=lambda: final.append(len(kb.search("relay", mode="bm25", k=50, self_query=False))))
    reader.start()
    reader.join()
    assert final == [13], "a new thread sees every committed document"
    kb.close()


def test_a_thread_holding_the_write_lock_does_not_let_other_threads_write(tmp_path: Path) -> None:
    """The lock token is the holder thread's: another thread's ingest through the same object is refused."""
    kb = beleg.open(tmp_path / "kb", embedder=HashEmbedder())
    kb.ingest_texts([_doc(0)], progress=False)
    holding, release = threading.Event(), threading.Event()

    def hold_like_a_reindex() -> None:
        with versions.write_lock(kb.root, "reindex", "v2") as token:
            kb._lock_token = token  # what KnowledgeBase.reindex does while it builds
            holding.set()
            release.wait(30)
            kb._lock_token = None

    holder = threading.Thread(target=hold_like_a_reindex)
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(IndexBusyError):
            kb.ingest_texts([_doc(1)], progress=False)
    finally:
        release.set()
        holder.join(30)
    assert kb.ingest_texts([_doc(1)], progress=False).count("added") == 1
    kb.close()


def test_catalog_gives_each_thread_its_own_connection_and_closes_them_all(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    mine = catalog.db
    theirs: list[sqlite3.Connection] = []
    in_transaction: list[bool] = []
    catalog.db.execute("BEGIN IMMEDIATE")  # this thread's write transaction ...

    def other() -> None:
        theirs.append(catalog.db)
        in_transaction.append(catalog.db.in_transaction)  # ... is not the other thread's
        catalog.db.execute("SELECT COUNT(*) FROM chunks").fetchone()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    catalog.db.execute("ROLLBACK")
    assert theirs and theirs[0] is not mine and in_transaction == [False]
    catalog.close()
    for conn in (mine, theirs[0]):
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError):
        catalog.db.execute("SELECT 1")
