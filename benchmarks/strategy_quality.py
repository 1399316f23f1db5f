"""Retrieval strategies side by side on the demo gold set, with their cost.

One command: ``python benchmarks/strategy_quality.py`` writes
``benchmarks/results/strategy_quality.json`` and prints the Markdown tables of
docs/strategies-results.md. It equals
``beleg eval --gold demo/gold.yaml --strategies hybrid,rewrite,... --json``. Offline (no LLM
configured) every strategy runs its offline method; ``hyde`` and ``agent`` have none and
are reported as skipped. Pass ``--llm PROVIDER:MODEL`` to measure the LLM methods.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from beleg.evaluate.session import EvalRequest, evaluate

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = "hybrid,rewrite,multi-query,hyde,decompose,multi-hop,iterative,auto,graph,agent"
COLUMNS = (("hit@1", "Hit@1"), ("hit@5", "Hit@5"), ("ndcg@10", "nDCG@10"), ("recall@10", "Recall@10"),
           ("llm_calls_mean", "LLM calls"), ("rounds_mean", "rounds"), ("latency_ms_p50", "p50 ms"),
           ("latency_ms_p95", "p95 ms"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "strategy_quality.json")
    parser.add_argument("--strategies", default=STRATEGIES)
    parser.add_argument("--llm", help="PROVIDER:MODEL for the LLM methods (default: offline)")
    args = parser.parse_args()
    llm = None
    if args.llm:
        from beleg.backends.llms import load_llm

        llm = load_llm(args.llm)
    t0 = time.time()
    report = evaluate(EvalRequest(gold=ROOT / "demo" / "gold.yaml", strategies=args.strategies, llm=llm,
                                  progress=False))
    data = report.to_json()
    data["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    names = list(data["results"])
    lines = ["| strategy | " + " | ".join(label for _, label in COLUMNS) + " |",
             "|---|" + "---:|" * len(COLUMNS)]
    for name, m in data["results"].items():
        cells = [f"{m[key]:.0f}" if key.startswith("latency") else f"{m[key]:.3f}" if "@" in key
                 else f"{m.get(key, 0):.2f}" for key, _ in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    by_type = data.get("by_type", {})
    for metric in ("ndcg@10", "hit@1"):
        lines += ["", f"**{metric} by question type**", "",
                  "| type | n | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
        for qtype, first in by_type.get(names[0], {}).items():
            row = [f"{by_type[n][qtype][metric]:.3f}" if qtype in by_type.get(n, {}) else "–" for n in names]
            lines.append(f"| {qtype} | {int(first['n'])} | " + " | ".join(row) + " |")
    if data.get("notes"):
        lines += ["", *(f"* {note}" for note in data["notes"])]
    print("\n".join(lines))
    print(f"({data['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
