"""Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998).

Greedily picks the candidate maximising ``λ·rel(d) − (1−λ)·max_{s∈S} sim(d, s)``, so the
final list covers different passages instead of five near-copies of one paragraph.
``rel`` is the fused score min-max normalised to [0, 1] (comparable across legs);
``sim`` is cosine similarity of the chunk vectors.
"""

from __future__ import annotations

import numpy as np

from beleg.errors import ConfigError


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float = 0.7) -> list[int]:
    """Indices into the candidates, in MMR order. ``lam=1`` keeps relevance order."""
    if not 0.0 <= lam <= 1.0:
        raise ConfigError(f"MMR lambda must be within [0, 1], got {lam}")
    n = len(relevance)
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = rel.max() - rel.min()
    rel = (rel - rel.min()) / span if span > 0 else np.ones(n)
    sims = vectors @ vectors.T
    chosen: list[int] = []
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        score = lam * rel - (1.0 - lam) * penalty
        score[~available] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return chosen
