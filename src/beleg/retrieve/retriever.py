"""Search one index view (:class:`~beleg.index.ports.SearchIndex`): dense ∥ BM25 → fuse →
(MMR) → hits.

Filters and the principal become one eligibility that both legs apply *before* their
top-k, so a selective filter still returns k eligible hits instead of a trimmed, possibly
empty list. Candidates are identified by chunk id throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from beleg.backends.rerankers.base import Reranker
from beleg.errors import ConfigError, ModelError
from beleg.index.analyzer import analyze_query
from beleg.index.filters import Expr
from beleg.index.ports import ScoredChunk, SearchIndex
from beleg.retrieve.coverage import TermCoverage
from beleg.retrieve.fusion import RRF_K, rrf, weighted
from beleg.retrieve.mmr import mmr
from beleg.types import ANONYMOUS, Hit, Principal

Mode = Literal["dense", "bm25", "hybrid"]
MODES = ("dense", "bm25", "hybrid")


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """How to search. ``candidates`` is each leg's depth before fusion (default: max(4k, 50))."""

    mode: Mode = "hybrid"
    k: int = 10
    fusion: Literal["rrf", "weighted"] = "rrf"
    rrf_k: int = RRF_K
    #: Leg weights (bm25, dense) for fusion.
    weights: tuple[float, float] = (1.0, 1.0)
    #: MMR trade-off λ in [0, 1]; None switches MMR off.
    mmr_lambda: float | None = None
    candidates: int | None = None
    #: With a reranker: how many fused candidates it reorders (default: max(2k, 30)).
    rerank_top: int | None = None
    #: Scale the BM25 weight by (share of query terms the index knows) ** this power;
    #: None keeps the weights fixed. See :func:`bm25_weight`.
    coverage_power: float | None = 2.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"search mode {self.mode!r} is unknown; use one of {', '.join(MODES)}")
        if self.fusion not in ("rrf", "weighted"):
            raise ConfigError(f"fusion {self.fusion!r} is unknown; use 'rrf' or 'weighted'")
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")

    @property
    def depth(self) -> int:
        return self.candidates or max(4 * self.k, 50)


class StaleSnapshot(Exception):
    """Chunks of this view were replaced or deleted by a commit since it was taken."""


def search(index: SearchIndex, query: str, options: SearchOptions,
           embed_query: Callable[[str], np.ndarray], expr: Expr | None,
           reranker: Reranker | None = None, principal: Principal = ANONYMOUS,
           strict: bool = False) -> list[Hit]:
    """Run one search and return hydrated hits, best first.

    With a ``reranker``, the top ``rerank_top`` fused candidates are re-scored by it (on the
    same heading-path + text the legs indexed) and reordered before MMR and the final cut.
    """
    eligible = index.eligible(expr, principal)
    if eligible.count == 0:
        return []
    legs: dict[str, list[ScoredChunk]] = {}
    widen = options.mode == "hybrid" or options.mmr_lambda is not None or reranker is not None
    depth = options.depth if widen else options.k
    terms = analyze_query(query)
    if options.mode in ("bm25", "hybrid"):
        legs["bm25"] = index.lexical_top_k(terms, depth, eligible)
    if options.mode in ("dense", "hybrid"):
        legs["dense"] = index.dense_top_k(embed_query(query), depth, eligible)

    per_leg: dict[str, dict[str, float]] = {}
    doc_of: dict[str, str] = {}
    for name, scored in legs.items():
        for rank, hit in enumerate(scored, 1):
            per_leg.setdefault(hit.chunk_id, {})[name] = hit.score
            per_leg[hit.chunk_id][f"{name}_rank"] = rank
            doc_of[hit.chunk_id] = hit.doc_id

    if options.mode == "hybrid":
        bm25_hits, dense_hits = legs["bm25"], legs["dense"]
        # Coverage counts only terms of chunks this principal may read under this filter:
        # counting the whole vocabulary would tell anyone whether a word occurs in
        # documents they cannot see (found by the leak suite, beleg.evaluate.leaks).
        known = TermCoverage(index, eligible).known
        weights = (options.weights[0] * bm25_weight(terms, known, options.coverage_power), options.weights[1])
        for i in per_leg:
            per_leg[i]["bm25_weight"] = weights[0]
        if options.fusion == "rrf":
            fused = rrf([[h.chunk_id for h in bm25_hits], [h.chunk_id for h in dense_hits]], k=options.rrf_k,
                        weights=weights)
        else:
            fused = weighted([[(h.chunk_id, h.score) for h in bm25_hits], [(h.chunk_id, h.score) for h in dense_hits]],
                             weights=weights)
    else:
        fused = [(h.chunk_id, h.score) for h in legs[options.mode]]

    if reranker is not None and fused:
        fused = _rerank(index, query, fused, reranker, options.rerank_top or max(2 * options.k, 30), per_leg)

    if options.mmr_lambda is not None and fused:
        order = mmr(np.array([s for _, s in fused]), index.vectors([i for i, _ in fused]), options.k, options.mmr_lambda)
        fused = [fused[j] for j in order]
    fused = fused[: options.k]
    return _hydrate(index, principal, fused, per_leg, strict)


def bm25_weight(terms: list[str], known: Callable[[str], bool], power: float | None) -> float:
    """How much to trust the BM25 leg for this query: ``coverage ** power``.

    ``coverage`` is the share of the query's terms that ``known`` accepts: terms that
    occur in a chunk the asker may read under the active filter. A
    German question over English documents shares few words with them, so its BM25 hits
    are mostly accidental (names, numbers) and should count less against the
    multilingual dense leg; a same-language question keeps (nearly) full weight.
    Measured on XQuAD dev (docs/benchmarks.md): hybrid Hit@1 de→en 0.788 → 0.880,
    en→de 0.722 → 0.843, monolingual en/de unchanged or slightly better. ``power=2`` was
    chosen on that dev data among 1, 2, 4.
    """
    if power is None or not terms:
        return 1.0
    coverage = sum(known(t) for t in terms) / len(terms)
    return float(coverage**power)


def _rerank(index: SearchIndex, query: str, fused: list[tuple[str, float]], reranker: Reranker,
            top: int, per_leg: dict[str, dict[str, float]]) -> list[tuple[str, float]]:
    head, tail = fused[:top], fused[top:]
    records = index.chunks([i for i, _ in head])
    texts = []
    for i, _ in head:
        record = records.get(i)
        texts.append(f"{' > '.join(record.heading_path)}\n{record.text}" if record else "")
    scores = reranker.rerank(query, texts)
    if len(scores) != len(texts):
        raise ModelError(f"reranker {reranker.spec} returned {len(scores)} scores for {len(texts)} passages")
    for (i, _), s in zip(head, scores):
        per_leg.setdefault(i, {})["rerank"] = float(s)
    order = sorted(range(len(head)), key=lambda j: (-scores[j], j))
    # Candidates beyond the reranked head keep their fused order, below every reranked one.
    return [(head[j][0], float(scores[j])) for j in order] + [(i, float("-inf")) for i, _ in tail]


def _hydrate(index: SearchIndex, principal: Principal, ranked: list[tuple[str, float]],
             per_leg: dict[str, dict[str, float]], strict: bool = False) -> list[Hit]:
    """Load the ranked chunks' display data. A chunk deleted since the view was taken is
    never shown; with ``strict`` its absence raises :class:`StaleSnapshot` so the caller can
    search a fresh view instead of returning fewer hits."""
    records = index.chunks([i for i, _ in ranked])
    docs = {d.doc_id: d for d in index.documents(principal, [r.doc_id for r in records.values()])}
    hits = []
    for i, score in ranked:
        record = records.get(i)
        doc = docs.get(record.doc_id) if record is not None else None
        if record is None or doc is None:  # deleted after this view was taken; never show a ghost
            if strict:
                raise StaleSnapshot(f"chunk {i} is gone")
            continue
        hits.append(Hit(record.chunk_id, record.doc_id, doc.source, doc.title, record.heading_path, record.start,
                        record.end, float(score), record.text, doc.metadata, per_leg.get(i, {}), record.flags))
    return hits
