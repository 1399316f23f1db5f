"""Retrieval quality on XQuAD dev (en, de, cross-lingual, mixed) and the demo gold set.

One command: ``python benchmarks/retrieval_quality.py`` writes
``benchmarks/results/retrieval_quality.json`` and prints a Markdown table (the one in
docs/benchmarks.md). Each variant is the same as a ``beleg eval`` call, e.g.
``beleg eval --squad xquad.dev.en.json --queries-from xquad.dev.de.json --modes ...``.
Indexes and paragraph embeddings are cached under ~/.cache/beleg, so reruns only
embed the queries.

XQuAD dev is the half of XQuAD this project may tune on (the other half is held out):
the figures below are development figures, not an independent test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from beleg.evaluate.session import EvalRequest, evaluate

XQUAD = Path(os.environ.get("BELEG_XQUAD_DIR", Path(__file__).resolve().parents[1] / "tests" / "data" / "xquad"))
ROOT = Path(__file__).resolve().parents[1]
MODES = "dense,bm25,hybrid,hybrid-weighted,hybrid-mmr"


def variants() -> list[tuple[str, EvalRequest]]:
    en, de = XQUAD / "xquad.dev.en.json", XQUAD / "xquad.dev.de.json"
    return [
        ("XQuAD en (en questions, en paragraphs)", EvalRequest(squad=[en], modes=MODES)),
        ("XQuAD de (de questions, de paragraphs)", EvalRequest(squad=[de], modes=MODES)),
        ("XQuAD de→en (de questions, en paragraphs)", EvalRequest(squad=[en], queries_from=de, modes=MODES)),
        ("XQuAD en→de (en questions, de paragraphs)", EvalRequest(squad=[de], queries_from=en, modes=MODES)),
        ("XQuAD mixed, en questions (en+de paragraphs)", EvalRequest(squad=[en, de], queries_from=en, modes=MODES)),
        ("XQuAD mixed, de questions (en+de paragraphs)", EvalRequest(squad=[en, de], queries_from=de, modes=MODES)),
        ("Demo gold set (demo/gold.yaml, document level)", EvalRequest(gold=ROOT / "demo" / "gold.yaml", modes=MODES)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_quality.json")
    parser.add_argument("--limit", type=int, help="only the first N queries per variant (smoke run)")
    args = parser.parse_args()
    results, lines = {}, []
    header = "| data | config | Hit@1 | Hit@5 | MRR@10 | nDCG@10 | Recall@10 | p50 ms |"
    lines += [header, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, req in variants():
        t0 = time.time()
        report = evaluate(replace(req, limit=args.limit, progress=False))
        data = report.to_json()
        data["seconds"] = round(time.time() - t0, 1)
        results[label] = data
        for name, m in data["results"].items():
            lines.append(f"| {label} | {name} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['mrr@10']:.3f} | "
                         f"{m['ndcg@10']:.3f} | {m['recall@10']:.3f} | {m['latency_ms_p50']:.1f} |")
        print(f"{label}: done in {data['seconds']} s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
