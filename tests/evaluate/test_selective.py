"""Selective answering metrics on hand-built examples: ECE, risk–coverage, supported-but-wrong.

Every expected figure is worked out by hand in the comment next to it.
"""

from __future__ import annotations

import re

import pytest

from beleg.answer.support import Check, Support
from beleg.answer.types import REFUSAL, Answer, Citation, Source
from beleg.evaluate.answers import AnswerEvalReport, run_answer_eval
from beleg.evaluate.datasets import Dataset, Query
from beleg.evaluate.report_answers import render_answers_html, render_answers_text
from beleg.evaluate.selective import Outcome, curve_point, expected_calibration_error, lowest_threshold, risk_coverage
from beleg.types import Hit


def test_ece_by_hand() -> None:
    # bin [0.9, 1.0]: confidences 0.9, 0.9 (mean 0.9), correct 1 of 2 (0.5): |0.5 - 0.9| = 0.4, weight 2/4
    # bin [0.2, 0.3): confidences 0.2, 0.2 (mean 0.2), correct 0 of 2 (0.0): |0.0 - 0.2| = 0.2, weight 2/4
    # ECE = 0.5 * 0.4 + 0.5 * 0.2 = 0.3
    assert expected_calibration_error([0.9, 0.9, 0.2, 0.2], [True, False, False, False]) == pytest.approx(0.3)
    # a perfectly calibrated bin: confidence 1.0 (the last bin includes 1.0), all correct
    assert expected_calibration_error([1.0, 1.0], [True, True]) == pytest.approx(0.0)
    assert expected_calibration_error([], []) is None


OUTCOMES = [
    Outcome(0.9, True), Outcome(0.8, True), Outcome(0.6, False), Outcome(0.3, True),
    Outcome(0.7, False, unanswerable=True), Outcome(0.2, False, unanswerable=True),
    Outcome(None, False),  # refused by rule: never answered, counts in coverage's denominator
]


def test_risk_coverage_by_hand() -> None:
    at0 = curve_point(OUTCOMES, 0.0)
    # 6 of 7 answered; right: 0.9, 0.8, 0.3 = 3 of 6
    assert at0["answered"] == 6 and at0["coverage"] == pytest.approx(6 / 7) and at0["accuracy"] == pytest.approx(0.5)
    # answerable (5): right and answered 3 → 0.6; unanswerable (2): none refused → recall 0
    assert at0["answerable_accuracy"] == pytest.approx(3 / 5) and at0["refusal_recall"] == 0.0
    at65 = curve_point(OUTCOMES, 0.65)
    # answered: 0.9, 0.8, 0.7 (unanswerable) → 2 of 3 right; coverage 3/7; refusal recall 1 of 2
    assert at65["answered"] == 3 and at65["accuracy"] == pytest.approx(2 / 3)
    assert at65["coverage"] == pytest.approx(3 / 7) and at65["refusal_recall"] == 0.5
    # refused at 0.65: 0.6, 0.3, 0.2 (unanswerable), None → 1 of 4 expected; at 0: only None → 0 of 1
    assert at65["refusal_precision"] == 0.25 and at0["refusal_precision"] == 0.0
    at75 = curve_point(OUTCOMES, 0.75)
    assert at75["accuracy"] == 1.0 and at75["refusal_recall"] == 1.0
    assert curve_point(OUTCOMES, 0.95)["accuracy"] is None  # nothing answered: n/a, not 0
    assert lowest_threshold(OUTCOMES, 0.9) == 0.75  # the grid's first threshold above 0.7
    assert [p["threshold"] for p in risk_coverage(OUTCOMES, (0.0, 0.5))] == [0.0, 0.5]


def _source() -> Source:
    text = "Webhooks are retried for 72 hours."
    return Source("S1", Hit("c1", "d1", "docs/a.md", "A", ("A",), 0, len(text), 1.0, text, {}), 1)


def _answer(q: str, text: str, supported: bool, confidence: float, refused: bool = False,
            withheld: str | None = None) -> Answer:
    src = _source()
    cites = () if refused else (Citation("S1", "c1", "d1", "docs/a.md", src.hit.text, 0, len(src.hit.text), True),)
    trace = {"withheld_answer": withheld} if withheld else {}
    support = Support(supported, confidence, (Check("focus", supported, "hand-made"),))
    return Answer(q, text, refused, cites, (), (src,), True, (), "extractive", trace, support)


def test_eval_report_has_selective_metrics_text_and_html() -> None:
    queries = [Query("a1", "How long are webhooks retried?", {"answer": ["72 hours"]}),
               Query("a2", "How long are logs kept?", {"answer": ["30 days"]}),
               Query("a3", "What is the fee?", {"answer": ["3.50 EUR"]}),
               Query("u1", "Does it support MQTT?", {"type": "unanswerable"})]
    answers = {
        "a1": _answer("q", "Webhooks are retried for 72 hours. [S1]", True, 0.9),
        "a2": _answer("q", "Webhooks are retried for 72 hours. [S1]", True, 0.8),  # supported but wrong
        "a3": _answer("q", REFUSAL + " The best candidate was not shown ...", False, 0.2, refused=True,
                      withheld="The fee is 3.50 EUR. [S1]"),  # withheld, but it was right
        "u1": _answer("q", "Webhooks are retried for 72 hours. [S1]", False, 0.4),  # answered an unanswerable
    }
    ds = Dataset("hand", queries, {"a1": {"d": 1}, "a2": {"d": 1}, "a3": {"d": 1}})
    report = run_answer_eval(ds, lambda q: answers[q.qid], progress=False)
    s = report.summary()
    # answered: a1, a2, u1; supported among them: a1, a2 → 2/3; supported and wrong: a2 → 1/3
    assert s["answers_supported"] == pytest.approx(2 / 3) and s["supported_but_wrong"] == pytest.approx(1 / 3)
    # ECE over answered: bins 0.9 (right: |1-0.9|=0.1), 0.8 (wrong: 0.8), 0.4 (wrong: 0.4) → (0.1+0.8+0.4)/3
    assert s["confidence_ece"] == pytest.approx(1.3 / 3, abs=1e-5)
    curve = {p["threshold"]: p for p in report.to_json()["risk_coverage"]}
    # at 0: all four have a candidate; right: a1 and the withheld a3 → 2/4
    assert curve[0.0]["accuracy"] == 0.5 and curve[0.0]["coverage"] == 1.0
    assert curve[0.85]["answered"] == 1 and curve[0.85]["accuracy"] == 1.0
    text = render_answers_text(report)
    assert re.search(r"supported but wrong\s+0\.333\s+\(1/3\)", text), text
    assert "risk-coverage" in text and "confidence ECE" in text
    html = render_answers_html(report)
    assert "<svg" in html and "Risk–coverage" in html and "confidence &gt;= 0.85" in html
    assert isinstance(report, AnswerEvalReport)
