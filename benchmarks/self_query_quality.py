"""Self-query on vs off: hybrid retrieval on the demo gold set, overall and per question type.

One command: ``python benchmarks/self_query_quality.py`` (add ``--index DIR`` to reuse an
index of demo/corpus; the default is the cached eval index) writes
``benchmarks/results/self_query_quality.json`` and prints a Markdown table. Both
configurations are ``KnowledgeBase.search(mode="hybrid")``; the second passes
``self_query=False``. Nothing here is tuned on these figures: the rules are fixed.

``--llm SPEC`` adds a third configuration: the LLM self-query (``kb.infer_constraints(q,
llm=...)``, the model's proposals checked against the visible values and merged with the
rules), e.g. ``--llm local:PATH.gguf --threads 1``. The JSON then also counts the pass's
outcomes (used, invalid JSON, failed) and the constraints it added or had rejected.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

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
    parser.add_argument("--llm", metavar="SPEC", help="also measure the LLM self-query with this model "
                        "(e.g. local:PATH.gguf, openai-compatible:MODEL with --llm-base-url)")
    parser.add_argument("--llm-base-url", metavar="URL")
    parser.add_argument("--threads", type=int, help="CPU threads of a local model")
    parser.add_argument("--types", metavar="T,T", help="only the questions of these types (e.g. version-specific, "
                        "multi-part, german: where self-query matters), for a slow model")
    args = parser.parse_args()
    dataset = load_gold(ROOT / "demo" / "gold.yaml")
    if args.types:
        wanted = {t.strip() for t in args.types.split(",")}
        dataset = replace(dataset, queries=[q for q in dataset.queries if str(q.info.get("type")) in wanted])
    kb = KnowledgeBase(args.index, create=False) if args.index else prepare_index(dataset, progress=False)
    configs, llm_spec = list(CONFIGS), None
    searched: Any = kb
    if args.llm:
        from beleg.backends.llms import load_llm

        options = {k: v for k, v in {"base_url": args.llm_base_url, "threads": args.threads}.items() if v is not None}
        llm = load_llm(args.llm, **options)
        llm_spec = llm.name
        searched = _LLMSelfQuery(kb, llm)
        configs.append(EvalConfig("hybrid + llm self-query", {"mode": "hybrid", "self_query": "llm"},
                                  f"--self-query llm --llm {args.llm}"))
    t0 = time.perf_counter()
    try:
        report = run_eval(searched, dataset, configs, k=10, progress=False)
    finally:
        kb.close()
    seconds = time.perf_counter() - t0
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
    out: dict[str, Any] = {"dataset": report.dataset, "types": args.types, "results": table,
                           "seconds": round(seconds, 1),
                           "loadavg": [round(x, 2) for x in os.getloadavg()]}
    if isinstance(searched, _LLMSelfQuery):
        out["llm"] = {"spec": llm_spec, **searched.summary()}
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    names = list(table)
    lines = ["| question type | n | " + " | ".join(f"{n} {m}" for n in names for m in METRICS[:2]) + " |",
             "|---|---:|" + "---:|" * (2 * len(names))]
    for group in ["all", *sorted(g for g in table[names[0]] if g != "all")]:
        cells = [f"{table[n][group][m]:.3f}" for n in names for m in METRICS[:2]]
        lines.append(f"| {group} | {int(table[names[0]][group]['n'])} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    if "llm" in out:
        print(json.dumps(out["llm"], indent=2))
    return 0


class _LLMSelfQuery:
    """The index, with ``search(..., self_query="llm")`` running the LLM self-query first; the
    rest of the knowledge base is passed through. Counts what the LLM pass did."""

    def __init__(self, kb: KnowledgeBase, llm: Any) -> None:
        self._kb, self._llm = kb, llm
        self.outcomes: Counter[str] = Counter()
        self.added: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kb, name)

    def search(self, query: str, **kwargs: Any) -> Any:
        if kwargs.get("self_query") == "llm":
            t0 = time.perf_counter()
            inferred = self._kb.infer_constraints(query, kwargs.get("principal"), filters=kwargs.get("filters"),
                                                  llm=self._llm)
            self.seconds.append(time.perf_counter() - t0)
            self.outcomes[inferred.llm.reason or inferred.llm.outcome] += 1
            self.added.update(c.key for c in inferred.constraints if c.origin == "llm" and c.status == "applied")
            self.rejected.update(r.field or "(reply)" for r in inferred.llm.rejected)
            kwargs["self_query"] = inferred
        return self._kb.search(query, **kwargs)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.seconds)
        return {"calls": len(ordered), "outcomes": dict(self.outcomes), "added_by_llm": dict(self.added),
                "rejected": dict(self.rejected),
                "seconds_p50": round(ordered[len(ordered) // 2], 2) if ordered else None}


if __name__ == "__main__":
    sys.exit(main())
