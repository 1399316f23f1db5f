"""Golden retrieval figures on a fixed slice of real data (XQuAD dev, articles 2–6).

If a change moves these numbers, it changed retrieval quality: update them only with a
reason (and the full-data figures in docs/benchmarks.md). BM25 is exact arithmetic and
must match to 1e-9; figures that involve the embedding model are held to ±0.01 so a
different CPU's floating-point order cannot fail the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beleg.evaluate.datasets import Dataset, load_squad
from beleg.evaluate.runner import parse_configs, prepare_index, run_eval

XQUAD = Path(__file__).resolve().parents[1] / "data" / "xquad"

GOLDEN = {
    "bm25": {"hit@1": 0.9805825242718447, "ndcg@10": 0.9928335874479894},
    "dense": {"hit@1": 0.9611650485436893, "ndcg@10": 0.9843960122399453},
    "hybrid": {"hit@1": 0.9805825242718447, "ndcg@10": 0.9928335874479893},
}


def _slice(language: str) -> Dataset:
    path = XQUAD / f"xquad.dev.{language}.json"
    assert path.exists(), f"XQuAD dev data is expected at {path} (shipped in the repository under tests/data/xquad)"
    full = load_squad([path])
    # Articles 1..5 (skipping Super Bowl, whose 74 questions would dominate): 25 paragraphs.
    keep = {d.doc_id for d in full.documents or [] if 1 <= int(d.doc_id.split(":")[1].split("-")[0]) <= 5}
    queries = [q for q in full.queries if set(full.qrels[q.qid]) <= keep]
    return Dataset(f"{full.name}:slice", queries, {q.qid: full.qrels[q.qid] for q in queries},
                   documents=[d for d in full.documents or [] if d.doc_id in keep])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, embedder):
    from beleg.kb import KnowledgeBase

    ds = _slice("en")
    kb = prepare_index(ds, tmp_path_factory.mktemp("cache"), progress=False,
                       kb_factory=lambda p: KnowledgeBase(p, embedder=embedder))
    try:
        return run_eval(kb, ds, parse_configs("bm25,dense,hybrid"), k=10, progress=False)
    finally:
        kb.close()


def test_slice_shape(report) -> None:
    assert len(report.queries) == 103
    assert report.index["documents"] == 25


@pytest.mark.parametrize("config", sorted(GOLDEN))
def test_golden_figures(report, config: str) -> None:
    means = report.results[config].means
    tolerance = 1e-9 if config == "bm25" else 0.01
    for metric, value in GOLDEN[config].items():
        assert means[metric] == pytest.approx(value, abs=tolerance), (config, metric, means[metric])
