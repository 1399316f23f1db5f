"""Selective answering by default, and refusals that name what is missing.

* The default ``min_confidence`` is the threshold fitted on development data
  (``FITTED_MIN_CONFIDENCE``), the same for the Python API, ``ask``, ``chat`` and the service.
* A refusal below it still shows the closest passages, with verified citations, marked as
  not shown to answer; ``min_confidence=0`` answers everything the older rules answer.
* A question whose anchors (MQTT, a version, an identifier) no retrieved source mentions
  is refused with a reason naming them; a question in another language than the sources
  is not refused merely because its words cannot match.
"""

from __future__ import annotations

import io
import json

import pytest

import beleg
from beleg.answer import REFUSAL, WITHHELD, AnswerOptions
from beleg.answer.support import FITTED_MIN_CONFIDENCE
from beleg.cli.main import main
from beleg.service import Service

RETRY = "How long does Ferrolink retry failed webhook deliveries?"


def test_the_default_threshold_is_the_fitted_one_for_offline_answers() -> None:
    assert AnswerOptions().confidence_floor(llm=False) == FITTED_MIN_CONFIDENCE
    assert 0.0 < FITTED_MIN_CONFIDENCE < 1.0
    # The confidence model was not fitted on LLM answers: no default threshold for them.
    assert AnswerOptions().confidence_floor(llm=True) == 0.0
    assert AnswerOptions(min_confidence=0.3).confidence_floor(llm=True) == 0.3
    assert AnswerOptions(min_confidence=0.0).confidence_floor(llm=False) == 0.0


def test_a_refusal_below_the_threshold_shows_the_closest_passages(demo_kb) -> None:
    answered = demo_kb.ask(RETRY, options=AnswerOptions(min_confidence=0.0))
    assert not answered.refused and answered.citations
    withheld = demo_kb.ask(RETRY, options=AnswerOptions(min_confidence=0.9999))
    assert withheld.refused and withheld.withheld
    # Not "the sources do not answer this": the passages below may answer, unconfirmed.
    assert withheld.answer.startswith(WITHHELD) and REFUSAL not in withheld.answer
    assert "Closest passages, not shown to answer the question" in withheld.answer
    assert "< 0.9999" in withheld.answer  # the floor as given, not rounded up to "1.00"
    # The passages keep their citations (verified quotes at exact offsets), so nothing is lost.
    assert withheld.citations and all(c.verified for c in withheld.citations)
    assert withheld.citations[0].quote == answered.citations[0].quote
    for c in withheld.citations:
        assert f"[{c.label}]" in withheld.answer and c.source in withheld.answer
    assert withheld.trace["withheld_answer"] == answered.answer
    assert withheld.conflicts == ()


def test_min_confidence_zero_restores_answering(demo_kb, capsys) -> None:
    assert main(["ask", RETRY, "--index", str(demo_kb.path), "--json", "--min-confidence", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["refused"] is False and "72 hours" in data["answer"]


def test_api_ask_chat_and_service_share_the_default(demo_kb, capsys, monkeypatch) -> None:
    # A question whose confidence lies below the default: the same refusal everywhere.
    question = "How quickly will somebody get back to us on the Business tier if production stops?"
    api = demo_kb.ask(question)
    assert api.trace["decision"]  # answered or refused, it says why
    service = Service(demo_kb).ask(question)
    assert main(["ask", question, "--index", str(demo_kb.path), "--json"]) == 0
    asked = json.loads(capsys.readouterr().out)
    monkeypatch.setattr("sys.stdin", io.StringIO(question + "\n"))
    assert main(["chat", "--index", str(demo_kb.path), "--json"]) == 0
    chatted = json.loads(capsys.readouterr().out.splitlines()[0])
    for other in (service.to_json(), asked, chatted):
        assert (other["refused"], other["answer"], other["confidence"]) == (api.refused, api.answer, api.confidence)


def test_an_unmentioned_acronym_is_refused_with_its_name(demo_kb) -> None:
    a = demo_kb.ask("Does Ferrolink support MQTT clients?", options=AnswerOptions(min_confidence=0.0))
    assert a.refused and a.citations == ()
    assert "MQTT" in a.answer and "MQTT" in a.trace["decision"]
    # The CLI and the web page put "refused: " before the decision themselves.
    assert a.trace["decision"] == "no retrieved source mentions MQTT"


def test_an_unmentioned_product_name_is_refused(demo_kb) -> None:
    a = demo_kb.ask("Is there an official Terraform provider for managing Ferrolink queues?",
                    options=AnswerOptions(min_confidence=0.0))
    assert a.refused and "Terraform" in a.trace["decision"]


@pytest.fixture(scope="module")
def english_kb(tmp_path_factory: pytest.TempPathFactory, embedder):
    folder = tmp_path_factory.mktemp("english-only")
    (folder / "webhooks.md").write_text(
        "---\ntitle: Webhooks\nlanguage: en\n---\n# Webhook retries\n\n"
        "If a delivery attempt fails, Quillmail retries the delivery for 48 hours.\n\n"
        "# Signing\n\nEvery delivery carries an `X-Quill-Signature` header.\n", encoding="utf-8")
    kb = beleg.open(folder / "kb", embedder=embedder)
    kb.ingest([str(folder / "webhooks.md")], progress=False)
    yield kb
    kb.close()


def test_a_cross_lingual_question_is_not_refused_for_words_that_cannot_match(english_kb) -> None:
    a = english_kb.ask("Wie lange wiederholt Quillmail fehlgeschlagene Zustellungen?",
                       options=AnswerOptions(min_confidence=0.0))
    assert "mentions" not in str(a.trace.get("decision"))
    assert not a.refused and "48 hours" in a.answer


def test_a_cross_lingual_question_is_refused_for_a_missing_identifier(english_kb) -> None:
    a = english_kb.ask("Welchen Wert hat der Header X-Quill-Timestamp?", options=AnswerOptions(min_confidence=0.0))
    assert a.refused and "X-Quill-Timestamp" in a.trace["decision"]


@pytest.mark.parametrize("question", ["What's the weather like?", "Wie wird das Wetter morgen?",
                                      "What is the capital of France?", "Wer ist der Bundeskanzler?"])
def test_a_question_using_no_word_of_the_sources_is_not_covered(demo_kb, question: str) -> None:
    # "What's the weather like?" was answered with the German FAQ's first sentence, marked
    # supported: across languages only the dense similarity was checked, and it is never 0.
    a = demo_kb.ask(question, options=AnswerOptions(min_confidence=0.0))
    assert a.refused and not a.withheld and a.citations == ()
    assert a.trace["decision"].startswith("no source uses the word"), a.trace["decision"]


def test_no_shared_word_is_no_reason_across_languages(english_kb) -> None:
    # Over English-only sources a German question shares no word; the dense scores decide.
    a = english_kb.ask("Wie lange wiederholt man fehlgeschlagene Zustellungen?", options=AnswerOptions(min_confidence=0.0))
    assert "no source uses" not in str(a.trace.get("decision"))


def test_an_evidence_gap_is_refused_before_any_model_call(demo_kb) -> None:
    from beleg.testing import ScriptedLLM

    llm = ScriptedLLM(responder=lambda messages: "Yes, Ferrolink supports MQTT [S1].")
    a = demo_kb.ask("Does Ferrolink support MQTT clients?", llm=llm)
    assert a.refused and "MQTT" in a.trace["decision"] and a.trace["decision"].startswith("refused before the model")
    assert a.trace["llm"]["calls"] == 0 and not llm.calls


def test_a_refusal_reason_never_reads_as_a_value_below_itself() -> None:
    from beleg.answer.extractive import below

    # 0.8697 under 0.87 printed with two decimals read "confidence 0.87 < 0.87".
    assert below(0.8697, 0.87) == "0.8697 < 0.87"
    assert below(0.866, 0.87) == "0.866 < 0.87"
    assert below(0.62, 0.81) == "0.62 < 0.81"
    assert below(0.19, 0.2) == "0.19 < 0.2"


def test_a_withheld_answer_says_which_check_failed(demo_kb) -> None:
    from beleg.testing import ScriptedLLM

    only_low = demo_kb.ask(RETRY, options=AnswerOptions(min_confidence=0.9999))
    assert only_low.supported and only_low.trace["decision"].endswith(
        "the best candidate was not shown to answer the question")  # every check passed: the score is the reason
    rejected = demo_kb.ask(RETRY, options=AnswerOptions(verifier=ScriptedLLM(responder=lambda m: "NONE")))
    assert rejected.refused and "the verifier found no answer in the passage" in rejected.trace["decision"]
    assert rejected.trace["llm"]["calls"] == 1


@pytest.mark.parametrize("spelled", ["Ferrolink 3", "Ferrolink 3.0.0", "version 3"])
def test_a_version_written_another_way_is_the_stored_version(demo_kb, spelled: str) -> None:
    # "Ferrolink 3" is the 3.0 contract's version, not an anchor no source mentions.
    a = demo_kb.ask(f"What is the retry window in {spelled}?", options=AnswerOptions(min_confidence=0.0))
    assert not a.refused, a.trace["decision"]
    assert a.trace["target"]["version"] == "3.0" and "72 hours" in a.answer
    assert demo_kb.ask("What is the retry window in Ferrolink 2.4.0?").answer == \
        demo_kb.ask("What is the retry window in Ferrolink 2.4?").answer


@pytest.fixture(scope="module")
def mostly_english_kb(tmp_path_factory: pytest.TempPathFactory, embedder):
    # English documentation with a couple of German pages on something else: the German side
    # is too small for a missing German word to mean anything.
    folder = tmp_path_factory.mktemp("mostly-english")
    (folder / "webhooks.md").write_text(
        "---\ntitle: Webhooks\nlanguage: en\n---\n# Webhook retries\n\n"
        "If a delivery attempt fails, Quillmail retries the delivery for 48 hours.\n", encoding="utf-8")
    (folder / "rechnungen.md").write_text(
        "---\ntitle: Rechnungen\nlanguage: de\n---\n# Rechnungen\n\n"
        "Rechnungen werden am ersten Werktag des Monats per E-Mail verschickt.\n\n"
        "# Zahlungsziel\n\nDas Zahlungsziel beträgt vierzehn Tage.\n", encoding="utf-8")
    kb = beleg.open(folder / "kb", embedder=embedder)
    kb.ingest([str(folder / "webhooks.md"), str(folder / "rechnungen.md")], progress=False)
    yield kb
    kb.close()


def test_a_few_pages_in_the_questions_language_do_not_make_its_words_evidence(mostly_english_kb) -> None:
    # No word of this German question occurs anywhere, but the English page answers it: the
    # German side (two pages) is too small for that absence to say the question is not covered.
    a = mostly_english_kb.ask("Wie lange versucht man misslungene Auslieferungen erneut?",
                              options=AnswerOptions(min_confidence=0.0))
    decision = str(a.trace.get("decision"))
    assert "no source uses" not in decision and "of the question's terms" not in decision, decision
    assert a.trace["evidence_coverage"] is None


def test_v_and_range_spellings_of_versions(demo_kb) -> None:
    # "v2.4" names the 2.4 version by itself (no cue needed) and is found as "2.4" in sources;
    # "1.x" is a range, never the stored 1.8.
    a = demo_kb.ask("Retry window v2.4?", options=AnswerOptions(min_confidence=0.0))
    assert a.trace["target"]["version"] == "2.4" and "mentions" not in str(a.trace.get("decision"))
    assert demo_kb.ask("How do I migrate from Ferrolink 1.x?").trace["target"]["version"] is None


def test_a_gap_in_the_asked_version_says_which_version(demo_kb) -> None:
    # The 2.4 contract is the only evidence for a 2.4 question; other versions may name the
    # anchor, so "no retrieved source mentions" alone would be false.
    a = demo_kb.ask("Does Ferrolink 2.4 support MQTT clients?")
    assert a.refused and a.trace["decision"] == "no retrieved source of version 2.4 mentions MQTT"


def test_asking_for_older_versions_makes_historical_sources_eligible(demo_kb) -> None:
    # Self-query reads "older versions" as status = historical and searches only those; the
    # answer must then be allowed to use them (it was refused: "the sources cover 0.00").
    a = demo_kb.ask("What was the retry window in older versions?", options=AnswerOptions(min_confidence=0.0))
    assert not a.refused and a.sources[0].status == "historical" and a.sources[0].eligible
    assert "asked for" in " ".join(a.sources[0].reasons)
    pinned = demo_kb.ask("What was the retry window?", where="status = historical",
                         options=AnswerOptions(min_confidence=0.0))
    assert not pinned.refused and pinned.sources[0].status == "historical"
    # Without asking, historical sources still never answer.
    assert all(s.eligible == (s.status != "historical") for s in demo_kb.ask(RETRY).sources)


def test_the_words_of_how_one_asks_are_no_focus(demo_kb) -> None:
    a = demo_kb.ask("What about the retry window?", options=AnswerOptions(min_confidence=0.0))
    assert a.supported and "72 hours" in a.answer


def test_words_the_evidence_lacks_withhold_rather_than_deny(demo_kb) -> None:
    # A paraphrase shares almost no word with the page that answers it (ranked first here):
    # low term coverage is no proof that the sources do not answer, so the refusal says no
    # answer could be confirmed and shows the closest passage, at every confidence floor.
    question = ("How can my server tell that an incoming callback genuinely comes from you "
                "and was not tampered with?")
    for floor in (0.0, None):
        a = demo_kb.ask(question, options=AnswerOptions(min_confidence=floor))
        assert a.refused and a.withheld, a.answer
        assert "of the question's terms" in a.trace["decision"]
        assert a.answer.startswith(WITHHELD) and REFUSAL not in a.answer
        assert a.citations and all(c.verified for c in a.citations)
        assert "signature" in a.citations[0].quote
        assert a.trace["withheld_answer"].endswith(f"[{a.citations[0].label}]")


def test_with_an_llm_low_term_coverage_is_withheld_before_the_model(demo_kb) -> None:
    from beleg.testing import ScriptedLLM

    # The same judgement as the offline answerer's, made before any call: the paraphrase is
    # withheld with the closest passage, not refused as if the sources were silent.
    question = ("How can my server tell that an incoming callback genuinely comes from you "
                "and was not tampered with?")
    llm = ScriptedLLM(responder=lambda messages: "never called")
    a = demo_kb.ask(question, llm=llm)
    offline = demo_kb.ask(question)
    assert llm.calls == [] and a.trace["llm"]["calls"] == 0
    assert a.refused and a.withheld and a.answer.startswith(WITHHELD)
    assert a.trace["decision"].startswith("withheld before the model: ") and "of the question's terms" in a.trace["decision"]
    assert [c.quote for c in a.citations] == [c.quote for c in offline.citations] and a.citations[0].verified
    assert a.backend == llm.name
