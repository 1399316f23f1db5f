"""benchmarks/retrieval_techniques.py: how it scores a search and what it asks (no model)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import retrieval_techniques as rt  # noqa: E402

from beleg.evaluate.datasets import Dataset, Query  # noqa: E402
from beleg.retrieve.techniques import Techniques  # noqa: E402


def _hit(doc: str, text: str = "") -> Any:
    return SimpleNamespace(doc_id=doc, source=doc, text=text)


def _variant(qrels: dict[str, int], answers: list[str] | None = None, **info: Any) -> tuple[rt.Variant, Query]:
    q = Query("q1", "question", {"answers": answers or [], **info})
    return rt.Variant("t", Dataset("t", [q], {"q1": qrels}, documents=[]), [q]), q


def test_hit_and_mrr_count_only_the_documents_that_answer_while_ndcg_uses_every_grade() -> None:
    v, q = _variant({"answers.md": 2, "related.md": 1})
    m = rt.score_query(v, q, [_hit("related.md"), _hit("answers.md")])
    assert m["hit@1"] == 0.0 and m["mrr@10"] == 0.5 and m["hit@5"] == 1.0
    # DCG = 1/log2(2) + 2/log2(3); ideal = 2/log2(2) + 1/log2(3)
    assert m["ndcg@10"] == pytest.approx((1 + 2 / 1.5849625) / (2 + 1 / 1.5849625), abs=1e-6)


def test_a_document_ranks_where_its_best_hit_ranks() -> None:
    v, q = _variant({"b": 1})
    m = rt.score_query(v, q, [_hit("a"), _hit("a"), _hit("b")])
    assert m["hit@1"] == 0.0 and m["mrr@10"] == 0.5


def test_answer_at_5_reads_only_the_text_of_the_first_five_hits() -> None:
    v, q = _variant({"a": 1}, answers=["Luke Kuechly"])
    hits = [_hit("a", "nothing")] * 5 + [_hit("a", "Luke Kuechly")]
    assert rt.score_query(v, q, hits)["answer@5"] == 0.0
    assert rt.score_query(v, q, [_hit("a", "… and luke kuechly.")])["answer@5"] == 1.0
    assert rt.score_query(v, q, hits)["words@5"] == 5.0


class RecordingKB:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def search(self, text: str, **kwargs: Any) -> list[Any]:
        self.calls.append({"text": text, **kwargs})
        return [_hit("a", "x y")]


def test_each_question_is_asked_with_its_filters_and_as_its_principal() -> None:
    # The first version of the script dropped the gold set's filters (e.g. version=2.4).
    v, q = _variant({"a": 2}, filters={"version": "2.4"}, principal={"user": "u", "tenant": "nordwind"})
    kb = RecordingKB()
    row = rt.evaluate(kb, v, Techniques(expand=1))
    assert row["queries"] == 1 and row["hit@1"] == 1.0
    assert kb.calls and all(c["filters"] == {"version": "2.4"} for c in kb.calls)
    assert all(c["principal"].tenant == "nordwind" and c["principal"].user == "u" for c in kb.calls)
    assert all(c["techniques"] == Techniques(expand=1) and c["k"] == rt.K for c in kb.calls)
    assert len(row["loadavg_before"]) == 3 and len(row["loadavg_after"]) == 3


def test_the_data_sets_use_the_eval_loaders_and_keep_only_answerable_questions() -> None:
    demo, de_en = rt.variants(["demo", "de-en"], limit=5, demo_limit=None)
    assert demo.queries and all(any(g >= 1 for g in demo.data.qrels[q.qid].values()) for q in demo.queries)
    assert len(demo.queries) < len(demo.data.queries)  # the gold set has unanswerable questions
    assert len(de_en.queries) == 5
    first = de_en.queries[0]
    german = json.loads((rt.XQUAD / "xquad.dev.de.json").read_text(encoding="utf-8"))
    assert first.text == german["data"][0]["paragraphs"][0]["qas"][0]["question"]
    assert all(d.startswith("xquad.dev.en:") for d in de_en.data.qrels[first.qid])  # German question, English paragraph


def test_skip_leaves_out_the_first_questions_and_says_so() -> None:
    (whole,) = rt.variants(["en"], limit=10, demo_limit=None)
    (later,) = rt.variants(["en"], limit=3, demo_limit=None, skip=7)
    assert [q.qid for q in later.queries] == [q.qid for q in whole.queries[7:10]]
    assert "after the first 7" in later.label


def test_an_unknown_data_set_is_named_in_the_error() -> None:
    with pytest.raises(SystemExit, match="xx"):
        rt.variants(["xx"], limit=1, demo_limit=None)


def test_the_paired_test_counts_questions_won_and_lost_and_gives_the_exact_sign_test() -> None:
    assert rt.paired_hit1([0, 0, 0, 0, 0], [1, 1, 1, 1, 1]) == {"won": 5, "lost": 0, "sign_test_p": 0.0625}
    assert rt.paired_hit1([1, 0, 1], [0, 1, 1]) == {"won": 1, "lost": 1, "sign_test_p": 1.0}
    assert rt.paired_hit1([1, 1], [1, 1]) == {"won": 0, "lost": 0, "sign_test_p": 1.0}
    assert rt.paired_hit1([0] * 36 + [1] * 14, [1] * 36 + [0] * 14)["sign_test_p"] == pytest.approx(0.0026, abs=1e-4)


def test_each_row_keeps_its_per_question_hits_for_the_paired_test() -> None:
    v, _ = _variant({"a": 2})
    row = rt.evaluate(RecordingKB(), v, Techniques())
    assert row[rt.PER_QUERY_HIT1] == [1.0]
