"""Fit the sentence scorer's weights (``beleg.answer.scoring.WEIGHTS``) on development data.

The offline answerer's quality hangs on which sentence it quotes. The score is a weighted
sum of parts (``Sentence.features``: lexical coverage and dense similarity in and across
languages, the asked-for kind of value, the naming and how-to signals, ...); the weights were
set by hand. This script measures them:

* ``capture``: ask every question of the named sets offline (``min_confidence`` 0) and keep,
  for each, the scored candidates' features and whether the text the answer would show for
  that candidate (``extractive.quote_answer``) holds a gold string.
* ``fit``: a conditional logit (a softmax over each question's candidates; the likelihood of
  the right ones) on the development sets only: the demo gold set and the first 300
  questions of XQuAD dev en, each set weighing the same. Questions where no candidate or
  every candidate is right teach nothing and are skipped. The weights are scaled so that
  the same-language lexical and dense weights sum to 1, as the hand-set ones do (the
  refusal and margin constants read scores on that scale).
* ``compare``: top-1 right (the best-scoring candidate shows a gold string) per set, under
  the shipped weights and the fitted ones. This reranks captured candidates only: it leaves
  out the answerer's later steps (governance margin, twin language); the real figure is
  ``answer_choice_ab.py`` with the weights pasted in.

    python benchmarks/sentence_weights.py capture OUT.json --sets demo,xquad-en,xquad-de,xquad-de-en
    python benchmarks/sentence_weights.py capture OUT2.json --sets contao --cache-dir /path/to/index-cache
    python benchmarks/sentence_weights.py fit OUT.json [OUT2.json ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
XQUAD = ROOT / "tests" / "data" / "xquad"
#: Development sets and how much of each: everything else is held out.
DEV = {"demo": None, "xquad-en": 300}
#: Candidates kept per question (by the shipped score): the rest never come near the top.
KEEP = 40


def requests(names: list[str], cache_dir: Path | None) -> dict[str, object]:
    from beleg.evaluate.session import EvalRequest

    en, de = XQUAD / "xquad.dev.en.json", XQUAD / "xquad.dev.de.json"
    known = {"demo": EvalRequest(gold=ROOT / "demo" / "gold.yaml"),
             "xquad-en": EvalRequest(squad=[en]), "xquad-de": EvalRequest(squad=[de]),
             "xquad-de-en": EvalRequest(squad=[en], queries_from=de)}
    for name in ("iobroker", "contao", "paperless", "mailcow"):
        known[name] = EvalRequest(gold=ROOT / "benchmarks" / "realdocs" / f"{name}.gold.yaml", cache_dir=cache_dir)
    return {n: known[n] for n in names}


def capture(out: Path, names: list[str], cache_dir: Path | None) -> None:
    from beleg.answer import scoring
    from beleg.answer.answerer import AnswerOptions
    from beleg.answer.extractive import quote_answer
    from beleg.evaluate.answers import contains_gold, expects_refusal, gold_strings
    from beleg.evaluate.runner import _principal
    from beleg.evaluate.session import load_dataset, prepare_index

    calls: list[list] = []
    original = scoring.SentenceScorer.score

    def recording(self, question, sentences, positions=None):
        scored = original(self, question, sentences, positions)
        calls.append(scored)
        return scored

    scoring.SentenceScorer.score = recording
    result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    for name, req in requests(names, cache_dir).items():
        dataset = load_dataset(req)
        kb = prepare_index(dataset, req.cache_dir, progress=False)
        rows = []
        try:
            for i, q in enumerate(dataset.queries):
                if i % 100 == 0:
                    print(f"{name}: {i}/{len(dataset.queries)}", file=sys.stderr, flush=True)
                gold = gold_strings(q)
                if not gold or expects_refusal(dataset, q):
                    continue
                calls.clear()
                kb.ask(q.text, principal=_principal(q), filters=q.info.get("filters"),
                       context=tuple(q.info.get("context") or ()), options=AnswerOptions(min_confidence=0.0))
                if not calls:
                    rows.append({"qid": q.qid, "candidates": []})
                    continue
                scored = [s for s in calls[0] if s.source.eligible][:KEEP]
                cands = []
                for s in scored:
                    _, shown = quote_answer(s, calls[0])
                    cands.append({"f": s.features, "right": contains_gold(shown, gold),
                                  "rank": s.source.rank, "doc": s.source.hit.doc_id})
                rows.append({"qid": q.qid, "candidates": cands})
        finally:
            kb.close()
        result[name] = rows
        out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    scoring.SentenceScorer.score = original


def _matrix(rows: list[dict], features: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for r in rows:
        c = r["candidates"]
        if not c:
            continue
        x = np.array([[cand["f"].get(k, 0.0) for k in features] for cand in c], dtype=float)
        y = np.array([float(cand["right"]) for cand in c])
        out.append((x, y))
    return out


def top1(groups: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray, n_questions: int) -> float:
    right = sum(float(y[int(np.argmax(x @ w))]) for x, y in groups)
    return right / max(1, n_questions)


def fit(groups_by_set: dict[str, list], w0: np.ndarray, steps: int = 3000, lr: float = 0.5,
        l2: float = 0.01) -> np.ndarray:
    """Conditional logit by gradient ascent from the shipped weights; each set weighs the same."""
    informative = {s: [(x, y) for x, y in g if 0 < y.sum() < len(y)] for s, g in groups_by_set.items()}
    w = w0 * 10.0  # start at the shipped ranking with a usable temperature
    for _ in range(steps):
        grad = np.zeros_like(w)
        for groups in informative.values():
            g_set = np.zeros_like(w)
            for x, y in groups:
                z = x @ w
                p = np.exp(z - z.max())
                p /= p.sum()
                q = p * y
                q /= q.sum()
                g_set += x.T @ (q - p)  # d log(sum of right p) / dw
            grad += g_set / max(1, len(groups))
        grad /= len(informative)
        w += lr * (grad - l2 * (w - w0 * 10.0))
    return w


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--sets", default="demo,xquad-en,xquad-de,xquad-de-en")
    c.add_argument("--cache-dir", type=Path)
    f = sub.add_parser("fit")
    f.add_argument("captures", nargs="+", type=Path)
    f.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sentence_weights.json")
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.out, args.sets.split(","), args.cache_dir)
        return 0
    from beleg.answer.scoring import FEATURES, WEIGHTS

    sets: dict[str, list] = {}
    for p in args.captures:
        sets.update(json.loads(p.read_text(encoding="utf-8")))
    dev = {s: _matrix(sets[s][:limit] if limit else sets[s], FEATURES) for s, limit in DEV.items() if s in sets}
    shipped = np.array([WEIGHTS[k] for k in FEATURES])
    w = fit(dev, shipped)
    w = w / (w[FEATURES.index("lexical_same")] + w[FEATURES.index("dense_same")])
    report = {}
    for s, rows in sets.items():
        limit = DEV.get(s)
        parts = {"dev": rows[:limit], "held out": rows[limit:]} if limit else {("dev" if s in DEV else "held out"): rows}
        for part, rs in parts.items():
            if not rs:
                continue
            g = _matrix(rs, FEATURES)
            report[f"{s} ({part})"] = {"questions": len(rs), "top1_shipped": round(top1(g, shipped, len(rs)), 4),
                                       "top1_fitted": round(top1(g, w, len(rs)), 4),
                                       "oracle": round(sum(y.any() for _, y in g) / max(1, len(rs)), 4)}
    result = {"fitted": {k: round(float(v), 4) for k, v in zip(FEATURES, w)},
              "shipped": dict(WEIGHTS), "report": report}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
