"""Semantic chunking: breaks at topic shifts, within min/max sizes, exact offsets, heading paths."""

from __future__ import annotations

import numpy as np
import pytest

from beleg.errors import ConfigError
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.types import Heading, ParsedDocument

TOPICS = ("pump", "invoice", "glacier")


def topic_embed(texts: list[str]) -> np.ndarray:
    """A stand-in embedder: one axis per topic word, so similarity drops exactly at a topic change."""
    out = np.array([[t.count(word) for word in TOPICS] + [0.01] for t in texts], dtype=np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _doc() -> tuple[str, ParsedDocument]:
    body = " ".join(f"The {w} sentence number {i} says something about the {w}." for w in TOPICS for i in range(6))
    text = f"# Notes\n\n{body}\n\n# Other\n\nA short glacier note. Another glacier remark here.\n"
    return text, ParsedDocument(text, (Heading(1, "Notes", 0), Heading(1, "Other", text.index("# Other"))))


def test_breaks_fall_on_topic_shifts_and_offsets_are_exact() -> None:
    text, parsed = _doc()
    chunks = chunk_document("d", parsed, "Doc", ChunkingConfig("semantic", max_tokens=200, min_tokens=10,
                                                               percentile=10), embed=topic_embed)
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert len(c.text.split()) <= 200
    notes = [c for c in chunks if c.heading_path == ("Doc", "Notes")]
    # One chunk per topic: each holds a single topic word (the heading line rides with the first).
    assert [sorted({w for w in TOPICS if w in c.text}) for c in notes] == [["pump"], ["invoice"], ["glacier"]]
    assert any(c.heading_path == ("Doc", "Other") for c in chunks)  # sections are never merged


def test_max_tokens_caps_a_single_topic() -> None:
    text, parsed = _doc()
    chunks = chunk_document("d", parsed, "Doc", ChunkingConfig("semantic", max_tokens=30, overlap=0, min_tokens=5),
                            embed=topic_embed)
    assert all(len(c.text.split()) <= 30 and text[c.start:c.end] == c.text for c in chunks)


def test_semantic_needs_an_embedder_and_sane_sizes() -> None:
    _, parsed = _doc()
    with pytest.raises(ConfigError):
        chunk_document("d", parsed, "Doc", ChunkingConfig("semantic"))
    with pytest.raises(ConfigError):
        ChunkingConfig("semantic", max_tokens=50, overlap=0, min_tokens=60)
