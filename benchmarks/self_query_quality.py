"""Self-query on vs off: hybrid retrieval on the demo gold set, overall and per question type.

One command: ``python benchmarks/self_query_quality.py`` (add ``--index DIR`` to reuse an
index of demo/corpus; the default is the cached eval index) writes
``benchmarks/results/self_query_quality.json`` and prints a Markdown table. Both
configurations are ``KnowledgeBase.search(mode="hybrid")``; the second passes
``self_query=False``. Nothing here is tuned on these figures: the rules are fixed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from beleg.evaluate.datasets import load_gold
from beleg.evaluate.runner import EvalConfig, prepare_index, run_eval
from beleg.kb import KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [EvalConfig("hybrid + self-query", {"mode": "hybrid"}, "default: self-query on"),
           EvalConfig("hybrid, words only", {"mode": "hybrid", "self_query": False}, "--no-self-query")]
METRICS = ("hit@1", "ndcg@10", "recall@10")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, help="an existing index of demo/corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "self_query_quality.json")
    args = parser.parse_args()
    dataset = load_gold(ROOT / "demo" / "gold.yaml")
    kb = KnowledgeBase(args.index, create=False) if args.index else prepare_index(dataset, progress=False)
    try:
        report = run_eval(kb, dataset, CONFIGS, k=10, progress=False)
    finally:
        kb.close()
    answerable = set(report.answerable)
    types = {q.qid: str(q.info.get("type", "?")) for q in report.queries if q.qid in answerable}
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, result in report.results.items():
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for qid, qtype in types.items():
            groups["all"].append(result.queries[qid].metrics)
            groups[qtype].append(result.queries[qid].metrics)
        table[name] = {g: {m: sum(x.get(m, 0.0) for x in rows) / len(rows) for m in METRICS} | {"n": len(rows)}
                       for g, rows in groups.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"dataset": report.dataset, "results": table}, indent=2) + "\n", encoding="utf-8")
    names = list(table)
    lines = ["| question type | n | " + " | ".join(f"{n} {m}" for n in names for m in METRICS[:2]) + " |",
             "|---|---:|" + "---:|" * (2 * len(names))]
    for group in ["all", *sorted(g for g in table[names[0]] if g != "all")]:
        cells = [f"{table[n][group][m]:.3f}" for n in names for m in METRICS[:2]]
        lines.append(f"| {group} | {int(table[names[0]][group]['n'])} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
