"""Each retrieval technique of issue 15 against plain hybrid: quality, latency, index size.

``python benchmarks/retrieval_techniques.py [--limit 150] [--datasets demo,en,de,de-en]``
writes ``benchmarks/results/retrieval_techniques.json`` and prints the Markdown tables of
docs/benchmarks.md. Data, loaded by the loaders ``beleg eval`` uses
(:mod:`beleg.evaluate.datasets`):

* the demo gold set (``demo/gold.yaml`` over ``demo/corpus``): every question with a
  relevant document, asked as its principal and with its filters;
* XQuAD dev (``tests/data/xquad``, the half this project may tune on): en questions over en
  paragraphs, de over de, de questions over en paragraphs (de→en); one document per
  paragraph; the first ``--limit`` questions of each (default 150 of 632).

Metrics per configuration, at document level over the k = 10 hits a search returns (a
document ranks where its best hit ranks): nDCG@10 with the gold set's grades as gains;
Hit@1, Hit@5 and MRR@10 counting the documents that *answer* (the question's highest
grade: grade 2 in the demo set, the question's paragraph in XQuAD); *answer@5*: an answer
string occurs in the text of the top 5 hits (what a reader or an LLM actually gets);
*words@5*: the words of those 5 hits (the prompt cost); p50 and p95 latency per search
(ms, one thread, after two warm-up searches); the index's size on disk, chunk count and
build time; for each technique, the questions it has first and plain hybrid does not (won) and
the reverse (lost), with the sign test's p. Each row records ``os.getloadavg()`` before and
after it: the machine is shared.

Passage vectors (paragraphs, chunks, sentence groups, compression's sentences) are cached
in ~/.cache/beleg/eval/embeddings (the cache ``beleg eval`` uses), so reruns embed only
what changed; the second embedder of the ensemble and of the reranker (MiniLM) embeds its
candidates at query time, as it does for users.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import dir_size, git_commit, machine_info, mib, rnd  # noqa: E402

import beleg  # noqa: E402
from beleg.backends.embedders import load_embedder  # noqa: E402
from beleg.backends.embedders.cache import CachedEmbedder  # noqa: E402
from beleg.backends.rerankers.bi_encoder import BiEncoderReranker  # noqa: E402
from beleg.evaluate.datasets import Dataset, Query, load_gold, load_squad  # noqa: E402
from beleg.evaluate.metrics import has_relevant, query_metrics  # noqa: E402
from beleg.evaluate.runner import _doc_key, _principal, cache_root  # noqa: E402
from beleg.index.config import IndexConfig  # noqa: E402
from beleg.ingest.chunking import ChunkingConfig  # noqa: E402
from beleg.retrieve.compress import CompressOptions  # noqa: E402
from beleg.retrieve.ensemble import parse_ensemble  # noqa: E402
from beleg.retrieve.techniques import Techniques, load_rerank  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
XQUAD = Path(os.environ.get("BELEG_XQUAD_DIR", ROOT / "tests" / "data" / "xquad"))
K = 10
BASELINE = "plain hybrid"


@dataclass(frozen=True)
class Variant:
    """One data set of the table: a label and its questions (a loaded :class:`Dataset`)."""

    label: str
    data: Dataset
    queries: list[Query]


def variant(label: str, data: Dataset, limit: int | None, skip: int = 0) -> Variant:
    # Unanswerable gold questions have no document to find: they measure refusal, not retrieval.
    answerable = [q for q in data.queries if has_relevant(data.qrels.get(q.qid, {}))][skip:]
    if skip:
        label = f"{label}, questions after the first {skip}"
    return Variant(label, data, answerable[:limit] if limit else answerable)


def variants(keys: list[str], limit: int, demo_limit: int | None, skip: int = 0) -> list[Variant]:
    """The data sets named by ``keys``; ``skip`` leaves out the first questions of the XQuAD ones
    (a check on questions the main run did not look at)."""
    en, de = XQUAD / "xquad.dev.en.json", XQUAD / "xquad.dev.de.json"
    makers: dict[str, Callable[[], Variant]] = {
        "demo": lambda: variant("demo gold", load_gold(ROOT / "demo" / "gold.yaml"), demo_limit),
        "en": lambda: variant("XQuAD en", load_squad([en]), limit, skip),
        "de": lambda: variant("XQuAD de", load_squad([de]), limit, skip),
        "de-en": lambda: variant("XQuAD de→en", load_squad([en], de), limit, skip),
    }
    unknown = [k for k in keys if k not in makers]
    if unknown:
        raise SystemExit(f"unknown --datasets {','.join(unknown)}; expected some of {','.join(makers)}")
    return [makers[k]() for k in keys]


def answering(judgments: dict[str, int]) -> dict[str, int]:
    """The documents of a question's highest grade: those that answer it (grade 2 in the demo set)."""
    top = max(judgments.values())
    return {d: 1 for d, g in judgments.items() if g == top}


def score_query(v: Variant, q: Query, hits: list[Any]) -> dict[str, float]:
    ranking = list(dict.fromkeys(_doc_key(v.data, h) for h in hits))[:K]
    judgments = v.data.qrels[q.qid]
    strict = query_metrics(ranking, answering(judgments), (1, 5, K))
    graded = query_metrics(ranking, judgments, (K,))
    top = " ".join(h.text for h in hits[:5])
    answers = [str(a) for a in (q.info.get("answers") or q.info.get("answer") or [])]
    return {"ndcg@10": graded[f"ndcg@{K}"], "hit@1": strict["hit@1"], "hit@5": strict["hit@5"],
            "mrr@10": strict[f"mrr@{K}"],
            "answer@5": float(any(a.casefold() in top.casefold() for a in answers)),
            "words@5": float(len(top.split()))}


def evaluate(kb: Any, v: Variant, techniques: Techniques) -> dict[str, Any]:
    for q in v.queries[:2]:  # warm-up: models load, snapshot opens
        kb.search(q.text, k=K, filters=q.info.get("filters"), principal=_principal(q), techniques=techniques)
    load_before = os.getloadavg()
    per_query, ms = [], []
    for q in v.queries:
        t0 = time.perf_counter()
        hits = kb.search(q.text, k=K, filters=q.info.get("filters"), principal=_principal(q), techniques=techniques)
        ms.append(1000 * (time.perf_counter() - t0))
        per_query.append(score_query(v, q, hits))
    means = {name: statistics.mean(m[name] for m in per_query) for name in per_query[0]}
    return {"queries": len(v.queries), **{n: rnd(x) for n, x in means.items() if n != "words@5"},
            "words@5": round(means["words@5"]), "latency_ms_p50": rnd(float(np.percentile(ms, 50)), 1),
            "latency_ms_p95": rnd(float(np.percentile(ms, 95)), 1),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            PER_QUERY_HIT1: [m["hit@1"] for m in per_query]}


PER_QUERY_HIT1 = "_hit@1 per question"  # kept in memory for the paired test, not written


def paired_hit1(base: list[float], other: list[float]) -> dict[str, Any]:
    """Questions only ``other`` (won) or only ``base`` (lost) has the answering document first,
    with the two-sided exact sign test's p: is a difference in Hit@1 more than a coin would give?"""
    won = sum(1 for b, o in zip(base, other, strict=True) if o > b)
    lost = sum(1 for b, o in zip(base, other, strict=True) if o < b)
    n = won + lost
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(won, lost) + 1)) / 2**n) if n else 1.0
    return {"won": won, "lost": lost, "sign_test_p": round(p, 4)}


def build(v: Variant, config: IndexConfig, embedder: CachedEmbedder, folder: Path) -> tuple[Any, dict[str, Any]]:
    t0 = time.perf_counter()
    kb = beleg.open(folder, config, embedder=embedder)
    if v.data.documents is not None:
        report = kb.ingest_texts(v.data.documents, progress=False)
    else:
        report = kb.ingest([str(v.data.corpus_dir)], progress=False)
    if report.failures:
        raise SystemExit(f"{v.label}: {len(report.failures)} documents failed to ingest: {report.failures[:3]}")
    status = kb.status()
    return kb, {"chunks": status["chunks"], "index_mib": rnd(mib(dir_size(folder)), 2),
                "build_s": rnd(time.perf_counter() - t0, 1)}


@dataclass(frozen=True)
class Config:
    """A row: its chunking and techniques (built lazily: a reranker loads a model). ``cold``, when
    set, is the same technique without the benchmark's vector cache, timed on a few questions."""

    name: str
    chunking: ChunkingConfig
    make: Callable[[], Techniques]
    cold: Callable[[], Techniques] | None = None


def cached_minilm_reranker() -> BiEncoderReranker:
    """``--rerank bi-encoder:minilm`` with MiniLM's passage vectors kept in the eval cache: the
    same scores (the vectors are stored as float32, as computed), but a rerun and the next
    data set over the same paragraphs do not embed 30 passages per question again."""
    return BiEncoderReranker(CachedEmbedder(load_embedder("minilm"), cache_root() / "embeddings"))


def configurations() -> list[Config]:
    structure = ChunkingConfig()
    return [
        Config(BASELINE, structure, Techniques),
        Config("parent-child", ChunkingConfig("parent-child"), Techniques),
        Config("semantic chunks", ChunkingConfig("semantic"), Techniques),
        Config("neighbours=1", structure, lambda: Techniques(expand=1)),
        Config("compress (400 words)", structure, lambda: Techniques(compress=CompressOptions())),
        # Weights only, no second model: the ensemble that makes sense in German too.
        Config("ensemble bm25:1,dense:2", structure, lambda: Techniques(ensemble=parse_ensemble("bm25:1,dense:2"))),
        # MiniLM is English-only: measured on German as well, where it is expected to be poor.
        Config("ensemble bm25:1,dense:2,minilm:1", structure,
               lambda: Techniques(ensemble=parse_ensemble("bm25:1,dense:2,minilm:1"))),
        Config("rerank bi-encoder:minilm, 30 candidates", structure,
               lambda: Techniques(reranker=cached_minilm_reranker(), candidates=30),
               cold=lambda: Techniques(reranker=load_rerank("bi-encoder:minilm"), candidates=30)),
    ]


def cold_latency(kb: Any, v: Variant, techniques: Techniques, n: int = 5) -> dict[str, Any]:
    """p50 of the first ``n`` questions with nothing cached: what one user's search costs."""
    ms = []
    for q in v.queries[:n]:
        t0 = time.perf_counter()
        kb.search(q.text, k=K, filters=q.info.get("filters"), principal=_principal(q), techniques=techniques)
        ms.append(1000 * (time.perf_counter() - t0))
    return {"latency_ms_p50_uncached": rnd(float(np.percentile(ms, 50)), 1), "uncached_queries": len(ms)}


def table(label: str, rows: dict[str, Any]) -> list[str]:
    lines = [f"**{label}** ({next(iter(rows.values()))['queries']} questions)", "",
             "| configuration | nDCG@10 | Hit@1 | Hit@5 | MRR@10 | answer@5 | words@5 | p50 ms | chunks | index MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['ndcg@10']:.3f} | {r['hit@1']:.3f} | {r['hit@5']:.3f} | {r['mrr@10']:.3f} | "
                     f"{r['answer@5']:.3f} | {r['words@5']} | {r['latency_ms_p50']:.0f} | {r['chunks']} | "
                     f"{r['index_mib']:.1f} |")
    return lines + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=150, help="XQuAD questions per variant (default 150)")
    parser.add_argument("--skip", type=int, default=0,
                        help="leave out the first N questions of each XQuAD variant (a check on unseen questions)")
    parser.add_argument("--demo-limit", type=int, help="demo gold questions (default all answerable)")
    parser.add_argument("--only", help="configuration names to run, separated by ';' (names contain commas)")
    parser.add_argument("--datasets", default="demo,en,de,de-en", help="some of demo,en,de,de-en")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_techniques.json")
    args = parser.parse_args()
    spec = IndexConfig().embedder  # the default engine of this machine, as users get it
    embedder = CachedEmbedder(load_embedder(spec), cache_root() / "embeddings")
    configs = configurations()
    if args.only:
        wanted = {s.strip() for s in args.only.split(";")}
        unknown = wanted - {c.name for c in configs}
        if unknown:
            raise SystemExit(f"unknown --only {sorted(unknown)}; configurations: {[c.name for c in configs]}")
        configs = [c for c in configs if c.name in wanted]
    # Data sets run earlier (another --datasets) stay in the file; the ones run now replace theirs.
    results: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    results.update({"commit": git_commit(), "machine": machine_info(), "k": K, "embedder": spec})
    results.setdefault("datasets", {})
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for key, v in zip(args.datasets.split(","), variants(args.datasets.split(","), args.limit, args.demo_limit, args.skip)):
            built: dict[str, tuple[Any, dict[str, Any]]] = {}
            rows: dict[str, Any] = {}
            hit1: dict[str, list[float]] = {}
            results["datasets"][v.label] = {"queries": len(v.queries), "configurations": rows}
            for c in configs:
                config = IndexConfig(c.chunking, spec)
                if config.index_version not in built:
                    built[config.index_version] = build(v, config, embedder, Path(tmp) / f"{key}-{config.index_version}")
                kb, size = built[config.index_version]
                rows[c.name] = {**evaluate(kb, v, c.make()), **size}
                hit1[c.name] = rows[c.name].pop(PER_QUERY_HIT1)
                if c.name != BASELINE and BASELINE in hit1:
                    rows[c.name]["hit@1_vs_plain_hybrid"] = paired_hit1(hit1[BASELINE], hit1[c.name])
                if c.cold is not None:
                    rows[c.name].update(cold_latency(kb, v, c.cold()))
                print(f"{v.label} / {c.name}: {rows[c.name]}", file=sys.stderr, flush=True)
                args.out.parent.mkdir(parents=True, exist_ok=True)  # after each row: a partial run keeps its part
                args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            for kb, _ in built.values():
                kb.close()
            lines += table(v.label, rows)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
