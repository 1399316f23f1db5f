"""Per-question outcomes of the offline extractive answerer, for a before/after comparison.

For each question of XQuAD dev (en, de, de→en; all 632 of each by default) and the demo
gold set: whether the candidate answer (given, or withheld below ``min_confidence``)
contains a gold string, whether it was refused or withheld, ``supported`` and
``confidence``. Run once per side with that side's code first on the path, then compare:

    PYTHONPATH=/path/to/before/src python benchmarks/answer_choice_ab.py before.json
    python benchmarks/answer_choice_ab.py after.json
    python benchmarks/answer_choice_ab.py --compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_quality import variants  # noqa: E402


def run(out: Path, limit: int | None) -> None:
    from beleg.evaluate.session import evaluate_answers

    result: dict[str, dict[str, dict]] = {}
    for label, req in variants():
        if "ioBroker" in label:  # needs its fetched corpus (benchmarks/realdocs_quality.py)
            continue
        t = time.time()
        report = evaluate_answers(replace(req, limit=limit if label.startswith("XQuAD") else None, progress=False))
        result[label] = {r.qid: {"cc": r.candidate_correct, "conf": r.confidence, "ref": r.refused,
                                 "exp": r.expected_refusal, "sup": r.supported, "type": r.type}
                         for r in report.results}
        print(f"{label}: {time.time() - t:.0f} s", file=sys.stderr, flush=True)
        out.write_text(json.dumps(result, indent=0, ensure_ascii=False))


def summary(side: dict[str, dict]) -> dict[str, float | int]:
    answerable = [v for v in side.values() if not v["exp"]]
    answered = [v for v in side.values() if not v["ref"]]
    return {"candidate_right": sum(bool(v["cc"]) for v in answerable), "answerable": len(answerable),
            "answered": len(answered),
            "accuracy_of_answered": round(sum(bool(v["cc"]) for v in answered) / max(1, len(answered)), 4),
            "supported_but_wrong": sum(bool(v["sup"]) and not v["cc"] for v in answered)}


def compare(before: dict, after: dict) -> dict:
    out = {}
    for label, a in before.items():
        b = after.get(label, {})
        out[label] = {"before": summary(a), "after": summary(b),
                      "changed": [q for q in a if q in b and (bool(a[q]["cc"]) != bool(b[q]["cc"])
                                                              or a[q]["ref"] != b[q]["ref"])]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", type=Path, help="where to write this side's per-question outcomes")
    ap.add_argument("--limit", type=int, help="only the first N questions of each XQuAD variant")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        print(json.dumps(compare(before, after), indent=1, ensure_ascii=False))
        return 0
    if args.out is None:
        ap.error("name the output file, or --compare BEFORE AFTER")
    run(args.out, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
