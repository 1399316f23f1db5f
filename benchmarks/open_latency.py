"""Process start-to-first-hit, memory, and the persisted view at 100k and 1M chunks.

For each size an index is written directly through the catalog API from synthetic data
(nothing is embedded): documents of 4-16 chunks with the metadata mix of ``_common``
(product, version, status, authority, language, 10% of documents of a tenant); chunk
texts of 30-70 words drawn from a Zipf(1.1) vocabulary of pronounceable pseudo-words that
the analyzer leaves unchanged, plus words of the document's topic; chunk vectors are
random unit vectors around a random unit topic centre per document (noise ≈ 3x the
centre's length, so a topic's chunks are related but far from identical). Then:

* ``view_build_s``: writing the persisted view (:mod:`beleg.index.persisted_view`) from the
  catalog, and ``view_update_s`` after appending one document (the incremental rebuild);
* ``process``: ``beleg search`` as a new process (median of 3 runs, page cache warm):
  wall time and peak RSS for ``--mode bm25`` and hybrid (real e5-small query encoding),
  against a process that only loads the model and embeds one query;
* ``in_process``: ``KnowledgeBase.search`` latency p50/p95 (query vectors precomputed) for
  hybrid without filter, with a broad filter (~26% of chunks) and a selective one (~1%, a
  tenant's current documents, searched as that tenant), with 1 client and with 8 client
  threads sharing one KnowledgeBase; recall against exact float32 search under each
  filter: of the dense leg (IVF or int8 first pass, then exact re-scoring) at k=10 and at
  the hybrid depth (50), and of the hybrid top 10 (the same search with the dense leg exact).

Vectors are ``isotropic`` (the data above: nearly random, where no IVF can be probed cheaply,
so search stays exact) or ``clustered`` (topics, see ``build``), or both (the default).

    python benchmarks/open_latency.py                 # --sizes 100000,1000000
    python benchmarks/open_latency.py --quick         # 20k chunks, a smoke run
    python benchmarks/open_latency.py --sizes 1000000 --keep /tmp/beleg-bench   # build once, reuse
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

FILTER_BROAD = C.FILTER_BROAD
FILTER_SELECTIVE = C.FILTER_SELECTIVE
DIM = 384
BEL = [str(Path(sys.executable).with_name("beleg"))]


# ----------------------------------------------------------------------------- synthetic data
def vocabulary(n: int, seed: int) -> list[str]:
    """Pseudo-words the analyzer leaves as they are (English, German and query analysis)."""
    from beleg.index.analyzer import analyze, analyze_query

    rng = np.random.default_rng(seed)
    syllables = [c + v for c in "bdfgklmnprtvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < n:
        for parts in rng.integers(0, len(syllables), size=(4 * n, 3)):
            w = "".join(syllables[p] for p in parts[: 2 + int(parts[0]) % 2])
            words.setdefault(w)
    keep = [w for w in words if analyze(w, "en") == [w] and analyze(w, "de") == [w] and analyze_query(w) == [w]]
    return keep[:n]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


#: Query noise (norm, before normalising) around a document's centre, per kind of vectors.
QUERY_NOISE = {"isotropic": 2.0, "clustered": 0.5}


def build(path: Path, n_chunks: int, fingerprint: str, seed: int = 1, vectors: str = "isotropic") -> dict[str, Any]:
    """Write ``n_chunks`` synthetic chunks into a new index through the catalog API.

    ``vectors``: ``isotropic`` (each document's centre a random unit vector, chunks 3x that
    far in noise: nearly random vectors, the worst case for any ANN index) or ``clustered``
    (a direction every vector shares, as e5's do (mean cosine 0.76 between unrelated
    passages of the bundled corpora), one of n/500 topics per document, a document centre
    and a little noise per chunk: the structure real embeddings have).
    """
    import beleg

    rng = np.random.default_rng(seed)
    vocab = vocabulary(30_000, seed)
    zipf = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    zipf /= zipf.sum()
    sizes = rng.integers(4, 17, size=n_chunks // 4 + 1)
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n_chunks)) + 1]
    sizes[-1] -= int(sizes.sum()) - n_chunks
    metas = _metadata(rng, len(sizes))
    topics = _topic_centres(rng, max(1, n_chunks // 500)) if vectors == "clustered" else None
    shared = _unit(rng.normal(size=DIM))
    kb = beleg.open(path)
    catalog = kb.catalog
    with catalog.transaction():
        catalog.set_meta("embedder_fingerprint", fingerprint)
    t0 = time.perf_counter()
    docs_meta = []
    for start in range(0, len(sizes), 500):  # one transaction per 500 documents
        batch = list(range(start, min(start + 500, len(sizes))))
        n_batch = int(sizes[batch].sum())
        words = rng.choice(len(vocab), size=(n_batch, 70), p=zipf)
        lengths = rng.integers(30, 71, size=n_batch)
        docs, row = [], 0
        for d in batch:
            topic_words = rng.choice(len(vocab), size=5)
            centre = _unit(rng.normal(size=DIM))
            if topics is None:
                chunk_vectors = _unit(centre + rng.normal(scale=3.0 / np.sqrt(DIM), size=(int(sizes[d]), DIM)))
            else:
                centre = _unit(0.87 * shared + 0.30 * topics[rng.integers(len(topics))] + 0.25 * centre)
                chunk_vectors = _unit(centre + rng.normal(scale=0.3 / np.sqrt(DIM), size=(int(sizes[d]), DIM)))
            texts = []
            for _ in range(int(sizes[d])):
                ids = list(words[row, : lengths[row]]) + list(rng.choice(topic_words, size=3))
                texts.append(" ".join(vocab[i] for i in ids))
                row += 1
            docs_meta.append((d, metas[d], [vocab[i] for i in topic_words], centre))
            docs.append((d, metas[d], texts, chunk_vectors))
        with catalog.transaction():
            terms = catalog.term_ids([w for _, _, texts, _ in docs for t in texts for w in t.split()], create=True)
            for d, meta, texts, doc_vectors in docs:
                _store(catalog, d, meta, texts, doc_vectors, terms)
        if start % 20_000 == 0 and start:
            C.log(f"  {int(sizes[:start].sum())} chunks written")
    catalog_s = time.perf_counter() - t0
    kb.close()
    return {"chunks": n_chunks, "documents": len(sizes), "catalog_write_s": C.rnd(catalog_s, 1), "docs": docs_meta,
            "vocab": vocab, "vectors": vectors}


def _topic_centres(rng: np.random.Generator, n: int) -> np.ndarray:
    """Topic directions, ten to a subject (topics of one subject are nearer each other)."""
    subjects = _unit(rng.normal(size=(max(1, n // 10), DIM)))
    return _unit(0.6 * subjects[rng.integers(len(subjects), size=n)] + 0.8 * _unit(rng.normal(size=(n, DIM))))


def build_or_reuse(path: Path, n_chunks: int, fingerprint: str, vectors: str = "isotropic") -> dict[str, Any]:
    """``build`` once into ``path`` and keep what the queries are made from beside it
    (``path``.queries.npz); a later run with the same ``--keep`` folder reuses both."""
    saved = path.with_name(path.name + ".queries.npz")
    if saved.exists() and path.is_dir():  # written only after a complete build
        data = np.load(saved, allow_pickle=False)
        info = json.loads(str(data["info"]))
        docs = [(d, None, list(words), centre) for d, (words, centre) in
                enumerate(zip(data["topic_words"].tolist(), data["centres"]))]
        C.log(f"[{n_chunks}] reusing the index in {path} (built {info['built_at']})")
        return {**info, "docs": docs, "vocab": data["vocab"].tolist(), "reused": True}
    C.fresh_dir(path)
    built = build(path, n_chunks, fingerprint, vectors=vectors)
    info = {k: built[k] for k in ("chunks", "documents", "catalog_write_s", "vectors")}
    info["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    np.savez(saved, info=json.dumps(info), vocab=np.array(built["vocab"]),
             topic_words=np.array([d[2] for d in built["docs"]]),
             centres=np.stack([d[3] for d in built["docs"]]).astype(np.float32))
    return built


def _metadata(rng: np.random.Generator, n_docs: int) -> list[dict[str, Any]]:
    """Per-document metadata with the distributions of ``_common`` (10% of documents of a tenant)."""
    columns = {k: C._draw(rng, table, n_docs) for k, table in
               (("product", C.PRODUCTS), ("version", C.VERSIONS), ("status", C.STATUSES),
                ("authority", C.AUTHORITIES), ("language", C.LANGS), ("tenant", C.TENANTS))}
    has_tenant = rng.random(n_docs) < C.TENANT_SHARE
    out = []
    for d in range(n_docs):
        meta = {k: v[d] for k, v in columns.items() if k != "tenant"}
        meta["title"] = f"Synthetic {d}"
        if has_tenant[d]:
            meta["tenant"] = columns["tenant"][d]
        out.append(meta)
    return out


def _store(catalog: Any, d: int, meta: dict[str, Any], texts: list[str], vectors: np.ndarray,
           terms: dict[str, int]) -> None:
    from beleg.types import Chunk, Document

    doc_id = f"synth-{d:07d}"
    chunks, hashes, postings, offset = [], [], [], 0
    for c, text in enumerate(texts):
        chunks.append(Chunk(f"{doc_id}-{c:02d}", doc_id, c, offset, offset + len(text), (meta["title"],), text))
        ids, counts = np.unique(np.array([terms[w] for w in text.split()], dtype=np.int32), return_counts=True)
        postings.append((ids.astype(np.int32), counts.astype(np.int32)))
        hashes.append(f"{doc_id}-{c:02d}")
        offset += len(text) + 2
    catalog.put_vectors(dict(zip(hashes, vectors)))
    doc = Document(doc_id, f"synthetic/{doc_id}.md", "\n\n".join(texts), meta, doc_id)
    catalog.upsert_document(doc, chunks, hashes, postings)


# ----------------------------------------------------------------------------- processes
def timed_process(cmd: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Wall seconds and peak RSS (MiB) of one process, via GNU time.

    Bytecode caches are always written (``PYTHONDONTWRITEBYTECODE`` is dropped): an installed
    package has its ``.pyc`` files, and a machine that sets the variable would otherwise
    compile every module in every process (~0.1 s of a bm25 search, seen on one of ours)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(["/usr/bin/time", "-f", "@@ %e %M %U %S", *cmd], capture_output=True, text=True, env=env)
    line = [ln for ln in out.stderr.splitlines() if ln.startswith("@@ ")][-1].split()
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-800:]}")
    return {"wall_s": float(line[1]), "peak_rss_mib": C.rnd(int(line[2]) / 1024, 1),
            "cpu_s": C.rnd(float(line[3]) + float(line[4]), 2), "stdout": out.stdout}


def process_figures(path: Path, query: str, runs: int) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "")}
    env = {k: v for k, v in env.items() if v != ""}
    model_only = [sys.executable, "-c", "from beleg.backends.embedders import load_embedder as l; "
                  "l('e5-small').embed_queries(['warm up the query path'])"]
    timed_process(model_only, env)  # writes the weights cache if this machine has none yet
    out: dict[str, Any] = {}
    for name, cmd in (("model_only", model_only),
                      ("python_import_beleg", [sys.executable, "-c", "import beleg"]),
                      ("bm25", [*BEL, "search", query, "--index", str(path), "--mode", "bm25", "-k", "10",
                                "--no-self-query"]),
                      ("hybrid", [*BEL, "search", query, "--index", str(path), "-k", "10", "--no-self-query"])):
        samples = [timed_process(cmd, env) for _ in range(runs)]
        if name in ("bm25", "hybrid"):
            assert samples[0]["stdout"].strip(), f"{name}: no hit printed"
        walls = sorted(s["wall_s"] for s in samples)
        out[name] = {"wall_s_median": walls[len(walls) // 2], "wall_s_runs": [s["wall_s"] for s in samples],
                     "peak_rss_mib_median": sorted(s["peak_rss_mib"] for s in samples)[len(samples) // 2],
                     "peak_rss_mib_runs": [s["peak_rss_mib"] for s in samples],
                     "cpu_s_runs": [s["cpu_s"] for s in samples]}
    out["hybrid_rss_beyond_model_mib"] = C.rnd(out["hybrid"]["peak_rss_mib_median"]
                                               - out["model_only"]["peak_rss_mib_median"], 1)
    out["bm25_rss_beyond_python_numpy_mib"] = C.rnd(out["bm25"]["peak_rss_mib_median"]
                                                    - out["python_import_beleg"]["peak_rss_mib_median"], 1)
    return out


# ----------------------------------------------------------------------------- in process
class FixedQueries:
    """An embedder whose query vectors are given (the model's time is not the index's)."""

    spec, dim = "e5-small", DIM

    def __init__(self, fingerprint: str, table: dict[str, np.ndarray]) -> None:
        self.fingerprint, self.table = fingerprint, table

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("the benchmark embeds no documents")


def make_queries(built: dict[str, Any], n: int, seed: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.choice(len(built["docs"]), size=n, replace=False):
        _, _, topic_words, centre = built["docs"][i]
        words = list(rng.choice(topic_words, size=2)) + list(rng.choice(built["vocab"][:3000], size=2))
        vec = _unit(centre + rng.normal(scale=QUERY_NOISE[built.get("vectors", "isotropic")] / np.sqrt(DIM), size=DIM))
        out.append((" ".join(words), vec))
    return out


def in_process(path: Path, fingerprint: str, queries: list[tuple[str, np.ndarray]], clients: int = 8) -> dict[str, Any]:
    """Hybrid latency with 1 client and with ``clients`` threads sharing one KnowledgeBase, and
    recall@10 against exact search: of the dense leg (@10 and at the hybrid depth 50) and of
    the hybrid hits (the same search with the dense leg exact)."""
    import beleg
    from beleg.index.filters import parse

    acme = beleg.Principal("bench", "acme")
    configs = {"none": (None, None), "broad": (FILTER_BROAD, None), "selective": (FILTER_SELECTIVE, acme)}
    table = {t: v for t, v in queries}
    out: dict[str, Any] = {}
    with beleg.open(path, embedder=FixedQueries(fingerprint, table)) as kb:
        with C.Stopwatch() as sw:
            view = kb.snapshot()
        out["open_view_s"] = C.rnd(sw.s, 3)
        out["ivf"] = view.ann.meta() if view.ann is not None else None
        exact = dataclasses.replace(view, codes=None, code_scales=None, ann=None, _access={})
        n = len(view)
        for name, (where, who) in configs.items():
            mask = view.chunk_mask(parse(where) if where else None, who or beleg.ANONYMOUS)
            share = 1.0 if mask is None else float(mask.sum()) / n

            def one(text: str, where: str | None = where, who: Any = who) -> tuple[float, list[str]]:
                t = time.perf_counter()
                hits = kb.search(text, k=10, where=where, principal=who, self_query=False)
                elapsed = time.perf_counter() - t
                assert hits
                return elapsed, [h.chunk_id for h in hits]

            for text, _ in queries[:3]:  # warm-up
                one(text)
            single = [one(text) for text, _ in queries]
            with ThreadPoolExecutor(clients) as pool:  # every client runs every query, in its own order
                orders = [np.random.default_rng(c).permutation(len(queries)).tolist() for c in range(clients)]
                t = time.perf_counter()
                futures = [pool.submit(lambda order: [one(queries[i][0])[0] for i in order], o) for o in orders]
                many = [x for f in futures for x in f.result()]
                wall = time.perf_counter() - t
            recall = {}
            for depth in (10, 50):
                found = []
                for _, vec in queries:
                    got = set(view.dense_search(vec, depth, mask)[0].tolist())
                    want = exact.dense_search(vec, depth, mask)[0].tolist()
                    found.append(len(got & set(want)) / max(len(want), 1))
                recall[f"at_{depth}"] = C.rnd(float(np.mean(found)), 4)
            ann, view.ann = view.ann, None  # the same hybrid searches with the dense leg exact
            try:
                hybrid_exact = [one(text)[1] for text, _ in queries]
            finally:
                view.ann = ann
            hybrid_recall = np.mean([len(set(got) & set(want)) / max(len(want), 1)
                                     for (_, got), want in zip(single, hybrid_exact)])
            out[name] = {"eligible_share": C.rnd(share, 4), "hybrid_ms": C.summarize_ms([s for s, _ in single]),
                         f"hybrid_ms_{clients}_clients": C.summarize_ms(many),
                         f"queries_per_s_{clients}_clients": C.rnd(len(many) / wall, 1),
                         "dense_recall_vs_exact": recall, "hybrid_recall_at_10_vs_exact": C.rnd(float(hybrid_recall), 4),
                         "load_average": list(os.getloadavg())}
            C.log(f"  {name}: eligible {share:.3f}, hybrid p50/p95 {out[name]['hybrid_ms']['p50']}/"
                  f"{out[name]['hybrid_ms']['p95']} ms, {clients} clients p50/p95 "
                  f"{out[name][f'hybrid_ms_{clients}_clients']['p50']}/{out[name][f'hybrid_ms_{clients}_clients']['p95']}"
                  f" ms, dense recall {recall}, hybrid recall@10 {hybrid_recall:.4f}, load {os.getloadavg()[0]:.1f}")
    return out


def view_update(path: Path, fingerprint: str) -> float:
    """Seconds to bring the view up to date after one more document (an incremental rebuild)."""
    import beleg
    from beleg.index import persisted_view

    rng = np.random.default_rng(99)
    texts = [f"late words here {i}" for i in range(5)]
    with beleg.open(path) as kb:
        with kb.catalog.transaction():
            terms = kb.catalog.term_ids([w for t in texts for w in t.split()], create=True)
            _store(kb.catalog, 9_999_999, {"title": "late", "status": "current"}, texts,
                   _unit(rng.normal(size=(5, DIM))), terms)
        t = time.perf_counter()
        persisted_view.refresh(kb.catalog, kb.path)
        return time.perf_counter() - t


def run_size(root: Path, n: int, fingerprint: str, runs: int, n_queries: int, vectors: str = "isotropic",
             keep_view: bool = False, processes: bool = True, clients: int = 8) -> dict[str, Any]:
    from beleg.index import persisted_view

    path = root / (f"index-{n}" + ("" if vectors == "isotropic" else f"-{vectors}"))
    C.log(f"[{n}] {vectors} vectors: writing {n} synthetic chunks through the catalog API (or reusing them)")
    built = build_or_reuse(path, n, fingerprint, vectors)
    catalog_mib = C.mib(sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "view" not in p.parts))
    C.log(f"[{n}] catalog written in {built['catalog_write_s']} s ({catalog_mib} MiB); building the view")
    import beleg

    if not keep_view:
        persisted_view.discard(path)  # the view build is measured, not taken from an earlier run
    with beleg.open(path) as kb:
        t = time.perf_counter()
        persisted_view.refresh(kb.catalog, kb.path)
        view_s = time.perf_counter() - t
    view_files = persisted_view.view_files(path)
    view_mib = C.mib(sum(p.stat().st_size for p in view_files))
    ivf_mib = C.mib(sum(p.stat().st_size for p in view_files if p.name.startswith("ivf_")))
    out: dict[str, Any] = {"chunks": n, "documents": built["documents"], "vectors": vectors,
                           "catalog_write_s": built["catalog_write_s"], "catalog_reused": bool(built.get("reused")),
                           "view_build_s": None if keep_view else C.rnd(view_s, 1),
                           "build_s": None if keep_view else C.rnd(built["catalog_write_s"] + view_s, 1),
                           "on_disk_mib": {"catalog": catalog_mib, "view": view_mib, "of_it_ivf": ivf_mib,
                                           "total": C.mib(C.dir_size(path))}}
    C.log(f"[{n}] view built in {view_s:.1f} s ({view_mib} MiB)")
    out["view_update_after_one_document_s"] = C.rnd(view_update(path, fingerprint), 2)
    queries = make_queries(built, n_queries, seed=5)
    if processes:
        C.log(f"[{n}] process start-to-first-hit ({runs} runs each)")
        out["process"] = process_figures(path, queries[0][0], runs)
        C.log(f"[{n}] {json.dumps({k: v for k, v in out['process'].items()})}")
    C.log(f"[{n}] in-process latency and recall ({len(queries)} queries, 1 and {clients} clients)")
    out["in_process"] = in_process(path, fingerprint, queries, clients)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--quick", action="store_true", help="20k chunks, 1 run, 15 queries")
    ap.add_argument("--workdir", help="where to build the indexes (default: a temporary folder)")
    ap.add_argument("--out", help="result JSON (default benchmarks/results/open_latency.json)")
    ap.add_argument("--keep", help="build each index once into this folder and reuse it in later runs "
                                   "(a 1M build takes minutes; keep it outside the repository)")
    ap.add_argument("--keep-view", action="store_true", help="with --keep: reuse the persisted view too "
                                                             "(no view build time is measured)")
    ap.add_argument("--vectors", default="isotropic,clustered", help="isotropic, clustered or both (see build)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent client threads on one KnowledgeBase")
    ap.add_argument("--no-processes", action="store_true", help="skip the process start-to-first-hit figures")
    ap.add_argument("--scan-threads", type=int, help="threads of the exact int8 pass (default: the cores this "
                                                     "process may use, up to 4; 1 = the pass before it was split)")
    args = ap.parse_args(argv)
    if args.scan_threads is not None:
        from beleg.index import snapshot

        snapshot.SCAN_THREADS = args.scan_threads
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs, n_queries = (1, 15) if args.quick else (args.runs, args.queries)
    from beleg.backends.embedders import load_embedder

    fingerprint = load_embedder("e5-small").fingerprint
    from beleg.index import snapshot

    result: dict[str, Any] = {"benchmark": "open_latency", "machine": C.machine_info(),
                              "load_average_at_start": list(os.getloadavg()),
                              "int8_pass_threads": snapshot.SCAN_THREADS,
                              "filters": {"broad": FILTER_BROAD, "selective": FILTER_SELECTIVE + " (as tenant acme)"},
                              "data": __doc__.split("\n\n")[1].replace("\n", " "), "sizes": {}}
    kinds = args.vectors.split(",")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            for kind in kinds:
                key = str(n) if kind == "isotropic" else f"{n}-{kind}"
                result["sizes"][key] = run_size(root, n, fingerprint, runs, n_queries, kind,
                                                keep_view=bool(args.keep and args.keep_view),
                                                processes=not args.no_processes and kind == kinds[0],
                                                clients=args.clients)
                result["sizes"][key]["load_average_after"] = list(os.getloadavg())
    name = "open_latency_quick" if args.quick else "open_latency"
    target = Path(args.out) if args.out else C.RESULTS_DIR / f"{name}.json"
    if target.exists():  # sizes measured in earlier runs stay (each records its own machine and load)
        earlier = json.loads(target.read_text(encoding="utf-8"))
        for size, figures in earlier.get("sizes", {}).items():
            if size not in result["sizes"]:
                figures.setdefault("machine", earlier.get("machine"))
                result["sizes"][size] = figures
    for figures in result["sizes"].values():
        figures.setdefault("machine", result["machine"])
    path = C.write_result(name, result, target)
    C.log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
