"""Fit the answer confidence model (beleg.answer.support) on DEVELOPMENT data only.

One command: ``python benchmarks/fit_confidence.py`` answers every question of the demo
gold set and XQuAD dev en with the offline extractive answerer (``min_confidence=0``, so
every candidate is kept), records each candidate's support features and whether it is
right (contains a gold string; any answer to an unanswerable question is wrong), fits a
logistic model with non-negative weights (so the confidence is monotone in every
feature), and picks the lowest threshold at which answered questions are >= 90 % right
on each development set. It prints the constants to paste into
``src/beleg/answer/support.py`` and writes ``benchmarks/results/confidence_fit.json``.

The ioBroker realdocs set (benchmarks/realdocs) is the held-out outside set: it is never
read here. ``--features FILE`` refits from the features a previous run saved.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from beleg.answer.answerer import AnswerOptions
from beleg.answer.support import CONFIDENCE_WEIGHTS
from beleg.evaluate.answers import expects_refusal, score_answer
from beleg.evaluate.runner import _principal
from beleg.evaluate.selective import Outcome, curve_point, expected_calibration_error
from beleg.evaluate.session import EvalRequest, load_dataset, prepare_index

ROOT = Path(__file__).resolve().parents[1]
XQUAD = ROOT / "tests" / "data" / "xquad"
DEV_SETS = {"demo gold set": EvalRequest(gold=ROOT / "demo" / "gold.yaml"),
            "XQuAD dev en": EvalRequest(squad=[XQUAD / "xquad.dev.en.json"])}
FEATURES = tuple(CONFIDENCE_WEIGHTS)
TARGET_ACCURACY = 0.90
L2 = 0.01


def collect(label: str, req: EvalRequest, limit: int | None) -> list[dict]:
    """One row per question: its features (None without a candidate) and correctness."""
    dataset = load_dataset(req)
    if limit:
        dataset.queries = dataset.queries[:limit]
    kb = prepare_index(dataset, None, progress=False)
    rows = []
    try:
        for i, q in enumerate(dataset.queries):
            if i % 50 == 0:
                print(f"{label}: {i}/{len(dataset.queries)}", file=sys.stderr, flush=True)
            answer = kb.ask(q.text, principal=_principal(q), filters=q.info.get("filters"),
                            context=tuple(q.info.get("context") or ()), options=AnswerOptions(min_confidence=0.0))
            r = score_answer(q, answer, expected_refusal=expects_refusal(dataset, q))
            if r.candidate_correct is None:
                continue
            features = answer.support.features if answer.support is not None and not answer.refused else None
            rows.append({"set": label, "qid": q.qid, "features": features, "correct": r.candidate_correct,
                         "unanswerable": r.expected_refusal})
    finally:
        kb.close()
    return rows


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, steps: int = 20000, lr: float = 0.5) -> tuple[float, np.ndarray]:
    """Weighted logistic regression, weights projected onto >= 0 (monotone), by gradient descent."""
    b, coef = 0.0, np.zeros(x.shape[1])
    w = w / w.sum()
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(b + x @ coef)))
        g = w * (p - y)
        b -= lr * g.sum()
        coef = np.maximum(0.0, coef - lr * (x.T @ g + L2 * coef))
    return b, coef


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=Path, help="refit from this saved features file")
    parser.add_argument("--xquad-limit", type=int, default=300,
                        help="only the first N XQuAD dev en questions (default 300; 0 = all 632)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "confidence_fit.json")
    args = parser.parse_args()
    if args.features:
        rows = json.loads(args.features.read_text(encoding="utf-8"))["rows"]
    else:
        rows = [row for label, req in DEV_SETS.items()
                for row in collect(label, req, args.xquad_limit if label.startswith("XQuAD") else None)]
    cand = [r for r in rows if r["features"] is not None]
    x = np.array([[r["features"].get(f, 0.0) for f in FEATURES] for r in cand])
    y = np.array([float(r["correct"]) for r in cand])
    # Each development set weighs the same, so XQuAD's 600 questions do not drown the demo's.
    sizes = {s: sum(r["set"] == s for r in cand) for s in DEV_SETS}
    w = np.array([1.0 / sizes[r["set"]] for r in cand])
    b, coef = fit(x, y, w)
    conf = 1 / (1 + np.exp(-(b + x @ coef)))
    for r, c in zip(cand, conf):
        r["confidence"] = float(c)
    per_set = {}
    thresholds = [round(0.01 * i, 2) for i in range(100)]
    chosen = None
    for t in thresholds:  # the lowest threshold meeting the target on every development set
        ok = True
        for s in DEV_SETS:
            outs = [Outcome(r.get("confidence"), r["correct"], r["unanswerable"]) for r in rows if r["set"] == s]
            acc = curve_point(outs, t)["accuracy"]
            ok = ok and acc is not None and acc >= TARGET_ACCURACY
        if ok:
            chosen = t
            break
    for s in DEV_SETS:
        outs = [Outcome(r.get("confidence"), r["correct"], r["unanswerable"]) for r in rows if r["set"] == s]
        answered = [r for r in rows if r["set"] == s and r.get("confidence") is not None]
        per_set[s] = {"at_0": curve_point(outs, 0.0), "at_threshold": curve_point(outs, chosen or 0.0),
                      "ece": expected_calibration_error([r["confidence"] for r in answered],
                                                        [r["correct"] for r in answered])}
    result = {"intercept": round(float(b), 4), "weights": {f: round(float(c), 4) for f, c in zip(FEATURES, coef)},
              "threshold": chosen, "target_accuracy": TARGET_ACCURACY, "per_set": per_set, "load": os.getloadavg(),
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"CONFIDENCE_INTERCEPT = {result['intercept']}")
    print(f"CONFIDENCE_WEIGHTS = {result['weights']}")
    print(f"FITTED_MIN_CONFIDENCE = {chosen}")
    print(json.dumps(per_set, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
