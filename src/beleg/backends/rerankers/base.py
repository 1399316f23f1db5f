"""The reranker protocol: score (query, passage) pairs jointly.

A cross-encoder reads the query and the passage together, so it can judge relevance
more precisely than comparing two independent vectors, at the price of one model call
per candidate. It therefore reorders only the top-N fused candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    #: Spec string that created it (model directory or name), shown in traces and eval output.
    spec: str

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is more relevant), in input order."""
        ...
