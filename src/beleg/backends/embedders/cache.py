"""A persistent embedding cache keyed by embedder fingerprint and text hash.

Used for evaluation datasets, whose indexes are rebuilt per corpus variant (English,
German, mixed) over the same paragraphs: each paragraph is embedded once per machine.
Not used for users' own indexes: everything derived from a user's document must live
inside its index directory, so deleting the document can erase it completely.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from beleg.backends.embedders.base import Embedder


class CachedEmbedder:
    """Wraps an embedder; passages found in the cache are not embedded again."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        self.inner = inner
        self.spec, self.dim, self.fingerprint = inner.spec, inner.dim, inner.fingerprint
        folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(inner.fingerprint.encode()).hexdigest()[:16]
        # Ingest embeds a batch on a background thread (ingest/pipeline.py): one connection
        # shared across threads, every use under the lock.
        self.db = sqlite3.connect(folder / f"embeddings-{name}.sqlite", isolation_level=None, timeout=30.0,
                                  check_same_thread=False)
        self.lock = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        with self.lock:
            for i in range(0, len(hashes), 500):
                part = hashes[i : i + 500]
                q = f"SELECT text_hash, vector FROM vectors WHERE text_hash IN ({','.join('?' * len(part))})"
                found.update((h, np.frombuffer(v, dtype=np.float32)) for h, v in self.db.execute(q, part))
        missing = [(h, t) for h, t in zip(hashes, texts) if h not in found]
        if missing:
            fresh = self.inner.embed_documents([t for _, t in missing])
            rows = [(h, np.asarray(v, dtype=np.float32).tobytes()) for (h, _), v in zip(missing, fresh)]
            with self.lock:
                self.db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
            found.update((h, v) for (h, _), v in zip(missing, fresh))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)
