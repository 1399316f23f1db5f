from __future__ import annotations

from pathlib import Path

import pytest

from beleg.answer.values import (
    Value,
    as_written,
    asks_temperature,
    comparable,
    expected_kind,
    extract_values,
    same_value,
)
from beleg.sentences import split_sentences

CORPUS = Path(__file__).resolve().parents[2] / "demo" / "corpus"


def found(text: str, **kw: str) -> list[tuple[str, str, float | str]]:
    values = extract_values(text, **kw)
    for v in values:
        assert text[v.start : v.end] == v.raw
    return [(v.kind, v.raw, v.normalized) for v in values]


def one(text: str) -> Value:
    values = extract_values(text)
    assert len(values) == 1, values
    return values[0]


@pytest.mark.parametrize(
    ("text", "raw", "seconds", "unit"),
    [
        ("retried for 72 hours", "72 hours", 259200, "h"),
        ("wiederholt **72 Stunden** lang", "72 Stunden", 259200, "h"),
        ("a 24-hour window", "24-hour", 86400, "h"),
        ("das 72-Stunden-Fenster", "72-Stunden", 259200, "h"),
        ("default timeout 10 seconds", "10 seconds", 10, "s"),
        ("Zustell-Timeout 15 s, fest", "15 s", 15, "s"),
        ("backoff 30s", "30s", 30, "s"),
        ("a fixed interval of 15 minutes", "15 minutes", 900, "min"),
        ("alle 30 min", "30 min", 1800, "min"),
        ("innerhalb von 30 Tagen", "30 Tagen", 2592000, "d"),
        ("kept for 4 days", "4 days", 345600, "d"),
        ("mindestens 6 Wochen", "6 Wochen", 3628800, "wk"),
        ("für 3 Monate", "3 Monate", 7776000, "mo"),
        ("1.5 hours later", "1.5 hours", 5400, "h"),
        ("doubles up to one hour", "one hour", 3600, "h"),
        ("innerhalb einer Stunde", "einer Stunde", 3600, "h"),
        ("zwei Stunden später", "zwei Stunden", 7200, "h"),
    ],
)
def test_durations(text: str, raw: str, seconds: float, unit: str) -> None:
    v = one(text)
    assert (v.kind, v.raw, v.normalized, v.unit) == ("duration", raw, pytest.approx(seconds), unit)


def test_decades_are_not_seconds() -> None:
    assert [k for k, _, _ in found("in the 1970s and the 80s")] == []


@pytest.mark.parametrize(
    ("text", "raw", "nbytes", "unit"),
    [
        ("The limit is **256 KB** per message.", "256 KB", 256_000, "KB"),
        ("maximum **1 MB**", "1 MB", 1_000_000, "MB"),
        ("Batch request body | 10MB", "10MB", 10_000_000, "MB"),
        ("64 kB", "64 kB", 64_000, "KB"),
        ("1 MiB", "1 MiB", 1_048_576, "MiB"),
        ("2 GiB", "2 GiB", 2 * 1024**3, "GiB"),
        ("(1,048,576 bytes)", "1,048,576 bytes", 1_048_576, "B"),
        ("(1.048.576 Byte)", "1.048.576 Byte", 1_048_576, "B"),
    ],
)
def test_sizes(text: str, raw: str, nbytes: int, unit: str) -> None:
    v = one(text)
    assert (v.kind, v.raw, v.normalized, v.unit) == ("size", raw, nbytes, unit)


@pytest.mark.parametrize(
    ("text", "raw", "pct"),
    [
        ("Verfügbarkeit von **99,95 %** zu", "99,95 %", 99.95),
        ("uptime commitment is 99.95%", "99.95%", 99.95),
        ("99,95% im Monat", "99,95%", 99.95),
        ("99.95 percent per month", "99.95 percent", 99.95),
        ("plus/minus 20 Prozent", "20 Prozent", 20.0),
        ("30 per cent of the time", "30 per cent", 30.0),
    ],
)
def test_percent(text: str, raw: str, pct: float) -> None:
    v = one(text)
    assert (v.kind, v.raw, v.normalized, v.unit) == ("percent", raw, pytest.approx(pct), "%")


@pytest.mark.parametrize(
    ("text", "raw", "norm"),
    [
        ("| Team | 3,50 € |", "3,50 €", "EUR 3.50"),
        ("costs EUR 3.50 per million", "EUR 3.50", "EUR 3.50"),
        ("costs €3.50", "€3.50", "EUR 3.50"),
        ("Monatliche Gebühr 1.190 €", "1.190 €", "EUR 1190.00"),
        ("49 EUR im Monat", "49 EUR", "EUR 49.00"),
        ("10 Euro", "10 Euro", "EUR 10.00"),
        ("a budget of $230,000", "$230,000", "USD 230000.00"),
        ("5 USD each", "5 USD", "USD 5.00"),
    ],
)
def test_money(text: str, raw: str, norm: str) -> None:
    v = one(text)
    assert (v.kind, v.raw, v.normalized) == ("money", raw, norm)


@pytest.mark.parametrize(
    ("text", "raw", "iso"),
    [
        ("date: 2026-01-15", "2026-01-15", "2026-01-15"),
        ("released on 13 September 2021.", "13 September 2021", "2021-09-13"),
        ("on January 15, 2026 we", "January 15, 2026", "2026-01-15"),
        ("gültig ab dem 15. Januar 2026.", "15. Januar 2026", "2026-01-15"),
        ("am 6. Oktober 2025", "6. Oktober 2025", "2025-10-06"),
        ("am 13.09.2021", "13.09.2021", "2021-09-13"),
        ("at 2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z", "2026-03-01"),
        ("(Stand Januar 2026)", "Januar 2026", "2026-01"),
        ("in operation from 1870", "1870", "1870"),
        ("Im Jahr 1891 konnte", "1891", "1891"),
    ],
)
def test_dates(text: str, raw: str, iso: str) -> None:
    v = one(text)
    assert (v.kind, v.raw, v.normalized) == ("date", raw, iso)


@pytest.mark.parametrize(
    ("text", "raw", "celsius"),
    [
        ("The maximum flow temperature is **62 °C**.", "62 °C", 62.0),
        ("bis zu einer Außentemperatur von 35°C", "35°C", 35.0),
        ("heats the tank to 60 ℃ once a week", "60 ℃", 60.0),
        ("rated up to 95 °F", "95 °F", 35.0),
        ("hält 20 Grad Celsius", "20 Grad Celsius", 20.0),
        ("at 68 degrees Fahrenheit", "68 degrees Fahrenheit", 20.0),
    ],
)
def test_temperatures_are_degrees_celsius(text: str, raw: str, celsius: float) -> None:
    """A temperature was read as a bare count ("62"): then a register number (40001) or any
    other count of the page was a value of the same kind."""
    v = one(text)
    assert (v.kind, v.raw, v.normalized) == ("temperature", raw, pytest.approx(celsius))


@pytest.mark.parametrize(
    ("text", "raw", "number"),
    [
        ("operates down to an outdoor temperature of -25 °C; below", "-25 °C", -25.0),
        ("down to \u221215 °C", "\u221215 °C", -15.0),  # U+2212 minus
        ("down to \u201325 °C", "\u201325 °C", -25.0),  # the en dash set as a minus
        ("| Minimum | -20 °C |", "-20 °C", -20.0),
        ("(-5 %)", "-5 %", -5.0),
        ("an offset of -3 and more", "-3", -3.0),
    ],
)
def test_a_minus_sign_belongs_to_the_number(text: str, raw: str, number: float) -> None:
    """"-25 °C" was read as 25: a negative value read as positive is a wrong value."""
    v = one(text)
    assert (v.raw, v.normalized) == (raw, number)
    assert text[v.start : v.end] == raw


def test_a_minus_sign_on_money_keeps_the_currency() -> None:
    assert found("Gutschrift: -3,50 € und \u2212€5") == [("money", "-3,50 €", "EUR -3.50"), ("money", "\u2212€5", "EUR -5.00")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("between 10\u201320 items", [("count", "10", 10.0), ("count", "20", 20.0)]),  # a range
        ("between 10-20 items", [("count", "10", 10.0), ("count", "20", 20.0)]),
        ("from 10 -20 items", [("count", "10", 10.0), ("count", "20", 20.0)]),
        ("from **10**\u201320 items", [("count", "10", 10.0), ("count", "20", 20.0)]),
        ("from 10 °C\u201320 °C", [("temperature", "10 °C", 10.0), ("temperature", "20 °C", 20.0)]),
        ("error E-4012 on HC-12 units", []),  # identifiers
        ("on 2026-01-15 we", [("date", "2026-01-15", "2026-01-15")]),
        ("5%-10%", [("percent", "5%", 5.0), ("percent", "10%", 10.0)]),
    ],
)
def test_a_dash_that_is_no_sign(text: str, expected: list[tuple[str, str, float | str]]) -> None:
    assert found(text) == expected


def test_the_sign_decides_whether_two_values_are_the_same() -> None:
    minus, plus = one("down to -25 °C"), one("down to 25 °C")
    assert comparable(minus, plus) and not same_value(minus, plus)
    assert same_value(one("down to \u221225 °C"), minus)
    assert same_value(one("at 77 °F"), one("at 25 °C"))


def test_a_temperature_is_no_count() -> None:
    """A register number in the same table is a count; it cannot be compared with a temperature."""
    register, setpoint = extract_values("| 40001 | Flow temperature setpoint | 55 °C |")
    assert (register.kind, setpoint.kind) == ("count", "temperature")
    assert not comparable(register, setpoint)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("The API accepts at most 30 requests per minute.", ["30 requests per minute"]),
        ("The API accepts at most **120 requests per minute** per token.", ["120 requests per minute"]),
        ("Die API nimmt höchstens 5 Anfragen pro Sekunde an.", ["5 Anfragen pro Sekunde"]),
        ("up to 3 retries/hour", ["3 retries/hour"]),
        ("Default **10**, customers can go up to 50 and no more.", ["10", "50"]),  # no noun after them
        ("| 40001 | Flow temperature setpoint |", ["40001"]),
        ("Default **30** seconds", ["30 seconds"]),
        ("operates down to -25 °C", ["-25 °C"]),
    ],
)
def test_values_as_written(text: str, shown: list[str]) -> None:
    """What a conflict report shows: sign, unit and what a count counts, without markup."""
    assert [as_written(text, v) for v in extract_values(text)] == shown


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What was the maximum flow temperature in Calora 1.4?", True),
        ("Down to which outdoor temperature does the heat pump operate?", True),
        ("Wie hoch ist die maximale Vorlauftemperatur?", True),
        ("Wie warm wird das Wasser?", True),
        ("How many requests per minute does the API accept?", False),
    ],
)
def test_asks_temperature(question: str, asks: bool) -> None:
    assert asks_temperature(question) is asks


def test_invalid_iso_date_is_not_a_date() -> None:
    assert all(k != "date" for k, _, _ in found("id 2026-13-45"))


def test_counts_and_what_is_not_a_count() -> None:
    assert found("Default number of attempts is **10**, customers can go up to 50.") == [
        ("count", "10", 10.0), ("count", "50", 50.0)]
    assert found("| Business | 1,000 | 2,000 |") == [("count", "1,000", 1000.0), ("count", "2,000", 2000.0)]
    assert found("| Business | 1.000 |") == [("count", "1.000", 1000.0)]
    assert found("Abgerechnet wird in Schritten von 100.000 Nachrichten.") == [("count", "100.000", 100000.0)]
    assert found("| Team | 20 Millionen |") == [("count", "20 Millionen", 20_000_000.0)]
    assert found("in drei Verfügbarkeitszonen") == [("count", "drei", 3.0)]
    not_counts = (
        "Error E-4130 in Ferrolink 3.0 (see section 4.1), API v3 at /api/v3/queues/{id}, "
        "HTTP status 408, 429 or 503, UTF-8, HMAC-SHA256, `max_delivery_attempts: 25`, "
        "https://ops.ferrolink.example/v5, call +49 30 5550 1800 from 08:00 to 18:00, "
        "TLS 1.2 and version 1.2.3."
    )
    # The clock times are values of their own kind now; nothing else in it is a value.
    assert found(not_counts) == [("time", "08:00", 480.0), ("time", "18:00", 1080.0)]
    assert found("## 5. Leistungsgrenzen") == []
    assert found("1. Öffnen Sie das Dashboard") == []
    assert found("Invalidenstraße 117, 10115 Berlin") == [("count", "117", 117.0)]


def test_number_separators_follow_the_language() -> None:
    assert found("Die Grenze liegt bei 1,500 Sekunden und mehr.") == [("duration", "1,500 Sekunden", 1.5)]
    assert found("The limit is 1,500 seconds for all of the plans.") == [("duration", "1,500 seconds", 1500.0)]
    assert found("The value is 1.500 seconds for the plan.") == [("duration", "1.500 seconds", 1.5)]
    assert found("1,500 seconds", lang="de") == [("duration", "1,500 seconds", 1.5)]
    assert found("| 1.000 | 1,000 |") == [("count", "1.000", 1000.0), ("count", "1,000", 1000.0)]
    assert found("Preis 1.234,56 € und 1,234.56 EUR")[0][2] == "EUR 1234.56"


def test_specific_kinds_claim_their_digits() -> None:
    kinds = [k for k, _, _ in found("Ab 15. Januar 2026 gilt 99,95 % bei 1 MB für 49 € und 72 Stunden.")]
    assert kinds == ["date", "percent", "size", "money", "duration"]


def test_same_value() -> None:
    de = one("Wiederholung für 72 Stunden")
    en = one("retried for 72 hours")
    old = one("retried for 24 hours")
    assert same_value(de, en)
    assert not same_value(en, old)
    assert same_value(one("3 days"), one("72 hours"))
    assert same_value(one("99,95 %"), one("99.95 percent"))
    assert not same_value(one("99,95 %"), one("99.9%"))
    assert same_value(one("3,50 €"), one("EUR 3.50"))
    assert same_value(one("15. Januar 2026"), one("2026-01-15"))
    assert not same_value(one("72 hours"), one("72 attempts"))  # different kinds
    # Documentation uses "1 MB" for 1,048,576 bytes; accept both readings, not just any size.
    assert same_value(one("1 MB"), one("1,048,576 bytes"))
    assert same_value(one("1 MB"), one("1000000 bytes"))
    assert same_value(one("1 MiB"), one("1,048,576 bytes"))
    assert not same_value(one("1 MiB"), one("1000000 bytes"))
    assert not same_value(one("1 MB"), one("256 KB"))


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long are failed webhooks retried?", "duration"),
        ("For how long are messages kept?", "duration"),
        ("How many hours does the retry window last?", "duration"),
        ("After what time is an idempotency key forgotten?", "duration"),
        ("Wie lange werden Nachrichten aufbewahrt?", "duration"),
        ("Wie viele Stunden dauert das Wiederholungsfenster?", "duration"),
        ("Wie hoch ist die Aufbewahrungsdauer im Tarif Team?", "duration"),
        ("How large can a message be?", "size"),
        ("What is the maximum message size?", "size"),
        ("What is the size limit?", "size"),
        ("Wie groß darf eine Nachricht sein?", "size"),
        ("Welche Größe darf eine Nachricht haben?", "size"),
        ("What is the uptime commitment?", "percent"),
        ("What availability does Ferrolink promise?", "percent"),
        ("What percentage of the fee is credited?", "percent"),
        ("Wie hoch ist die Verfügbarkeit?", "percent"),
        ("Wie viel Prozent Gutschrift gibt es?", "percent"),
        ("How much does the Team plan cost?", "money"),
        ("What is the price per additional million messages?", "money"),
        ("Was kostet der Tarif Team?", "money"),
        ("Wie hoch ist die monatliche Gebühr?", "money"),
        ("When was Ferrolink 1.8 released?", "date"),
        ("What date does the contract take effect?", "date"),
        ("In which year did the theatre open?", "date"),
        ("Wann wurde Ferrolink 3.0 veröffentlicht?", "date"),
        ("An welchem Datum tritt der Vertrag in Kraft?", "date"),
        ("Seit wann gilt der Vertrag?", "date"),
        ("How many delivery attempts are made by default?", "count"),
        ("What number of messages fit into one batch?", "count"),
        ("Wie viele Zustellversuche gibt es?", "count"),
        ("Anzahl der Zustellversuche?", "count"),
        ("How many messages are included in the monthly fee?", "count"),
        ("Which header carries the signature?", None),
        ("What happens when the retry window ends?", None),
        ("Wer ist der Ansprechpartner?", None),
    ],
)
def test_expected_kind(question: str, kind: str | None) -> None:
    assert expected_kind(question) == kind


def test_demo_corpus_values_are_exact_and_typed() -> None:
    seen: dict[str, set[str]] = {}
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for span in split_sentences(text):
            for v in extract_values(span.text):
                assert span.text[v.start : v.end] == v.raw
                seen.setdefault(v.kind, set()).add(str(v.normalized))
    assert {"duration", "size", "percent", "money", "date", "count"} <= set(seen)
    assert {"259200.0", "86400.0", "43200.0"} <= seen["duration"]  # 72, 24 and 12 hours
    assert {"99.95", "99.9", "99.5"} <= seen["percent"]
    assert "EUR 3.50" in seen["money"]
    assert "2026-01-15" in seen["date"]


def test_a_model_name_before_a_number_is_no_size_in_bytes() -> None:
    sizes = [v.raw for v in extract_values("Tested on a Raspberry Pi 3 B; a 512 B block; 10 MB at most.") if v.kind == "size"]
    assert sizes == ["512 B", "10 MB"]


@pytest.mark.parametrize("text, raw, normalized", [
    ("Resturlaub kann bis zum 31. März genommen werden.", "31. März", "--03-31"),
    ("Submit expense reports by March 31.", "March 31", "--03-31"),
    ("The offer ends on the 1st of June.", "1st of June", "--06-01"),
    ("Stichtag ist der 30. Juni.", "30. Juni", "--06-30"),
    ("due on 31 March 2026", "31 March 2026", "2026-03-31"),  # with a year: a full date, as before
])
def test_a_day_of_a_month_without_a_year_is_a_date(text: str, raw: str, normalized: str) -> None:
    # "31. März" was read as the count 31, so "Bis wann …?" found no date and a conflict
    # report compared 30 with 31.
    dates = [v for v in extract_values(text) if v.kind == "date"]
    assert [(v.raw, v.normalized) for v in dates] == [(raw, normalized)]


@pytest.mark.parametrize("text, raw, minutes, zone", [
    ("Die Wartung beginnt um 02:00 Uhr.", "02:00 Uhr", 120, ""),
    ("Maintenance starts at 03:00 (CET).", "03:00 (CET)", 180, "CET"),
    ("Maintenance starts at 2:00 AM.", "2:00 AM", 120, ""),
    ("Orders received by 2 pm ship today.", "2 pm", 840, ""),
    ("Orders received by 2 p.m. ship today.", "2 p.m.", 840, ""),
    ("The window closes at 14:30.", "14:30", 870, ""),
    ("Annahmeschluss ist 14.30 Uhr.", "14.30 Uhr", 870, ""),
    ("Die Sicherung beginnt um 2 Uhr nachts.", "2 Uhr nachts", 120, ""),
    ("Der Bericht kommt um 8 Uhr abends.", "8 Uhr abends", 1200, ""),
    ("Der Export läuft um 06:00 Uhr MEZ.", "06:00 Uhr MEZ", 360, "CET"),
    ("The export runs at 06:00 UTC+2.", "06:00 UTC+2", 360, "UTC+02:00"),
    ("The export runs at 06:00 GMT.", "06:00 GMT", 360, "UTC"),
    ("Midnight is 12 am, noon 12 pm.", "12 am", 0, ""),
    ("Beginn um 14:00 h.", "14:00 h", 840, ""),  # "h" right after "um": a time, not 14 hours
])
def test_clock_times(text: str, raw: str, minutes: int, zone: str) -> None:
    times = [v for v in extract_values(text) if v.kind == "time"]
    assert times and (times[0].raw, times[0].normalized, times[0].unit) == (raw, float(minutes), zone), times


def test_what_is_not_a_clock_time() -> None:
    # A duration written H:MM, a version, a ratio, a scale, a score, the German "am".
    assert found("Die Wartung dauert höchstens 2:30 h.") == [("duration", "2:30 h", 9000.0)]
    assert found("An average call lasts 4:30 min.") == [("duration", "4:30 min", 270.0)]
    assert all(k != "time" for k, _, _ in found("Upgrade to version 3.0 before 10.30 is released."))
    assert all(k != "time" for k, _, _ in found("Agents keep a 3:1 ratio and a 16:9 screen."))
    assert found("Die Karte ist im Maßstab 1:25 gezeichnet.") == []
    assert found("The home team won 2:10 against the visitors.") == []
    assert found("Wir rufen 2 am Montag an.") == [("count", "2", 2.0)]


def test_ranges_share_their_uhr_and_zone() -> None:
    assert [(v.raw, v.normalized, v.unit) for v in extract_values("Support von 8 bis 18 Uhr.")] == [
        ("8", 480.0, ""), ("18 Uhr", 1080.0, "")]
    assert [(v.raw, v.unit) for v in extract_values("Wartung 08:00–17:00 MEZ.")] == [("08:00", "CET"), ("17:00 MEZ", "CET")]
    assert [(v.raw, v.unit) for v in extract_values("Maintenance from 02:00 to 04:00 UTC.")] == [
        ("02:00", "UTC"), ("04:00 UTC", "UTC")]


def test_clock_times_compare_as_instants_where_zones_allow() -> None:
    cet, utc_1, utc_2, local = (one(t) for t in ("at 02:00 CET", "at 01:00 UTC", "at 02:00 UTC", "um 02:00 Uhr"))
    assert same_value(cet, utc_1)  # the same instant
    assert not same_value(cet, utc_2) and comparable(cet, utc_2)  # an hour apart: a disagreement
    assert same_value(local, cet) and same_value(local, utc_2)  # no zone: read in the other's
    assert same_value(one("at 2:00 AM"), one("um 2 Uhr")) and not same_value(one("at 2 pm"), one("um 2 Uhr"))
    ambiguous = one("at 02:00 CST")  # US Central or China: no offset to compare with
    assert not comparable(ambiguous, utc_2) and not same_value(ambiguous, utc_2)
    assert comparable(ambiguous, one("at 03:00 CST")) and comparable(ambiguous, local)
