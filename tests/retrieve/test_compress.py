"""Contextual compression keeps question-bearing sentences with exact offsets; citations verify."""

from __future__ import annotations

import pytest

from beleg.errors import ConfigError
from beleg.retrieve.compress import CompressOptions
from beleg.retrieve.techniques import Techniques, from_specs

Q = "How long does Ferrolink retry failed webhook deliveries?"


def test_compressed_hits_are_exact_slices_and_smaller(demo_kb) -> None:
    plain = demo_kb.search(Q, k=5, self_query=False)
    small = demo_kb.search(Q, k=5, self_query=False,
                           techniques=Techniques(compress=CompressOptions(budget_tokens=120)))
    assert small and sum(len(h.text.split()) for h in small) <= max(120, len(small[0].text.split()))
    assert sum(len(h.text) for h in small) < sum(len(h.text) for h in plain)
    for h in small:
        assert demo_kb.store.document(h.doc_id).text[h.start:h.end] == h.text
    assert any("72 hours" in h.text or "retries" in h.text for h in small[:3])


def test_ask_with_compression_still_cites_verified_quotes(demo_kb) -> None:
    before = demo_kb.techniques
    demo_kb.techniques = Techniques(compress=CompressOptions())
    try:
        answer = demo_kb.ask(Q)
    finally:
        demo_kb.techniques = before
    data = answer.to_json()
    assert not data["refused"] and "72 hours" in data["answer"]
    assert data["citations"] and all(c["verified"] for c in data["citations"])
    for c in data["citations"]:
        assert demo_kb.store.document(c["doc_id"]).text[c["start"]:c["end"]] == c["quote"]


def test_the_question_is_embedded_once_per_compression() -> None:
    import numpy as np

    from beleg.retrieve.compress import compress
    from beleg.types import Hit

    calls = []

    def embed_query(q: str) -> np.ndarray:
        calls.append(q)
        return np.array([1.0, 0.0], dtype=np.float32)

    def embed_sentences(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "retr" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)

    text = "Deliveries are retried for 72 hours. The sky is blue today. Retries back off exponentially."
    hits = [Hit(f"c{i}", "d", "s", "t", (), 0, len(text), 1.0, text, {}) for i in range(4)]
    out = compress(hits, "retries", CompressOptions(budget_tokens=1000, margin=0.0), embed_query, embed_sentences)
    assert calls == ["retries"]
    assert out[0].text == "Deliveries are retried for 72 hours." and all("sky" not in h.text for h in out)
    assert {h.chunk_id for h in out} == {"c0", "c0#2", "c1", "c1#2", "c2", "c2#2", "c3", "c3#2"}


def test_compress_from_the_command_line_spelling_without_a_budget_uses_the_default() -> None:
    assert from_specs(compress=True).compress == CompressOptions()
    assert from_specs(compress=True, compress_budget=120).compress == CompressOptions(budget_tokens=120)
    with pytest.raises(ConfigError, match="budget_tokens >= 1"):
        from_specs(compress=True, compress_budget=0)
