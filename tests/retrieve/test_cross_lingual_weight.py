"""Hybrid search on a corpus in two languages: BM25 is trusted less when the answer is in
the other language and its own best hit matches little of the question."""

from __future__ import annotations

from pathlib import Path

import pytest

import beleg
from beleg.ingest.pipeline import TextSource
from beleg.retrieve.coverage import TermCoverage
from beleg.retrieve.retriever import SearchOptions, cross_lingual_factor
from beleg.types import ANONYMOUS

GERMAN = [  # pages that share the question's common German words, none of them answers it
    ("de/telegram.md", "# Telegram-Adapter\n\nWelche Befehle der Telegram-Adapter unterstützt, steht in der "
                       "Befehlsliste des Adapters."),
    ("de/shelly.md", "# Shelly-Adapter\n\nDer Shelly-Adapter unterstützt Geräte der ersten und der zweiten "
                     "Generation."),
    ("de/backup.md", "# Sicherung\n\nWelche Dateien gesichert werden, legt der Backup-Adapter fest."),
]
ENGLISH = ("en/history.md", "# History module\n\nThe history module writes its records to MySQL, PostgreSQL or "
                            "SQLite databases.")


@pytest.fixture()
def kb(tmp_path: Path, embedder):
    base = beleg.open(tmp_path / "kb", embedder=embedder)
    texts = [TextSource(s, t, {"language": "de"}) for s, t in GERMAN]
    texts.append(TextSource(ENGLISH[0], ENGLISH[1], {"language": "en"}))
    base.ingest_texts(texts, progress=False)
    yield base
    base.close()


def _factor(kb, question: str, options: SearchOptions | None = None) -> float:
    from beleg.index.analyzer import analyze_query

    index = kb.search_index()
    eligible = index.eligible(None, ANONYMOUS)
    terms = analyze_query(question)
    return cross_lingual_factor(index, ANONYMOUS, question, index.lexical_top_k(terms, 10, eligible),
                                index.dense_top_k(kb._embed_query(question), 10, eligible),
                                TermCoverage(index, eligible), options or SearchOptions())


def test_a_german_question_answered_by_the_english_page_trusts_bm25_less(kb) -> None:
    question = "Welche Datenbanken unterstützt das Verlaufsmodul?"
    dense = kb.search(question, mode="dense", k=1, self_query=False)
    assert dense[0].source == ENGLISH[0]  # the premise: the dense leg finds the English page,
    assert kb.search(question, mode="bm25", k=1, self_query=False)[0].source.startswith("de/")  # BM25 a German one
    factor = _factor(kb, question)
    assert 0.0 <= factor < 1.0
    hits = kb.search(question, k=4, self_query=False)
    assert hits[0].source == ENGLISH[0] and hits[0].scores["bm25_weight"] < 1.0
    off = kb.search(question, k=4, self_query=False, cross_lingual_share=None)
    # Off, only the vocabulary coverage scales BM25; on, the factor multiplies it.
    assert hits[0].scores["bm25_weight"] == pytest.approx(off[0].scores["bm25_weight"] * factor)
    assert _factor(kb, question, SearchOptions(cross_lingual_share=None)) == 1.0


def test_a_question_in_the_language_of_the_dense_hit_keeps_bm25_at_full_weight(kb) -> None:
    question = "Which databases does the history module support?"
    assert kb.search(question, mode="dense", k=1, self_query=False)[0].source == ENGLISH[0]
    assert _factor(kb, question) == 1.0


def test_on_a_corpus_in_one_language_only_the_coverage_weight_applies(tmp_path: Path, embedder) -> None:
    # German questions over English pages: BM25's best hit is not in the question's language,
    # and the vocabulary coverage weight already leans on the dense leg (XQuAD de→en).
    base = beleg.open(tmp_path / "en-only", embedder=embedder)
    try:
        base.ingest_texts([TextSource(ENGLISH[0], ENGLISH[1], {"language": "en"}),
                           TextSource("en/shelly.md", "# Shelly adapter\n\nThe Shelly adapter supports devices of "
                                      "the first and second generation.", {"language": "en"})], progress=False)
        question = "Welche Datenbanken unterstützt das Verlaufsmodul?"
        assert base.search(question, mode="dense", k=1, self_query=False)[0].source == ENGLISH[0]
        assert _factor(base, question) == 1.0
    finally:
        base.close()
