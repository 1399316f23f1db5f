"""A candidate cross-lingual focus check, measured: German question words aligned to the
English quote's words by the index's embedder (multilingual-e5-small), word by word.

    python benchmarks/cross_lingual_word_alignment.py [--out benchmarks/results/cross_lingual_word_alignment.json]

Within one language the focus check asks that the question's rarest terms be in the quote's
context; across languages terms cannot match, and a sentence-level dense similarity stands in
(cross_lingual_focus_sweep.py shows it does not separate right from wrong). This measures the
word-level alternative: each content word of the German question (not a stopword or question
word, longer than two letters, not a bare number) is embedded alone, as is each word of the
quote and its context, and its best cosine is its alignment. The rule "every question word
aligns at >= t" (min) or "half of them do" (share) is swept over t, for the answers
(min_confidence 0) whose focus check compared languages and whose other checks pass: XQuAD dev
de→en and the demo set's cross-lingual answers. Nothing in Beleg is changed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import _common
import numpy as np
from cross_lingual_focus_sweep import cross_lingual_answers, tally

from beleg.answer.support import quote_context
from beleg.evaluate.session import EvalRequest
from beleg.index.analyzer import STOPWORDS

XQUAD = _common.REPO_ROOT / "tests" / "data" / "xquad"
SETS = {
    "XQuAD dev de→en": EvalRequest(squad=[XQUAD / "xquad.dev.en.json"], queries_from=XQUAD / "xquad.dev.de.json"),
    "demo gold set": EvalRequest(gold=_common.REPO_ROOT / "demo" / "gold.yaml"),
}
THRESHOLDS = (0.80, 0.83, 0.85, 0.87, 0.90)
_QUESTION_WORDS = frozenset("wer wie was wann wo warum welche welcher welches welchen welchem wieviel viele viel "
                            "wozu womit woher wohin weshalb wieso".split())
_WORD = re.compile(r"[\wÄÖÜäöüß][\w\-ÄÖÜäöüß.]*\w|\w")


def content_words(text: str, language: str) -> list[str]:
    out = [w for w in _WORD.findall(text) if len(w) > 2 and not w.isdigit()
           and w.lower() not in STOPWORDS[language] and w.lower() not in _QUESTION_WORDS]
    return list(dict.fromkeys(out))


def unit_vectors(embedder: Any, words: list[str], cache: dict[str, np.ndarray]) -> np.ndarray:
    """Each word embedded alone as a query, normalised (cached: words repeat across questions)."""
    new = [w for w in words if w not in cache]
    if new:
        for w, v in zip(new, embedder.embed_queries(new)):
            cache[w] = v / np.linalg.norm(v)
    return np.array([cache[w] for w in words])


def rows_of(req: EvalRequest) -> list[dict]:
    cache: dict[str, np.ndarray] = {}
    rows = []
    for kb, q, a, focus, right, others in cross_lingual_answers(req):
        if not others:
            continue
        cited = a.citations[0]
        src = next(s for s in a.sources if s.label == cited.label)
        own, headings = quote_context(src, cited.start, cited.end)
        asked = content_words(q.text, "de")
        context = content_words(own + "\n" + headings, "en")
        if asked and context:
            similarity = unit_vectors(kb.embedder, asked, cache) @ unit_vectors(kb.embedder, context, cache).T
            rows.append({"right": right, "dense": float(focus.value), "best": similarity.max(axis=1).tolist()})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=_common.RESULTS_DIR / "cross_lingual_word_alignment.json")
    args = ap.parse_args()
    out: dict[str, dict] = {}
    for label, req in SETS.items():
        rows = [r for r in rows_of(req) if r["dense"] >= 0.5]  # supported today (FOCUS_MIN_DENSE)
        sweep = {}
        for t in THRESHOLDS:
            for rule in ("min", "share"):
                kept = [r["right"] for r in rows
                        if (min(r["best"]) >= t if rule == "min" else np.mean(np.array(r["best"]) >= t) >= 0.5)]
                sweep[f"{rule}>={t}"] = tally(kept)
        today = tally([r["right"] for r in rows])
        out[label] = {"supported_today": today["supported"], "right_today": today["right"],
                      "precision_today": today["precision"], "by_rule": sweep}
        _common.log(f"{label}: {out[label]}")
    _common.write_result("cross_lingual_word_alignment", {"benchmark": "cross_lingual_word_alignment", "sets": out,
                                                           "machine": _common.machine_info()}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
