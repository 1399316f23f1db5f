"""Answer quality of the offline extractive answerer on XQuAD dev and the demo gold set.

One command: ``python benchmarks/answer_quality.py`` writes
``benchmarks/results/answer_quality.json`` and prints a Markdown table (the one in
docs/benchmarks.md, "Answers"). Each variant equals a ``beleg eval --answers`` call, e.g.
``beleg eval --answers --squad xquad.dev.de.json``.

Metrics (definitions in docs/answer-evaluation.md): share of answers containing a gold
answer string (XQuAD: any of the annotators' spans; demo: the gold `answer` strings),
share refused, citation validity (citations whose quote is at its offsets in the cited
document), refusal precision/recall on the demo's unanswerable questions, conflict
detection and governing accuracy on its conflict questions, permission leaks.

The refusal thresholds, sentence-score weights and the confidence model
(benchmarks/fit_confidence.py: demo gold set and XQuAD dev en) were chosen on these same
sets (XQuAD dev is the tuning half of XQuAD), so these are development figures. Coverage is
the share of questions answered at the default ``min_confidence``; accuracy of answered
counts an answer to an unanswerable question as wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from beleg.evaluate.session import EvalRequest, evaluate_answers

XQUAD = Path(os.environ.get("BELEG_XQUAD_DIR", Path(__file__).resolve().parents[1] / "tests" / "data" / "xquad"))
ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("answer_contains_gold", "false_refusal_rate", "citation_validity", "answers_verified",
           "answers_supported", "supported_but_wrong", "confidence_ece", "refusal_precision", "refusal_recall",
           "conflict_detection", "governing_accuracy", "leaks")


def variants() -> list[tuple[str, EvalRequest]]:
    en, de = XQUAD / "xquad.dev.en.json", XQUAD / "xquad.dev.de.json"
    return [
        ("XQuAD dev en", EvalRequest(squad=[en])),
        ("XQuAD dev de", EvalRequest(squad=[de])),
        ("XQuAD dev de→en (de questions, en paragraphs)", EvalRequest(squad=[en], queries_from=de)),
        ("Demo gold set", EvalRequest(gold=ROOT / "demo" / "gold.yaml")),
        # Held out: never used to fit or tune anything; the cached index of realdocs_quality.py.
        ("ioBroker realdocs (held out)", EvalRequest(gold=ROOT / "benchmarks" / "realdocs" / "iobroker.gold.yaml",
                                                     cache_dir=ROOT / ".cache" / "realdocs" / "eval")),
    ]


def evidence_refusals(results: list) -> dict:
    """Refusal precision/recall counting only the refusals made from the evidence (no source
    mentions the question's anchors, the version is not covered, nothing scores), not the
    answers withheld below ``min_confidence`` (those still show their closest passages)."""
    hard = [r for r in results if r.refused and r.confidence is None]
    tp = sum(r.expected_refusal for r in hard)
    expected = sum(r.expected_refusal for r in results)
    return {"evidence_refusals": len(hard), "withheld_low_confidence": sum(r.refused for r in results) - len(hard),
            "evidence_refusal_precision": tp / len(hard) if hard else None,
            "evidence_refusal_recall": tp / expected if expected else None,
            "load": os.getloadavg()}


def _cell(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "answer_quality.json")
    parser.add_argument("--limit", type=int, help="only the first N questions per variant (smoke run)")
    parser.add_argument("--xquad-limit", type=int, help="only the first N questions of each XQuAD variant")
    parser.add_argument("--only", help="run only the variants whose label contains this text")
    args = parser.parse_args()
    results, lines = {}, []
    lines.append("| data | n | " + " | ".join(COLUMNS) + " | coverage | accuracy of answered "
                 "| evidence refusal P / R | p50 s |")
    lines.append("|---|---:|" + "---:|" * (len(COLUMNS) + 4))
    for label, req in variants():
        if args.only and args.only not in label:
            continue
        if label == "ioBroker realdocs (held out)" and not (ROOT / ".cache" / "realdocs" / "iobroker").is_dir():
            print(f"{label}: skipped (run benchmarks/realdocs_quality.py first to fetch its corpus)", file=sys.stderr)
            continue
        t0 = time.time()
        limit = args.xquad_limit if label.startswith("XQuAD") and args.xquad_limit else args.limit
        report = evaluate_answers(replace(req, limit=limit, progress=False))
        data = report.to_json(per_query=False)
        data["seconds"] = round(time.time() - t0, 1)
        results[label] = data
        s = report.summary()
        answered = [r for r in report.results if not r.refused and r.candidate_correct is not None]
        accuracy = sum(bool(r.candidate_correct) for r in answered) / len(answered) if answered else None
        data["selective"] = {"coverage": 1 - s["refused"] / s["n"] if s["n"] else None,
                             "accuracy_of_answered": accuracy, **evidence_refusals(report.results)}
        lines.append(f"| {label} | {s['n']} | " + " | ".join(_cell(s.get(c)) for c in COLUMNS)
                     + f" | {_cell(data['selective']['coverage'])} | {_cell(accuracy)}"
                     + f" | {_cell(data['selective']['evidence_refusal_precision'])} / "
                     + f"{_cell(data['selective']['evidence_refusal_recall'])}"
                     + f" | {_cell(s.get('latency_p50_s'))} |")
        print(f"{label}: done in {data['seconds']} s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
