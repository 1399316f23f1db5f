"""Same-fact conflict detection on the labelled conflict set (tests/data/conflicts/).

Each case is a question, 2-4 short passages with metadata (version, status, authority,
language, heading) and the conflicts a person expects: which passage's value disagrees
with the governing value and how it stands to it (``superseded`` / ``contradicts``).
Cases without expected conflicts are same-unit non-conflicts (other attributes in the
same section, headers, timeouts) or sources that agree. A case may have a ``topic``
("languages, same version": German and English pages of one version; "clock time"): the
results also score each topic's cases on their own.

Scoring is held fixed so that only the attribute logic is measured: every sentence of
every passage is a candidate with the same score as the governing sentence (the one in
the governing passage that holds the labelled answer). A predicted (passage, value) is
correct when the governing value is the labelled answer (the attribute asked about) and
the pair is labelled; precision and recall are per split, relation accuracy over the
correct pairs.

    python benchmarks/conflict_quality.py [--no-embed] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conflicts"
SPLITS = ("dev", "test")


def load_cases(split: str) -> list[dict[str, Any]]:
    with (DATA / f"{split}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _sentences(case: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The governing sentence and every candidate sentence of the case's passages."""
    from beleg.answer.quarantine import PROSE_KINDS
    from beleg.answer.scoring import Sentence
    from beleg.answer.types import Source
    from beleg.answer.values import extract_values
    from beleg.sentences import split_sentences
    from beleg.types import Hit

    governing, out = None, []
    for i, p in enumerate(case["passages"], start=1):
        meta = {k: p[k] for k in ("version", "status", "authority", "language") if p.get(k) is not None}
        path = (case["id"], p["heading"]) if p.get("heading") else (case["id"],)
        hit = Hit(f"{case['id']}-{p['id']}", p["id"], f"{case['id']}/{p['id']}.md", case["id"], path, 0,
                  len(p["text"]), 1.0, p["text"], meta)
        src = Source(f"S{i}", hit, i)
        for span in split_sentences(p["text"]):
            if span.kind not in PROSE_KINDS:
                continue
            s = Sentence(src, span, span.start, span.end, tuple(extract_values(span.text)), score=1.0)
            out.append(s)
            if p.get("governs") and governing is None and case["answer"] in span.text:
                governing = s
    if governing is None:
        raise ValueError(f"case {case['id']}: the answer {case['answer']!r} is in no sentence of the governing passage")
    return governing, out


def _as_labelled(v: Any, labels: list[str]) -> str:
    """The label ``v`` is shown as, else its shown value. A count is shown with what it counts
    ("32 characters"); the labels name the number ("32")."""
    is_count = getattr(v, "kind", "") == "count"  # getattr: conflict values before kinds, for the baseline row
    return next((lab for lab in labels if v.value == lab or (is_count and v.value.startswith(lab + " "))), v.value)


def run_case(case: dict[str, Any], embed: Callable[[list[str]], np.ndarray] | None) -> dict[str, Any]:
    """Run one case; pairs are (passage id, value as written)."""
    from beleg.answer.conflicts import detect_conflicts

    governing, scored = _sentences(case)
    conflicts, _ = detect_conflicts(case["question"], governing, scored, 0.35, embed=embed)
    expected = {(e["passage"], e["value"]): e["relation"] for e in case["expected"]}
    predicted: dict[tuple[str, str], str | None] = {}
    for c in conflicts:
        gov = c.governing
        # A governing value other than the labelled answer is another attribute: every pair is wrong
        # (marked with "?" so it can match no label).
        mark = "" if gov is not None and _as_labelled(gov, [case["answer"]]) == case["answer"] else "?"
        for v in c.values:
            if not v.governs:  # getattr: the rule before 23d2104 had no relation, for the baseline row
                passage = v.source.split("/")[-1][:-3]
                labels = [e["value"] for e in case["expected"] if e["passage"] == passage]
                predicted[(passage + mark, _as_labelled(v, labels))] = getattr(v, "relation", None)
    correct = [k for k in predicted if k in expected]
    return {
        "id": case["id"], "expected": len(expected), "predicted": len(predicted), "correct": len(correct),
        "relation_correct": sum(predicted[k] == expected[k] for k in correct),
        "false_positives": [f"{p}={v} ({r})" for (p, v), r in predicted.items() if (p, v) not in expected],
        "missed": [f"{p}={v}" for (p, v) in expected if (p, v) not in predicted],
        "attribute": getattr(conflicts[0], "attribute", None) if conflicts else None,
    }


def score_split(cases: list[dict[str, Any]], embed: Callable[[list[str]], np.ndarray] | None) -> dict[str, Any]:
    rows = [run_case(c, embed) for c in cases]
    exp, pred, corr = (sum(r[k] for r in rows) for k in ("expected", "predicted", "correct"))
    rel = sum(r["relation_correct"] for r in rows)
    return {
        "cases": len(cases),
        "with_conflicts": sum(1 for c in cases if c["expected"]),
        "expected_pairs": exp, "predicted_pairs": pred, "correct_pairs": corr,
        "precision": round(corr / pred, 3) if pred else 1.0,
        "recall": round(corr / exp, 3) if exp else 1.0,
        "relation_accuracy": round(rel / corr, 3) if corr else None,
        "errors": [{"id": r["id"], "false_positives": r["false_positives"], "missed": r["missed"]}
                   for r in rows if r["false_positives"] or r["missed"]],
    }


def default_embed() -> Callable[[list[str]], np.ndarray]:
    from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder

    embedder = load_embedder(DEFAULT_EMBEDDER)
    return lambda texts: embedder.embed_documents(texts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-embed", action="store_true", help="no e5 similarity for cross-lingual attributes")
    ap.add_argument("--out", help="result file (default benchmarks/results/conflict_quality.json)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _common

    t0 = time.perf_counter()
    payload: dict[str, Any] = {"benchmark": "conflict_quality", "data": "tests/data/conflicts/{dev,test}.jsonl"}
    modes = {"attributes, no embedder": None} if args.no_embed else {"attributes, no embedder": None,
                                                                     "attributes + e5 cross-lingual": default_embed()}
    cases = {split: load_cases(split) for split in SPLITS}
    topics = sorted({c["topic"] for split in SPLITS for c in cases[split] if c.get("topic")})
    for mode, embed in modes.items():
        payload[mode] = {split: score_split(cases[split], embed) for split in SPLITS}
        payload[mode]["topics"] = {t: score_split([c for split in SPLITS for c in cases[split] if c.get("topic") == t],
                                                  embed) for t in topics}
    payload["seconds"] = round(time.perf_counter() - t0, 2)
    payload["machine"] = _common.machine_info()
    _common.write_result("conflict_quality", payload, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
