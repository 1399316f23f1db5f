"""Run a gold set against several retrieval configurations, side by side.

A document's rank is the rank of its best chunk, so runs use the gold set's own
document ids and can be checked with trec_eval. The corpus of a dataset is ingested
into a cached index keyed by its content and the index configuration; a second run
re-embeds nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beleg.backends.embedders import load_embedder
from beleg.backends.embedders.cache import CachedEmbedder
from beleg.errors import ConfigError
from beleg.evaluate.datasets import Dataset, Query
from beleg.evaluate.metrics import evaluate_run, has_relevant, mean_metrics
from beleg.index.config import IndexConfig
from beleg.kb import KnowledgeBase
from beleg.progress import track
from beleg.types import Hit, Principal


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """A named retrieval configuration: keyword arguments for :meth:`KnowledgeBase.search`."""

    name: str
    search: dict[str, Any]
    description: str


CONFIGS: dict[str, EvalConfig] = {
    c.name: c
    for c in (
        EvalConfig("dense", {"mode": "dense"}, "multilingual e5 cosine, exact"),
        EvalConfig("bm25", {"mode": "bm25"}, "BM25 (identifier-aware analyzer, Snowball de/en)"),
        EvalConfig("hybrid", {"mode": "hybrid"}, "BM25 + dense, RRF k=60"),
        EvalConfig("hybrid-weighted", {"mode": "hybrid", "fusion": "weighted", "weights": (0.3, 0.7)},
                   "BM25 + dense, min-max weighted 0.3/0.7"),
        EvalConfig("hybrid-mmr", {"mode": "hybrid", "mmr_lambda": 0.7}, "hybrid RRF, then MMR λ=0.7"),
    )
}
DEFAULT_CONFIGS = ("dense", "bm25", "hybrid")


def parse_configs(names: str | Sequence[str]) -> list[EvalConfig]:
    items = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    out = []
    for name in items:
        if name not in CONFIGS:
            close = difflib.get_close_matches(name, CONFIGS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown configuration {name!r}; available: {', '.join(CONFIGS)}.{hint}")
        out.append(CONFIGS[name])
    if not out:
        raise ConfigError("no configuration to evaluate; pass e.g. --modes dense,bm25,hybrid")
    return out


@dataclass(slots=True)
class QueryResult:
    qid: str
    text: str
    metrics: dict[str, float]
    latency_ms: float
    ranking: list[str]
    #: The first few hits, for a person to see why a query failed.
    top_hits: list[dict[str, Any]]


@dataclass(slots=True)
class ConfigResult:
    config: EvalConfig
    queries: dict[str, QueryResult]
    means: dict[str, float]
    latency_ms_p50: float
    latency_ms_p95: float

    def summary(self, ks: Sequence[int]) -> dict[str, float]:
        k = max(ks)
        keys = ["hit@1", f"hit@{min(5, k)}", f"precision@{min(5, k)}", f"recall@{k}", f"mrr@{k}", f"ndcg@{k}"]
        out = {key: round(self.means.get(key, 0.0), 6) for key in dict.fromkeys(keys)}
        out["latency_ms_p50"] = round(self.latency_ms_p50, 3)
        out["latency_ms_p95"] = round(self.latency_ms_p95, 3)
        return out


@dataclass(slots=True)
class EvalReport:
    dataset: str
    ks: tuple[int, ...]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    results: dict[str, ConfigResult]
    index: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> list[str]:
        return [q.qid for q in self.queries if has_relevant(self.qrels.get(q.qid, {}))]

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "queries": len(self.queries),
            "answerable": len(self.answerable),
            "index": self.index,
            "notes": self.notes,
            "results": {name: r.summary(self.ks) for name, r in self.results.items()},
        }
        if per_query:
            out["per_query"] = {
                name: {qid: {"metrics": q.metrics, "latency_ms": q.latency_ms, "ranking": q.ranking[:10]}
                       for qid, q in r.queries.items()}
                for name, r in self.results.items()
            }
        return out


def cache_root() -> Path:
    return Path(os.environ.get("BELEG_CACHE_DIR") or Path.home() / ".cache" / "beleg") / "eval"


def prepare_index(dataset: Dataset, cache_dir: Path | None = None, progress: bool | str | None = None,
                  kb_factory: Callable[[Path], KnowledgeBase] | None = None) -> KnowledgeBase:
    """Open the cached index of ``dataset`` and bring it up to date (unchanged docs embed nothing)."""
    root = cache_dir or cache_root()
    if kb_factory is None:
        # Corpus variants (en, de, mixed) share paragraphs: embed each one once per machine.
        embedder = CachedEmbedder(load_embedder(IndexConfig().embedder), root / "embeddings")
        kb_factory = lambda p: KnowledgeBase(p, embedder=embedder)  # noqa: E731
    factory = kb_factory
    key = dataset.fingerprint()
    if dataset.corpus_dir is not None:
        # An index records where its files are: the same corpus copied to another folder (a
        # second checkout) gets its own index, or ingest would find its documents' ids taken
        # by the first copy's files. The embeddings cache is still shared, so little is embedded twice.
        where = hashlib.sha256(str(Path(dataset.corpus_dir).resolve()).encode()).hexdigest()[:8]
        key = f"{key}-{where}"
    kb = factory(root / f"{key}-{IndexConfig().index_version}")
    if dataset.documents is not None:
        report = kb.ingest_texts(dataset.documents, progress=progress)
    else:
        report = kb.ingest([str(dataset.corpus_dir)], progress=progress)
    if report.failures:
        failed = ", ".join(f"{f.source}: {f.reason}" for f in report.failures[:3])
        raise ConfigError(f"{len(report.failures)} corpus documents failed to ingest ({failed})")
    return kb


def _doc_key(dataset: Dataset, hit: Hit) -> str:
    if dataset.corpus_dir is not None:
        try:
            return Path(hit.source).resolve().relative_to(dataset.corpus_dir).as_posix()
        except ValueError:
            return hit.source
    return hit.doc_id


def _principal(q: Query) -> Principal:
    """The gold set's asker (``principal: {user, tenant, groups}``); anonymous when absent."""
    spec = q.info.get("principal") or {}
    return Principal(spec.get("user"), spec.get("tenant"), tuple(spec.get("groups") or ()))


def run_eval(kb: KnowledgeBase, dataset: Dataset, configs: Sequence[EvalConfig], k: int = 10,
             limit: int | None = None, progress: bool | str | None = None) -> EvalReport:
    """Evaluate ``configs`` on ``dataset`` over an index that holds its corpus."""
    ks = tuple(range(1, k + 1))
    queries = dataset.queries[:limit] if limit else dataset.queries
    qrels = {q.qid: dataset.qrels.get(q.qid, {}) for q in queries}
    results: dict[str, ConfigResult] = {}
    chunk_depth = max(5 * k, 50)
    if queries:
        kb.search(queries[0].text, k=1)  # warm-up: load the model and the snapshot outside the timings
    for config in configs:
        run: dict[str, dict[str, float]] = {}
        latencies: dict[str, float] = {}
        tops: dict[str, list[dict[str, Any]]] = {}
        bar = track(queries, len(queries), desc=f"eval {config.name}", unit="query", progress=progress)
        for q in bar:
            t0 = time.perf_counter()
            hits = kb.search(q.text, k=chunk_depth, filters=q.info.get("filters"), principal=_principal(q),
                             **config.search)
            latencies[q.qid] = (time.perf_counter() - t0) * 1000
            ranking: list[str] = []
            for hit in hits:
                key = _doc_key(dataset, hit)
                if key not in ranking:
                    ranking.append(key)
            ranking = ranking[:k]
            # Scores that reproduce our order exactly under trec_eval's tie rules.
            run[q.qid] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
            tops[q.qid] = [
                {"doc": _doc_key(dataset, h), "title": h.title, "heading_path": " > ".join(h.heading_path),
                 "score": h.score, "text": h.text[:300]}
                for h in hits[:3]
            ]
        per_query = evaluate_run(run, qrels, ks)
        lat = np.array([latencies[q.qid] for q in queries]) if queries else np.zeros(1)
        results[config.name] = ConfigResult(
            config,
            {q.qid: QueryResult(q.qid, q.text, per_query[q.qid], latencies[q.qid], list(run[q.qid]), tops[q.qid])
             for q in queries},
            mean_metrics(per_query, qrels),
            float(np.percentile(lat, 50)),
            float(np.percentile(lat, 95)),
        )
    status = kb.status()
    index = {"path": status["index"], "index_version": status["index_version"], "documents": status["documents"],
             "chunks": status["chunks"], "embedder": status["config"]["embedder"]}
    return EvalReport(dataset.name, ks, list(queries), qrels, results, index)


def write_trec_runs(report: EvalReport, folder: str | Path) -> list[Path]:
    """One standard TREC run file per configuration: ``qid Q0 docid rank score run``."""
    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = report.dataset.replace(":", "_").replace("/", "_").replace("<-", "_from_").replace("+", "_")
    paths = []
    for name, result in report.results.items():
        path = out_dir / f"{safe}.{name}.trec"
        lines = [
            f"{qid} Q0 {doc} {rank} {len(q.ranking) - rank + 1} beleg-{name}"
            for qid, q in result.queries.items()
            for rank, doc in enumerate(q.ranking, 1)
        ]
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        paths.append(path)
    return paths
