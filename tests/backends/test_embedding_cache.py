"""The evaluation's persistent embedding cache (beleg.backends.embedders.cache)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from beleg.backends.embedders.cache import CachedEmbedder


class _Counting:
    """A tiny deterministic embedder that counts the passages it embeds."""

    spec, dim, fingerprint = "test:counting", 4, "counting-v1"

    def __init__(self) -> None:
        self.embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return np.array([[len(t), t.count("a"), 1.0, 0.0] for t in texts], dtype=np.float32)

    def embed_queries(self, texts):
        return self.embed_documents(texts)


def test_cache_is_usable_from_another_thread(tmp_path):
    # Ingest embeds batches on a background thread; the cache's SQLite connection, made on
    # the caller's thread, raised ProgrammingError there before.
    inner = _Counting()
    cache = CachedEmbedder(inner, tmp_path)
    first = cache.embed_documents(["alpha", "beta"])
    with ThreadPoolExecutor(max_workers=2) as pool:
        again = pool.submit(cache.embed_documents, ["alpha", "beta", "gamma"]).result()
    assert np.array_equal(again[:2], first)
    assert inner.embedded == 3  # alpha and beta came from the cache


def test_cache_survives_a_new_process_view(tmp_path):
    inner = _Counting()
    CachedEmbedder(inner, tmp_path).embed_documents(["alpha"])
    other = _Counting()
    vec = CachedEmbedder(other, tmp_path).embed_documents(["alpha"])
    assert other.embedded == 0 and vec[0][0] == 5
