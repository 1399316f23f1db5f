"""Selective answering: how good is ``confidence`` at telling right answers from wrong ones.

Every scored answer with a candidate (answered, or withheld for low confidence) has a
confidence and a correctness: it contains a gold string (answerable questions), and any
answer to an unanswerable question is wrong. From those:

* **risk–coverage**: for each threshold t, answering only when confidence >= t, the share
  of questions answered (coverage), the accuracy of those answers, the accuracy over all
  answerable questions (a refusal counts as not right) and refusal recall on the
  unanswerable ones;
* **ECE** (expected calibration error, 10 equal-width bins): the answered questions'
  mean |accuracy − mean confidence| per bin, weighted by the bin's share.

Definitions are in ``docs/answer-evaluation.md``; ratios over nothing are ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Thresholds of the risk–coverage curve.
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(20))


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question: its candidate's confidence (None: no candidate at all) and whether it is right."""

    confidence: float | None
    correct: bool
    unanswerable: bool = False


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float | None:
    """ECE over equal-width bins of [0, 1]; the last bin includes 1.0."""
    if not confidences:
        return None
    total = len(confidences)
    sums: list[list[float]] = [[0.0, 0.0, 0.0] for _ in range(bins)]  # count, confidence sum, correct sum
    for c, ok in zip(confidences, correct):
        b = min(int(c * bins), bins - 1)
        sums[b][0] += 1
        sums[b][1] += c
        sums[b][2] += float(ok)
    return sum(n / total * abs(k / n - s / n) for n, s, k in sums if n)


def _answered(o: Outcome, threshold: float) -> bool:
    return o.confidence is not None and o.confidence >= threshold


def curve_point(outcomes: Sequence[Outcome], threshold: float) -> dict[str, Any]:
    """Coverage, accuracy, answerable accuracy and refusal recall when answering at ``threshold``."""
    answered = [o for o in outcomes if _answered(o, threshold)]
    right = sum(o.correct for o in answered)
    answerable = [o for o in outcomes if not o.unanswerable]
    unanswerable = [o for o in outcomes if o.unanswerable]
    refused = [o for o in outcomes if not _answered(o, threshold)]
    return {
        "threshold": threshold,
        "answered": len(answered),
        "coverage": len(answered) / len(outcomes) if outcomes else None,
        "accuracy": right / len(answered) if answered else None,
        "answerable_accuracy": (sum(o.correct for o in answerable if _answered(o, threshold)) / len(answerable)
                                if answerable else None),
        "refusal_recall": (sum(not _answered(o, threshold) for o in unanswerable) / len(unanswerable)
                           if unanswerable else None),
        "refusal_precision": (sum(o.unanswerable for o in refused) / len(refused) if refused else None),
    }


def risk_coverage(outcomes: Sequence[Outcome], thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    return [curve_point(outcomes, t) for t in thresholds]


def lowest_threshold(outcomes: Sequence[Outcome], accuracy: float,
                     thresholds: Sequence[float] = THRESHOLDS) -> float | None:
    """The lowest threshold whose answered questions reach ``accuracy`` (most coverage), or None."""
    for t in sorted(thresholds):
        acc = curve_point(outcomes, t)["accuracy"]
        if acc is not None and acc >= accuracy:
            return t
    return None
