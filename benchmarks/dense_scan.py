"""The exact int8 pass of dense search on one core and split across the cores, next to the
machine's ceilings, measured in the same run.

The pass (``Snapshot._compact_search``) widens each block of int8 codes to float32 and
multiplies it by the query. At 1M chunks of 384 dimensions that is 384 MiB of codes. The
run reports for random codes (the data does not change the cost):

* the pass on one thread and through ``parallel_rows`` (the split the index uses), median
  of ``--repeats``;
* two ceilings: reading the codes once (a sum over them viewed as int64, a memory-read
  bound) and the float32 product on already-widened rows (BLAS sgemv, one thread);
* the CPU model and the vector features the kernels can use.

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


def measure(rows: int, dim: int, repeats: int) -> dict:
    from beleg.blas import one_blas_thread
    from beleg.index import snapshot

    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, size=(rows, dim), dtype=np.int8)
    scales = rng.random(rows, dtype=np.float32)
    query = rng.standard_normal(dim).astype(np.float32)
    out = np.empty(rows, dtype=np.float32)
    block = snapshot._CODE_BLOCK

    def score_rows(lo: int, hi: int) -> None:
        for a in range(lo, hi, block):
            b = min(a + block, hi)
            out[a:b] = (codes[a:b].astype(np.float32) @ query) * scales[a:b]

    def one_thread() -> None:
        with one_blas_thread():
            score_rows(0, rows)

    def split() -> None:
        with one_blas_thread():
            snapshot.parallel_rows(score_rows, rows)

    widened = codes[: min(rows, 250_000)].astype(np.float32)

    def sgemv() -> None:
        with one_blas_thread():
            widened @ query

    as_int64 = codes.reshape(-1).view(np.int64)
    result = {
        "rows": rows, "dim": dim, "codes_mib": round(codes.nbytes / 2**20, 1),
        "threads_used_by_split": snapshot._SCAN_THREADS if rows >= snapshot.PARALLEL_FROM else 1,
        "int8_pass_one_thread_ms": median_ms(one_thread, repeats),
        "int8_pass_split_ms": median_ms(split, repeats),
        "ceiling_read_codes_once_ms": median_ms(lambda: as_int64.sum(), repeats),
        "ceiling_sgemv_float32_ms_per_1M_rows": round(median_ms(sgemv, repeats) * 1_000_000 / len(widened), 2),
    }
    np.testing.assert_allclose(out[:10], (codes[:10].astype(np.float32) @ query) * scales[:10], rtol=1e-5)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1000000,100000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", help="result JSON (default benchmarks/results/dense_scan.json)")
    args = ap.parse_args()
    from beleg.backends.embedders.e5_int8 import cpu_features

    result = {"benchmark": "dense_scan", "machine": C.machine_info(), "cpu_features": sorted(cpu_features()),
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
