"""Compare retrieval strategies side by side (``beleg eval --strategies hybrid,multi-hop,...``).

Each gold question is run through :func:`beleg.strategies.run_strategy` as its gold
principal, with its filters and conversation context, exactly as ``search --strategy``
would run it; the hits become a document ranking scored with the same metrics code as
:func:`beleg.evaluate.runner.run_eval` (a document ranks where its best chunk ranks).
Besides the metrics, each strategy's row carries its cost: mean LLM calls, retrieval rounds
and tokens per question, and the latency of the whole run per question (searches, LLM
calls, the strategy's own work). Means per question type (``type`` in the gold set) are
in the JSON output.

A strategy without an offline method is skipped when no LLM is configured, and the
report's notes say so ("needs an LLM"); it is never run as plain search in disguise.
A registered strategy whose module is not installed is skipped with a note as well.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beleg.backends.llms.base import LLM
from beleg.errors import ConfigError, NeedsLLMError
from beleg.evaluate.datasets import Dataset
from beleg.evaluate.metrics import evaluate_run, mean_metrics
from beleg.evaluate.runner import (
    ConfigResult,
    EvalConfig,
    EvalReport,
    QueryResult,
    _doc_key,
    _principal,
)
from beleg.kb import KnowledgeBase
from beleg.progress import track
from beleg.strategies import STRATEGIES, Strategy, load_strategy, run_strategy


@dataclass(slots=True)
class StrategyRunResult(ConfigResult):
    """A strategy's row: the retrieval metrics of :class:`ConfigResult` plus its cost per question."""

    llm_calls_mean: float = 0.0
    rounds_mean: float = 0.0
    tokens_mean: float = 0.0
    #: Question type → metric means over that type's answerable questions.
    by_type: dict[str, dict[str, float]] = field(default_factory=dict)
    #: qid → {llm_calls, rounds, tokens, notes}: what the strategy did for each question.
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self, ks: Sequence[int]) -> dict[str, float]:
        out = ConfigResult.summary(self, ks)
        out["llm_calls_mean"] = round(self.llm_calls_mean, 3)
        out["rounds_mean"] = round(self.rounds_mean, 3)
        out["tokens_mean"] = round(self.tokens_mean, 1)
        return out


@dataclass(slots=True)
class StrategyEvalReport(EvalReport):
    """An :class:`EvalReport` whose JSON adds per-type means (and per-query traces with ``per_query``)."""

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        out = EvalReport.to_json(self, per_query)
        rows = {name: r for name, r in self.results.items() if isinstance(r, StrategyRunResult)}
        k = max(self.ks, default=1)
        keys = ("hit@1", f"hit@{min(5, k)}", f"recall@{k}", f"ndcg@{k}")
        out["by_type"] = {name: {kind: {key: round(m.get(key, 0.0), 6) for key in dict.fromkeys(keys)} | {"n": m["n"]}
                                 for kind, m in r.by_type.items()}
                          for name, r in rows.items()}
        if per_query:
            for name, r in rows.items():
                for qid, trace in r.traces.items():
                    out["per_query"][name][qid]["trace"] = trace
        return out


def parse_strategies(names: str | Sequence[str]) -> list[str]:
    items = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    if not items:
        raise ConfigError("no strategy to evaluate; pass e.g. --strategies hybrid,multi-hop,iterative")
    for name in items:
        if name not in STRATEGIES:
            load_strategy(name)  # raises ConfigError with the list of names and a suggestion
    return list(dict.fromkeys(items))


def run_strategy_eval(kb: KnowledgeBase, dataset: Dataset, names: str | Sequence[str], k: int = 10,
                      limit: int | None = None, llm: LLM | None = None,
                      progress: bool | str | None = None) -> StrategyEvalReport:
    """Evaluate the named strategies on ``dataset`` over an index that holds its corpus."""
    ks = tuple(range(1, k + 1))
    queries = dataset.queries[:limit] if limit else dataset.queries
    qrels = {q.qid: dataset.qrels.get(q.qid, {}) for q in queries}
    depth = max(5 * k, 50)
    notes: list[str] = []
    results: dict[str, ConfigResult] = {}
    if queries:
        kb.search(queries[0].text, k=1)  # warm-up: load the model and the snapshot outside the timings
    for name in parse_strategies(names):
        try:
            strategy: Strategy = load_strategy(name)
        except ImportError as exc:
            notes.append(f"strategy {name!r} skipped: not installed ({exc})")
            continue
        if not strategy.offline and llm is None:
            notes.append(f"strategy {name!r} skipped: needs an LLM (none configured; pass --llm)")
            continue
        try:
            row = _run_one(kb, dataset, name, queries, qrels, ks, depth, llm, progress)
        except NeedsLLMError:
            notes.append(f"strategy {name!r} skipped: needs an LLM for some questions (none configured; pass --llm)")
            continue
        results[name] = row
    if llm is not None:
        notes.append(f"strategies could call the LLM {getattr(llm, 'name', llm)!r}")
    else:
        notes.append("no LLM configured: strategies ran their offline methods")
    status = kb.status()
    index = {"path": status["index"], "index_version": status["index_version"], "documents": status["documents"],
             "chunks": status["chunks"], "embedder": status["config"]["embedder"]}
    return StrategyEvalReport(dataset.name, ks, list(queries), qrels, results, index, notes)


def _run_one(kb: KnowledgeBase, dataset: Dataset, name: str, queries: Sequence[Any], qrels: dict[str, dict[str, int]],
             ks: tuple[int, ...], depth: int, llm: LLM | None, progress: bool | str | None) -> StrategyRunResult:
    run: dict[str, dict[str, float]] = {}
    latencies: dict[str, float] = {}
    tops: dict[str, list[dict[str, Any]]] = {}
    traces: dict[str, dict[str, Any]] = {}
    bar = track(queries, len(queries), desc=f"eval {name}", unit="query", progress=progress)
    for q in bar:
        t0 = time.perf_counter()
        result = run_strategy(kb, name, q.text, principal=_principal(q), filters=q.info.get("filters"),
                              context=tuple(q.info.get("context") or ()), llm=llm, k=depth)
        latencies[q.qid] = (time.perf_counter() - t0) * 1000
        ranking: list[str] = []
        for hit in result.hits:
            key = _doc_key(dataset, hit)
            if key not in ranking:
                ranking.append(key)
        ranking = ranking[: max(ks)]
        run[q.qid] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
        tops[q.qid] = [{"doc": _doc_key(dataset, h), "title": h.title, "heading_path": " > ".join(h.heading_path),
                        "score": h.score, "text": h.text[:300]} for h in result.hits[:3]]
        t = result.trace
        traces[q.qid] = {"llm_calls": t.llm_calls, "rounds": t.rounds,
                         "tokens": t.prompt_tokens + t.completion_tokens, "queries": t.queries, "notes": t.notes}
    per_query = evaluate_run(run, qrels, ks)
    lat = np.array([latencies[q.qid] for q in queries]) if queries else np.zeros(1)
    by_type: dict[str, dict[str, float]] = {}
    for kind in dict.fromkeys(str(q.info.get("type") or "untyped") for q in queries):
        ids = [q.qid for q in queries if str(q.info.get("type") or "untyped") == kind]
        means = mean_metrics({qid: per_query[qid] for qid in ids}, qrels)
        if means:
            by_type[kind] = {**means, "n": float(sum(1 for qid in ids if any(g >= 1 for g in qrels[qid].values())))}
    n = max(len(queries), 1)
    description = STRATEGIES[name][2]
    return StrategyRunResult(
        EvalConfig(name, {"strategy": name}, description),
        {q.qid: QueryResult(q.qid, q.text, per_query[q.qid], latencies[q.qid], list(run[q.qid]), tops[q.qid])
         for q in queries},
        mean_metrics(per_query, qrels),
        float(np.percentile(lat, 50)),
        float(np.percentile(lat, 95)),
        llm_calls_mean=sum(t["llm_calls"] for t in traces.values()) / n,
        rounds_mean=sum(t["rounds"] for t in traces.values()) / n,
        tokens_mean=sum(t["tokens"] for t in traces.values()) / n,
        by_type=by_type,
        traces=traces,
    )


__all__ = ["StrategyEvalReport", "StrategyRunResult", "parse_strategies", "run_strategy_eval"]
