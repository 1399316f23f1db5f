"""The exact int8 pass of dense search with each kernel, on one core and split across the
cores, next to the machine's ceilings, measured in the same run.

The pass (``Snapshot._compact_search``) scores int8 codes against the query with one of two
kernels (:mod:`beleg.index.int8_pass`): ``numpy`` widens each block to float32 and
multiplies (sgemv); ``simsimd`` multiplies int8 by an int8 query in SIMD code chosen for
this CPU. At 1M chunks of 384 dimensions that is 384 MiB of codes. The run reports, for
random codes (the data does not change the cost):

* per kernel, the pass on one thread and through ``parallel_rows`` (the split the index
  uses), median of ``--repeats``; and simsimd's product alone at each instruction-set level
  this CPU has (so one run also shows what an AVX2-only machine gets);
* choosing the candidates for exact re-scoring from the pass's scores: ``np.argpartition``
  (before) and ``snapshot.best_positions`` (a sampled cut, now);
* two ceilings: reading the codes once (a sum over them viewed as int64, a memory-read
  bound) and the float32 product on already-widened rows (BLAS sgemv, one thread);
* the CPU model, the vector features and the simsimd kernels this machine has.

    python benchmarks/dense_scan.py                 # 1M and 100k rows
    python benchmarks/dense_scan.py --rows 1000000 --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402


def median_ms(fn, repeats: int) -> float:
    fn()  # warm: page in, pool started
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(1000 * statistics.median(times), 2)


def by_capability(codes: np.ndarray, query: np.ndarray, repeats: int) -> dict[str, float]:
    """simsimd's int8 dot product over ``codes`` (one thread) at each instruction-set level this
    CPU has, best first, down to ``serial`` (plain C): what a machine with only AVX2 (``haswell``)
    would get from the same wheel. Every level is enabled again afterwards."""
    import simsimd

    from beleg.index.int8_pass import simsimd_levels

    levels = simsimd_levels()
    out: dict[str, float] = {}
    try:
        for name in [*levels, "serial"]:
            out[name] = median_ms(lambda: simsimd.cdist(query, codes, metric="dot", out_dtype="float32"), repeats)
            if name != "serial":
                simsimd.disable_capability(name)
    finally:
        for name in levels:
            simsimd.enable_capability(name)
    return out


def measure(rows: int, dim: int, repeats: int) -> dict:
    from beleg.blas import one_blas_thread
    from beleg.index import int8_pass, snapshot

    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, size=(rows, dim), dtype=np.int8)
    scales = rng.random(rows, dtype=np.float32)
    query = rng.standard_normal(dim).astype(np.float32)
    out = np.empty(rows, dtype=np.float32)
    block = snapshot._CODE_BLOCK
    result: dict = {"rows": rows, "dim": dim, "codes_mib": round(codes.nbytes / 2**20, 1),
                    "threads_used_by_split": snapshot.SCAN_THREADS if rows >= snapshot.PARALLEL_FROM else 1,
                    "kernels": {}}
    chosen = int8_pass.KERNEL
    try:
        for kernel in ("numpy", "simsimd"):
            int8_pass.KERNEL = kernel
            prepared = int8_pass.prepare(query)

            def score_rows(lo: int, hi: int, prepared=prepared) -> None:
                for a in range(lo, hi, block):
                    b = min(a + block, hi)
                    int8_pass.score(codes[a:b], scales[a:b], prepared, out[a:b])

            def one_thread(score_rows=score_rows) -> None:
                with one_blas_thread():
                    score_rows(0, rows)

            def split(score_rows=score_rows) -> None:
                with one_blas_thread():
                    snapshot.parallel_rows(score_rows, rows)

            result["kernels"][kernel] = {"int8_pass_one_thread_ms": median_ms(one_thread, repeats),
                                         "int8_pass_split_ms": median_ms(split, repeats)}
            want = (codes[:10].astype(np.float32) @ query) * scales[:10]
            np.testing.assert_allclose(out[:10], want, rtol=0.02, atol=0.02 * np.abs(want).max())
        result["simsimd_one_thread_ms_by_capability"] = by_capability(codes, prepared.values, repeats)
    finally:
        int8_pass.KERNEL = chosen
    keep = 400  # the candidates kept for k = 50 (8 per hit)
    result["candidates_argpartition_ms"] = median_ms(lambda: np.argpartition(-out, keep - 1)[:keep], repeats)
    result["candidates_best_positions_ms"] = median_ms(lambda: snapshot.best_positions(out, keep), repeats)
    widened = codes[: min(rows, 250_000)].astype(np.float32)

    def sgemv() -> None:
        with one_blas_thread():
            widened @ query

    as_int64 = codes.reshape(-1).view(np.int64)
    result["ceiling_read_codes_once_ms"] = median_ms(lambda: as_int64.sum(), repeats)
    result["ceiling_sgemv_float32_ms_per_1M_rows"] = round(median_ms(sgemv, repeats) * 1_000_000 / len(widened), 2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1000000,100000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", help="result JSON (default benchmarks/results/dense_scan.json)")
    args = ap.parse_args()
    from beleg.backends.embedders.e5_int8 import cpu_features
    from beleg.index import int8_pass

    result = {"benchmark": "dense_scan", "machine": C.machine_info(), "cpu_features": sorted(cpu_features()),
              "int8_kernel_default": int8_pass.describe(),
              "load_average_at_start": list(os.getloadavg()), "sizes": []}
    for rows in (int(r) for r in args.rows.split(",")):
        figures = measure(rows, args.dim, args.repeats)
        C.log(str(figures))
        result["sizes"].append(figures)
    result["load_average_at_end"] = list(os.getloadavg())
    path = C.write_result("dense_scan", result, args.out)
    C.log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
