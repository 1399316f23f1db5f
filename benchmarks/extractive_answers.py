"""Before/after figures for the extractive answerer (docs/benchmarks.md, "Extractive answers:
context, markup, language"): the demo gold set, the first N questions of each XQuAD dev
variant, and the ioBroker real docs (answers only; report, do not tune on it).

    python benchmarks/extractive_answers.py --out OUT.json [--xquad-limit 120] [--realdocs-cache DIR]

To compare two commits, run it once per commit with that commit's ``src`` first on
``PYTHONPATH`` (the output's "code" says which ``beleg`` ran). It keeps every answer text,
so the two runs can be compared answer by answer. The ioBroker corpus must have been
fetched first (benchmarks/realdocs_quality.py); give a copy of its index cache so runs of
different code do not write to the same index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import yaml

import beleg
from beleg.evaluate.answers import AnswerEvalReport
from beleg.evaluate.session import EvalRequest, evaluate_answers

ROOT = Path(__file__).resolve().parents[1]
XQUAD = ROOT / "tests" / "data" / "xquad"
REALDOCS_GOLD = ROOT / "benchmarks" / "realdocs" / "iobroker.gold.yaml"
KEYS = ("n", "answer_contains_gold", "false_refusal_rate", "citation_validity", "answers_verified",
        "refusal_precision", "refusal_recall", "conflict_detection", "governing_accuracy", "leaks")


def _summary(report: AnswerEvalReport) -> dict[str, object]:
    s = report.summary()
    return {k: s.get(k) for k in KEYS}


def _realdocs_groups(report: AnswerEvalReport) -> dict[str, object]:
    """Overall, per question type and per question language."""
    language = {q["id"]: q.get("language") for q in yaml.safe_load(REALDOCS_GOLD.read_text())["questions"]}
    groups: dict[str, list] = {"all": list(report.results)}
    for r in report.results:
        groups.setdefault(f"type:{r.type}", []).append(r)
        groups.setdefault(f"language:{language.get(r.qid)}", []).append(r)
    return {g: _summary(AnswerEvalReport(report.dataset, rs)) for g, rs in groups.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--xquad-limit", type=int, default=120)
    ap.add_argument("--realdocs-cache", type=Path, help="index cache for the ioBroker corpus (omit to skip it)")
    args = ap.parse_args()
    en, de = XQUAD / "xquad.dev.en.json", XQUAD / "xquad.dev.de.json"
    variants = [("Demo gold set", EvalRequest(gold=ROOT / "demo" / "gold.yaml"), None),
                ("XQuAD dev de", EvalRequest(squad=[de]), args.xquad_limit),
                ("XQuAD dev de→en", EvalRequest(squad=[en], queries_from=de), args.xquad_limit),
                ("XQuAD dev en", EvalRequest(squad=[en]), args.xquad_limit)]
    out: dict[str, object] = {"code": beleg.__file__}
    for label, req, limit in variants:
        t0 = time.time()
        report = evaluate_answers(replace(req, limit=limit, progress=False))
        out[label] = {**_summary(report), "seconds": round(time.time() - t0, 1),
                      "answers": {r.qid: r.answer for r in report.results}}
        print(label, json.dumps(_summary(report)), file=sys.stderr, flush=True)
    if args.realdocs_cache is not None:
        t0 = time.time()
        report = evaluate_answers(EvalRequest(gold=REALDOCS_GOLD, cache_dir=args.realdocs_cache, progress=False))
        out["ioBroker realdocs"] = {"groups": _realdocs_groups(report), "seconds": round(time.time() - t0, 1),
                                    "answers": {r.qid: r.answer for r in report.results}}
        print("ioBroker realdocs", json.dumps(out["ioBroker realdocs"]["groups"]["all"]), file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
