from __future__ import annotations

import pytest

from beleg.index.analyzer import analyze, analyze_query, detect_language


@pytest.mark.parametrize(
    "identifier, parts",
    [
        ("/api/v3", ["api", "v3"]),
        ("POST /v5/queues/{id}/redrive", ["/v5/queues/{id}/redrive", "queue", "redriv"]),
        ("E-4012", ["4012"]),
        ("v2.4", ["2.4"]),
        ("X-Request-Id", ["request", "id"]),
        ("snake_case_name", ["snake", "case", "name"]),
    ],
)
def test_identifiers_are_kept_whole_and_split_into_parts(identifier: str, parts: list[str]) -> None:
    terms = analyze(f"See {identifier}.", "en")
    whole = identifier.split()[-1].lower()
    assert whole in terms
    for part in parts:
        assert part in terms


def test_identifier_query_matches_document_terms() -> None:
    doc = set(analyze("Call POST /v5/queues/{id}/redrive after fixing E-4012 (see X-Request-Id).", "en"))
    for query in ["/v5/queues/{id}/redrive", "E-4012", "x-request-id", "redrive", "request id"]:
        assert set(analyze_query(query)) & doc, query


def test_german_stemming_and_umlaut_folding() -> None:
    # Inflected forms meet, and umlauts fold so that the stems agree.
    assert analyze("Zustellversuche", "de") == analyze("Zustellversuchen", "de")
    assert analyze("Größe", "de") == analyze("Grösse", "de")
    assert set(analyze("Nachrichten", "de")) == set(analyze("Nachricht", "de"))
    assert "wiederhol" in analyze("wiederholen", "de")[0]


def test_english_stemming_and_stopwords() -> None:
    assert analyze("the retries are retried", "en") == ["retri", "retri"]


def test_language_detection() -> None:
    assert detect_language("Wie viele Zustellversuche gibt es für eine Nachricht?") == "de"
    assert detect_language("How many delivery attempts are there for a message?") == "en"


def test_short_questions_are_told_by_their_question_words() -> None:
    # "in" is a stopword of both languages: these tied and were read as no language at all.
    for question in ("In welchem Jahr starb Tesla?", "Wann verabschiedete Victoria seine Verfassung?",
                     "Worauf basiert Victorias Verfassung?", "Welchen Netzwerktyp verwendet X.25?"):
        assert detect_language(question, default="?") == "de", question
    assert detect_language("Whose idea was it?", default="?") == "en"
    # Question words are a language signal, never BM25 stopwords: they stay searchable.
    assert analyze("Wann worauf", "de") != []


def test_stopword_only_query_is_not_empty() -> None:
    assert analyze_query("the") != []
