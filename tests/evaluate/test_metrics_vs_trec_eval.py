"""Every metric equals trec_eval's (through pytrec_eval) on the same runs and qrels, within 1e-9."""

from __future__ import annotations

import random

import pytest
import pytrec_eval  # from pytrec-eval-terrier, a test dependency

from beleg.evaluate.metrics import evaluate_run, ranked

KS = (1, 3, 5, 10)


def _random_case(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 8))
        # Graded relevance 0..3, including queries whose judged docs are all 0.
        qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3]) if q % 7 else 0 for d in judged}
        retrieved = rng.sample(docs, rng.randint(0, 15))
        # Coarse scores make ties common: trec_eval breaks them by doc id, descending.
        run[qid] = {d: float(rng.randint(0, 4)) for d in retrieved}
    return run, qrels


def _peer(run: dict, qrels: dict, k: int) -> dict[str, dict[str, float]]:
    measures = {f"success_{k}", f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    # MRR@k = reciprocal rank on the run cut to its top k (in trec_eval's own order).
    cut = {q: {d: docs[d] for d in ranked(docs)[:k]} for q, docs in run.items()}
    full = evaluator.evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    return {
        q: {
            f"hit@{k}": m[f"success_{k}"],
            f"precision@{k}": m[f"P_{k}"],
            f"recall@{k}": m[f"recall_{k}"],
            f"ndcg@{k}": m[f"ndcg_cut_{k}"],
            f"mrr@{k}": rr.get(q, {}).get("recip_rank", 0.0),
        }
        for q, m in full.items()
    }


@pytest.mark.parametrize("seed", range(5))
def test_all_metrics_equal_trec_eval(seed: int) -> None:
    run, qrels = _random_case(seed)
    ours = evaluate_run(run, qrels, KS)
    compared = 0
    for k in KS:
        peer = _peer(run, qrels, k)
        for qid, values in peer.items():
            for name, value in values.items():
                assert ours[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)
                compared += 1
    assert compared > 400


def test_queries_without_relevant_documents_score_zero() -> None:
    ours = evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 0}}, (1, 5))
    assert set(ours["q"].values()) == {0.0}


def test_tie_order_is_doc_id_descending() -> None:
    assert ranked({"a": 1.0, "c": 1.0, "b": 2.0}) == ["b", "c", "a"]
