"""Single-query embedding latency, warm: p50 wall and CPU per query for the e5 engines.

A few seconds per engine (no corpus): the figure behind docs/benchmarks.md's query-latency
notes. The load average is printed with each line because on a shared machine it moves the
wall time far more than the engine does.

    python benchmarks/query_latency.py                      # e5-small and e5-small-int8
    python benchmarks/query_latency.py --engines e5-small --repeats 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from beleg.backends.embedders import load_embedder

QUERIES = ["how do I reset the relay redrive counter", "Wie setze ich den Zähler zurück?", "timeout",
           "what changed in version 2.4 of the billing API for invoices"]


def measure(spec: str, repeats: int) -> dict[str, float]:
    embedder = load_embedder(spec)
    for query in QUERIES:  # warm: weights loaded, caches and thread pools started
        embedder.embed_queries([query])
    wall, cpu = [], []
    for i in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        embedder.embed_queries([QUERIES[i % len(QUERIES)]])
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"wall_ms": 1000 * statistics.median(wall), "cpu_ms": 1000 * statistics.median(cpu),
            "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", default=["e5-small", "e5-small-int8"])
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    for spec in args.engines:
        r = measure(spec, args.repeats)
        print(f"{spec}: query p50 wall {r['wall_ms']:.1f} ms, CPU {r['cpu_ms']:.1f} ms (load average {r['load']:.1f})")


if __name__ == "__main__":
    main()
