"""Retrieval metrics, defined exactly as trec_eval defines them.

A *run* maps query id → {document id → score}; *qrels* map query id → {document id →
graded relevance}. Ranking follows trec_eval: score descending, ties broken by document
id in **descending** order, so our figures equal ``pytrec_eval``'s to the last bit on the
same input (tested). A document is relevant when its grade is ≥ 1; nDCG uses the grade
as the gain with a ``log2(rank + 1)`` discount and the ideal ranking of all judged
documents.

Per-query values are returned for every query in ``qrels``. A query with no relevant
document has every metric 0 and is flagged, so callers can report it separately (an
unanswerable question) instead of silently dragging the mean down. Queries absent from
the run count as retrieving nothing (trec_eval's ``-c``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

METRICS = ("hit", "precision", "recall", "mrr", "ndcg")


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Document ids in trec_eval order: score descending, then id descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def query_metrics(ranking: Sequence[str], judgments: Mapping[str, int], ks: Sequence[int]) -> dict[str, float]:
    """All metrics of one query at the given cut-offs, e.g. ``{"hit@1": 1.0, "ndcg@10": 0.63, ...}``."""
    relevant = {d for d, g in judgments.items() if g >= 1}
    out: dict[str, float] = {}
    ideal_gains = sorted((g for g in judgments.values() if g > 0), reverse=True)
    for k in ks:
        top = ranking[:k]
        hits = [d in relevant for d in top]
        first = next((i for i, h in enumerate(hits, 1) if h), None)
        dcg = sum(judgments.get(d, 0) / math.log2(i + 1) for i, d in enumerate(top, 1) if judgments.get(d, 0) > 0)
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal_gains[:k], 1))
        out[f"hit@{k}"] = 1.0 if first is not None else 0.0
        out[f"precision@{k}"] = sum(hits) / k
        out[f"recall@{k}"] = sum(hits) / len(relevant) if relevant else 0.0
        out[f"mrr@{k}"] = 1.0 / first if first is not None else 0.0
        out[f"ndcg@{k}"] = dcg / idcg if idcg > 0 else 0.0
    return out


def evaluate_run(run: Run, qrels: Qrels, ks: Sequence[int] = (1, 5, 10)) -> dict[str, dict[str, float]]:
    """Per-query metrics for every query in ``qrels``."""
    return {qid: query_metrics(ranked(run.get(qid, {})), judgments, ks) for qid, judgments in qrels.items()}


def has_relevant(judgments: Mapping[str, int]) -> bool:
    return any(g >= 1 for g in judgments.values())


def mean_metrics(per_query: Mapping[str, Mapping[str, float]], qrels: Qrels) -> dict[str, float]:
    """Means over the queries that have at least one relevant document."""
    answerable = [qid for qid in per_query if has_relevant(qrels.get(qid, {}))]
    if not answerable:
        return {}
    names = next(iter(per_query.values())).keys()
    return {name: sum(per_query[q][name] for q in answerable) / len(answerable) for name in names}
