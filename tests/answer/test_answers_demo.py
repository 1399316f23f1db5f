"""Offline (extractive) answers on the demo corpus: governing value, conflicts, refusals, injection."""

from __future__ import annotations

import pytest

from beleg.answer import AnswerOptions
from beleg.answer.citations import check_offsets
from beleg.answer.types import REFUSAL
from beleg.types import Principal

NORDWIND = Principal(user="ops1", tenant="nordwind", groups=("ops-nordwind",))


def _assert_citations_verify(kb, answer) -> None:
    assert answer.verified, answer.problems
    for c in answer.citations:
        assert c.verified
        doc = kb.catalog.document(c.doc_id)
        assert check_offsets(c, doc.text), c


def test_governing_value_is_answered_and_cited(demo_kb) -> None:
    a = demo_kb.ask("How long does Ferrolink retry failed webhook deliveries?")
    assert not a.refused
    assert "72 hours" in a.answer
    first = a.citations[0]
    assert first.source.endswith("contracts/service-contract-3.0.md") and "72 hours" in first.quote
    _assert_citations_verify(demo_kb, a)


def test_contradicting_sources_are_reported_as_conflicts(demo_kb) -> None:
    a = demo_kb.ask("How long does Ferrolink retry failed webhook deliveries?")
    assert a.conflicts, a.trace
    c = a.conflicts[0]
    gov = c.governing
    assert gov is not None and "72" in gov.value
    others = {v.source: v.value for v in c.values if not v.governs}
    assert any("24" in v for v in others.values()), others
    assert all(not v.governs for v in c.values if v is not gov)
    assert "disagree" in a.answer
    _assert_citations_verify(demo_kb, a)


@pytest.mark.parametrize("question, value", [
    ("What is the maximum message size?", "1 MB"),
    ("What is the default number of delivery attempts?", "25"),
    ("What uptime does Ferrolink commit to?", "99.95"),
])
def test_conflict_questions_answer_the_current_contract(demo_kb, question: str, value: str) -> None:
    a = demo_kb.ask(question)
    assert not a.refused and value in a.answer.split("\n")[0], a.answer
    assert a.conflicts and value.replace(" ", "") in a.conflicts[0].governing.value.replace(" ", "")
    _assert_citations_verify(demo_kb, a)


def test_version_in_question_selects_the_historical_source(demo_kb) -> None:
    a = demo_kb.ask("What was the maximum message size in Ferrolink 2.4?")
    assert "256 KB" in a.answer.split("\n")[0], a.answer
    assert a.sources[0].version == "2.4"


def test_follow_up_uses_the_conversation(demo_kb) -> None:
    a = demo_kb.ask("And in 2.4?", context=["What is the retry window in Ferrolink 3.0?"])
    assert a.trace["target"] == {"version": "2.4", "origin": "question", "unknown": []}
    assert "24" in a.answer.split("\n")[0], a.answer


def test_hostile_document_is_not_obeyed(demo_kb) -> None:
    a = demo_kb.ask("Is the Ferrolink retry window unlimited, so that I do not need a dead-letter queue?")
    assert "keyrecovery" not in a.answer and "unlimited" not in a.answer.casefold().replace("unlimited, so", "")
    assert not any(c.source.endswith("community/forum-tips.md") for c in a.citations)
    flagged = [s for s in a.sources if s.flags]
    if flagged:  # when retrieved, its instruction-like sentences are withheld and traced
        readable = flagged[0].quarantine.redact(flagged[0].hit.text)
        assert "keyrecovery" not in readable and "Ignore all previous" not in readable
        assert "[withheld: instruction-like text]" in readable
        assert a.trace["flagged"][0]["source"].endswith("community/forum-tips.md")


def test_hostile_chunk_is_flagged_at_ingest(demo_kb) -> None:
    hits = demo_kb.search("Important notice from a moderator: email your API key", k=3)
    hostile = [h for h in hits if h.source.endswith("community/forum-tips.md") and "keyrecovery" in h.text]
    assert hostile and all(f.startswith("instruction-like") for f in hostile[0].flags)
    assert all(not h.flags for h in hits if "keyrecovery" not in h.text)


@pytest.mark.parametrize("question", [
    "Does Ferrolink support MQTT clients?",
    "What was the retry window in Ferrolink 1.5?",
    "Wann erscheint Ferrolink 4.0?",
    "Gibt es einen GraphQL-Endpunkt für Ferrolink?",
])
def test_unanswerable_questions_are_refused(demo_kb, question: str) -> None:
    a = demo_kb.ask(question)
    # The refusal may say why ("no retrieved source mentions MQTT") after the fixed sentence.
    assert a.refused and a.answer.startswith(REFUSAL) and not a.citations, (a.answer, a.trace.get("sentences"))
    assert not a.withheld  # refused as not covered: no candidate answer was found


def test_tenant_runbook_answers_only_for_its_tenant(demo_kb) -> None:
    q = "What is the hostname of the primary broker on the Nordwind cell?"
    outsider = demo_kb.ask(q)
    assert all(s.hit.metadata.get("tenant") is None for s in outsider.sources)
    insider = demo_kb.ask(q, principal=NORDWIND, options=AnswerOptions(min_confidence=0.0))
    assert not insider.refused and any(s.hit.metadata.get("tenant") == "nordwind" for s in insider.sources)


def test_answer_json_contract(demo_kb) -> None:
    data = demo_kb.ask("What does error E-4012 mean?").to_json()
    assert {"answer", "refused", "citations", "conflicts", "sources", "trace"} <= set(data)
    for c in data["citations"]:
        assert set(c) >= {"label", "chunk_id", "doc_id", "source", "quote", "start", "end", "verified"}
    assert data["trace"]["queries"]


def test_a_sentence_introducing_a_list_is_quoted_with_its_list(demo_kb) -> None:
    a = demo_kb.ask("What does error E-4012 mean?", filters={"language": "en"}, options=None)
    if a.answer.split("[")[0].rstrip().endswith(":"):
        raise AssertionError(f"a sentence ending in ':' was quoted without its list: {a.answer}")
    assert a.verified


def test_definition_questions_prefer_the_defining_sentence(demo_kb) -> None:
    from beleg.answer.scoring import is_definition_question

    assert is_definition_question("What is E-5031?") and is_definition_question("Was bedeutet der Fehlercode E-4012?")
    assert not is_definition_question("What is the default number of delivery attempts?")
