"""Combine ranked lists: reciprocal rank fusion and normalised weighted score fusion.

RRF (Cormack, Clarke & Büttcher, SIGIR 2009, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods") scores an item by
``sum_i w_i / (k + rank_i)`` with 1-based ranks and ``k = 60``. It needs no score
calibration, which is why it is the default for joining BM25 and cosine scores.

Ties are broken by the best (lowest) rank the item reached, then by the order of the
input lists, then by first appearance, so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from beleg.errors import ConfigError

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def check_fusion_options(weights: Sequence[float], mmr: float | None) -> None:
    """The checks every holder of retrieval options makes (answer options, service requests):
    two leg weights (bm25, dense) and an MMR trade-off in [0, 1] or None."""
    if mmr is not None and not 0.0 <= mmr <= 1.0:
        raise ConfigError(f"mmr {mmr} is outside [0, 1]; give a value such as 0.7")
    if len(weights) != 2:
        raise ConfigError(f"weights expects two numbers (bm25, dense), got {list(weights)}")


def rrf(rankings: Sequence[Sequence[K]], k: int = RRF_K, weights: Sequence[float] | None = None) -> list[tuple[K, float]]:
    """Reciprocal rank fusion of ranked id lists, best first.

    >>> [d for d, _ in rrf([["D7", "D2", "D9", "D4"], ["D2", "D5", "D7", "D1"]])]
    ['D2', 'D7', 'D5', 'D9', 'D4', 'D1']
    """
    if k < 0:
        raise ConfigError(f"RRF k must be >= 0, got {k}")
    weights = _weights(weights, len(rankings))
    scores: dict[K, float] = {}
    tiebreak: dict[K, tuple[int, int, int]] = {}
    seen = 0
    for list_index, (ranking, weight) in enumerate(zip(rankings, weights)):
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best = tiebreak.get(item)
            if best is None:
                tiebreak[item] = (rank, list_index, seen)
                seen += 1
            elif rank < best[0]:
                tiebreak[item] = (rank, list_index, best[2])
    return sorted(scores.items(), key=lambda kv: (-kv[1], *tiebreak[kv[0]]))


def weighted(results: Sequence[Sequence[tuple[K, float]]], weights: Sequence[float] | None = None) -> list[tuple[K, float]]:
    """Min-max normalise each list's scores to [0, 1], then sum with weights.

    An item absent from a list gets 0 from it. A list whose scores are all equal
    contributes 1 to each of its items (they are all its best).
    """
    weights = _weights(weights, len(results))
    scores: dict[K, float] = {}
    order: dict[K, int] = {}
    for result, weight in zip(results, weights):
        if not result:
            continue
        values = [s for _, s in result]
        lo, hi = min(values), max(values)
        for item, score in result:
            norm = 1.0 if hi == lo else (score - lo) / (hi - lo)
            scores[item] = scores.get(item, 0.0) + weight * norm
            order.setdefault(item, len(order))
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def _weights(weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n or any(w < 0 for w in weights):
        raise ConfigError(f"need {n} non-negative fusion weights, got {list(weights)}")
    return list(weights)
