"""Modal and auxiliary verbs ("sollte", "sein", "würde", "be") say how a question is asked, not
what it is about: a sentence gets no lexical credit for repeating them. The German stopword
list keeps most of them, so a sentence opening "Sollte das nicht geschehen …" outscored the one
that answers "Was sollte … installiert sein?".

The real scoring code with every term weighing 1 and no embedder (as in test_table_rows.py).
"""

from __future__ import annotations

from beleg.answer.scoring import SentenceScorer, candidate_sentences, function_verb_terms
from beleg.answer.types import Source
from beleg.types import Hit

MULTIHOST = ("Für einen Slave genügt eine Minimalinstallation: nur der js-controller und der Admin. "
             "Sollte der neue Host nicht erscheinen, bitte beide Hosts neu starten, zuerst den Master, "
             "dann den Slave.")


def _scorer() -> SentenceScorer:
    scorer = SentenceScorer.__new__(SentenceScorer)
    scorer.terms = type("Terms", (), {"idf": staticmethod(lambda term: 1.0)})()  # type: ignore[assignment]
    scorer.embed_queries = scorer.embed_passages = None
    scorer.cache = None
    return scorer


def _source(text: str, language: str) -> Source:
    meta = {"language": language, "status": "current", "authority": "guide"}
    return Source("S1", Hit("c1", "d1", "d1.md", "Multihost", ("Multihost",), 0, len(text), 1.0, text, meta), 1)


def test_a_modal_verb_of_the_question_does_not_pick_the_sentence_that_repeats_it() -> None:
    question = "Was sollte auf einem Slave installiert sein?"
    best = _scorer().score(question, candidate_sentences([_source(MULTIHOST, "de")]))[0]
    assert best.text.startswith("Für einen Slave genügt eine Minimalinstallation"), best.text


def test_function_verbs_are_skipped_in_their_own_language_only() -> None:
    # German "war" (was) and "will" are words of other languages: an English question keeps them
    assert "war" in function_verb_terms("de") and "war" not in function_verb_terms("en")
    assert "war" in function_verb_terms("?") and "be" in function_verb_terms("?")
