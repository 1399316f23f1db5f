"""Ingest overlaps reading/chunking with embedding, embeds longest texts first, and still
commits whole documents only."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import beleg
from beleg.errors import ModelError
from beleg.ingest import pipeline
from beleg.ingest.pipeline import TextSource


def vector(text: str, dim: int = 8) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class RecordingEmbedder:
    """Deterministic vectors; records each call's texts; ``during_call`` runs inside every call."""

    spec, dim, fingerprint = "recording", 8, "recording:1"

    def __init__(self, during_call=None) -> None:
        self.calls: list[list[str]] = []
        self.during_call = during_call

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        if self.during_call is not None:
            self.during_call(len(self.calls))
        return np.stack([vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    embed_queries = embed_documents


def texts(n: int) -> list[TextSource]:
    # Lengths vary so that the longest-first order differs from the input order.
    return [TextSource(f"doc{i}", f"# Doc {i}\n\n" + " ".join(["relay"] * (3 + (i * 7) % 11)) + f" item{i}.")
            for i in range(n)]


def test_files_are_chunked_while_a_batch_is_embedding(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_FLUSH_CHUNKS", 2)
    embedding_now = threading.Event()  # set while the model is inside a call
    chunked_meanwhile = threading.Event()
    real_chunk = pipeline.chunk_document

    def slow_chunk(*args, **kwargs):
        out = real_chunk(*args, **kwargs)
        time.sleep(0.02)  # gives the embedding thread time to start on the batch before
        if embedding_now.is_set():
            chunked_meanwhile.set()
        return out

    monkeypatch.setattr(pipeline, "chunk_document", slow_chunk)
    overlapped: list[bool] = []

    def wait_for_chunking(call: int) -> None:
        if call == 1:
            return  # the first batch is embedded inline (it records the model in the index)
        chunked_meanwhile.clear()
        embedding_now.set()
        overlapped.append(chunked_meanwhile.wait(3.0))
        embedding_now.clear()

    embedder = RecordingEmbedder(wait_for_chunking)
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        report = kb.ingest_texts(texts(12), progress="none")
        assert report.count("added") == 12 and report.embedded == 12
        assert kb.status()["documents"] == 12
        # Every stored vector is the one for its own text (the reordering was undone).
        embedded = [t for call in embedder.calls for t in call]
        stored = kb.catalog.cached_vectors([hashlib.sha256(t.encode()).hexdigest() for t in embedded])
        for t in embedded:
            np.testing.assert_allclose(stored[hashlib.sha256(t.encode()).hexdigest()], vector(t), atol=1e-6)
    # The last batch has no files after it to chunk; every batch before it overlapped.
    assert len(overlapped) == 5 and all(overlapped[:-1]), overlapped


def test_batches_go_to_the_model_longest_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_FLUSH_CHUNKS", 6)
    embedder = RecordingEmbedder()
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest_texts(texts(12), progress="none")
    assert len(embedder.calls) == 2
    for call in embedder.calls:
        lengths = [len(t) for t in call]
        assert lengths == sorted(lengths, reverse=True) and len(set(lengths)) > 1


def test_a_failing_background_batch_commits_nothing_of_its_documents(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_FLUSH_CHUNKS", 3)

    def fail_third(call: int) -> None:
        if call == 3:
            raise ModelError("embedding server gone")

    with beleg.open(tmp_path / "kb", embedder=RecordingEmbedder(fail_third)) as kb:
        with pytest.raises(ModelError, match="server gone"):
            kb.ingest_texts(texts(12), progress="none")
        stored = set(kb.catalog.sources().values())
        # Batches 1 and 2 (docs 0-5) are committed whole; batch 3 (docs 6-8) not at all, and
        # nothing after it either.
        assert stored == {f"doc{i}" for i in range(6)}, stored
        for doc_id in kb.catalog.sources():
            assert kb.document(doc_id) is not None


def test_semantic_chunking_and_background_embedding_never_call_the_model_at_once(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    from beleg.index.config import IndexConfig
    from beleg.ingest.chunking import ChunkingConfig

    monkeypatch.setattr(pipeline, "_FLUSH_CHUNKS", 2)
    inside, most = [0], [0]
    lock = threading.Lock()

    def track(call: int) -> None:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with lock:
            inside[0] -= 1

    embedder = RecordingEmbedder(track)
    config = IndexConfig(ChunkingConfig("semantic", 40, overlap=0), "recording")
    docs = [TextSource(f"s{i}", "# T\n\n" + " ".join(f"Sentence {j} of text {i} about pumps." for j in range(12)))
            for i in range(6)]
    with beleg.open(tmp_path / "kb", config, embedder=embedder) as kb:
        report = kb.ingest_texts(docs, progress="none")
    assert report.count("added") == 6 and most[0] == 1
