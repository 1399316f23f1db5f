"""Start-up of a ``beleg search --mode bm25`` process: wall, CPU and peak RSS, median of N.

The index is written as ``open_latency.py`` writes it (synthetic chunks through the
catalog API, the persisted view built); ``--keep DIR`` builds it once there and reuses it.
Each run is a fresh ``python -m beleg search QUERY --mode bm25`` (GNU time), page cache
warm. With ``--against REV`` the same commands also run on the ``src/`` of that git
revision (extracted with ``git archive``, put first on ``PYTHONPATH``), one old and one new
process in turn, so both see the same machine load: on a shared machine the difference
is the figure to read, the absolute times only on an idle one.

    python benchmarks/startup_latency.py --chunks 100000 --keep /tmp/beleg-startup --against HEAD~3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as C
import open_latency

ROOT = Path(__file__).resolve().parent.parent


def index_at(keep: Path | None, chunks: int) -> tuple[Path, str]:
    """The index (built unless ``keep`` holds one) and a query that matches in it."""
    import beleg
    from beleg.backends.embedders import load_embedder
    from beleg.index import persisted_view

    root = keep or Path(tempfile.mkdtemp(prefix="beleg-startup-"))
    path, query_file = root / f"index-{chunks}", root / f"index-{chunks}.query"
    if not (path.is_dir() and query_file.exists()):
        C.log(f"writing {chunks} synthetic chunks into {path}")
        built = open_latency.build(C.fresh_dir(path), chunks, load_embedder("e5-small").fingerprint)
        with beleg.open(path) as kb:
            persisted_view.refresh(kb.catalog, kb.path)
        query_file.write_text(open_latency.make_queries(built, 1, seed=5)[0][0], encoding="utf-8")
    return path, query_file.read_text(encoding="utf-8")


def source_of(rev: str, into: Path) -> Path:
    """``src/`` of git revision ``rev``, extracted under ``into``."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_once(cmd: Sequence[str], src: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    sample = open_latency.timed_process(cmd, env)
    if cmd[-1] == "bm25" and not sample["stdout"].strip():
        raise RuntimeError(f"{' '.join(cmd)} printed no hit")
    return {k: sample[k] for k in ("wall_s", "cpu_s", "peak_rss_mib")}


def medians(samples: list[dict[str, float]]) -> dict[str, Any]:
    return {f"{k}_median": C.rnd(statistics.median(s[k] for s in samples), 3) for k in samples[0]} | {
        "wall_s_runs": [s["wall_s"] for s in samples]}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="build the index here once and reuse it")
    ap.add_argument("--against", metavar="REV", help="also time the src/ of this git revision, interleaved")
    ap.add_argument("--out", help="result JSON (default benchmarks/results/startup_latency.json)")
    args = ap.parse_args(argv)
    path, query = index_at(args.keep, args.chunks)
    commands = {"python_import_beleg": [sys.executable, "-c", "import beleg"],
                "bm25": [sys.executable, "-m", "beleg", "search", query, "--index", str(path), "-k", "10",
                         "--no-self-query", "--mode", "bm25"],
                "bm25_self_query": [sys.executable, "-m", "beleg", "search", query, "--index", str(path), "-k",
                                    "10", "--mode", "bm25"]}
    result: dict[str, Any] = {"benchmark": "startup_latency", "machine": C.machine_info(), "chunks": args.chunks,
                              "runs": args.runs, "load_average_at_start": list(os.getloadavg()), "figures": {}}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"this tree": ROOT / "src"}
        if args.against:
            sources[args.against] = source_of(args.against, Path(tmp))
        for name, cmd in commands.items():
            samples: dict[str, list[dict[str, float]]] = {label: [] for label in sources}
            for src in sources.values():
                run_once(cmd, src)  # warm the page cache and the bytecode caches
            for _ in range(args.runs):
                for label, src in sources.items():
                    samples[label].append(run_once(cmd, src))
            result["figures"][name] = {label: medians(s) for label, s in samples.items()}
            C.log(f"{name}: {result['figures'][name]}")
    result["load_average_at_end"] = list(os.getloadavg())
    C.write_result("startup_latency", result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
