"""Rerank with a bi-encoder: cosine of the query's and each passage's embedding.

With the index's own embedder this re-scores candidates on the full passage text (the
same as the dense leg's score, so it mainly undoes what BM25 added in fusion); with
another embedder (``bi-encoder:minilm``) it is a second model's opinion. Cheap next to a
cross-encoder: one passage embedding per candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

from beleg.backends.embedders.base import Embedder


class BiEncoderReranker:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.spec = f"bi-encoder:{embedder.spec}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        q = self.embedder.embed_queries([query])[0]
        return [float(s) for s in self.embedder.embed_documents(list(passages)) @ q]
