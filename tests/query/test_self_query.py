"""Self-query by rule: constraints read from a question, only from values the asker may see."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from beleg.answer.evidence import find_target
from beleg.index.filters import Cmp, matches, parse
from beleg.query.dates import date_ranges
from beleg.query.self_query import Inferred, apply_constraints, filter_keys, infer_constraints
from beleg.query.versions import asked_versions, resolve_version, spellings, version_mentions
from beleg.types import Hit

VISIBLE = {
    "product": {"ferrolink"},
    "version": {"1.8", "2.4", "3.0"},
    "status": {"current", "historical", "draft"},
    "language": {"de", "en"},
    "date": {"2021-09-13", "2023-04-17", "2026-01-15"},
}
TODAY = dt.date(2026, 3, 1)


def values_of(table: dict[str, set[str]]):
    calls: list[str] = []

    def values(key: str) -> set[str]:
        calls.append(key)
        return table.get(key, set())

    values.calls = calls  # type: ignore[attr-defined]
    return values


def infer(question: str, table: dict[str, set[str]] = VISIBLE, **kw: Any) -> Inferred:
    return infer_constraints(question, values_of(table), today=TODAY, **kw)


def applied(inferred: Inferred) -> dict[str, tuple[str, Any, str]]:
    return {c.key: (c.op, c.value, c.applied_as) for c in inferred.applied()}


# ---------------------------------------------------------------------- each key
def test_product_and_version_from_the_question() -> None:
    got = infer("How long does Ferrolink 3.0 retry failed webhook deliveries?")
    assert applied(got) == {"product": ("=", "ferrolink", "filter"), "version": ("=", "3.0", "boost")}
    version = next(c for c in got.constraints if c.key == "version")
    assert version.words == "Ferrolink 3.0"
    assert got.boost_expr() == Cmp("version", "=", "3.0")
    assert got.filter_expr() == Cmp("product", "=", "ferrolink")


def test_several_versions_boost_all_of_them() -> None:
    got = infer("What changed between version 2.4 and 3.0 in the retry window?")
    assert applied(got)["version"] == ("in", ("2.4", "3.0"), "boost")


def test_bare_decimals_and_units_are_not_versions() -> None:
    for question in ("Is the uptime 99.95 percent?", "Can a message be 1.5 MB?", "Was kostet 2.5 €?"):
        got = infer(question)
        assert "version" not in applied(got) and got.unknown_versions == (), question


def test_status_cues_in_english_and_german() -> None:
    cases = {
        "What is the current retry window?": "current",
        "Wie lang ist das Wiederholungsfenster aktuell?": "current",
        "What is the latest message size limit?": "current",
        "What did the old versions say about retries?": "historical",
        "Wie war das früher mit den Wiederholungen?": "historical",
        "Was galt damals für Webhooks?": "historical",
        "What do the deprecated docs say about the retry window?": "historical",
        "Was steht in veralteten Dokumenten zum Wiederholungsfenster?": "historical",
        "What did the obsolete contracts promise?": "historical",
        "What does the draft say about scheduled delivery?": "draft",
        "Was steht im Entwurf zur geplanten Zustellung?": "draft",
    }
    for question, status in cases.items():
        assert applied(infer(question)).get("status") == ("=", status, "filter"), question


def test_no_status_without_a_cue_and_früher_als_is_a_comparison() -> None:
    assert "status" not in applied(infer("How long are failed webhook deliveries retried?"))
    # A feature that is deprecated is a question the current pages answer, not a status filter.
    assert "status" not in applied(infer("Is the /api/v2 endpoint deprecated?"))
    assert "status" not in applied(infer("Welche Endpunkte sind veraltet?"))
    assert "status" not in applied(infer("Wird eine Nachricht früher als nach 10 Sekunden zugestellt?"))


def test_contrasting_statuses_apply_none() -> None:
    got = infer("How does the current retry window differ from the old versions?")
    assert "status" not in applied(got)
    assert any(c.key == "status" and c.status == "skipped" for c in got.constraints)


def test_a_named_version_decides_instead_of_a_status_word() -> None:
    got = infer("What is the current retry window in Ferrolink 2.4?")
    assert "status" not in applied(got) and applied(got)["version"] == ("=", "2.4", "boost")


def test_explicit_language_only_not_the_question_language() -> None:
    assert applied(infer("Which German docs describe webhook signatures?"))["language"] == ("=", "de", "filter")
    assert applied(infer("Wo steht das auf Englisch?"))["language"] == ("=", "en", "filter")
    assert applied(infer("Is the glossary available in German?"))["language"] == ("=", "de", "filter")
    # translations and descriptions of content are not requests for documents in a language
    for question in ("What is the hymn known as in English?", "Wie heißt Warteschlange auf Englisch?",
                     "What portion of his last statement was in German?"):
        assert "language" not in applied(infer(question)), question
    assert applied(infer("Is there an English version of the glossary?"))["language"] == ("=", "en", "filter")
    # a German question is not a request for German documents
    assert "language" not in applied(infer("Wie lange werden fehlgeschlagene Zustellungen wiederholt?"))
    assert "language" not in applied(infer("How long are webhooks retried?"))


def test_language_values_are_the_stored_spelling() -> None:
    table = {**VISIBLE, "language": {"German", "English"}}
    assert applied(infer("Show me the German documentation", table))["language"] == ("=", "German", "filter")


def test_date_ranges() -> None:
    got = infer("What changed since 2025?")
    assert [(c.op, c.value) for c in got.applied()] == [(">=", "2025-01-01")]
    got = infer("Which contracts were signed before March 2024?")
    assert [(c.op, c.value, c.words) for c in got.applied()] == [("<", "2024-03-01", "before March 2024")]
    assert [(c.op, c.value) for c in infer("Was gilt seit 2025?").applied()] == [(">=", "2025-01-01")]
    assert [(c.op, c.value) for c in infer("Was galt vor 2024?").applied()] == [("<", "2024-01-01")]
    got = infer("What was published between 2022 and 2023?")
    assert [(c.op, c.value) for c in got.applied()] == [(">=", "2022-01-01"), ("<", "2024-01-01")]
    assert [(c.op, c.value) for c in infer("What changed last year?").applied()] == [
        (">=", "2025-01-01"), ("<", "2026-01-01")]


def test_a_year_without_a_range_word_is_no_range() -> None:
    for question in ("Who won the 2014 World Cup?", "Was war 2024 los?", "Wurde es vor 3 Tagen geändert?"):
        assert date_ranges(question, TODAY) == [], question
        assert infer(question).applied() == (), question


def test_dates_need_date_metadata() -> None:
    table = {k: v for k, v in VISIBLE.items() if k != "date"}
    got = infer("What changed since 2025?", table)
    assert got.applied() == () and got.constraints[0].status == "skipped"


def test_the_inferred_date_filter_selects_by_date() -> None:
    expr = infer("Which contracts were signed before March 2024?").filter_expr()
    assert matches(expr, {"date": "2023-04-17"}) and not matches(expr, {"date": "2026-01-15"})


# ---------------------------------------------------------------------- only visible values
def test_values_come_only_from_what_the_asker_may_see() -> None:
    # The asker sees no "geheimdb" product and no version 7.7: nothing is inferred from them,
    # and 7.7 is reported exactly like a version that does not exist anywhere.
    hidden = infer("How does Geheimdb version 7.7 replicate?")
    absent = infer("How does Nichtda version 8.8 replicate?")
    assert hidden.applied() == () and absent.applied() == ()
    assert hidden.unknown_versions == ("7.7",) and absent.unknown_versions == ("8.8",)
    # an invisible product name is not even a cue for a version
    assert infer("How does Geheimdb 7.7 replicate?").unknown_versions == ()
    seen = infer("How does Geheimdb 7.7 replicate?", {**VISIBLE, "product": {"ferrolink", "geheimdb"},
                                                       "version": {"3.0", "7.7"}})
    assert applied(seen) == {"product": ("=", "geheimdb", "filter"), "version": ("=", "7.7", "boost")}


def test_status_and_language_not_visible_are_skipped() -> None:
    table = {**VISIBLE, "status": {"current"}, "language": {"en"}}
    got = infer("What did the draft say, in German?", table)
    assert got.applied() == ()
    assert {c.key for c in got.constraints if c.status == "skipped"} == {"status", "language"}


def test_values_are_asked_only_for_keys_the_question_has_words_for() -> None:
    values = values_of(VISIBLE)
    infer_constraints("How long are webhooks retried?", values)
    assert values.calls == ["product"]  # type: ignore[attr-defined]


def test_no_metadata_no_constraints() -> None:
    got = infer("What did the current German docs say since 2025 about version 2.4?", {})
    assert got.constraints == () or got.applied() == ()


# ---------------------------------------------------------------------- the caller's filter wins
def test_an_explicit_filter_on_a_key_disables_the_inferred_one() -> None:
    got = infer("What is the current retry window in Ferrolink 3.0?").overridden_by(parse("version = 2.4"))
    assert "version" not in applied(got) and "product" in applied(got)
    version = next(c for c in got.constraints if c.key == "version")
    assert version.status == "overridden" and "your filter" in version.reason
    assert filter_keys(parse("not (status = draft) or (language in (de, en) and date >= 2025-01-01)")) == {
        "status", "language", "date"}


# ---------------------------------------------------------------------- conversation and the answer's target
def test_a_follow_up_keeps_the_version_asked_before() -> None:
    got = infer("How large may it be at most?", context=["What was the message size limit in Ferrolink 2.4?"])
    assert applied(got)["version"] == ("=", "2.4", "boost") and got.version_origin == "conversation"


@pytest.mark.parametrize("question,context", [
    ("How long does Ferrolink 3.0 retry failed webhook deliveries?", []),
    ("And in 2.4?", ["What is the retry window in Ferrolink 3.0?"]),
    ("How large may it be at most?", ["What was the message size limit in Ferrolink 2.4?"]),
    ("What was the limit in Ferrolink 9.9?", []),
    ("Compare version 1.8 and 2.4", []),
    ("How long are webhooks retried?", ["Is the uptime 99.95 percent?"]),
])
def test_search_and_answer_agree_on_the_version(question: str, context: list[str]) -> None:
    target = find_target(question, None, context, VISIBLE["version"], VISIBLE["product"])
    got = infer(question, context=context)
    boosted = [c.value for c in got.applied("boost")]
    if target.version is None:
        assert boosted == []
    else:
        first = boosted[0] if isinstance(boosted[0], str) else boosted[0][0]
        assert first == target.version
    assert got.unknown_versions == target.unknown


def test_version_mentions_is_the_one_rule() -> None:
    assert version_mentions("What changed since 2.4?") == ["2.4"]
    assert version_mentions("Was war in Ferrolink 2.4 anders?", ["ferrolink"]) == ["2.4"]
    assert version_mentions("uptime of 99.95 percent") == []
    # What the version is of cues it too: firmware, build, a "…version" compound, "Stand".
    assert version_mentions("What was the maximum flow temperature in firmware 1.4?") == ["1.4"]
    assert version_mentions("Was galt in der Firmwareversion 2.0?") == ["2.0"]
    assert version_mentions("What changed in build 3?") == ["3"]
    assert version_mentions("The firmware holds 1.5 MB of settings") == []
    asked = asked_versions("x in 4.0 and in 3.0", [], {"3.0"}, [])
    assert asked.known == ("3.0",) and asked.unknown == ("4.0",)


def test_versions_written_another_way_mean_the_stored_one() -> None:
    # "Ferrolink 3", "Version 2.4.0" and "release v3" are the stored 3.0 and 2.4: a user
    # writes a version as the release notes do, not as the front matter does.
    assert version_mentions("How long in Ferrolink 3?", ["ferrolink"]) == ["3"]
    assert version_mentions("Was galt in Version 2.4.0?") == ["2.4.0"]
    assert version_mentions("since 1.10.2") == ["1.10.2"]
    assert version_mentions("API rate limit v2.0") == ["2.0"]  # "v" says it is a version by itself
    assert version_mentions("How do I migrate from Kestrel 1.x?", ["kestrel"]) == []  # a range
    # A whole number is a version only after a product name or "version"/"release".
    for text in ("Retry in 5 minutes", "Call /api/v3 now", "Error E-4012 in 3 queues", "Ferrolink 3 MB"):
        assert version_mentions(text, ["ferrolink"]) == [], text
    assert resolve_version("3", ["1.8", "2.4", "3.0"]) == ["3.0"]
    assert resolve_version("2.4.0", ["1.8", "2.4", "3.0"]) == ["2.4"]
    assert resolve_version("3", ["3.1", "3.2", "2.4"]) == ["3.2", "3.1"]  # every 3.x, newest first
    assert resolve_version("3.0.1", ["3.0"]) == [] and resolve_version("5", ["3.0"]) == []
    assert spellings("3.0") == ["3", "3.0.0"] and spellings("2.4") == ["2.4.0"]
    got = infer("How long does Ferrolink 3 retry failed webhook deliveries?")
    assert applied(got)["version"] == ("=", "3.0", "boost")
    assert next(c for c in got.constraints if c.key == "version").words == "Ferrolink 3"
    assert applied(infer("What was the retry window in version 2.4.0?"))["version"] == ("=", "2.4", "boost")
    assert infer("What was the retry window in version 5?").unknown_versions == ("5",)


# ---------------------------------------------------------------------- applying: filters and the boost
def _hit(cid: str, version: str) -> Hit:
    return Hit(cid, cid, f"{cid}.md", cid, (), 0, 1, 1.0, "text", {"product": "ferrolink", "version": version})


def test_the_boost_ranks_the_asked_version_first_and_keeps_the_others() -> None:
    corpus = [_hit("a18", "1.8"), _hit("b24", "2.4"), _hit("c30", "3.0"), _hit("d24", "2.4"), _hit("e30", "3.0")]
    seen: list[Any] = []

    def run(expr: Any) -> list[Hit]:  # a fake permission-checked search: filters the fixed ranking
        seen.append(expr)
        return [h for h in corpus if matches(expr, h.metadata)][:4]

    inferred = infer("How long does Ferrolink 3.0 retry?")
    hits = apply_constraints(run, None, inferred, k=4)
    assert [h.chunk_id for h in hits][0] == "c30"  # in both lists: first
    assert hits[0].scores["boosted"] == 1.0 and hits[1].scores["boosted"] == 0.0
    assert {"a18", "b24"} <= {h.chunk_id for h in hits}  # other versions kept, demoted
    # both searches run inside the caller's and the inferred filters; the second only narrows
    assert seen[0] == Cmp("product", "=", "ferrolink")
    assert matches(seen[1], {"product": "ferrolink", "version": "3.0"})
    assert not matches(seen[1], {"product": "ferrolink", "version": "2.4"})


def test_the_boost_never_adds_a_hit_the_first_search_excludes() -> None:
    corpus = [_hit("a18", "1.8"), _hit("c30", "3.0")]
    caller = parse("version < 3.0")

    def run(expr: Any) -> list[Hit]:
        return [h for h in corpus if matches(expr, h.metadata)]

    hits = apply_constraints(run, caller, infer("retry window in version 3.0?"), k=10)
    assert [h.chunk_id for h in hits] == ["a18"]


# ---------------------------------------------------------------------- XQuAD: no metadata, a no-op
XQUAD = Path(__file__).resolve().parents[1] / "data" / "xquad"


def test_self_query_is_a_no_op_on_xquad() -> None:
    from beleg.evaluate.datasets import load_squad

    for language in ("en", "de"):
        data = load_squad([XQUAD / f"xquad.dev.{language}.json"])
        table: dict[str, set[str]] = {"language": {"en", "de"}}  # ingest detects a language per document
        for doc in data.documents or []:
            for key, value in doc.metadata.items():
                table.setdefault(key, set()).add(str(value))
        for q in data.queries:
            got = infer_constraints(q.text, lambda key, table=table: table.get(key, set()))
            assert got.applied() == () and got.unknown_versions == (), q.text
