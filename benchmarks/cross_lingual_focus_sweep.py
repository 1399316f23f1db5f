"""How well the cross-lingual focus stand-in (dense similarity ≥ FOCUS_MIN_DENSE) separates
right from wrong answers, swept over thresholds: XQuAD dev de→en (German questions, English
paragraphs) and the demo set's cross-lingual answers.

    python benchmarks/cross_lingual_focus_sweep.py [--out benchmarks/results/cross_lingual_focus_sweep.json]

For every answer (``min_confidence`` 0) whose focus check compared languages, it counts the
answers that would be supported at each threshold (every other check passing) and how many
of them contain a gold string. Nothing is changed in Beleg; this measures a candidate rule.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _common

from beleg.answer.answerer import AnswerOptions
from beleg.evaluate.answers import expects_refusal, score_answer
from beleg.evaluate.runner import _principal
from beleg.evaluate.session import EvalRequest, load_dataset, prepare_index

XQUAD = _common.REPO_ROOT / "tests" / "data" / "xquad"
SETS = {
    "XQuAD dev de→en": EvalRequest(squad=[XQUAD / "xquad.dev.en.json"], queries_from=XQUAD / "xquad.dev.de.json"),
    "demo gold set": EvalRequest(gold=_common.REPO_ROOT / "demo" / "gold.yaml"),
}
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9)


def cross_lingual_answers(req: EvalRequest) -> Iterator[tuple[Any, Any, Any, Any, bool, bool]]:
    """(kb, question, answer, focus check, right, other checks pass) for every answer
    (``min_confidence`` 0) whose focus check compared languages; the index stays open
    while the caller reads each one."""
    ds = load_dataset(req)
    kb = prepare_index(ds, None, progress=False)
    try:
        for q in ds.queries:
            a = kb.ask(q.text, principal=_principal(q), filters=q.info.get("filters"),
                       context=tuple(q.info.get("context") or ()), options=AnswerOptions(min_confidence=0.0))
            focus = a.support.check("focus") if a.support is not None and not a.refused else None
            if focus is None or "differ in language" not in focus.why or focus.value is None:
                continue
            refusal = expects_refusal(ds, q)
            right = bool(score_answer(q, a, expected_refusal=refusal).candidate_correct) and not refusal
            others = all(c.passed is not False for c in a.support.checks if c.name != "focus")
            yield kb, q, a, focus, right, others
    finally:
        kb.close()


def cross_lingual_rows(req: EvalRequest) -> list[tuple[bool, float, bool]]:
    """(right, dense similarity, other checks pass) per cross-lingual answer."""
    return [(right, float(focus.value), others) for _, _, _, focus, right, others in cross_lingual_answers(req)]


def tally(kept: list[bool]) -> dict[str, Any]:
    """How many answers a rule keeps as supported, how many of them are right, and that share."""
    return {"supported": len(kept), "right": sum(kept), "precision": _common.rnd(sum(kept) / len(kept)) if kept else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=_common.RESULTS_DIR / "cross_lingual_focus_sweep.json")
    args = ap.parse_args()
    out: dict[str, dict] = {}
    for label, req in SETS.items():
        rows = cross_lingual_rows(req)
        sweep = {}
        for t in THRESHOLDS:
            kept = [right for right, dense, others in rows if others and dense >= t]
            sweep[str(t)] = tally(kept)
        out[label] = {"cross_lingual_answers": len(rows), "by_threshold": sweep}
        _common.log(f"{label}: {out[label]}")
    _common.write_result("cross_lingual_focus_sweep", {"benchmark": "cross_lingual_focus_sweep", "sets": out,
                                                        "machine": _common.machine_info()}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
