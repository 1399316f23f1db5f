"""Retrieval and answer quality on outside documentation (German and English): the ioBroker
docs, the Contao user manual, the Paperless-ngx docs and the mailcow docs (the last three held
out when first run).

One command per set: ``python benchmarks/realdocs_quality.py [--set iobroker|contao|paperless|mailcow] [--git-dir CLONE]``
materialises the corpus (``benchmarks/realdocs/fetch_iobroker.py``, ``fetch_contao.py``, ``fetch_paperless.py``,
``fetch_mailcow.py``: a
pinned upstream commit and a selection rule in that script; from a local clone or by ``git
clone``), validates the gold set (``benchmarks/realdocs/check_gold.py``), and runs the same
evaluation as (for ioBroker)

    beleg eval --gold benchmarks/realdocs/iobroker.gold.yaml --modes dense,bm25,hybrid
    beleg eval --gold benchmarks/realdocs/iobroker.gold.yaml --answers

on one cached index per set (``.cache/realdocs/eval``, ``.cache/realdocs/<set>-eval``; the
first run embeds every chunk, later runs embed nothing). It writes
``benchmarks/results/realdocs_quality.json`` (ioBroker) or ``realdocs_<set>_quality.json`` and
prints a Markdown table (the ones in docs/benchmarks.md, "Real outside documentation").

Figures: Hit@1/Hit@3/MRR@10/nDCG@10 per retrieval mode (document level, answerable
questions), and for the offline extractive answers: answer accuracy (the answer contains a
gold string; answerable questions), refusal precision/recall (unanswerable questions), and
the share of answers marked verified that are wrong (verified, but it answers an
unanswerable question or contains no gold string); each overall, per question type and per
question language. Metric code is Beleg's (``beleg.evaluate``); this script only groups.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common

from beleg.evaluate.answers import AnswerEvalReport, AnswerQueryResult
from beleg.evaluate.runner import EvalReport
from beleg.evaluate.session import EvalRequest, evaluate, evaluate_answers

sys.path.insert(0, str(_common.BENCH_DIR / "realdocs"))
import check_gold  # noqa: E402  (benchmarks/realdocs is a folder of scripts, not a package)
import fetch_contao  # noqa: E402
import fetch_iobroker  # noqa: E402
import fetch_mailcow  # noqa: E402
import fetch_paperless  # noqa: E402
import pinned_git  # noqa: E402


@dataclass(frozen=True)
class QuestionSet:
    fetch: Any  # the corpus script's module (pinned_git.ensure_corpus reads it)
    gold: Path
    cache: Path
    result: str  # name of the results file, without .json
    note: str


def held_out(fetch: Any, name: str, note: str) -> QuestionSet:
    """A set named ``name``: ``realdocs/<name>.gold.yaml``, its index in ``.cache/realdocs/<name>-eval``,
    its results in ``realdocs_<name>_quality.json``."""
    return QuestionSet(fetch, _common.BENCH_DIR / "realdocs" / f"{name}.gold.yaml",
                       _common.REPO_ROOT / ".cache" / "realdocs" / f"{name}-eval", f"realdocs_{name}_quality", note)


SETS = {
    "iobroker": QuestionSet(
        fetch_iobroker, _common.BENCH_DIR / "realdocs" / "iobroker.gold.yaml",
        _common.REPO_ROOT / ".cache" / "realdocs" / "eval", "realdocs_quality",
        "The questions were written by this project from the pages, before Beleg was run on them. Since then, "
        "answer rules were written from reading Beleg's answers to them (docs/benchmarks.md): a read set."),
    "contao": held_out(
        fetch_contao, "contao",
        "Held out: the questions were written by a helper session that did not read Beleg's code, before "
        "Beleg was run on them; nothing in Beleg was tuned on its answers before the first run recorded here."),
    "paperless": held_out(
        fetch_paperless, "paperless",
        "Held out: English pages, English and German questions, written by a helper session that did not read "
        "Beleg's code, before Beleg was run on them; written after the Contao rules, to test them."),
    "mailcow": held_out(
        fetch_mailcow, "mailcow",
        "Held out: every page in German and English, German and English questions, written by a helper session "
        "that did not read Beleg's code, before Beleg was run on them; written after the Paperless rules."),
}
MODES = "dense,bm25,hybrid"
RETRIEVAL_METRICS = ("hit@1", "hit@3", "mrr@10", "ndcg@10")


# ---------------------------------------------------------------------- grouping
def groups(queries: Iterable[Any]) -> dict[str, list[str]]:
    """Question ids per group: all, type:<type>, language:<lang>."""
    out: dict[str, list[str]] = defaultdict(list)
    for q in queries:
        out["all"].append(q.qid)
        out[f"type:{q.info.get('type')}"].append(q.qid)
        out[f"language:{q.info.get('language')}"].append(q.qid)
    # all, then the types, then the languages (each alphabetically): a stable table order.
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != "all", not kv[0].startswith("type:"), kv[0])))


def retrieval_by_group(report: EvalReport, by_group: dict[str, list[str]]) -> dict[str, Any]:
    """Mean of Beleg's per-query metrics over the answerable questions of each group."""
    answerable = set(report.answerable)
    out: dict[str, Any] = {}
    for name, result in report.results.items():
        out[name] = {}
        for group, qids in by_group.items():
            rows = [result.queries[q].metrics for q in qids if q in answerable and q in result.queries]
            if rows:
                out[name][group] = {"n": len(rows), **{m: _common.rnd(sum(r[m] for r in rows) / len(rows))
                                                        for m in RETRIEVAL_METRICS}}
    return out


def verified_wrong(results: list[AnswerQueryResult]) -> dict[str, Any]:
    """Answers marked verified that are wrong: they answer an unanswerable question, or contain
    no gold string. The answer evaluation counts verified answers but not this overlap."""
    verified = [r for r in results if not r.refused and r.verified]
    wrong = [r for r in verified if r.expected_refusal or r.contains_gold is False]
    supported = [r for r in results if not r.refused and r.supported]
    supported_wrong = [r for r in supported if r.expected_refusal or r.contains_gold is False]
    answered = [r for r in results if not r.refused]
    return {"answered": len(answered), "supported_answers": len(supported), "supported_wrong": len(supported_wrong),
            "supported_wrong_ids": [r.qid for r in supported_wrong],
            "verified_answers": len(verified), "verified_wrong": len(wrong),
            "verified_wrong_rate": _common.rnd(len(wrong) / len(verified)) if verified else None,
            "verified_wrong_ids": [r.qid for r in wrong]}


ANSWER_KEYS = ("n", "answerable", "expected_refusals", "refused", "answer_contains_gold", "refusal_precision",
               "refusal_recall", "false_refusal_rate", "citation_validity", "answers_verified")


def answers_by_group(report: AnswerEvalReport, by_group: dict[str, list[str]]) -> dict[str, Any]:
    by_id = {r.qid: r for r in report.results}
    out: dict[str, Any] = {}
    for group, qids in by_group.items():
        results = [by_id[q] for q in qids if q in by_id]
        if not results:
            continue
        summary = AnswerEvalReport(report.dataset, results).summary()
        out[group] = {**{k: summary.get(k) for k in ANSWER_KEYS}, **verified_wrong(results)}
    return out


# ---------------------------------------------------------------------- table
def _cell(v: Any) -> str:
    return "–" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))


def table(retrieval: dict[str, Any], answers: dict[str, Any], group_names: list[str]) -> str:
    head = ("| questions | n | Hit@1 bm25 / dense / hybrid | Hit@3 hybrid | MRR@10 hybrid | answer accuracy "
            "| refusal P / R | verified but wrong | supported but wrong / answered |")
    lines = [head, "|---|---:|---|---:|---:|---:|---|---:|---:|"]
    for g in group_names:
        a = answers.get(g, {})
        hits = " / ".join(_cell(retrieval[m].get(g, {}).get("hit@1")) for m in ("bm25", "dense", "hybrid"))
        h = retrieval["hybrid"].get(g, {})
        wrong = f"{a.get('verified_wrong', 0)}/{a.get('verified_answers', 0)}"
        supported_wrong = f"{a.get('supported_wrong', 0)}/{a.get('answered', 0)}"
        lines.append(f"| {g} | {a.get('n')} | {hits} | {_cell(h.get('hit@3'))} | {_cell(h.get('mrr@10'))} | "
                     f"{_cell(a.get('answer_contains_gold'))} | {_cell(a.get('refusal_precision'))} / "
                     f"{_cell(a.get('refusal_recall'))} | {wrong} | {supported_wrong} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), default="iobroker", help="question set (default iobroker)")
    ap.add_argument("--git-dir", type=Path, help="local clone/mirror of the set's upstream repository "
                                                 "holding the pinned commit (default: git clone)")
    ap.add_argument("--corpus", type=Path, help="corpus folder (only the one the gold set names)")
    ap.add_argument("--cache-dir", type=Path, help="index cache (default .cache/realdocs/eval, "
                                                   ".cache/realdocs/<set>-eval)")
    ap.add_argument("--out", type=Path, help="results file (default benchmarks/results/<set's name>.json)")
    args = ap.parse_args()
    qset = SETS[args.set]
    gold, fetch = qset.gold, qset.fetch
    corpus = args.corpus or fetch.DEFAULT_OUT
    if corpus.resolve() != fetch.DEFAULT_OUT.resolve():
        print(f"error: the gold set names its corpus folder ({fetch.DEFAULT_OUT}); --corpus must be that folder",
              file=sys.stderr)
        return 2
    cache_dir = args.cache_dir or qset.cache
    out = args.out or _common.RESULTS_DIR / f"{qset.result}.json"
    pinned_git.ensure_corpus(fetch, corpus, args.git_dir)
    problems, _ = check_gold.check(gold)
    if problems:
        print("error: the gold set does not match the corpus:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    machine = _common.machine_info()
    t0 = time.perf_counter()
    _common.log("retrieval: indexing (first run embeds every chunk) and evaluating " + MODES)
    retrieval = evaluate(EvalRequest(gold=gold, modes=MODES, k=10, cache_dir=cache_dir, progress=False))
    t_retrieval = time.perf_counter() - t0
    _common.log("answers: offline extractive answerer")
    answers = evaluate_answers(EvalRequest(gold=gold, cache_dir=cache_dir, progress=False))
    t_answers = time.perf_counter() - t0 - t_retrieval

    by_group = groups(retrieval.queries)
    group_names = list(by_group)
    retrieval_groups = retrieval_by_group(retrieval, by_group)
    answer_groups = answers_by_group(answers, by_group)
    manifest = pinned_git.read_manifest(corpus)
    payload = {
        "benchmark": "realdocs_quality",
        "corpus": {"repository": manifest["repository"], "commit": manifest["commit"], "files": manifest["files"],
                   "by_language": manifest["by_language"], "adapter_pages": manifest.get("adapters"),
                   "documents_indexed": retrieval.index["documents"], "chunks": retrieval.index["chunks"],
                   "index_version": retrieval.index["index_version"], "embedder": retrieval.index["embedder"]},
        "gold": {"file": str(gold.relative_to(_common.REPO_ROOT)), "questions": len(retrieval.queries),
                 "answerable": len(retrieval.answerable),
                 "groups": {g: len(q) for g, q in by_group.items()}},
        "retrieval": {"summary": retrieval.to_json()["results"], "by_group": retrieval_groups,
                      "per_query": {name: {qid: {"hit@1": r.metrics["hit@1"], "hit@3": r.metrics["hit@3"],
                                                 "ranking": r.ranking[:3]}
                                           for qid, r in res.queries.items()}
                                    for name, res in retrieval.results.items()},
                      "notes": retrieval.notes},
        "answers": {"summary": answers.summary(), "by_group": answer_groups, "notes": answers.notes,
                    "per_query": [{"qid": r.qid, "type": r.type, "refused": r.refused, "verified": r.verified,
                                   "supported": r.supported, "confidence": r.confidence,
                                   "candidate_correct": r.candidate_correct,
                                   "contains_gold": r.contains_gold, "expected_refusal": r.expected_refusal,
                                   "answer": r.answer[:400], "cited": [c["doc"] for c in r.cited]}
                                  for r in answers.results]},
        "seconds": {"retrieval_incl_indexing": _common.rnd(t_retrieval, 1), "answers": _common.rnd(t_answers, 1)},
        "machine": machine,
        "load": os.getloadavg(),
        "notes": [qset.note],
    }
    _common.write_result(qset.result, payload, out)
    print(table(retrieval_groups, answer_groups, group_names), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
