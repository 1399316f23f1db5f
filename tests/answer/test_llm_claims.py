"""An LLM answer's claims against what its sources say (beleg.answer.claims).

A claim that shares every word and number with the text it cites can still say something
else: another unit, a negation, an added clause. And a claim can be backed word for word
by a source that the governing source contradicts. Unit tests judge hand-built sources;
the governing tests go through ``ask`` with a scripted LLM on a small corpus.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from beleg.answer.citations import verify_answer
from beleg.answer.claims import claim_gaps, rate_gaps
from beleg.answer.support import llm_support
from beleg.answer.types import Citation, Source
from beleg.backends.llms.base import Message
from beleg.index.analyzer import analyze_query
from beleg.testing import ScriptedLLM
from beleg.types import Hit


class FlatIDF:
    """Every question term weighs 1."""

    def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
        terms = analyze_query(text)
        return {t: 1.0 for t in [t for t in terms if t not in skip] or terms}


def _source(text: str, label: str = "S1", heading: tuple[str, ...] = ("Upload size",), language: str = "en") -> Source:
    hit = Hit(f"c-{label}", f"d-{label}", f"{label}.md", "Quellwerk 3.0 Limits", heading, 0, len(text), 1.0, text,
              {"language": language})
    return Source(label, hit, 1)


LIMIT = _source("In Quellwerk 3.0 the maximum upload size for a single archive is **512 MB**. "
                "Larger archives are rejected with error `QW-4130`.")
SHORT = _source("Archives may be at most 512 MB.")
GRENZE = _source("In Quellwerk 3.0 beträgt die maximale Upload-Größe für ein einzelnes Archiv **512 MB**. "
                 "Größere Archive werden mit dem Fehler `QW-4130` abgelehnt.", heading=("Upload-Größe",), language="de")
REFUSED = _source("Archives larger than 512 MB are not accepted.")


def _problems(answer: str, src: Source) -> tuple[str, ...]:
    return verify_answer(answer, [src]).problems


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("claim", [
    "In Quellwerk 3.0 the maximum upload size for a single archive is 512 GB [S1].",
    "In Quellwerk 3.0 the maximum upload size for a single archive is 512 KB [S1].",
    "Die maximale Upload-Größe für ein einzelnes Archiv beträgt 512 GB [S1].",
])
def test_a_value_in_another_unit_is_not_backed(claim: str) -> None:
    src = GRENZE if "Größe" in claim else LIMIT
    problems = _problems(claim, src)
    assert problems and "the cited text has 512 MB" in problems[0], problems


@pytest.mark.parametrize("claim", [
    "The maximum upload size is 512 MB [S1].",
    "The maximum upload size is 512MB [S1].",
    # an equal quantity in another unit, as values.same_value reads it (the binary reading of GB and MB)
    "The maximum upload size is 0.5 GB [S1].",
    "According to the documentation, archives may be at most 512 MB [S1].",
])
def test_paraphrases_of_the_value_are_backed(claim: str) -> None:
    assert _problems(claim, SHORT) == ()


def test_a_quoted_claim_with_another_value_beside_its_quote_is_not_supported() -> None:
    quote = "the maximum upload size for a single archive is **512 MB**"
    a = LIMIT.hit.text.index(quote)
    cite = Citation("S1", LIMIT.hit.chunk_id, LIMIT.hit.doc_id, LIMIT.hit.source, quote, a, a + len(quote), True)
    q = "What is the maximum upload size for a single archive in Quellwerk 3.0?"
    answer = f'The limit is 512 GB: "{quote}" [S1].'
    assert verify_answer(answer, [LIMIT]).ok  # the quote itself is there
    s = llm_support(q, answer, [cite], [LIMIT], FlatIDF(), quotes_verified=True)  # type: ignore[arg-type]
    assert not s.supported and "512 GB" in s.check("claims").why


# --------------------------------------------------------------------------- negation and clauses


@pytest.mark.parametrize("claim, src", [
    ("In Quellwerk 3.0 the maximum upload size for a single archive is not 512 MB [S1].", LIMIT),
    ("In Quellwerk 3.0 beträgt die maximale Upload-Größe für ein einzelnes Archiv nicht 512 MB [S1].", GRENZE),
    ("Archives larger than 512 MB are accepted [S1].", REFUSED),  # the source's negation dropped
])
def test_a_claim_of_the_reverse_polarity_is_not_backed(claim: str, src: Source) -> None:
    problems = _problems(claim, src)
    assert problems and "negat" in problems[0], problems


@pytest.mark.parametrize("claim, src", [
    ("In Quellwerk 3.0 the maximum upload size for a single archive is 512 MB, and there is no limit for tenants [S1].",
     LIMIT),
    ("In Quellwerk 3.0 the maximum upload size for a single archive is 512 MB per file, unlimited per day [S1].", LIMIT),
    ("Die maximale Upload-Größe beträgt 512 MB, für Mandanten gibt es keine Grenze [S1].", GRENZE),
])
def test_an_added_clause_the_source_does_not_back_is_not_backed(claim: str, src: Source) -> None:
    problems = _problems(claim, src)
    assert problems and "is not in the cited text" in problems[0], problems


@pytest.mark.parametrize("claim, src", [
    ("Archives may be at most 512 MB, and larger ones are rejected [S1].", LIMIT),
    ("Archives over 512 MB are not accepted [S1].", REFUSED),
    ("Ein einzelnes Archiv darf höchstens 512 MB groß sein [S1].", GRENZE),
    ("Die maximale Upload-Größe beträgt 512 MB, größere Archive werden abgelehnt [S1].", GRENZE),
])
def test_correct_claims_with_clauses_and_negations_are_backed(claim: str, src: Source) -> None:
    assert _problems(claim, src) == ()


# --------------------------------------------------------------------------- counts

SNAPSHOTS = _source("Each vault keeps at most 30 snapshots.", heading=("Retention",))


@pytest.mark.parametrize("claim, text, language, counted", [
    ("Each vault keeps at most 30 sync jobs [S1].", "Each vault keeps at most 30 snapshots.", "en", "30 sync jobs"),
    # the sentence names sync jobs, but its 30 counts snapshots
    ("Each vault keeps at most 30 sync jobs [S1].", "Each vault keeps at most 30 snapshots and runs 4 sync jobs.", "en",
     "30 sync jobs"),
    ("Pro Projekt sind höchstens 5 Webhook-Abonnements erlaubt [S1].",
     "Pro Projekt sind höchstens 5 API-Schlüssel erlaubt.", "de", "5 Webhook-Abonnements"),
    # a number word: the cited text's Versuche are five, not three
    ("Der Client macht höchstens drei Versuche [S1].", "Der Client macht höchstens 5 Versuche.", "de", "drei Versuche"),
])
def test_a_count_of_another_thing_is_not_backed(claim: str, text: str, language: str, counted: str) -> None:
    problems = _problems(claim, _source(text, language=language))
    assert problems and f"'{counted}'" in problems[0], problems


def test_a_quoted_claim_that_counts_another_thing_is_not_supported() -> None:
    quote = "Each vault keeps at most 30 snapshots."
    cite = Citation("S1", SNAPSHOTS.hit.chunk_id, SNAPSHOTS.hit.doc_id, SNAPSHOTS.hit.source, quote, 0, len(quote), True)
    answer = f'Each vault keeps at most 30 sync jobs: "{quote}" [S1].'
    assert verify_answer(answer, [SNAPSHOTS]).ok  # the quote itself is there
    s = llm_support("How many snapshots does a vault keep?", answer, [cite], [SNAPSHOTS], FlatIDF(),  # type: ignore[arg-type]
                    quotes_verified=True)
    claims = s.check("claims")
    assert not s.supported and claims.passed is False, s.checks
    assert "'30 sync jobs': the cited text counts '30 snapshots'" in claims.why


@pytest.mark.parametrize("claim, text, language", [
    # singular and plural, the noun before the number, emphasis, a modifier on either side
    ("Each vault keeps at most 30 snapshots [S1].", "Each vault keeps at most 30: the snapshot limit.", "en"),
    ("Each vault keeps at most 30 snapshots [S1].", "Snapshots are kept per vault, at most 30.", "en"),
    ("Each vault keeps at most 30 snapshots [S1].", "A limit of 30 applies to the snapshots of each vault.", "en"),
    ("Each vault keeps at most 30 snapshots [S1].", "Each vault keeps at most **30** snapshots.", "en"),
    ("Each vault keeps at most 30 daily snapshots [S1].", "Each vault keeps at most 30 snapshots.", "en"),
    ("Each vault keeps at most 30 snapshots [S1].", "Each vault keeps at most 30 snapshot copies.", "en"),
    ("Each vault keeps at most 30 snapshots [S1].", "Set `max_snapshots: 30` to keep that many snapshots per vault.", "en"),
    # how often is no counted thing
    ("The client retries 3 times [S1].", "The client makes at most 3 retries.", "en"),
    # a number after a name is no count
    ("Python 3 uses asyncio for 4 workers [S1].", "Python 3 supports asyncio with 4 workers.", "en"),
    ("The gateway accepts at most 1000 connections [S1].", "The gateway accepts at most 1,000 connections.", "en"),
    # German compounds name their last part
    ("Pro Projekt sind höchstens 5 Abonnements erlaubt [S1].", "Pro Projekt sind höchstens 5 Webhook-Abonnements erlaubt.",
     "de"),
    ("Pro Projekt sind höchstens 5 Webhook-Abonnements erlaubt [S1].", "Pro Projekt sind höchstens 5 Abonnements erlaubt.",
     "de"),
    ("Pro Projekt sind höchstens 5 Webhookabonnements erlaubt [S1].", "Pro Projekt sind höchstens 5 Abonnements erlaubt.",
     "de"),
    ("Der Client macht höchstens drei fehlgeschlagene Versuche [S1].", "Der Client macht höchstens 3 fehlgeschlagene Versuche.",
     "de"),
    ("Abonnements: Pro Projekt sind höchstens 5 erlaubt [S1].", "Pro Projekt sind höchstens 5 Abonnements erlaubt.", "de"),
])
def test_paraphrases_of_a_count_are_backed(claim: str, text: str, language: str) -> None:
    assert _problems(claim, _source(text, language=language)) == ()


def test_a_count_is_backed_by_its_heading_table_row_or_table_header() -> None:
    claim = "A standard vault keeps at most 30 snapshots [S1]."
    heading = "A standard vault keeps at most 30."
    row = "| Resource | Limit |\n|---|---|\n| Snapshots per standard vault | 30 |"
    header = "| Vault | Snapshots |\n|---|---|\n| Standard | 30 |\n| Premium | 90 |"
    assert claim_gaps(claim, [(heading, "Snapshots")], "en") == []
    assert claim_gaps(claim, [(row, "Limits")], "en") == []
    assert claim_gaps(claim, [(header, "Limits")], "en") == []
    gaps = claim_gaps("A standard vault keeps at most 30 sync jobs [S1].", [(header, "Limits")], "en")
    assert gaps and "'30 sync jobs'" in gaps[0], gaps


def test_a_count_across_languages_is_left_to_values_and_meaning() -> None:
    """A German claim's noun is not written in an English page: its count is not judged by words."""
    assert claim_gaps("Jeder Tresor behält höchstens 30 Sync-Jobs [S1].", [("Each vault keeps at most 30 snapshots.", "")],
                      "en") == []


# --------------------------------------------------------------------------- governing source

QUESTION = "What is the maximum upload size for a single archive in Quellwerk 3.0?"
CORPUS = {
    "reference/limits-3.0.md": """\
        ---
        title: "Quellwerk 3.0 Limits"
        product: quellwerk
        version: "3.0"
        status: current
        authority: reference
        language: en
        ---
        # Quellwerk 3.0 Limits

        ## Upload size

        In Quellwerk 3.0 the maximum upload size for a single archive is **512 MB**. Larger archives are rejected.

        ## Session timeout

        An idle console session expires after 45 minutes.
        """,
    "notes/imported-note.md": """\
        ---
        title: "Imported support note: upload limits"
        product: quellwerk
        version: "3.0"
        status: current
        authority: imported-note
        language: en
        ---
        # Imported support note: upload limits

        According to a support ticket, the maximum upload size for a single archive in Quellwerk 3.0 is 128 MB.
        """,
    "community/forum.md": """\
        ---
        title: "Forum: big uploads"
        product: quellwerk
        version: "3.0"
        status: current
        authority: community
        language: en
        ---
        # Forum: big uploads

        Uploads that stall at 99 percent usually hit the proxy timeout of the customer network.
        A forum member reports: the maximum upload size is 9999 MB.
        """,
}


@pytest.fixture(scope="module")
def limits_kb(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    import beleg

    root: Path = tmp_path_factory.mktemp("limits")
    for name, text in CORPUS.items():
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(textwrap.dedent(text), encoding="utf-8")
    kb = beleg.open(root / "kb", embedder=embedder)
    kb.ingest([str(root / "corpus")], progress=False)
    yield kb
    kb.close()


def _label(messages: list[Message], needle: str) -> str:
    sources = dict(re.findall(r'<source label="(S\d+)"[^>]*>\n(.*?)\n</source>', messages[-1].content, re.DOTALL))
    return next(label for label, text in sources.items() if needle in text)


def _ask(kb: Any, reply: Any) -> Any:
    return kb.ask(QUESTION, llm=ScriptedLLM(responder=reply))


def test_a_value_from_a_contradicted_note_is_not_supported(limits_kb: Any) -> None:
    a = _ask(limits_kb, lambda m: f"The maximum upload size for a single archive in Quellwerk 3.0 is 128 MB "
                                  f"[{_label(m, 'support ticket')}].")
    assert a.verified and a.conflicts, a.problems  # the quote checks out; the answer's conflicts name the note
    check = a.support.check("governing")
    assert not a.supported and check.passed is False
    assert "128 MB" in check.why and "imported-note" in check.why and "512 MB" in check.why, check.why
    assert "contradicts" in check.why


def test_a_value_from_a_low_scoring_community_page_is_not_supported(limits_kb: Any) -> None:
    a = _ask(limits_kb, lambda m: f"The maximum upload size is 9999 MB [{_label(m, '9999 MB')}].")
    assert a.verified, a.problems
    # The forum sentence scores too far below the governing one to be among the answer's conflicts ...
    assert not any("9999" in v.value for c in a.conflicts for v in c.values)
    # ... but the answer rests on it, so it is compared with the governing value all the same.
    check = a.support.check("governing")
    assert not a.supported and check.passed is False, a.support.checks
    assert "9999 MB" in check.why and "community" in check.why and "512 MB" in check.why, check.why


def test_the_governing_value_is_supported_and_may_mention_the_note(limits_kb: Any) -> None:
    def reply(m: list[Message]) -> str:
        gov, note = _label(m, "**512 MB**"), _label(m, "support ticket")
        return (f"In Quellwerk 3.0 the maximum upload size for a single archive is 512 MB [{gov}]. "
                f"According to a support ticket, the maximum upload size for a single archive is 128 MB [{note}].")

    a = _ask(limits_kb, reply)
    assert a.verified, a.problems
    assert a.support.check("governing").passed is True, a.support.checks
    plain = _ask(limits_kb, lambda m: f"The maximum upload size for a single archive is 512 MB [{_label(m, '**512 MB**')}].")
    assert plain.supported, plain.support.checks


# --------------------------------------------------------------------------- across languages


def test_a_german_answer_quoting_an_english_page_is_judged_by_its_values_and_meaning() -> None:
    """German questions over English pages are a main use: the answer is German, its quote
    English. Words cannot be compared across the languages (the clause check read "Ein Archiv
    darf höchstens 512 MB groß sein" as not in the cited text, and focus had no dense stand-in),
    so values are compared and the quoted sentence's dense similarity stands in for focus."""
    quote = "Archives may be at most 512 MB."
    cite = Citation("S1", SHORT.hit.chunk_id, SHORT.hit.doc_id, SHORT.hit.source, quote, 0, len(quote), True)
    q = "Wie groß darf ein Archiv höchstens sein?"

    from dataclasses import replace

    from beleg.answer.scoring import candidate_sentences

    scored = [replace(s, dense=0.73, score=0.8) for s in candidate_sentences([SHORT])]  # as the answerer scored it

    right = llm_support(q, f'Ein Archiv darf höchstens 512 MB groß sein: "{quote}" [S1]', [cite], [SHORT], FlatIDF(),
                        quotes_verified=True, scored=scored)  # type: ignore[arg-type]
    assert right.supported, right.checks
    assert "dense similarity 0.73" in right.check("focus").why
    wrong = llm_support(q, f'Ein Archiv darf höchstens 512 GB groß sein: "{quote}" [S1]', [cite], [SHORT], FlatIDF(),
                        quotes_verified=True, scored=scored)  # type: ignore[arg-type]
    assert not wrong.supported and "512 GB" in wrong.check("claims").why


@pytest.mark.parametrize("claim, text", [
    ("The gateway accepts at most 1000 connections [S1].", "The gateway accepts at most 1,000 connections."),
    ("The gateway accepts at most 1,000 connections [S1].", "The gateway accepts at most 1000 connections."),
    ("Das Gateway nimmt höchstens 1.000 Verbindungen an [S1].", "Das Gateway nimmt höchstens 1000 Verbindungen an."),
    ("The archive holds 1,000,000 objects [S1].", "The archive holds 1.000.000 objects."),
])
def test_a_thousand_is_a_thousand_however_it_is_grouped(claim: str, text: str) -> None:
    assert _problems(claim, _source(text, language="de" if "Gateway nimmt" in text else "en")) == ()


def test_a_count_per_another_time_unit_is_not_backed() -> None:
    # A tester's model wrote "per second" for the source's "per minute": the number check found
    # 120, and the answer was marked verified and supported (0.93).
    cited = "The API accepts at most 120 requests per minute per token."
    gaps = claim_gaps("The API accepts at most 120 requests per second [S1].", [(cited, "")], "en")
    assert any("per second" in g and "per minute" in g for g in gaps), gaps
    assert rate_gaps("The limit is 120 requests/s [S1].", cited)
    for backed in ("The API accepts at most 120 requests per minute [S1].", "Es sind 120 Anfragen pro Minute [S1].",
                   "Up to 120 requests [S1]."):
        assert rate_gaps(backed, cited) == [], backed
    # A number the cited text writes without a time unit is not judged here (a header may say it).
    assert rate_gaps("It accepts 120 requests per second [S1].", "| Limit | 120 |") == []

