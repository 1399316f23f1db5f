"""The ``supported`` verdict: a quote that verifies is not thereby an answer to the question.

Unit tests judge hand-built quotes (IDF 1 for every term, so each test isolates one
check); the end-to-end tests go through ``ask``, ``chat``, the Python API and a
``--strategy`` run on the demo corpus.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from beleg.answer import AnswerOptions
from beleg.answer.support import (
    Check,
    Support,
    asked_kind,
    compound_credit,
    confidence_from,
    extractive_support,
    focus_terms,
    kind_present,
    llm_support,
    parse_verdict,
)
from beleg.answer.types import Answer, Citation, Source
from beleg.cli.main import main
from beleg.cli.render import Style, render_answer
from beleg.index.analyzer import analyze, analyze_query
from beleg.testing import ScriptedLLM
from beleg.types import Hit

Q = "How long does Ferrolink retry failed webhook deliveries?"


class FlatIDF:
    """Every question term weighs 1: the focus is every content term of the question."""

    def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
        terms = analyze_query(text)
        return {t: 1.0 for t in [t for t in terms if t not in skip] or terms}


def _source(text: str, label: str = "S1", heading: tuple[str, ...] = ("Notes",), **meta: Any) -> Source:
    hit = Hit(f"c-{label}", f"d-{label}", f"{label}.md", "Guide", heading, 0, len(text), 1.0, text,
              {"language": "en", **meta})
    return Source(label, hit, 1)


def _cite(src: Source, quote: str) -> Citation:
    a = src.hit.text.index(quote)
    return Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source, quote, a, a + len(quote), True)


def _support(question: str, text: str, quote: str, heading: tuple[str, ...] = ("Notes",)) -> Support:
    src = _source(text, heading=heading)
    return extractive_support(question, [_cite(src, quote)], [src], FlatIDF())  # type: ignore[arg-type]


def _type_passes(question: str, quote: str) -> bool | None:
    """The answer_type verdict for ``quote`` cited alone."""
    return _support(question, quote, quote).check("answer_type").passed


INSTALL = ("Adapters are installed from the admin page or the command line.\n\n"
           "Use the following command:\n\n```\niobroker add zigbee\n```\n")


def test_the_sentence_introducing_a_command_is_not_an_answer_to_how_to() -> None:
    s = _support("How do I install the zigbee adapter from the command line?", INSTALL, "Use the following command:",
                 heading=("Install the zigbee adapter",))
    assert not s.supported
    assert s.check("complete").passed is False and s.check("answer_type").passed is False
    assert "command" in s.check("answer_type").why


def test_the_quote_that_holds_the_command_is_supported() -> None:
    text = "To install the zigbee adapter from the command line, run `iobroker add zigbee` as the iobroker user."
    s = _support("How do I install the zigbee adapter from the command line?", text, text)
    assert s.supported, s.checks
    assert s.check("answer_type").passed is True


def test_a_step_in_plain_words_answers_how_to() -> None:
    """Manuals give most steps without a command, setting or menu path: an imperative opening a
    sentence or list item is an instruction ("Drücken Sie …" in German); a sentence that only
    points at what follows, a question or condition with "Sie", and a verb used as a noun are not."""
    q, frage = "How do I reset the filter warning?", "Wie setze ich die Filterwarnung zurück?"
    for quote in ("Press and hold the OK button for 3 seconds.", "To reset the filter warning, press and hold OK.",
                  "2. Then open the front cover and remove the filter."):
        assert _type_passes(q, quote) is True, quote
    for quote in ("Drücken Sie die Taste OK drei Sekunden lang.", "Halten Sie dann die Taste OK gedrückt."):
        assert _type_passes(frage, quote) is True, quote
    for quote in ("The filter warning appears after 90 days.", "Use the following command:",
                  "Open source software is free.", "Set of rules for the filter."):
        assert _type_passes(q, quote) is False, quote
    for quote in ("Können Sie die Taste drücken?", "Wenn Sie die Taste drücken, startet das Gerät."):
        assert _type_passes(frage, quote) is False, quote


def test_a_quote_taking_its_code_block_is_judged_as_returned() -> None:
    quote = "Use the following command:\n\n```\niobroker add zigbee\n```"
    s = _support("How do I install the zigbee adapter?", INSTALL, quote, heading=("Install the zigbee adapter",))
    assert s.supported, s.checks


def test_a_duration_question_needs_a_duration_in_the_quote() -> None:
    text = "Ferrolink retries failed webhook deliveries. The retry window is 72 hours for failed webhook deliveries."
    wrong = _support(Q, text, "Ferrolink retries failed webhook deliveries.")
    right = _support(Q, text, "The retry window is 72 hours for failed webhook deliveries.",
                     heading=("Ferrolink webhooks",))
    assert not wrong.supported and wrong.check("answer_type").passed is False
    assert right.supported, right.checks
    assert right.confidence > wrong.confidence


def test_focus_terms_elsewhere_in_the_chunk_do_not_count() -> None:
    text = ("Audit logs are written by the gateway.\n\nSomething else entirely.\n\n"
            "Webhook deliveries are retried for 72 hours.")
    far = _support("How long are audit logs kept?", text, "Webhook deliveries are retried for 72 hours.")
    assert far.check("focus").passed is False and not far.supported
    assert "audit" in far.check("focus").why


def test_the_previous_sentence_and_heading_are_context() -> None:
    text = "Audit logs are archived nightly. They are kept for 90 days."
    s = _support("How long are audit logs kept?", text, "They are kept for 90 days.")
    assert s.check("focus").passed is True and s.supported


def test_the_source_version_is_context_for_a_versioned_question() -> None:
    q = "What was the retry window in version 2.4?"
    text = "Deliveries are retried for 24 hours."

    def focus(version: str) -> Check:
        src = _source(text, version=version)
        s = extractive_support(q, [_cite(src, text)], [src], FlatIDF())  # type: ignore[arg-type]
        check = s.check("focus")
        assert check is not None
        return check

    assert focus("2.4").passed is True
    assert focus("3.0").passed is False and "2.4" in focus("3.0").why


def test_a_name_question_needs_a_name_beyond_the_question_words() -> None:
    text = "The old variable was renamed. It was called `system.adapter.admin.0.alive` before version 5."
    q = "What was the old variable called?"
    assert asked_kind(q) == "name"
    assert not _support(q, text, "The old variable was renamed.").check("answer_type").passed
    assert _support(q, text, "It was called `system.adapter.admin.0.alive` before version 5.").supported


def test_the_supported_feature_is_the_verdict() -> None:
    text = "Audit logs are archived nightly. They are kept for 90 days."
    yes = _support("How long are audit logs kept?", text, "They are kept for 90 days.")
    no = _support("How long are audit logs kept?", text, "Audit logs are archived nightly.")
    assert yes.supported and yes.features["supported"] == 1.0
    assert not no.supported and no.features["supported"] == 0.0
    assert yes.confidence > no.confidence


def test_a_hyphenated_compound_is_covered_by_its_parts_written_apart() -> None:
    q = "Welche Node.js-Version ist im Raspberry-Pi-Image installiert?"
    apart = "Im Raspberry Pi Image ist Node.js in der Version 10.16.0 installiert."
    s = _support(q, apart, apart)
    assert s.check("focus").passed is True and s.supported, s.checks
    # Half the parts are half the credit; none is none.
    half = _support("Was kostet die Remote-Lizenz?", "Die Lizenz kostet 39 Euro.", "Die Lizenz kostet 39 Euro.")
    assert "in part: remote-lizenz" in half.check("focus").why
    other = _support(q, "Das Image enthält Python 3.", "Das Image enthält Python 3.")
    assert other.check("focus").passed is False


def test_a_date_is_not_a_compound_of_its_numbers() -> None:
    from beleg.answer.support import compound_credit, compound_parts

    assert compound_parts("27.11.2019", "de") == [] and compound_parts("e-4012", "en") == []
    assert compound_credit("27.11.2019", {"27", "11", "2019"}, "de") == 0.0
    assert compound_credit("raspberry-pi-image", {"raspberry", "pi"}, "de") == pytest.approx(2 / 3)


def test_the_asker_is_not_the_focus_of_the_question() -> None:
    text = "A call to `iobroker status` shows which database type is used for the states database."
    s = _support("Which command shows me the database type of the states database?", text, text)
    assert "me" not in s.check("focus").why.split(": ")[0]
    assert s.supported, s.checks


def test_an_interrogative_is_not_the_focus_of_the_question() -> None:
    # "welchem", "wem", "warum" are missing from the German stopword list; as focus terms no
    # answer ever contains them (XQuAD dev de: 55 of 632 questions had "welch" as a focus term).
    text = "Die Broncos gewannen den Super Bowl 50 gegen die Panthers."
    src = _source(text, language="de")
    s = extractive_support("Gegen welchen Gegner gewannen die Broncos den Super Bowl 50?", [_cite(src, text)], [src],
                           FlatIDF())  # type: ignore[arg-type]
    assert "welch" not in s.check("focus").why.split(": ")[0]
    assert s.check("focus").passed is True, s.checks


def test_question_form_words_are_skipped_in_their_english_stems_too() -> None:
    # The word list mixes English and German; analysed as one (German) text, "called" and
    # "many" kept their English stems "call" and "mani" as focus terms.
    assert not {"call", "mani", "often"} & set(focus_terms("How many settings are often called this way?", FlatIDF()))
    assert "welchem" not in focus_terms("In welchem Jahr starb Tesla?", FlatIDF())


def test_a_term_in_backticks_or_the_asked_product_is_no_instruction() -> None:
    q = "Wie sichere ich ioBroker vor einem Node.js-Update?"
    term = "Im gleichen Zuge erreicht eine frühere Node.js LTS Version ihr Lebensende (`End of Life`)."
    assert kind_present("instruction", term, q)[0] is False
    assert kind_present("instruction", "Sichern Sie vorher mit `iobroker backup`.", q)[0] is True
    assert kind_present("instruction", "Klicken Sie danach auf `Speichern`.", q)[0] is True  # a button


def test_a_german_closed_compound_is_covered_by_its_parts_and_the_other_way_round() -> None:
    apart = set(analyze("Wegen ihrer weichen Körper sind Rippenquallen als Fossilien extrem selten.", "de"))
    closed = set(analyze("Rippenquallenfossilien sind extrem selten.", "de"))
    assert compound_credit(analyze("Rippenquallenfossilien", "de")[0], apart, "de") == 1.0
    assert compound_credit(analyze("Fossilien", "de")[0], closed, "de") == 1.0
    assert compound_credit(analyze("Quallen", "de")[0], {"fossili", "selt"}, "de") == 0.0
    assert compound_credit("rippenquallenfossili", apart, "en") == 0.0  # English does not close compounds
    assert compound_credit("wert", {"wertpapi"}, "de") == 0.0  # stems under five letters are too ambiguous


def test_which_command_is_answered_by_code_not_by_a_capitalised_noun() -> None:
    q = "Welchen Befehl gebe ich auf dem Slave ein, um ihn mit dem Master zu verbinden?"
    assert _type_passes(q, "Der Master stellt allen Slaves die zentralen Objekt- und Zustandsdatenbanken bereit.") is False
    assert _type_passes(q, "Auf dem Slave wird `iobroker multihost connect` eingegeben.") is True
    assert "ihn" not in focus_terms(q, FlatIDF())  # a pronoun points at the question's own "Slave"


def test_a_hyphenated_compounds_german_part_is_found_in_a_longer_word() -> None:
    # "Linux-Installer" asked; the page says "Installation" (and "Linux" in its title).
    assert compound_credit(analyze("Linux-Installer", "de")[0], {"linux", "installation"}, "de") == 1.0


def test_prepositions_are_no_focus_terms() -> None:
    # Rare in a corpus, "via" and "through" were weighed as a question's rarest terms, and a quote
    # that answered ("`PUT /api/v2/setpoints/dhw`: sets the hot water setpoint") lacked them.
    class RarePrepositions(FlatIDF):  # as in a corpus that rarely writes them
        def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
            rare = {"via", "durch", "out"}
            return {t: 5.0 if t in rare else w for t, w in super().weights(text, skip).items()}

    assert "via" not in focus_terms("How do I set the hot water setpoint via the REST API?", RarePrepositions())
    assert "durch" not in focus_terms("Wie starte ich den Zyklus durch die API?", RarePrepositions())
    assert "out" in focus_terms("How do I log out?", RarePrepositions())  # a particle changes what is asked


def test_a_temperature_question_is_answered_by_a_temperature() -> None:
    # "welche" read as a naming question passed a weekday; "maximum" as any number passed a register.
    q = "Wann startet die Legionellenschaltung? Und auf welche Temperatur?"  # as asked_question joins them
    assert _type_passes(q, "Sie startet jeden Mittwoch um 03:00 Uhr und hält 20 Minuten.") is False
    assert _type_passes(q, "Sie heizt den Speicher einmal pro Woche auf 65 °C auf.") is True
    assert _type_passes("What is the maximum flow temperature?", "The flow setpoint is in register 40001.") is False
    assert _type_passes("What is the maximum flow temperature?", "The maximum flow temperature is 62 °C.") is True


def test_what_should_i_do_asks_for_an_action_in_any_words() -> None:
    # "What to do: Check the bus cable at terminal X7" was withheld: no command, code or path.
    q = "What should I do when E-520 appears?"
    assert asked_kind(q) == "action" and asked_kind("Was soll ich tun, wenn der Fehler E-4290 auftritt?") == "action"
    assert _type_passes(q, "Code: E-520; What to do: Check the bus cable at terminal X7") is True
    assert _type_passes(q, "| E-205 | High-pressure switch tripped | Call a refrigeration technician |") is True
    assert _type_passes(q, "**Fix:** Wait for the number of seconds in the `Retry-After` header.") is True
    assert _type_passes(q, "In that case the filter must be cleaned by the installer.") is True
    assert _type_passes(q, "| E-310 | Flow rate below 8 l/min | Bleed the heating circuit |") is True
    assert _type_passes("Was soll ich tun, wenn E-205 erscheint?", "Rufen Sie einen Kältetechniker.") is True
    # A fact about the error is no action (an outside tester's E-205 was answered so, supported).
    assert _type_passes(q, "A lockout caused by E-205 can only be reset twice within 24 hours.") is False
    assert asked_kind("What should I do to install it?") == "instruction"  # how to: a command answers
    assert asked_kind("Was muss ich tun, um den Adapter zu installieren?") == "instruction"
    # "appears" is how the condition is asked; the code is the topic.
    assert not {"appear", "auftritt"} & set(focus_terms(q + " Wenn der Fehler auftritt?", FlatIDF()))


def test_tell_me_whether_is_how_the_question_asks() -> None:
    q = "Which command tells me whether the states database runs on Redis?"
    assert not {"tell", "whether"} & set(focus_terms(q, FlatIDF()))


def test_who_asks_for_a_name_that_a_pronoun_does_not_give() -> None:
    q = "Who is the oldest quarterback to play in a Super Bowl?"
    assert _type_passes(q, "He is also the oldest quarterback ever to play in a Super Bowl at age 39.") is False
    assert _type_passes(q, "Peyton Manning is also the oldest quarterback ever to play in a Super Bowl.") is True
    assert asked_kind("Prior to Manning, who was the oldest quarterback?") == "name"
    assert asked_kind("Wer gewann die Meisterschaft im Jahr 2000?") == "name"
    assert asked_kind("What did the player who scored first say?") is None  # a relative "who"


def test_a_quoted_command_names_what_a_which_question_asks_for() -> None:
    text = 'To enable all adapters at once you can call "iobroker start all".'
    s = _support("Which command enables all adapters at once?", text, text)
    assert s.check("answer_type").passed is True and "iobroker start all" in s.check("answer_type").why


def test_the_question_word_inflected_is_no_new_name() -> None:
    q = "Welche Berechtigungen kann ein Zugriffsschlüssel haben?"
    assert _type_passes(q, "Jeder Zugriffsschlüssel hat eine Berechtigung.") is False
    named = "Ein Zugriffsschlüssel kann die Berechtigungen `queues:read` und `messages:publish` haben."
    assert _type_passes(q, named) is True


def test_a_limit_is_answered_by_a_number_or_by_no_limit() -> None:
    q = "What is the request rate limit for test-mode keys in version 3.0?"
    assert kind_present("number", "Test-mode keys may send 5 requests per second.", q)[0]
    assert kind_present("number", "Test-mode keys are not rate limited: there is no limit.", q)[0]
    assert not kind_present("number", "Test-mode keys only see test data in version 3.0.", q)[0]


@pytest.mark.parametrize("question, kind", [
    ("How long does it take?", "duration"), ("Wie lange dauert es?", "duration"),
    ("How do I reset the password?", "instruction"), ("Wie kann ich das Passwort ändern?", "instruction"),
    ("Which adapter reads Modbus?", "name"), ("Welcher Adapter liest Modbus?", "name"),
    ("When was version 3 released?", "date"), ("Does the adapter support MQTT?", "yes-no"),
    ("Was the adapter renamed?", "yes-no"), ("Was sollte auf einem Slave installiert sein?", None),
    ("What is the request rate limit for test-mode keys?", "number"), ("Wie hoch ist das Limit?", "number"),
    ("Und wie prüfe ich dann die Signatur?", "instruction"), ("And how long are they kept?", "duration"),
    ("Explain the architecture", None),
])
def test_asked_kind(question: str, kind: str | None) -> None:
    assert asked_kind(question) == kind


def test_confidence_is_monotone_in_every_feature() -> None:
    base = {"focus": 0.5, "type": 0.5, "complete": 1.0, "margin": 0.1, "score": 0.5, "governing": 0.0, "rank": 0.5}
    for key in base:
        assert confidence_from({**base, key: base[key] + 0.3}) >= confidence_from(base)
    assert 0.0 < confidence_from(base) < 1.0


# --------------------------------------------------------------------------- LLM answers


def test_llm_claim_with_a_number_not_in_the_cited_text_is_not_supported() -> None:
    src = _source("Ferrolink retries failed webhook deliveries for 72 hours.", heading=("Ferrolink webhooks",))
    cite = _cite(src, "Ferrolink retries failed webhook deliveries for 72 hours.")
    good = llm_support(Q, "Failed webhook deliveries are retried for 72 hours [S1].", [cite], [src], FlatIDF(),
                       quotes_verified=True)  # type: ignore[arg-type]
    bad = llm_support(Q, "Failed webhook deliveries are retried for 96 hours [S1].", [cite], [src], FlatIDF(),
                      quotes_verified=True)  # type: ignore[arg-type]
    assert good.supported, good.checks
    assert not bad.supported and "'96'" in bad.check("claims").why


def test_llm_verifier_pass_rejects_a_claim() -> None:
    src = _source("Ferrolink retries failed webhook deliveries for 72 hours.", heading=("Ferrolink webhooks",))
    cite = _cite(src, "Ferrolink retries failed webhook deliveries for 72 hours.")
    text = "Failed webhook deliveries are retried for 72 hours [S1]."
    no = ScriptedLLM(responder=lambda m: '{"supported": false, "reason": "the source talks about something else"}')
    yes = ScriptedLLM(responder=lambda m: 'Sure: {"supported": true, "reason": "stated"}')
    rejected = llm_support(Q, text, [cite], [src], FlatIDF(), quotes_verified=True, verifier=no)  # type: ignore[arg-type]
    accepted = llm_support(Q, text, [cite], [src], FlatIDF(), quotes_verified=True, verifier=yes)  # type: ignore[arg-type]
    assert rejected.check("llm_verifier").passed is False and not rejected.supported
    assert accepted.check("llm_verifier").passed is True and accepted.supported
    assert parse_verdict("no json") is None


def test_llm_answer_through_the_pipeline_carries_support(demo_kb) -> None:
    def faithful(messages: Any) -> str:
        import re

        for label, text in re.findall(r'<source label="(S\d+)"[^>]*>\n(.*?)\n</source>', messages[-1].content,
                                      re.DOTALL):
            m = re.search(r"[^.\n]*72 hours[^.\n]*\.", text)
            if m:
                return f'The retry window is 72 hours: "{m.group(0).strip()}" [{label}]'
        return "The sources do not answer this."

    a = demo_kb.ask(Q, llm=ScriptedLLM(responder=faithful), options=AnswerOptions(min_confidence=0.0))
    assert a.quotes_verified and a.support is not None and a.supported, a.support
    assert a.to_json()["support"]["checks"]["claims"]["passed"] is True


# --------------------------------------------------------------------------- end to end


def test_api_answer_has_both_verdicts(demo_kb) -> None:
    a = demo_kb.ask(Q, options=AnswerOptions(min_confidence=0.0))
    j = a.to_json()
    assert j["quotes_verified"] is True and j["verified"] is True
    assert j["supported"] is True and 0.0 <= j["confidence"] <= 1.0
    assert set(j["support"]["checks"]) >= {"quotes", "answer_type", "focus", "complete"}


def test_arithmetic_is_supported_small_talk_is_not(demo_kb) -> None:
    a = demo_kb.ask("What is 12 multiplied by 8?")
    assert a.answer.startswith("96") or "96" in a.answer
    assert a.supported and a.confidence == 1.0 and not a.citations
    hi = demo_kb.ask("hi")
    assert not hi.supported and not hi.refused
    out = render_answer(a, Style(False))
    assert "citation(s) verified" not in out and "0 quote" not in out and "computed exactly" in out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def test_min_confidence_turns_an_answer_into_a_refusal_naming_its_source(demo_kb, capsys) -> None:
    code, out = _run(capsys, "ask", Q, "--index", str(demo_kb.path), "--json", "--min-confidence", "0.999")
    data = json.loads(out)
    # The refusal keeps the closest passages' citations, so the asker still sees the evidence.
    assert code == 0 and data["refused"] is True and data["citations"]
    assert all(c["verified"] for c in data["citations"])
    assert "not shown to answer" in data["answer"] and "service-contract" in data["answer"]
    assert data["trace"]["withheld_answer"] and "72 hours" in data["trace"]["withheld_answer"]
    code, out = _run(capsys, "ask", Q, "--index", str(demo_kb.path), "--json", "--min-confidence", "0")
    assert json.loads(out)["refused"] is False
    assert main(["ask", Q, "--index", str(demo_kb.path), "--min-confidence", "2"]) != 0
    assert "outside [0, 1]" in capsys.readouterr().err


def test_same_verdicts_through_ask_chat_api_and_a_strategy(demo_kb, capsys, monkeypatch) -> None:
    api = demo_kb.ask(Q).to_json()
    _, out = _run(capsys, "ask", Q, "--index", str(demo_kb.path), "--json")
    asked = json.loads(out)
    monkeypatch.setattr("sys.stdin", io.StringIO(Q + "\n"))
    _, out = _run(capsys, "chat", "--index", str(demo_kb.path), "--json")
    chatted = json.loads(out.splitlines()[0])
    for j in (asked, chatted):
        assert (j["supported"], j["confidence"], j["support"]) == (api["supported"], api["confidence"], api["support"])
    _, out = _run(capsys, "ask", Q, "--index", str(demo_kb.path), "--json", "--strategy", "multi-query")
    strat = json.loads(out)
    assert {"quotes_verified", "supported", "confidence", "support"} <= set(strat)
    if not strat["refused"]:
        checks = strat["support"]["checks"].values()
        assert strat["supported"] == all(c["passed"] is not False for c in checks)


def test_human_output_never_says_verified_alone_under_an_unsupported_answer() -> None:
    src = _source(INSTALL, heading=("Install",))
    cite = _cite(src, "Use the following command:")
    unsupported = Support(False, 0.31, (Check("complete", False, "the quote ends with ':'"),))
    a = Answer("How do I install it?", "Use the following command: [S1]", False, (cite,), (), (src,), True, (),
               "extractive", {}, unsupported)
    out = render_answer(a, Style(False))
    assert "not shown to answer the question (0.31)" in out and "✓" not in out
    ok = Answer(Q, "x [S1]", False, (cite,), (), (src,), True, (), "extractive", {}, Support(True, 0.87))
    assert "supported (0.87)" in render_answer(ok, Style(False))


def test_contraction_fragments_are_no_focus_terms() -> None:
    # "don't" leaves "don" and "t": the Contao question ct016 had them as half its focus.
    assert not {"don", "t"} & set(focus_terms("Why don't engines cut titles?", FlatIDF()))
    assert "won" in focus_terms("Which team won the 2010 cup?", FlatIDF())  # the past of "win" stays


def test_how_long_is_answered_by_a_length_too() -> None:
    q = "How long should the page title of a website root be at most?"
    assert _type_passes(q, "It should not contain more than 65 characters.") is True
    assert _type_passes(q, "The page title is used in the title tag.") is False
    assert _type_passes("Wie lang darf der Seitentitel sein?", "Er sollte höchstens 65 Zeichen haben.") is True
    # "wie lange" asks for a time only
    assert _type_passes("Wie lange dauert der Export?", "Der Export hat 65 Zeichen.") is False


def test_a_unit_the_question_names_makes_a_bare_number_its_value() -> None:
    q = "Wie viele Sekunden lang kann man gelöschte Datensätze wiederherstellen?"
    assert _type_passes(q, "Zeitspanne in Sekunden, wie lange gelöschte Einträge wiederhergestellt werden können. "
                           "Standard: 2592000.") is True
    assert _type_passes("How long can deleted records be restored?", "The default is 2592000.") is False
    assert _type_passes("How many MB may an upload be?", "Uploads may be 8 at most.") is True
    assert _type_passes("How many MB may an upload be?", "Uploads are checked.") is False


def test_a_german_participle_is_the_verb_the_question_asks_about() -> None:
    from beleg.answer.support import participle_found

    seen = set(analyze("Standardmäßig dürfen Dateien bis zu 2 MB hochgeladen werden.", "de"))
    assert compound_credit(analyze("hochlade", "de")[0], seen, "de") == 1.0
    assert participle_found(analyze("eingestellt", "de")[0], set(analyze("Hier einstellen", "de")))
    assert participle_found(analyze("gelöscht", "de")[0], set(analyze("Sie löschen den Eintrag", "de")))
    assert not participle_found(analyze("hochlade", "de")[0], set(analyze("Dateien werden geprüft", "de")))
    assert compound_credit(analyze("hochlade", "de")[0], seen, "en") == 0.0  # German morphology only


def test_words_written_apart_in_one_text_and_together_in_the_other() -> None:
    q = "With a daily backup cron job, how many backups does Contao keep?"
    s = _support(q, "If you have defined a cronjob for a daily backup, Contao will keep 5 backups.",
                 "If you have defined a cronjob for a daily backup, Contao will keep 5 backups.")
    assert s.check("focus").passed is True
    s = _support("Where is the backend path set?", "The path of the back end is set in config.yaml.",
                 "The path of the back end is set in config.yaml.")
    assert s.check("focus").passed is True
    s = _support("Where is the backend path set?", "The path of the front end is set in config.yaml.",
                 "The path of the front end is set in config.yaml.")
    assert s.check("focus").passed is False


def test_a_date_is_no_version_number() -> None:
    q = "Which Debian release is the piVCCU3 image from August 2019 based on?"
    assert _type_passes(q, "Also included is piVCCU3 dated 19.07.2019 after download.") is False
    assert _type_passes(q, "The image dated 19.07.2019 is based on Debian 9.") is True


def test_a_language_twin_is_judged_as_the_sentence_it_translates() -> None:
    from dataclasses import replace

    from beleg.answer.scoring import candidate_sentences
    from beleg.answer.support import _features

    en = _source("LTS versions get bug fixes for 3 years.", "S1")
    de = _source("LTS-Versionen bekommen 3 Jahre lang Bugfixes.", "S2", language="de")
    scored = [replace(s, score=0.94 if s.source.label == "S1" else 0.75) for s in candidate_sentences([en, de])]
    scored.sort(key=lambda s: -s.score)
    twin = replace(scored[1], score=1.0, translates=scored[0].text)
    f = _features([], True, twin, scored, {}, de)
    assert f["governing"] == 1.0 and f["margin"] == 0.5  # no competitor left: the margin's cap
    plain = _features([], True, replace(scored[1], translates=""), scored, {}, de)
    assert plain["governing"] == 0.0 and plain["margin"] == 0.0


def test_a_question_that_sets_the_scene_asks_in_its_last_sentence() -> None:
    q = ("Meine Cronjobs laufen nur, wenn jemand die Webseite besucht. "
         "Wie richte ich einen echten Cronjob auf dem Server ein?")
    assert asked_kind(q) == "instruction"
    assert asked_kind("Our site uses Basic Authentication. How can I still let the crawler index it?") == "instruction"
    assert asked_kind("I run Contao 3.2.10. Which version must I install first?") == "version"
    assert asked_kind("Wie kann ich z. B. einen Cronjob einrichten?") == "instruction"


def test_a_question_for_the_time_of_day_asks_for_a_time() -> None:
    for q in ("At what time does the maintenance window start?", "What time is the daily backup?",
              "Um wie viel Uhr beginnt die Wartung?", "Zu welcher Uhrzeit läuft das Backup?"):
        assert asked_kind(q) == "date", q
        assert _type_passes(q, "Die Wartung beginnt jeden Sonntag um 02:00 Uhr.") is True
        assert _type_passes(q, "The maintenance window is announced by email.") is False
    assert asked_kind("What time zone does the API use?") != "date"
    assert asked_kind("What time limit applies to uploads?") != "date"


def test_a_link_target_is_no_name_the_reader_sees() -> None:
    q = "Which console command puts the installation into maintenance mode?"
    quote = "Via the [command line](en/cli/maintenance-mode) the installation can be put into maintenance mode."
    assert _type_passes(q, quote) is False
    assert _type_passes(q, "Run [`contao:maintenance-mode`](en/cli/maintenance-mode) to do so.") is True


def test_a_count_per_something_else_does_not_answer() -> None:
    """"How many … per vault?" is not answered by what each agent does (a red-team question,
    supported 0.93 before); a quote that states the asked scope, or states none, still can."""
    q = "How many backup jobs can run concurrently per vault?"
    wrong = _support(q, "Each agent runs at most 4 backup jobs concurrently.",
                     "Each agent runs at most 4 backup jobs concurrently.")
    assert wrong.check("focus").passed is False and "'Each agent'" in wrong.check("focus").why
    both = "A vault accepts 8 concurrent backup jobs; each agent runs at most 4 of them."
    assert _support(q, both, both).check("focus").passed is True
    plain = "At most 8 backup jobs run concurrently in a vault."
    assert _support(q, plain, plain).check("focus").passed is True
    src = _source("Jeder Agent führt höchstens 4 Sicherungsjobs gleichzeitig aus.", language="de")
    de = extractive_support("Wie viele Sicherungsjobs laufen pro Tresor gleichzeitig?",
                            [_cite(src, src.hit.text)], [src], FlatIDF())  # type: ignore[arg-type]
    assert de.check("focus").passed is False


def test_a_labelled_list_item_is_read_with_the_lists_lead_in_not_the_item_above() -> None:
    """"How many jobs per vault can run?" is not answered by the Vault item because the Agent
    item above it mentions jobs (an outside tester's case, supported 0.80)."""
    text = ("Each component has its limits:\n\n- **Agent**: runs at most 4 jobs at a time.\n"
            "- **Vault**: stores up to 200 GB and keeps 30 snapshots.\n")
    vault = "**Vault**: stores up to 200 GB and keeps 30 snapshots."
    assert _support("How many jobs per vault can run?", text, vault).check("focus").passed is False
    assert _support("How many snapshots does the vault keep?", text, vault).check("focus").passed is True


def test_the_scope_of_a_rate_is_its_subject_not_its_time_unit() -> None:
    from beleg.answer.support import other_scope

    q = "How many requests per minute per user does the API accept?"
    assert other_scope(q, "The API accepts 600 requests per minute for each workspace.", "en") == \
        ("per user", "for each workspace")
    assert other_scope(q, "Each user may send 600 requests per minute.", "en") is None
    # "per day" is a unit, which "daily" states as well; the quote's "every workspace" is no other subject then.
    assert other_scope("How many exports per day are allowed?", "Every workspace can make 10 exports daily.",
                       "en") is None
    # "pro" is no focus term: the scope's noun is.
    src = _source("Jeder Vault behält 30 Snapshots.", language="de")
    de = extractive_support("Wie viele Snapshots pro Vault?", [_cite(src, src.hit.text)], [src],
                            FlatIDF())  # type: ignore[arg-type]
    assert de.check("focus").passed is True


def test_a_footnote_mark_is_no_value() -> None:
    """"mailcow[^1]" shows the reader a footnote mark, not a version 1 (a held-out realdocs
    answer to "Which Docker version …" was the page's first sentence because of it)."""
    q = "Welche Docker-Version setzt mailcow mindestens voraus?"
    assert _type_passes(q, "mailcow[^1]: dockerized ist eine Groupware auf Docker Basis.") is False
    assert _type_passes(q, "**Docker**: Version `>= 24.0.0`[^2]") is True


def test_where_to_set_something_and_a_scene_ending_in_an_identifier_ask_how_to() -> None:
    assert asked_kind("Das Passwort ist zufällig. Wo setze ich ein eigenes?") == "instruction"
    assert asked_kind("Wo kann ich den Hostnamen der Instanz einstellen?") == "instruction"
    assert asked_kind("Where do I put my own Postfix settings?") == "instruction"
    assert asked_kind("Wo liegen meine Dokumente auf dem Host?") != "instruction"  # a place, not a setting
    # The scene ends in an identifier ("…-1."): the last sentence still asks.
    assert asked_kind("ClamAV rejects PDF forms with PUA.Pdf.Trojan.EmbeddedJavaScript-1. "
                      "How do I let that signature through?") == "instruction"
    from beleg.answer.scoring import question_form

    assert question_form("Was passiert am 1. Januar mit den Logs?") == "Was passiert am 1. Januar mit den Logs?"


def test_an_opening_name_question_an_amount_of_memory_and_a_compound_version() -> None:
    q = "Wie heißt die Variable in der Konfiguration, mit der ich festlege, wie viele Prozesse laufen dürfen?"
    assert asked_kind(q) == "name"  # the opening asks for a name; "wie viele" is the variable's topic
    assert asked_kind("Which option sets how many workers run?") == "name"
    assert asked_kind("How many workers run by default?") == "count"
    assert asked_kind("Wie viel Arbeitsspeicher braucht der Server mindestens?") == "size"
    assert asked_kind("How much RAM does the indexer get?") == "size"
    assert asked_kind("Welche Docker-Version setzt der Stack mindestens voraus?") == "version"
    assert asked_kind("What command lists the queue?") == "instruction"
    assert _type_passes("How much RAM does the indexer get?", "I tested it on a Raspberry Pi 3 B.") is False
    assert _type_passes("How much RAM does the indexer get?", "Each process gets 128 MB by default.") is True


def test_an_option_asked_for_is_code_or_an_identifier_not_a_noun_compound() -> None:
    q = "Als Admin will ich mich direkt als Benutzer anmelden. Welche Option muss dafür aktiviert werden?"
    assert _type_passes(q, "Die Funktion erlaubt es Admins, sich direkt als Mailbox-Benutzer anzumelden.") is False
    assert _type_passes(q, "Setzen Sie `ALLOW_ADMIN_EMAIL_LOGIN=y` in der mailcow.conf.") is True
    assert _type_passes("Welcher Header nennt die Wartezeit?", "Das steht im Header Retry-After.") is True


def test_pronominal_adverbs_point_elsewhere_and_are_no_focus_terms() -> None:
    from beleg.answer.support import _question_form_terms

    assert {"dafur", "hierfur", "dazu"} <= _question_form_terms()


def test_an_admonition_body_is_prose_not_an_indented_code_block() -> None:
    q = "Some hosts in 192.168.2.0/24 must relay mail without authentication. How do I allow that?"
    example = "!!! example\n    As an example, let's take the subnet `192.168.2.0/24`, which we want to relay."
    assert _type_passes(q, example) is False  # the only code span is the question's own subnet
    assert _type_passes(q, "!!! example\n    Add it to `mynetworks` in the admin UI.") is True
    assert _type_passes(q, "Run this:\n\n    postconf -e mynetworks=192.168.2.0/24") is True  # real indented code


def test_a_leading_phrase_and_what_to_configure_are_how_the_question_asks() -> None:
    assert asked_kind("On a bare-metal install, how do I allow ImageMagick to process PDF files?") == "instruction"
    assert asked_kind("My consume folder is on an NFS share. What do I configure?") == "instruction"
    assert asked_kind("Ich will mich mit GitHub anmelden. Was muss ich dafür konfigurieren?") == "instruction"
    assert asked_kind("Prior to Manning, who was the oldest quarterback?") == "name"
    from beleg.answer.scoring import question_form

    q = "What does the adapter log, which file does it write?"
    assert question_form(q) == q  # a question that asks first keeps all of its clauses


def test_quote_verifier_copies_the_answer_which_must_lie_in_the_quote() -> None:
    from beleg.answer.support import QUOTE_WINDOW, quote_verifier_check

    filler = "Unrelated setup notes. " * 60
    text = (filler + "Deliveries back off exponentially. Use the following setting: retry_window = 72h."
            + " Later text." * 60)
    src = _source(text, heading=("Ferrolink webhooks", "Retries"))
    cite = _cite(src, "Use the following setting: retry_window = 72h.")
    copies_it = ScriptedLLM(responder=lambda m: "retry_window = 72h")
    check = quote_verifier_check(copies_it, Q, [cite], [src])
    assert check.passed is True and check.name == "llm_verifier" and check.value == 1.0
    # a copied number is in the quote when it starts one of its words: "72" of "72h"
    assert quote_verifier_check(ScriptedLLM(responder=lambda m: "72"), Q, [cite], [src]).passed is True
    # ... but not as part of a longer number, and a number the quote lacks is another value
    assert quote_verifier_check(ScriptedLLM(responder=lambda m: "7"), Q, [cite], [src]).passed is False
    other = quote_verifier_check(ScriptedLLM(responder=lambda m: "retry_window = 48h"), Q, [cite], [src])
    assert other.passed is False and "'48'" in other.why
    version = _source("Install Node.js in version 10.17.0 first.")
    at = _cite(version, "Install Node.js in version 10.17.0 first.")
    assert quote_verifier_check(ScriptedLLM(responder=lambda m: "10.17.0"), Q, [at], [version]).passed is True
    assert quote_verifier_check(ScriptedLLM(responder=lambda m: "10.17"), Q, [at], [version]).passed is False
    prompt = copies_it.calls[0][-1].content
    assert Q in prompt and "retry_window = 72h." in prompt and "Ferrolink webhooks" in prompt
    # only the quote's surroundings, not the whole chunk: the prompt stays short for a local model
    assert len(prompt) < len(text) and len(prompt) < sum(QUOTE_WINDOW) + 1200
    # the answer it copies is the neighbouring sentence, not the quote: the quote does not answer
    elsewhere = quote_verifier_check(ScriptedLLM(responder=lambda m: "Deliveries back off exponentially."), Q, [cite], [src])
    assert elsewhere.passed is False and elsewhere.value == 0.0
    for nothing in ("NONE", "none.", "", "  "):
        found = quote_verifier_check(ScriptedLLM(responder=lambda m, r=nothing: r), Q, [cite], [src])
        assert found.passed is False and "no answer" in found.why
    assert quote_verifier_check(copies_it, Q, [], [src]).passed is False


@pytest.mark.parametrize("question,topic", [
    ("Hello, how long is the retry window?", {"retri", "window"}),
    ("Hi there, how long is the retry window, please?", {"retri", "window"}),
    ("Thanks! And how long is the retry window?", {"retri", "window"}),
    ("Guten Tag, wie lange ist das Wiederholungsfenster?", {"wiederholungsfen"}),
    ("Hallo zusammen, wie lange ist das Wiederholungsfenster bitte?", {"wiederholungsfen"}),
])
def test_a_greeting_or_politeness_is_no_focus_term(question: str, topic: set[str]) -> None:
    assert set(focus_terms(question, FlatIDF())) == topic  # type: ignore[arg-type]


def test_a_greeting_word_that_is_the_topic_stays_a_focus_term() -> None:
    assert "hello" in focus_terms("What does the hello endpoint return?", FlatIDF())  # type: ignore[arg-type]
    assert "hello" in focus_terms("Hello endpoint: what does it return?", FlatIDF())  # type: ignore[arg-type]


def test_a_question_opening_with_a_greeting_is_answered(demo_kb) -> None:
    a = demo_kb.ask("Hello, how long is the retry window?")
    focus = a.support.check("focus") if a.support is not None else None
    assert not a.refused and "72 hours" in a.answer
    assert focus is not None and focus.passed and "hello" not in focus.why


def test_please_is_not_searched_for(demo_kb) -> None:
    """Searched, "please" finds the support note's "Please do not promise anything else …
    24 hours": a pleasantry must not pick the evidence."""
    plain = demo_kb.ask("How long is the retry window?")
    for polite in ("How long is the retry window, please?", "Hi, how long is the retry window, please?"):
        a = demo_kb.ask(polite)
        assert (a.answer, a.supported) == (plain.answer, plain.supported), (polite, a.answer)


def test_a_hyphenated_word_is_found_written_closed() -> None:
    # "E-Mails" asked, "emails" written: the same word (Paperless pl023 was withheld for it).
    text = "Paperless checks the mailbox for new emails every ten minutes."
    s = _support("How often does Paperless check for new E-Mails?", text, text)
    assert "e-mails" in s.check("focus").why and "missing" not in s.check("focus").why, s.checks
