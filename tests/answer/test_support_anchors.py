"""Anchors (beleg.answer.anchors) and the checks of ``supported`` that use them or were
added with them: a quote must name the question's numbers and identifiers, must not be a
question, a link or a heading, and must hold the asked-for kind ("how often", "which port").

Hand-built quotes with IDF 1 for every term, as in test_support.py, so each test isolates
one check. Sentences are made up for these tests; none is from a benchmark set.
"""

from __future__ import annotations

from typing import Any

import pytest

from beleg.answer.anchors import missing_anchors, numbered_names, pair_found, question_anchors
from beleg.answer.support import Support, asked_kind, extractive_support, unmentioned
from beleg.answer.types import Citation, Source
from beleg.index.analyzer import analyze_query
from beleg.types import Hit


class FlatIDF:
    def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
        terms = analyze_query(text)
        return {t: 1.0 for t in [t for t in terms if t not in skip] or terms}


class _Chosen:
    """The chosen sentence's dense similarity (all extractive_support reads of it here)."""

    def __init__(self, dense: float) -> None:
        self.dense, self.score, self.text, self.translates = dense, 0.8, "", ""


def _source(text: str, heading: tuple[str, ...] = ("Notes",), language: str = "en", **meta: Any) -> Source:
    hit = Hit("c1", "d1", "guide.md", "Guide", heading, 0, len(text), 1.0, text, {"language": language, **meta})
    return Source("S1", hit, 1)


def _support(question: str, text: str, quote: str, *, heading: tuple[str, ...] = ("Notes",), language: str = "en",
             dense: float | None = None) -> Support:
    src = _source(text, heading, language)
    a = text.index(quote)
    cite = Citation("S1", "c1", "d1", "guide.md", quote, a, a + len(quote), True)
    chosen = _Chosen(dense) if dense is not None else None
    return extractive_support(question, [cite], [src], FlatIDF(), chosen=chosen)  # type: ignore[arg-type]


def _anchors(question: str, language: str = "en") -> list[tuple[str, str]]:
    return [(a.text, a.kind) for a in question_anchors(question, language)]


# --------------------------------------------------------------------------- anchors


def test_anchor_kinds() -> None:
    assert _anchors("Which Node.js version does the relay-agent 7 need?") == [
        ("Node.js", "identifier"), ("relay-agent", "compound"), ("7", "number")]
    assert ("KMIP", "acronym") in _anchors("Does the vault speak KMIP?")
    assert ("GraphQL", "identifier") in _anchors("Gibt es einen GraphQL-Endpunkt?", "de")
    assert ("Pulumi", "name") in _anchors("Is there a Pulumi provider?")


def test_german_nouns_two_letter_words_and_dates_are_no_anchors() -> None:
    assert _anchors("Wie viele Abonnements darf eine Warteschlange haben?", "de") == []
    assert _anchors("Which header carries the request ID?") == []
    assert _anchors("Can it run next Tuesday in August?") == []


def test_abbreviations_and_the_askers_placeholders_are_no_anchors() -> None:
    assert _anchors("Which container applies it, i.e. whose logs do I check?") == []
    assert _anchors("Welcher Dienst, d.h. welcher Container, z.B. der Proxy?", "de") == []
    # Reserved example names and private or documentation addresses are the asker's own setup.
    assert _anchors("I want smtp.example.org and mail.example.com on the certificate.") == []
    assert _anchors("How do I get the language code into my URLs, e.g. www.example.com/de/?") == [("URL", "acronym")]
    assert _anchors("Hosts in 192.168.2.0/24, 10.1.2.3 and `203.0.113.7` must relay.") == []
    # A version that looks like a private address is still the asker's version.
    assert _anchors("What changed in version 10.0.3.1?") == [("10.0.3.1", "number")]
    assert _anchors("Was ist neu in v10.2.0.4 und in Version 127.0.0.5?", "de") == [
        ("10.2.0.4", "number"), ("127.0.0.5", "number")]  # "v10.2.0.4" is the version, found without its "v"
    assert _anchors("Does it resolve 8.8.8.8 and mail.ferrolink.io?") == [("8.8.8.8", "number"),
                                                                          ("mail.ferrolink.io", "identifier")]
    # A name compounded with a German noun: the name is the anchor.
    assert _anchors("Wir ziehen von einem x86-Server auf eine ARM64-Maschine um.", "de") == [
        ("x86", "identifier"), ("ARM64", "identifier")]
    assert _anchors("Was bedeutet E-4012?", "de") == [("E-4012", "identifier")]


def test_a_compounds_last_word_may_be_inflected() -> None:
    def missing(question: str, text: str) -> list[str]:
        return [a.text for a in missing_anchors(question_anchors(question, "en"), text)]

    assert missing("The mailbox was re-created. What now?", "Recreate the mailbox from the backup.") == []
    assert missing("The mailbox was re-created. What now?", "Create the mailbox from the backup.") == ["re-created"]


def test_matching_ignores_case_and_separators_but_not_word_or_number_bounds() -> None:
    def missing(question: str, text: str) -> list[str]:
        return [a.text for a in missing_anchors(question_anchors(question, "en"), text)]

    assert missing("Which Node.js version?", "needs NodeJS 18") == []
    assert missing("Is there a docker-compose file?", "a docker compose file") == []
    assert missing("Does it have a SOC report?", "a socket report") == ["SOC"]
    assert missing("Does relay 5 work?", "relay 15 and relay 5.1 work") == ["5"]
    assert missing("Does relay 5 work?", "relay 5, yes") == []
    assert missing("Is the 2019 image fine?", "image_20190730.img") == []
    assert missing("Which URLs and APIs?", "the URL of the API") == []  # an acronym's plural
    assert missing("Which uptime, 99,5 %?", "an uptime of 99.5 %") == []
    assert missing("Is there a Tinker Board image?", "the TinkerBoard image") == []


# --------------------------------------------------------------------------- support checks


def test_a_quote_without_the_questions_number_is_not_supported() -> None:
    text = "The relay-agent 2 requires Node.js 12. The relay-agent 5 requires Node.js 18."
    wrong = _support("Which Node.js version does relay-agent 5 require?", text,
                     "The relay-agent 2 requires Node.js 12.")
    right = _support("Which Node.js version does relay-agent 5 require?", text,
                     "The relay-agent 5 requires Node.js 18.")
    assert wrong.check("anchors").passed is False and not wrong.supported
    assert "5" in wrong.check("anchors").why
    assert right.check("anchors").passed is True and right.supported, right.checks
    assert right.confidence > wrong.confidence


def test_anchors_hold_across_languages_where_dense_similarity_alone_passed() -> None:
    text = "Seit Version 2.1.0 wird der Sensor HT-11 nicht mehr unterstützt. Version 3.0.0 braucht Node.js 14."
    s = _support("Which sensor is no longer supported since version 3.4.0?", text,
                 "Seit Version 2.1.0 wird der Sensor HT-11 nicht mehr unterstützt.", language="de", dense=0.95)
    assert s.check("focus").passed is True  # the dense stand-in alone would call it supported
    assert s.check("anchors").passed is False and not s.supported


def test_an_identifier_elsewhere_in_the_chunk_counts() -> None:
    text = "The vaultd.pro licence is sold per year.\n\nAnother paragraph.\n\nIt costs 40 euros per year."
    s = _support("What does the vaultd.pro licence cost?", text, "It costs 40 euros per year.")
    assert s.check("anchors").passed is True


def test_a_quote_that_is_a_question_answers_nothing() -> None:
    text = "Do I need a cache server for my installation?\n\nUsually the built-in store is enough."
    s = _support("Do I need a cache server for a normal installation?", text,
                 "Do I need a cache server for my installation?")
    assert s.check("complete").passed is False and not s.supported


@pytest.mark.parametrize("quote", ["- [Remove an agent with relayctl](#remove-an-agent)",
                                   "[Install the relay agent](install.md)"])
def test_a_table_of_contents_link_is_never_support(quote: str) -> None:
    text = f"Contents\n\n{quote}\n\nMore text follows here."
    s = _support("How do I remove an agent with relayctl?", text, quote)
    assert s.check("complete").passed is False and "link" in s.check("complete").why


@pytest.mark.parametrize("question, kind", [
    ("How often does the agent poll the server?", "duration"),
    ("Wie oft fragt der Agent den Server ab?", "duration"),
    ("Welchen Port muss ich eintragen?", "count"),
    ("Which port does the agent listen on?", "count"),
    ("Wie lege ich einen Bot an?", "instruction"),
    ("Wie behebe ich Rechteprobleme?", "instruction"),
])
def test_asked_kind_of_frequency_port_and_german_how_to(question: str, kind: str) -> None:
    assert asked_kind(question) == kind


def test_a_version_is_no_port_and_a_duration_is_no_count() -> None:
    port = _support("Which port must I enter for the agent?", "Firmware above 1.9.4 needs a server entry.",
                    "Firmware above 1.9.4 needs a server entry.")
    assert port.check("answer_type").passed is False
    count = _support("How many subscriptions may a queue have?", "A queue can be restored within 7 days.",
                     "A queue can be restored within 7 days.")
    assert count.check("answer_type").passed is False


def test_a_name_must_be_more_than_a_part_of_the_questions_identifier() -> None:
    s = _support("Which Node.js version is recommended?", "At the moment Node is the recommended runtime.",
                 "At the moment Node is the recommended runtime.")
    assert s.check("answer_type").passed is False


# --------------------------------------------------------------------------- evidence gap


def test_unmentioned_names_the_anchors_no_source_holds() -> None:
    src = _source("Vaultd supports AMQP and HTTP clients.", ("Protocols",), product="vaultd")
    assert unmentioned("Does vaultd support MQTT clients?", [src], True) == ["MQTT"]
    assert unmentioned("Does vaultd support AMQP clients?", [src], True) == []
    assert unmentioned("Is there a Terraform provider?", [src], True) == ["Terraform"]
    # Across languages a name may be translated; only strong anchors count there.
    assert unmentioned("Is there a Terraform provider?", [src], False) == []
    assert unmentioned("Gibt es MQTT?", [src], False) == ["MQTT"]


def test_names_match_across_spaces_and_plurals_and_years_open_no_gap() -> None:
    src = _source("The team won the Super Bowl and three Grammy Awards.", ("Season",))
    assert unmentioned("How many Grammys did the Superbowl team win?", [src], True) == []
    # A year is context the asker adds; the page need not repeat it to answer.
    assert unmentioned("How many games did the team win in 2015?", [src], True) == []
    assert unmentioned("How many games did relay 7 win?", [src], True) == ["7"]


def test_a_numbered_name_needs_its_number_beside_it_in_one_source() -> None:
    src = _source("Even though the js-controller up to version 1.5.11 still supports Node.js as of version 4, "
                  "5 new adapters need Node.js 8.")
    q = "Which Node.js version does js-controller 5 require?"
    assert unmentioned(q, [src], True) == ["js-controller 5"]
    # Written with "version", "v" or a few words between, the pair is named.
    for text in ("js-controller 5 needs Node.js 16.", "The js-controller in Version 5 needs Node.js 16.",
                 "Ab js-controller v5 ist Node.js 16 nötig."):
        assert unmentioned(q, [_source(text)], True) == [], text
    assert pair_found("js-controller", "5", "js-controller 5.0.1 needs node.js 16")
    assert not pair_found("js-controller", "5", "js-controller 50 needs node.js 16")
    # A source of that version names the pair through its product and version.
    assert unmentioned("What is the retry window in Ferrolink 3.0?",
                       [_source("Deliveries are retried for 72 hours.", product="Ferrolink", version="3.0")], True) == []
    # Not a pair: a year, "version 5", a plain lower-case word, a number with its unit.
    assert numbered_names("Which release came out in May 2021, after version 5, on page 3?") == []
    assert numbered_names("Wer war im Super Bowl XXXIII 38 Jahre alt, und wer im Jahr 1466?") == []
    assert numbered_names("Welches Gerät wird seit Adapterversion 3.4.0 nicht mehr unterstützt?") == []


def test_a_quote_that_points_to_a_link_for_the_answer_is_not_support() -> None:
    quote = "More information about pairing devices can be found [here](https://example.org/pairing)."
    s = _support("Which firewall ports does the relay agent need?", f"Intro.\n\n{quote}\n", quote)
    assert s.check("complete").passed is False and "points to another page" in s.check("complete").why
    assert asked_kind("Welche Firewall-Ports braucht der Agent?") == "count"


@pytest.mark.parametrize("quote", [
    "Ihr Ziel muss jede Anfrage prüfen; wie das geht, beschreibt die Anleitung „Webhooks empfangen“.",
    "Checking the signature is described in the guide Receiving webhooks.",
    "For the other limits see the section Quotas.",
])
def test_a_quote_that_names_another_page_for_the_answer_is_not_support(quote: str) -> None:
    s = _support("Wie prüfe ich die Signatur eines Webhooks?", f"Intro.\n\n{quote}\n", quote)
    assert s.check("complete").passed is False and "points to another page" in s.check("complete").why


def test_a_quote_that_states_the_answer_is_complete() -> None:
    quote = "Compute the HMAC-SHA256 of the body and compare it with the signature header."
    assert _support("How do I check the signature?", quote, quote).check("complete").passed is True


@pytest.mark.parametrize("question, quote, holds", [
    # "How often" is answered by an interval, a number of times or a frequency word ...
    ("Wie oft kam es in der Stadt zu Ausbrüchen?", "Zwischen 1361 und 1528 kam es 22-mal zu Ausbrüchen.", True),
    ("How often did the club win the cup?", "The club won the cup twice.", True),
    ("How often is the backup written?", "The backup is written daily.", True),
    ("Wie oft pro Tag darf das Skript laufen?", "Das Skript darf maximal 5x am Tag laufen.", True),
    ("How often may the script run?", "It renders a 5x5 grid at 1920x1080.", False),
    ("Wie oft wird gewählt?", "Das Parlament wird alle fünf Jahre gewählt.", True),
    # ... but not by any number: three workers are no frequency.
    ("How often does the job run?", "The job uses 3 workers.", False),
    # And a number of times does not answer "how long".
    ("How long does the job run?", "The job ran twice.", False),
    # A duration may be an adjective: it answers "how long", not "how often".
    ("Wie lange dauert das Event dann?", "Dann geht Contao von einem eintägigen Event aus.", True),
    ("How long is the trial?", "Every account starts with a 30-day trial.", True),
    ("Wie oft findet das Event statt?", "Dann geht Contao von einem eintägigen Event aus.", False),
    ("Wie lange dauert es?", "Das ist eine wichtige Frage.", False),
])
def test_how_often_is_answered_by_an_interval_a_number_of_times_or_a_frequency_word(
        question: str, quote: str, holds: bool) -> None:
    s = _support(question, quote, quote)
    assert s.check("answer_type").passed is holds


def test_placeholders_and_abbreviations_are_not_the_questions_focus() -> None:
    from beleg.answer.support import focus_terms

    q = "Besides the hostname I want smtp.example.org on the certificate, i.e. which setting do I use?"
    focus = focus_terms(q, FlatIDF())  # type: ignore[arg-type]
    assert focus and not any("example" in t or t == "i.e" for t in focus)
    assert "certif" in " ".join(focus)
