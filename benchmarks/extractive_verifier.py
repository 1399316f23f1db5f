"""A local LLM as the verifier of offline extractive answers: does it tell right quotes from wrong?

    python benchmarks/assemble_qwen.py                                   # once: the 1.5B model, hash-checked
    python benchmarks/extractive_verifier.py --sets demo,iobroker,mailcow [--git-dir mailcow=CLONE ...]
    python benchmarks/extractive_verifier.py --model PATH.gguf ...       # any GGUF model
    python benchmarks/extractive_verifier.py --llm openai-compatible:MODEL --llm-base-url URL \
        --out results.json                                               # any LLM beleg speaks to

The extractive answerer (no LLM) answers every question of each set with ``min_confidence``
0, so every candidate quote is kept, also the ones the default confidence floor withholds.
The verifier (``support.quote_verifier_check``: one call per answer) reads the question and
the quote's surroundings in its cited chunk, and copies out the answer; the candidate passes
when most of what it copied is in the quote. (The first formulation, a yes/no verdict on the
quote, is measured at commit 524696b: ``--method verdict`` there.) Per set it reports the
verdicts against right and wrong candidates, and what three answering policies would give:

* ``floor``: answer when confidence >= the fitted floor (the default today, no LLM);
* ``floor+verifier``: the same, and the verifier must say yes (it can only withhold);
* ``verifier>=L``: answer when confidence >= L and the verifier says yes (it can also give an
  answer the floor withholds), for each L of ``--lows``;
* ``confidence_top_n``: as many answers as ``floor+verifier`` gives, the most confident ones (a
  higher floor, no LLM): what the verifier must beat at the same coverage.

Metrics as ``beleg eval --answers`` defines them: accuracy = right answers / answerable
questions; refusal precision/recall on the unanswerable ones; supported-but-wrong = answers
given that are supported (the rule checks and, with the verifier, its yes) and wrong, over
answers given. Replies are cached by prompt hash in ``--cache`` (a rerun costs nothing and
reports the seconds the first run measured). Realdocs corpora must have been fetched
(``benchmarks/realdocs/fetch_*.py``, or pass ``--git-dir SET=CLONE``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import _common  # noqa: E402
import assemble_qwen  # noqa: E402
import realdocs_quality  # noqa: E402
from llm_methods import CachedLLM  # noqa: E402

from beleg.answer.answerer import AnswerOptions  # noqa: E402
from beleg.answer.support import FITTED_MIN_CONFIDENCE, quote_verifier_check  # noqa: E402
from beleg.evaluate.answers import corpus_doc_key, principal_may_read, run_answer_eval  # noqa: E402
from beleg.evaluate.datasets import load_gold  # noqa: E402
from beleg.evaluate.runner import _principal, prepare_index  # noqa: E402

OUT = _common.RESULTS_DIR / "extractive_verifier.json"
DEMO = _common.REPO_ROOT / "demo" / "gold.yaml"


@dataclass
class Row:
    """One question's candidate and the verifier's verdict on it."""

    qid: str
    expected_refusal: bool
    refused: bool  # refused before any sentence was chosen: no candidate
    right: bool  # the candidate holds a gold string (never for an unanswerable question)
    supported: bool
    confidence: float
    verdict: bool | None = None
    why: str = ""
    seconds: float = 0.0
    question: str = ""
    quote: str = ""


def gold_and_cache(name: str, git_dirs: dict[str, Path]) -> tuple[Path, Path]:
    if name == "demo":
        return DEMO, _common.REPO_ROOT / ".cache" / "realdocs" / "demo-eval"
    qset = realdocs_quality.SETS[name]
    realdocs_quality.pinned_git.ensure_corpus(qset.fetch, qset.fetch.DEFAULT_OUT, git_dirs.get(name))
    return qset.gold, qset.cache


def candidates(name: str, gold: Path, cache: Path, verifier: Any) -> list[Row]:
    dataset = load_gold(gold)
    kb = prepare_index(dataset, cache, progress=False)
    answers: dict[str, Any] = {}
    opts = AnswerOptions(min_confidence=0.0)
    try:
        def answer_fn(q: Any) -> Any:
            answers[q.qid] = kb.ask(q.text, principal=_principal(q), filters=q.info.get("filters"),
                                    context=tuple(q.info.get("context") or ()), options=opts)
            return answers[q.qid]

        report = run_answer_eval(dataset, answer_fn, doc_key=corpus_doc_key(dataset), may_read=principal_may_read)
    finally:
        kb.close()
    rows = []
    for r in report.results:
        a = answers[r.qid]
        row = Row(r.qid, r.expected_refusal, a.refused, bool(r.contains_gold) and not r.expected_refusal,
                  bool(a.supported), float(a.confidence or 0.0), question=r.question,
                  quote=a.citations[0].quote[:300] if a.citations else "")
        if not a.refused:
            before = verifier.cost.model_s  # a cached reply counts the seconds its first call took
            check = quote_verifier_check(verifier, r.question, a.citations, a.sources)
            row.verdict, row.why, row.seconds = check.passed, check.why, verifier.cost.model_s - before
        rows.append(row)
        _common.log(f"{name} {r.qid}: {'right' if row.right else 'unanswerable' if row.expected_refusal else 'wrong'}"
                    f" conf {row.confidence:.2f} verifier {row.verdict}")
    return rows


def policy(rows: list[Row], answer: Any, supported: Any) -> dict[str, Any]:
    """Metrics when ``answer(row)`` decides which candidates are given and ``supported(row)`` marks them."""
    given = [r for r in rows if not r.refused and answer(r)]
    answerable = [r for r in rows if not r.expected_refusal]
    unanswerable = [r for r in rows if r.expected_refusal]
    refused = [r for r in rows if r not in given]
    right = sum(r.right for r in given)
    sw = sum(1 for r in given if supported(r) and not r.right)
    correct_refusals = sum(r.expected_refusal for r in refused)
    return {"answered": len(given), "right": right, "accuracy": _common.rnd(right / max(1, len(answerable)), 3),
            "accuracy_of_answered": _common.rnd(right / len(given), 3) if given else None,
            "supported_but_wrong": sw, "supported_but_wrong_rate": _common.rnd(sw / len(given), 3) if given else None,
            "refusal_precision": _common.rnd(correct_refusals / len(refused), 3) if refused else None,
            "refusal_recall": _common.rnd(correct_refusals / len(unanswerable), 3) if unanswerable else None}


def summarise(rows: list[Row], floor: float, lows: list[float]) -> dict[str, Any]:
    judged = [r for r in rows if not r.refused]
    verdicts = {
        kind: {"yes": sum(r.verdict is True for r in group), "no": sum(r.verdict is False for r in group),
               "unreadable": sum(r.verdict is None for r in group)}
        for kind, group in (("right", [r for r in judged if r.right]),
                            ("wrong", [r for r in judged if not r.right and not r.expected_refusal]),
                            ("unanswerable", [r for r in judged if r.expected_refusal]))}
    policies = {"floor": policy(rows, lambda r: r.confidence >= floor, lambda r: r.supported),
                "floor+verifier": policy(rows, lambda r: r.confidence >= floor and r.verdict is True,
                                         lambda r: r.supported)}
    for low in lows:
        policies[f"verifier>={low}"] = policy(rows, lambda r, lo=low: r.confidence >= lo and r.verdict is True,
                                              lambda r: r.supported)
    # The fair comparison: as many answers as floor+verifier gives, chosen by confidence alone
    # (a higher floor). The verifier adds something only if it beats this at the same coverage.
    n = policies["floor+verifier"]["answered"]
    ranked = sorted((r for r in rows if not r.refused), key=lambda r: -r.confidence)
    top = {id(r) for r in ranked[:n]}
    policies["confidence_top_n"] = {**policy(rows, lambda r: id(r) in top, lambda r: r.supported),
                                    "floor": _common.rnd(ranked[n - 1].confidence, 3) if n else None}
    seconds = [r.seconds for r in judged]
    return {"questions": len(rows), "candidates": len(judged), "verdicts": verdicts, "policies": policies,
            "verifier_s_mean": _common.rnd(sum(seconds) / len(seconds), 2) if seconds else None,
            "per_query": [r.__dict__ for r in rows]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="demo,iobroker,contao,paperless,mailcow")
    ap.add_argument("--git-dir", action="append", default=[], metavar="SET=CLONE",
                    help="a local clone of a realdocs set's upstream repository")
    ap.add_argument("--model", type=Path, help="GGUF model (default: the assembled Qwen2.5-Coder-1.5B)")
    ap.add_argument("--llm", metavar="PROVIDER:MODEL", help="instead of --model: any LLM spec (openai:…, "
                                                           "anthropic:…, openai-compatible:… with --llm-base-url)")
    ap.add_argument("--llm-base-url", metavar="URL")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--context-size", type=int, default=4096)
    ap.add_argument("--lows", default="0.0,0.3,0.5", help="confidence floors for the verifier>=L policies")
    ap.add_argument("--cache", type=Path, default=_common.REPO_ROOT / ".cache" / "llm-verifier")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    git_dirs = {k: Path(v) for k, _, v in (g.partition("=") for g in args.git_dir)}
    from beleg.backends.llms import LLMConfig, load_llm

    if args.llm:
        llm = load_llm(LLMConfig(spec=args.llm, base_url=args.llm_base_url))
        name = args.llm
        verifier = CachedLLM(llm, args.cache / (re.sub(r"[^\w.-]+", "_", args.llm) + ".jsonl"), args.llm)
    else:
        model = (args.model or assemble_qwen.assemble(assemble_qwen.default_cache())).resolve()
        llm = load_llm(f"local:{model}", threads=args.threads, context_size=args.context_size)
        name = model.name
        verifier = CachedLLM(llm, args.cache / f"{model.stem}.jsonl", f"{model.name}:{model.stat().st_size}")
    lows = [float(x) for x in args.lows.split(",") if x.strip()]
    results = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    results.update({"benchmark": "extractive_verifier", "command": " ".join(sys.argv), "model": name,
                    "threads": args.threads, "floor": FITTED_MIN_CONFIDENCE, "machine": _common.machine_info()})
    sets = results.setdefault("sets", {})
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        gold, cache = gold_and_cache(name, git_dirs)
        sets[name] = summarise(candidates(name, gold, cache, verifier), FITTED_MIN_CONFIDENCE, lows)
        _common.write_result("extractive_verifier", results, args.out)
        print(name, json.dumps({k: v for k, v in sets[name].items() if k != "per_query"}, indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
