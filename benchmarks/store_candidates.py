"""Which embedded vector store? Beleg's exact numpy search vs LanceDB, measured on this machine.

Same 100k derived chunks × 384 dims and the same metadata as ``search_latency.py``
(see ``_common.DERIVATION``), same query vectors (real e5 vectors of XQuAD questions and
identifier queries). Candidates:

a. **beleg-exact**: ``Snapshot.chunk_mask`` (the filter as a mask) + ``Snapshot.dense_search``
   (one float32 matrix-vector product, top-k among eligible rows; gathers the eligible rows
   when fewer than 25% pass).
b. **LanceDB flat**: a Lance table without a vector index, ``.where(..., prefilter=True)``.
c. **LanceDB IVF_PQ** and **IVF_HNSW_SQ** (ANN indexes) with prefiltering, at two search
   settings each; optionally (default on) with scalar indexes on the filter columns.

For each: p50/p95 latency for no filter, a broad filter (~25% of chunks) and a selective one
(~1%), recall@10 against exact float64 search over the eligible rows, index build time and
on-disk size. LanceDB is not a Beleg dependency: ``pip install lancedb`` into the venv.

    python benchmarks/store_candidates.py
    python benchmarks/store_candidates.py --quick          # smoke run, < 1 min
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

# lance's Rust logger warns about every new table; keep stderr for progress
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")

K = 10
#: The same filters as Beleg's, in LanceDB's SQL (missing tenant is NULL, so "!=" needs IS NULL).
LANCE_FILTERS = {
    "none": None,
    "broad": "version_num >= 2.4 AND status = 'current' AND (tenant IS NULL OR tenant != 'nordwind')",
    "selective": "tenant = 'acme' AND status = 'current'",
}
BELEG_FILTERS = {"none": None, "broad": C.FILTER_BROAD, "selective": C.FILTER_SELECTIVE}


def exact_topk(vectors64: np.ndarray, mask: np.ndarray | None, q: np.ndarray, k: int = K) -> np.ndarray:
    scores = vectors64 @ q.astype(np.float64)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    idx = np.argpartition(-scores, k)[:k]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return idx[np.isfinite(scores[idx])]


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    if len(truth) == 0:
        return 1.0
    return len(set(found.tolist()) & set(truth.tolist())) / len(truth)


def measure(fn: Callable[[np.ndarray], np.ndarray], queries: np.ndarray, truth: list[np.ndarray], warmup: int) -> dict[str, Any]:
    for q in queries[:warmup]:
        fn(q)
    samples, recalls, returned = [], [], []
    for q, t in zip(queries, truth):
        s = time.perf_counter()
        ids = fn(q)
        samples.append(time.perf_counter() - s)
        recalls.append(recall(np.asarray(ids), t))
        returned.append(len(ids))
    return {**C.summarize_ms(samples), "recall_at_10": C.rnd(float(np.mean(recalls)), 4),
            "min_recall": C.rnd(float(np.min(recalls)), 2), "mean_returned": C.rnd(float(np.mean(returned)), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000, help="corpus size (default 100000)")
    ap.add_argument("--queries", type=int, default=200, help="timed queries per configuration (default 200)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed queries before each configuration")
    ap.add_argument("--no-hnsw", action="store_true", help="skip the IVF_HNSW_SQ index")
    ap.add_argument("--no-scalar-index", action="store_true", help="skip the LanceDB runs with scalar indexes")
    ap.add_argument("--seed", type=int, default=1, help="seed of the derived corpus")
    ap.add_argument("--budget-s", type=float, default=720,
                    help="skip the remaining optional LanceDB stages once this many seconds have passed (default 720)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 5000 chunks, 30 queries")
    ap.add_argument("--out", type=Path, default=None, help="result JSON (default benchmarks/results/store_candidates.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.chunks, args.queries, args.warmup = 5000, 30, 3

    t_start = time.perf_counter()
    result: dict[str, Any] = {"benchmark": "store_candidates",
                              "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                              "machine": C.machine_info(), "vectors": C.DERIVATION,
                              "filters": {"beleg": BELEG_FILTERS, "lancedb": LANCE_FILTERS}, "k": K}

    # ------------------------------------------------------------------ data
    cache = C.VectorCache()
    bases = C.base_texts()
    if args.quick:
        bases = bases[::10]
    base_vecs = cache.get([b.text for b in bases], "passage", "base vectors")
    queries_meta = C.benchmark_queries(max(args.queries, 300))[: args.queries]
    qtexts = [q["text"] for q in queries_meta]
    qvecs = cache.get(qtexts, "query", "query vectors")
    result["vector_cache"] = cache.stats()
    C.log(f"deriving {args.chunks} chunks")
    corpus = C.synth_corpus(args.chunks, bases, base_vecs, seed=args.seed)
    n, dim = corpus.vectors.shape
    chunk_doc = corpus.chunk_doc()
    metas = [d.metadata for d in corpus.docs]
    result["corpus"] = {"chunks": n, "dim": dim, "documents": len(corpus.docs), "queries": len(qtexts)}

    # ------------------------------------------------------------------ beleg exact
    from beleg.index.bm25 import BM25Index
    from beleg.index.filters import MetadataColumns, parse
    from beleg.index.snapshot import Snapshot

    with C.Stopwatch() as sw:
        snap = Snapshot(generation=0, rows=np.arange(n, dtype=np.int64), chunk_doc=chunk_doc,
                        doc_ids=[d.doc_id for d in corpus.docs], doc_sources=[d.source for d in corpus.docs],
                        doc_metadata=metas, columns=MetadataColumns(metas),
                        vectors=np.ascontiguousarray(corpus.vectors, dtype=np.float32),
                        bm25=BM25Index([], [], 0), vocab={})
    exprs = {name: (parse(f) if f else None) for name, f in BELEG_FILTERS.items()}
    masks = {name: snap.chunk_mask(e) for name, e in exprs.items()}
    result["selectivity"] = {name: (1.0 if m is None else C.rnd(float(m.mean()), 4)) for name, m in masks.items()}
    vectors64 = corpus.vectors.astype(np.float64)
    truth = {name: [exact_topk(vectors64, m, q) for q in qvecs] for name, m in masks.items()}
    del vectors64

    candidates: dict[str, Any] = {}
    skipped: list[str] = []
    result["skipped_for_time"] = skipped

    def over_budget(stage: str) -> bool:
        if time.perf_counter() - t_start > args.budget_s:
            C.log(f"skipping {stage}: over the {args.budget_s:.0f}s budget")
            skipped.append(stage)
            return True
        return False

    def beleg_fn(name: str) -> Callable[[np.ndarray], np.ndarray]:
        expr = exprs[name]

        def run(q: np.ndarray) -> np.ndarray:
            mask = snap.chunk_mask(expr)
            return snap.dense_search(q, K, mask)[0]

        return run

    C.log("beleg-exact")
    candidates["beleg_exact"] = {
        "description": "Snapshot.chunk_mask + Snapshot.dense_search (numpy float32 matmul, pre-filter mask)",
        "build_s": C.rnd(sw.s, 3),
        "build_note": "no index: the float32 matrix is the index. Loading it from the catalog (SQLite) is "
                      "Snapshot.load, reported as snapshot_load_s by search_latency.py",
        "on_disk_mib": C.mib(n * dim * 4),
        "on_disk_note": "raw float32 vectors; Beleg stores them as BLOBs in catalog.sqlite (plus row overhead)",
        "in_memory_mib": C.mib(snap.vectors.nbytes),
        "latency_ms": {name: measure(beleg_fn(name), qvecs, truth[name], args.warmup) for name in BELEG_FILTERS},
    }
    # the mask alone, to see what the filter costs
    candidates["beleg_exact"]["mask_only_ms"] = {
        name: C.summarize_ms([_timeit(lambda e=e: snap.chunk_mask(e)) for _ in range(len(qvecs))])
        for name, e in exprs.items() if e is not None}
    _log_latency("beleg_exact", candidates["beleg_exact"]["latency_ms"])
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            lat1 = {name: measure(beleg_fn(name), qvecs, truth[name], args.warmup) for name in BELEG_FILTERS}
        candidates["beleg_exact_blas_1_thread"] = {
            "description": "the same, with numpy's BLAS limited to one thread (threadpoolctl) during the search",
            "build_s": candidates["beleg_exact"]["build_s"], "on_disk_mib": candidates["beleg_exact"]["on_disk_mib"],
            "latency_ms": lat1}
        _log_latency("beleg_exact_blas_1_thread", lat1)
    except ImportError:
        candidates["beleg_exact_blas_1_thread"] = {"error": "threadpoolctl not installed"}

    # ------------------------------------------------------------------ lancedb
    tmp = Path(tempfile.mkdtemp(prefix="beleg-bench-store-"))
    try:
        try:
            import lancedb
            import pyarrow as pa
            from lancedb.index import Bitmap, BTree, HnswSq, IvfPq
        except ImportError as exc:
            candidates["lancedb"] = {"error": f"lancedb is not installed ({exc}); pip install lancedb"}
            raise _Skip() from None
        result["lancedb_version"] = lancedb.__version__
        result["pyarrow_version"] = pa.__version__

        def col(key: str) -> list[Any]:
            values = [m.get(key) for m in metas]
            return [values[d] for d in chunk_doc]

        table_data = pa.table({
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(corpus.vectors.ravel(), type=pa.float32()), dim),
            "product": pa.array(col("product"), type=pa.string()),
            "version": pa.array(col("version"), type=pa.string()),
            "version_num": pa.array([float(v) for v in col("version")], type=pa.float32()),
            "status": pa.array(col("status"), type=pa.string()),
            "authority": pa.array(col("authority"), type=pa.string()),
            "language": pa.array(col("language"), type=pa.string()),
            "tenant": pa.array(col("tenant"), type=pa.string()),
        })
        db = lancedb.connect(str(tmp / "lance"))

        def make_table(name: str) -> tuple[Any, float]:
            with C.Stopwatch() as sw:
                tbl = db.create_table(name, data=table_data, mode="overwrite")
            return tbl, sw.s

        def table_dir(name: str) -> Path:
            return tmp / "lance" / f"{name}.lance"

        def lance_fn(tbl: Any, where: str | None, **opts: Any) -> Callable[[np.ndarray], np.ndarray]:
            def run(q: np.ndarray) -> np.ndarray:
                b = tbl.search(q, vector_column_name="vector").distance_type("cosine").limit(K).select(["id", "_distance"])
                if where:
                    b = b.where(where, prefilter=True)
                if opts.get("bypass"):
                    b = b.bypass_vector_index()
                if opts.get("nprobes"):
                    b = b.nprobes(opts["nprobes"])
                if opts.get("refine_factor"):
                    b = b.refine_factor(opts["refine_factor"])
                if opts.get("ef"):
                    b = b.ef(opts["ef"])
                return b.to_arrow()["id"].to_numpy()

            return run

        def run_all(tbl: Any, **opts: Any) -> dict[str, Any]:
            return {name: measure(lance_fn(tbl, f, **opts), qvecs, truth[name], args.warmup)
                    for name, f in LANCE_FILTERS.items()}

        # flat
        C.log("lancedb: creating the table")
        tbl, create_s = make_table("flat")
        check = {name: int(tbl.count_rows(f)) if f else n for name, f in LANCE_FILTERS.items()}
        beleg_counts = {name: (n if m is None else int(m.sum())) for name, m in masks.items()}
        result["filter_equivalence"] = {"lancedb_rows": check, "beleg_rows": beleg_counts, "same": check == beleg_counts}
        C.log("lancedb flat")
        candidates["lancedb_flat"] = {"description": "Lance table, no vector index (brute force), prefilter=True",
                                      "build_s": C.rnd(create_s, 2), "build_note": "table creation from Arrow",
                                      "on_disk_mib": C.mib(C.dir_size(table_dir("flat"))),
                                      "latency_ms": run_all(tbl)}
        _log_latency("lancedb_flat", candidates["lancedb_flat"]["latency_ms"])

        # IVF_PQ
        partitions = max(8, int(round(np.sqrt(n))))
        try:
            ivf, create_s = make_table("ivf_pq")
            size0 = C.dir_size(table_dir("ivf_pq"))
            C.log(f"lancedb IVF_PQ: building ({partitions} partitions, 48 sub-vectors)")
            with C.Stopwatch() as sw:
                ivf.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                    num_sub_vectors=48))
            entry: dict[str, Any] = {
                "description": f"IVF_PQ, {partitions} partitions, 48 sub-vectors x 8 bit, cosine, prefilter=True",
                "build_s": C.rnd(sw.s, 2), "table_create_s": C.rnd(create_s, 2),
                "on_disk_mib": C.mib(C.dir_size(table_dir("ivf_pq"))),
                "index_on_disk_mib": C.mib(C.dir_size(table_dir("ivf_pq")) - size0), "latency_ms": {}}
            C.log(f"  built in {sw.s:.1f}s")
            for label, opts in (("nprobes20", {"nprobes": 20}), ("nprobes20_refine10", {"nprobes": 20, "refine_factor": 10}),
                                ("nprobes50_refine10", {"nprobes": 50, "refine_factor": 10})):
                if over_budget(f"IVF_PQ {label}"):
                    break
                try:
                    entry["latency_ms"][label] = run_all(ivf, **opts)
                    _log_latency(f"lancedb_ivf_pq {label}", entry["latency_ms"][label])
                except Exception as exc:  # one setting failing must not lose the others
                    entry.setdefault("errors", {})[label] = repr(exc)[:300]
                    C.log(f"IVF_PQ {label} failed: {exc!r}")
            candidates["lancedb_ivf_pq"] = entry
        except Exception as exc:  # report, keep going
            candidates["lancedb_ivf_pq"] = {"error": repr(exc)[:500]}
            C.log(f"IVF_PQ failed: {exc!r}")

        # IVF_HNSW_SQ
        if not args.no_hnsw and not over_budget("IVF_HNSW_SQ"):
            hnsw_parts = max(1, n // 25_000)
            try:
                hnsw, create_s = make_table("hnsw")
                size0 = C.dir_size(table_dir("hnsw"))
                C.log(f"lancedb IVF_HNSW_SQ: building ({hnsw_parts} partitions, m=20, ef_construction=300)")
                with C.Stopwatch() as sw:
                    hnsw.create_index("vector", config=HnswSq(distance_type="cosine", num_partitions=hnsw_parts,
                                                              m=20, ef_construction=300))
                entry = {"description": f"IVF_HNSW_SQ, {hnsw_parts} partition(s), m=20, ef_construction=300, cosine, "
                                        "prefilter=True",
                         "build_s": C.rnd(sw.s, 2), "table_create_s": C.rnd(create_s, 2),
                         "on_disk_mib": C.mib(C.dir_size(table_dir("hnsw"))),
                         "index_on_disk_mib": C.mib(C.dir_size(table_dir("hnsw")) - size0), "latency_ms": {}}
                C.log(f"  built in {sw.s:.1f}s")
                for label, opts in (("ef64", {"ef": 64, "nprobes": hnsw_parts}),
                                    ("ef256", {"ef": 256, "nprobes": hnsw_parts}),
                                    ("ef256_refine10", {"ef": 256, "nprobes": hnsw_parts, "refine_factor": 10})):
                    if over_budget(f"IVF_HNSW_SQ {label}"):
                        break
                    try:
                        entry["latency_ms"][label] = run_all(hnsw, **opts)
                        _log_latency(f"lancedb_hnsw {label}", entry["latency_ms"][label])
                    except Exception as exc:
                        entry.setdefault("errors", {})[label] = repr(exc)[:300]
                        C.log(f"IVF_HNSW_SQ {label} failed: {exc!r}")
                candidates["lancedb_ivf_hnsw_sq"] = entry
            except Exception as exc:
                candidates["lancedb_ivf_hnsw_sq"] = {"error": repr(exc)[:500]}
                C.log(f"IVF_HNSW_SQ failed: {exc!r}")

        # scalar indexes on the filter columns (flat and IVF_PQ tables)
        if not args.no_scalar_index and not over_budget("scalar indexes"):
            try:
                built: dict[str, float] = {}
                tables = {"flat": tbl} | ({"ivf_pq": ivf} if "error" not in candidates.get("lancedb_ivf_pq", {"error": 1}) else {})
                for tname, t in tables.items():
                    with C.Stopwatch() as sw:
                        t.create_index("status", config=Bitmap())
                        t.create_index("tenant", config=Bitmap())
                        t.create_index("version_num", config=BTree())
                    built[tname] = C.rnd(sw.s, 2)
                C.log("lancedb with scalar indexes (BITMAP status/tenant, BTREE version_num)")
                entry = {"description": "the tables above plus BITMAP indexes on status and tenant and a BTREE "
                                        "index on version_num", "scalar_index_build_s": built, "latency_ms": {}}
                entry["latency_ms"]["flat"] = run_all(tbl)
                _log_latency("lancedb_flat+scalar", entry["latency_ms"]["flat"])
                if "ivf_pq" in tables:
                    entry["latency_ms"]["ivf_pq_nprobes20_refine10"] = run_all(ivf, nprobes=20, refine_factor=10)
                    _log_latency("lancedb_ivf_pq+scalar", entry["latency_ms"]["ivf_pq_nprobes20_refine10"])
                candidates["lancedb_scalar_indexes"] = entry
            except Exception as exc:
                candidates["lancedb_scalar_indexes"] = {"error": repr(exc)[:500]}
                C.log(f"scalar indexes failed: {exc!r}")
    except _Skip:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    result["candidates"] = candidates
    result["summary"] = _summary(candidates)
    result["runtime_s"] = C.rnd(time.perf_counter() - t_start, 1)
    C.write_result("store_candidates_quick" if args.quick else "store_candidates", result, args.out)
    return 0


class _Skip(Exception):
    pass


def _timeit(fn: Callable[[], Any]) -> float:
    s = time.perf_counter()
    fn()
    return time.perf_counter() - s


def _log_latency(name: str, lat: dict[str, Any]) -> None:
    parts = [f"{f}: p50 {v['p50']:.2f} ms r@10 {v['recall_at_10']:.3f}" for f, v in lat.items()]
    C.log(f"  {name:28s} " + " | ".join(parts))


def _summary(candidates: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (candidate, setting): p50 and recall@10 per filter."""
    rows = []
    for cname, c in candidates.items():
        lat = c.get("latency_ms")
        if not lat:
            continue
        settings = lat if all(isinstance(v, dict) and "none" in v for v in lat.values()) else {"": lat}
        for sname, per_filter in settings.items():
            row: dict[str, Any] = {"candidate": cname + (f" {sname}" if sname else "")}
            for f, v in per_filter.items():
                row[f"{f}_p50_ms"] = v["p50"]
                row[f"{f}_p95_ms"] = v["p95"]
                row[f"{f}_recall"] = v["recall_at_10"]
            rows.append(row)
    return rows


if __name__ == "__main__":
    sys.exit(main())
