"""The embedder protocol and a base class that derives the rest from one method.

An embedder turns texts into L2-normalised float32 vectors. Models such as E5 need
different prefixes for queries and passages, so the protocol keeps the two apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

Kind = Literal["query", "passage"]


@runtime_checkable
class Embedder(Protocol):
    """What the index needs from an embedding model."""

    #: Spec string that created it, e.g. ``"e5-small"``; part of the index version.
    spec: str
    #: Vector dimension.
    dim: int
    #: Identifies the exact weights/engine so an index notices a model change.
    fingerprint: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class BaseEmbedder(ABC):
    """Implement :meth:`embed_batch`; batching, empty input and normalisation are derived."""

    spec: str = ""
    dim: int = 0
    fingerprint: str = ""
    #: How many texts :meth:`embed_batch` receives at most in one call.
    batch_size: int = 32

    @abstractmethod
    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Embed at most ``batch_size`` texts; return an ``(n, dim)`` float32 array."""

    def _embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self.embed_batch(texts[i : i + self.batch_size], kind)
            for i in range(0, len(texts), self.batch_size)
        ]
        out = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A zero vector (empty text) stays zero instead of becoming NaN.
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "passage")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query")
