"""Typed values in text (durations, sizes, percentages, money, dates, clock times, counts).

Conflict detection compares the *same fact* across sources: "72 Stunden" in a German
contract and "72 hours" in an English reference agree, "24 hours" in an old support note
does not. So each value is normalised to a comparable form:

* duration → seconds (month = 30 days, year = 365 days: contracts use them as periods),
* size → bytes; KB/MB/GB/TB are read as decimal (10^3, 10^6, ...) and KiB/MiB/GiB/TiB as
  binary (2^10, ...), as SI and IEC define them. Documentation often means 1 MB =
  1,048,576 bytes, so :func:`same_value` also accepts the binary reading of KB/MB/GB/TB,
* percent → the number (99.95), money → ``"EUR 3.50"``, date → ISO ``"2026-01-15"``
  (``"2026-01"`` for month and year, ``"1870"`` for a bare year after a cue word),
* time (of day) → minutes since midnight ("02:00 Uhr" = "2:00 AM" = "2 Uhr" = 120,
  "2 pm" = "14:00" = 840), with the time zone it names (``unit``: "CET", "UTC",
  "UTC+02:00"; "" for none; MEZ is CET, MESZ CEST, GMT UTC). Two times with zones of known
  offset are compared as instants ("02:00 CET" = "01:00 UTC"); a time without a zone is
  read in the zone the other names (a page that says "02:00 Uhr" and one that says
  "03:00 (CET)" disagree); two different zones of unknown offset are not compared at all
  (:func:`comparable`). A bare "H:MM" is a time unless a ratio or score word stands next
  to it ("im Verhältnis 1:10"); "H:MM" before an hour or minute unit is a duration
  ("2:30 h" = 2.5 hours, "4:30 min" = 270 seconds), except "h" right after "um"/"at"
  ("um 14:00 h" is a time);
* temperature → degrees Celsius ("62 °C", "−25 °C", "77 °F" = 25, "20 Grad Celsius"),
* count → the number, for bare integers that are not labels (versions, error codes,
  paths, section numbers, phone numbers, times), and for the number words one..twelve
  and eins..zwölf; articles ("an hour", "einer Stunde") count as 1 only before a unit.

Numbers: German writes ``1.000,50`` and English ``1,000.50``. A separator followed by
exactly three digits is ambiguous ("1.000", "1,000"); it is read as a thousands
separator when the text looks German (for ".") or English (for ","), and also when the
language cannot be told (table rows): a three-decimal number is much rarer in product
text than a thousand. Everything else with one separator is a decimal ("99,95", "3.50").

Signs: a minus ("-", "−" U+2212, or the "–" en dash typesetters use for it) directly before
a quantity's digits belongs to it ("-25 °C" is −25, not 25), unless a letter, digit or
closing bracket is glued to it on the left ("E-4012", "UTF-8") or the number before it
makes it a range ("10–20", "10 -20": the second end is 20).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate

from beleg.index.analyzer import STOPWORDS

__all__ = ["Value", "as_written", "asks_clock_time", "asks_temperature", "comparable", "expected_kind", "extract_values",
           "same_value", "when_markers"]


@dataclass(frozen=True, slots=True)
class Value:
    """One typed value; ``text[start:end] == raw``."""

    kind: str  # duration | size | percent | money | temperature | date | time | count
    raw: str
    normalized: float | str
    unit: str
    start: int
    end: int


_NUM = r"\d+(?:[.,]\d+)*"
_SP = r"[ \u00a0\u202f]"
_LEFT = r"(?<![\w.,/])"  # not glued to a word, decimal or path on the left
_NOT_LETTER = r"(?![^\W\d_])"

_WORD_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "eins": 1, "zwei": 2, "drei": 3,
    "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10,
    "elf": 11, "zwölf": 12,
}
# Articles count as "1" only directly before a time unit ("an hour", "einer Stunde").
_ARTICLES = {"an": 1, "ein": 1, "eine": 1, "einer": 1, "einem": 1, "einen": 1, "eines": 1}
_WORDS = "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True))
_ARTS = "|".join(sorted(_ARTICLES, key=len, reverse=True))

_DURATION_UNITS: list[tuple[str, str, float]] = [
    (r"milliseconds?|millisekunden?|ms", "ms", 0.001),
    (r"seconds?|secs?|sekunden?|sek\.?|s", "s", 1.0),
    (r"minutes?|minuten?|mins?", "min", 60.0),
    (r"hours?|hrs?|stunden?|std\.?|h", "h", 3600.0),
    (r"days?|tag(?:e|en|es)?", "d", 86400.0),
    (r"weeks?|wochen?", "wk", 604800.0),
    (r"months?|monat(?:e|en|s)?", "mo", 2592000.0),
    (r"years?|jahr(?:e|en|es)?", "yr", 31536000.0),
]
_SIZE_UNITS = {
    "B": 1, "byte": 1, "bytes": 1, "Byte": 1, "Bytes": 1, "KB": 10**3, "kB": 10**3,
    "KiB": 2**10, "MB": 10**6, "MiB": 2**20, "GB": 10**9, "GiB": 2**30, "TB": 10**12,
    "TiB": 2**40, "kilobytes": 10**3, "kilobyte": 10**3, "Kilobyte": 10**3,
    "megabytes": 10**6, "megabyte": 10**6, "Megabyte": 10**6, "gigabytes": 10**9,
    "gigabyte": 10**9, "Gigabyte": 10**9,
}
_DECIMAL_SIZE_UNITS = {"KB": 1, "MB": 2, "GB": 3, "TB": 4}
_MONTHS = {
    "january": 1, "januar": 1, "jänner": 1, "jan": 1, "february": 2, "februar": 2, "feb": 2,
    "march": 3, "märz": 3, "mar": 3, "mär": 3, "april": 4, "apr": 4, "may": 5, "mai": 5,
    "june": 6, "juni": 6, "jun": 6, "july": 7, "juli": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oktober": 10, "oct": 10, "okt": 10,
    "november": 11, "nov": 11, "december": 12, "dezember": 12, "dec": 12, "dez": 12,
}
# Month names are capitalised in English and German; matching only that form keeps the
# verb "may" and the like out.
_MONTH = "|".join(m.capitalize() for m in sorted(_MONTHS, key=len, reverse=True))

# The author's emphasis may close between a number and its unit ("Default **30** seconds").
_EMPH = r"(?:\*\*|__)?"
_DURATION = re.compile(
    rf"(?:{_LEFT}(?P<num>{_NUM}){_EMPH}(?P<sep>{_SP}|-)?|\b(?P<word>{_WORDS}|{_ARTS})(?:{_SP}|-))"
    rf"(?P<unit>{'|'.join(u for u, _, _ in _DURATION_UNITS)}){_NOT_LETTER}",
    re.IGNORECASE,
)
_DECADE = re.compile(r"(?:\b(?:the|den|der|die)\s+|['’])\d+s\Z|\b1\d{3}s\Z|\b20\d{2}s\Z", re.IGNORECASE)
_DURATION_UNIT_RES = [(re.compile(rf"(?:{p})\Z", re.IGNORECASE), u, f) for p, u, f in _DURATION_UNITS]
_SIZE = re.compile(
    rf"{_LEFT}(?P<num>{_NUM}){_EMPH}(?:{_SP}|-)?(?P<unit>{'|'.join(sorted(_SIZE_UNITS, key=len, reverse=True))})"
    rf"{_NOT_LETTER}"
)
# A capitalised word right before a number: "Pi 3 B" names a model, the "B" is no byte.
_MODEL_BEFORE = re.compile(r"\b[A-ZÄÖÜ][\w-]*[ \t]+\Z")
_PERCENT = re.compile(
    rf"{_LEFT}(?P<num>{_NUM})(?:{_SP}?%|{_SP}(?:percent|per{_SP}cent|prozent){_NOT_LETTER})",
    re.IGNORECASE,
)
# Kelvin is left out: "K" also means thousand ("10K requests"), and a kelvin figure is mostly a
# temperature difference ("5 K hysteresis"), not a temperature.
_TEMPERATURE = re.compile(
    rf"{_LEFT}(?P<num>{_NUM}){_EMPH}{_SP}?(?:(?P<celsius>°{_SP}?C|℃|(?:degrees?|Grad){_SP}+Celsius)|"
    rf"(?P<fahrenheit>°{_SP}?F|℉|(?:degrees?|Grad){_SP}+Fahrenheit)){_NOT_LETTER}",
    re.IGNORECASE,
)
_CURRENCY = r"€|\$|US\$|EUR|USD"
_MONEY = re.compile(
    rf"(?:(?<!\w)(?P<pre>{_CURRENCY}){_SP}?(?P<num1>\d+(?:[.,]\d+)*)(?![\d])|"
    rf"{_LEFT}(?P<num2>{_NUM}){_SP}?(?P<post>€|\$|EUR|USD|Euro|US-Dollar|dollars?){_NOT_LETTER})"
)
_DATE_ISO = re.compile(r"(?<![\w.-])(\d{4})-(\d{2})-(\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])")
_DATE_DMY = re.compile(
    rf"{_LEFT}(\d{{1,2}})(?:\.|st|nd|rd|th)?{_SP}(?:of{_SP})?({_MONTH})\.?,?{_SP}(\d{{4}})(?!\d)"
)
_DATE_MDY = re.compile(rf"\b({_MONTH})\.?{_SP}(\d{{1,2}})(?:st|nd|rd|th)?,?{_SP}(\d{{4}})(?!\d)")
_DATE_NUMERIC = re.compile(r"(?<![\w.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\w]|\.\d)")
_DATE_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?{_SP}(\d{{4}})(?!\d)")
# A day of a month without a year ("31. März", "31st of March", "March 31"): deadlines and
# yearly dates. Normalised as ISO 8601's yearless "--03-31".
_DATE_DAY_MONTH = re.compile(rf"{_LEFT}(\d{{1,2}})(?:\.|st|nd|rd|th)?{_SP}(?:of{_SP})?({_MONTH})\b")
_DATE_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?{_SP}(\d{{1,2}})(?:st|nd|rd|th)?(?![\d.,]?\d)")
_YEAR = re.compile(r"(?<![\w.,/-])(1\d{3}|20\d{2})(?![\w]|[.,]\d)")
_YEAR_CUE = re.compile(
    r"(?:\b(?:in|since|until|till|from|to|by|of|year|around|circa|before|after|between|during|"
    r"and|or|im|seit|bis|von|ab|jahre?s?|um|vor|nach|zwischen|anfang|ende|mitte|und|oder|"
    r"spring|summer|autumn|winter|frühjahr|sommer|herbst)\W{1,2}|\()$",
    re.IGNORECASE,
)
_YEAR_RANGE = re.compile(r"[–-]\d{2,4}\b(?![–-]\d)")
_MULTIPLIER = r"Millionen|Million|millions|million|Mio\.?|Milliarden|Mrd\.?|billion|thousand|Tausend"
_COUNT = re.compile(
    rf"(?:{_LEFT}(?P<num>{_NUM})(?![\w]|[.,]\d)|\b(?P<word>{_WORDS})\b)(?:{_SP}(?P<mult>{_MULTIPLIER}))?",
    re.IGNORECASE,
)
_MULTIPLIERS = {"million": 1e6, "millionen": 1e6, "millions": 1e6, "mio": 1e6, "milliarden": 1e9,
                "mrd": 1e9, "billion": 1e9, "thousand": 1e3, "tausend": 1e3}

# Spans that hold digits but no quantities.
_EXCLUDED = [
    re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL),  # inline code and fenced blocks
    re.compile(r"\b(?:https?|ftp)://\S+"),
    re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+"),  # from a run's start: linear on long runs
    re.compile(r"(?<![\w/])/[\w.{}~-]+(?:/[\w.{}~-]*)*"),  # API and file paths
    re.compile(r"\+\d[\d \u00a0()/-]{5,}\d"),  # phone numbers
    # heading and list numbering ("## 5. Limits", "1. Open"), but not "15. Januar 2026"
    re.compile(rf"^[ \t]*(?:#{{1,6}}[ \t]+\d+(?:\.\d+)*\.?|\d+(?:\.\d+)*[.)])(?=[ \t]+(?!{_MONTH}))",
               re.MULTILINE),
    # postcodes after a street number ("Invalidenstraße 117, 10115 Berlin")
    re.compile(r"(?:(?<=\d, )|(?<=\bD-))\d{5}(?= [A-ZÄÖÜ])"),
]
# "H:MM" spans: their digits are no counts whether or not they are read as a time or a
# duration ("1:10" in a ratio is neither).
_CLOCK_DIGITS = re.compile(r"(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])")

# Time zones by canonical name, with their offset from UTC in minutes (None: the name is
# ambiguous, "CST" is US Central and China Standard Time, so it only equals itself).
_ZONE_OFFSETS: dict[str, int | None] = {
    "UTC": 0, "CET": 60, "CEST": 120, "WET": 0, "WEST": 60, "EET": 120, "EEST": 180, "BST": 60,
    "EST": -300, "EDT": -240, "CST": None, "CDT": -300, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420,
}
_ZONE_ALIASES = {"GMT": "UTC", "MEZ": "CET", "MESZ": "CEST", "WEZ": "WET", "WESZ": "WEST", "OEZ": "EET",
                 "OESZ": "EEST"}
_ZONE = (r"(?:(?:UTC|GMT)(?:[ ]?[+\-\u2212][ ]?\d{1,2}(?::?\d\d)?)?|"
         + "|".join(sorted({*_ZONE_OFFSETS, *_ZONE_ALIASES} - {"UTC", "GMT"}, key=len, reverse=True)) + r")(?![\w+\-])")
_ZONE_SUFFIX = rf"(?:{_SP}*\({_SP}*(?P<zone1>{_ZONE}){_SP}*\)|{_SP}+(?P<zone2>{_ZONE}))?"
# German day parts after "Uhr": "8 Uhr abends" is 20:00, "2 Uhr nachts" stays 02:00.
_AFTERNOON = r"nachmittags|abends"
_DAY_PART = rf"(?:{_SP}+(?P<part>{_AFTERNOON}|morgens|früh|vormittags|nachts|mittags))?"
_TIME_24 = re.compile(
    rf"(?<![\w:.,])(?P<h>[01]?\d|2[0-4]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\w:]|[.,]\d)"
    rf"(?:{_SP}*(?P<uhr>Uhr|h){_NOT_LETTER})?{_DAY_PART}{_ZONE_SUFFIX}")
_TIME_UHR = re.compile(
    rf"(?<![\w:.,])(?P<h>[01]?\d|2[0-4])(?:\.(?P<m>[0-5]\d))?{_SP}*(?P<uhr>Uhr)\b{_DAY_PART}{_ZONE_SUFFIX}")
# "am" without dots is also the German "am Montag": then it must not be followed by a capital.
_TIME_12 = re.compile(
    rf"(?<![\w:.,])(?P<h>1[0-2]|0?[1-9])(?:[:.](?P<m>[0-5]\d))?{_SP}?(?P<ampm>[ap])(?:\.{_SP}?m\.|m\b)"
    rf"{_ZONE_SUFFIX}", re.IGNORECASE)
_CAPITAL_NEXT = re.compile(rf"{_SP}+[A-ZÄÖÜ]")
# The first end of a German range takes the "Uhr" of the second ("von 8 bis 18 Uhr", "8–18 Uhr").
_RANGE_START = re.compile(
    rf"(?<![\w:.,])(?P<h>[01]?\d|2[0-4])(?:[.:](?P<m>[0-5]\d))?(?={_SP}*(?:[\u2013\u2014-]|bis|und){_SP}*"
    rf"(?:[01]?\d|2[0-4])(?:[.:][0-5]\d)?{_SP}*Uhr\b)")
# Two ends of a range share the zone named after the second: "02:00–04:00 UTC".
_RANGE_JOIN = re.compile(rf"{_SP}*(?:[\u2013\u2014-]|to|until|till|through|bis|and|und){_SP}*", re.IGNORECASE)
# "H:MM" before a unit is a duration ("2:30 h", "4:30 min"), unless a time preposition comes
# right before an "h" ("um 14:00 h").
_COLON_DURATION = re.compile(
    rf"(?<![\w:.,])(?P<a>\d{{1,3}}):(?P<b>[0-5]\d){_SP}?(?P<unit>hours?|hrs?|Stunden?|Std\.?|h|minutes?|mins?|"
    rf"Minuten?|min){_NOT_LETTER}", re.IGNORECASE)
_TIME_PREPOSITION = re.compile(r"\b(?:um|at|gegen|ab)\s*\Z", re.IGNORECASE)
# "im Verhältnis 1:10", "a 16:9 screen" (one-digit minutes never match), "won 2:10": no time.
_RATIO_WORDS = (r"ratio|verhältnis|seitenverhältnis|scale|maßstab|massstab|score|ergebnis|endstand|"
                r"spielstand|won|lost|beat|gewann|gewinnt|verlor|verliert|siegte|odds|quote")
_RATIO_BEFORE = re.compile(rf"\b(?:{_RATIO_WORDS})\W+(?:\w+\W+)?\Z", re.IGNORECASE)
#: How far before a value the words that change its reading ("um", "ratio … ") are looked for:
#: searching from the text's start for each value was quadratic in the number of values.
_LOOK_BACK = 80
_RATIO_AFTER = re.compile(rf"\A\W*(?:{_RATIO_WORDS})\b", re.IGNORECASE)

# A number right after one of these is a label, not a quantity ("HTTP 429", "Abschnitt 11").
_LABEL_BEFORE = re.compile(
    r"(?:\b(?:HTTP(?:-Status)?|status(?:code)?|status\s+code|error|fehler|code|port|version|"
    r"fassung|v|section|abschnitt|kapitel|chapter|schweregrad|severity|sev|stufe|level|step|"
    r"schritt|phase|page|seite|s\.|nr\.|no\.|art\.|abs\.|ferrolink|tls)|§|#)"
    r"\s*(?:\d+\s*(?:,|or|and|oder|und|/)\s*)*$",
    re.IGNORECASE,
)
_DE_HINTS = re.compile(
    r"\b(?:der|die|das|und|ist|nicht|mit|für|von|den|dem|des|ein|eine|zu|auf|wird|werden|"
    r"sind|bei|nach|oder|auch|sich|wenn|im|am|bis|je|innerhalb|beträgt|höchstens|"
    r"mindestens|Sekunden|Stunden|Tage|Tagen|Minuten|Wochen|Prozent|Nachrichten|Anfragen)\b|[äöüß]",
    re.IGNORECASE,
)
_EN_HINTS = re.compile(
    r"\b(?:the|and|is|are|not|with|for|of|to|in|on|be|will|or|if|at|by|per|within|this|that|"
    r"seconds|hours|days|minutes|weeks|percent|messages|requests|up)\b",
    re.IGNORECASE,
)


def extract_values(text: str, *, lang: str | None = None) -> list[Value]:
    """All typed values in ``text``, in order of position, without overlaps.

    ``lang`` ("en"/"de") decides ambiguous separators; by default it is guessed from
    the text itself. More specific kinds are matched first (dates, money, percent, size,
    duration, years) and claim their characters, so "24 hours" is never also a count.
    """
    lang = lang or _guess_language(text)
    blocked = _Spans((m.start(), m.end()) for rx in _EXCLUDED for m in rx.finditer(text))
    clock_digits = _Spans((m.start(), m.end()) for m in _CLOCK_DIGITS.finditer(text))
    claimed = _Spans(())
    out: list[Value] = []

    def add(kind: str, start: int, end: int, normalized: float | str, unit: str, *, colon: bool = False) -> None:
        """``colon``: the value is read from an "H:MM" span, which other kinds may not take."""
        if start >= 2 and text[start - 1] == "-" and text[start - 2].isalpha():
            return  # identifier such as E-4130 or UTF-8
        # A date's or time's dash is a separator; money places its sign itself (its amount is text).
        if isinstance(normalized, float) and kind not in ("date", "time") and _minus_before(text, start):
            start, normalized = start - 1, -normalized
        if claimed.overlaps(start, end) or blocked.overlaps(start, end) or (
                not colon and clock_digits.overlaps(start, end)):
            return
        claimed.add(start, end)
        out.append(Value(kind, text[start:end], normalized, unit, start, end))

    for rx, order in ((_DATE_ISO, "ymd"), (_DATE_DMY, "dmy"), (_DATE_MDY, "mdy"), (_DATE_NUMERIC, "dmy")):
        for m in rx.finditer(text):
            iso = _iso_date(m, order)
            if iso is not None:
                add("date", m.start(), m.end(), iso, "day")
    for m in _DATE_MONTH_YEAR.finditer(text):
        add("date", m.start(), m.end(), f"{int(m.group(2)):04d}-{_MONTHS[m.group(1).lower()]:02d}", "month")
    for rx, day_first in ((_DATE_DAY_MONTH, True), (_DATE_MONTH_DAY, False)):
        for m in rx.finditer(text):
            day, month = (m.group(1), m.group(2)) if day_first else (m.group(2), m.group(1))
            if 1 <= int(day) <= 31:
                add("date", m.start(), m.end(), f"--{_MONTHS[month.lower()]:02d}-{int(day):02d}", "day of year")
    for m in _COLON_DURATION.finditer(text):
        unit = m.group("unit").lower()
        if unit == "h" and _TIME_PREPOSITION.search(text, max(0, m.start() - _LOOK_BACK), m.start()):
            continue  # "um 14:00 h" is a time of day
        a, b = int(m.group("a")), int(m.group("b"))
        hours = unit.startswith(("h", "s"))  # h, hours, hrs, Stunden, Std.
        add("duration", m.start(), m.end(), float(a * 3600 + b * 60 if hours else a * 60 + b),
            "h" if hours else "min", colon=True)
    _add_times(text, lang, add)
    for m in _MONEY.finditer(text):
        parsed = _parse_number(m.group("num1") or m.group("num2"), lang)
        if parsed is not None:
            sign = (m.group("pre") or m.group("post") or "").lower()
            cur = "USD" if "$" in sign or "usd" in sign or "dollar" in sign else "EUR"
            start, money = m.start(), parsed[0]
            if _minus_before(text, start):
                start, money = start - 1, -money  # "-€5", "−3,50 €"
            add("money", start, m.end(), f"{cur} {money:.2f}", cur)
    for m in _PERCENT.finditer(text):
        parsed = _parse_number(m.group("num"), lang)
        if parsed is not None:
            add("percent", m.start(), m.end(), parsed[0], "%")
    for m in _TEMPERATURE.finditer(text):
        parsed = _parse_number(m.group("num"), lang)
        if parsed is not None:
            celsius = parsed[0] if m.group("celsius") else (parsed[0] - 32) * 5 / 9
            add("temperature", m.start(), m.end(), celsius, "°C" if m.group("celsius") else "°F")
    for m in _SIZE.finditer(text):
        parsed = _parse_number(m.group("num"), lang)
        unit = m.group("unit")
        if unit == "B" and _MODEL_BEFORE.search(text, 0, m.start("num")):
            continue  # "Raspberry Pi 3 B" is a model, not three bytes
        if parsed is not None:
            canonical = "KB" if unit == "kB" else unit
            if len(unit) > 3:  # words: byte(s), Kilobyte, megabytes, ...
                canonical = {1: "B", 10**3: "KB", 10**6: "MB", 10**9: "GB"}[_SIZE_UNITS[unit]]
            add("size", m.start(), m.end(), parsed[0] * _SIZE_UNITS[unit], canonical)
    for m in _DURATION.finditer(text):
        amount = _amount(m.group("num"), m.group("word"), lang)
        unit_info = _duration_unit(m.group("unit"))
        if amount is None or unit_info is None:
            continue
        if m.group("word") and m.group("word").lower() == "an" and unit_info[0] != "h":
            continue  # "an" is only a number before "hour"
        if unit_info[0] == "s" and m.group("num") and not m.group("sep") and _DECADE.search(
                text, max(0, m.start() - 5), m.end()):
            continue  # "the 1970s", "in den 80s" are decades, not seconds
        add("duration", m.start(), m.end(), amount * unit_info[1], unit_info[0])
    for m in _YEAR.finditer(text):
        before = text[max(0, m.start() - 16) : m.start()]
        if _YEAR_CUE.search(before) or _YEAR_RANGE.match(text, m.end()):
            add("date", m.start(), m.end(), m.group(1), "year")
    for m in _COUNT.finditer(text):
        if m.group("num") and _LABEL_BEFORE.search(text[max(0, m.start() - 40) : m.start()]):
            continue
        amount = _amount(m.group("num"), m.group("word"), lang, integer=True)
        if amount is None:
            continue
        mult = m.group("mult")
        if mult:
            amount *= _MULTIPLIERS[mult.lower().rstrip(".")]
        add("count", m.start(), m.end(), amount, "")
    out.sort(key=lambda v: v.start)
    return _share_range_zones(text, out)


#: Minus signs: ASCII, U+2212, and the en dash that typesetting puts in their place ("–25 °C").
_MINUS_SIGNS = "-\u2212\u2013"


def _minus_before(text: str, start: int) -> bool:
    """Whether a minus sign right before ``start`` is the sign of the number there.

    Not when a letter, digit or closing mark is glued to the sign on the left ("E-4012",
    "HC-12", "5%-10%", "(a)-3"), nor when a number comes before it on the same line: then the dash
    joins a range ("10–20", "10 -20", "**10**–20")."""
    if start < 1 or text[start - 1] not in _MINUS_SIGNS:
        return False
    if start >= 2 and (text[start - 2].isalnum() or text[start - 2] in "_.,)]}/°%" + _MINUS_SIGNS):
        return False
    before = text[max(0, start - 1 - _LOOK_BACK): start - 1].rstrip(" \t\u00a0\u202f*_")
    return not before[-1:].isdigit()


class _Spans:
    """Character spans with an overlap test in O(log n) (a list scanned per value was quadratic
    in the number of values of a text)."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [a for a, _ in ordered]
        self._reach = list(accumulate((b for _, b in ordered), max))  # furthest end so far

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_left(self._starts, end)  # spans starting before ``end``
        return i > 0 and self._reach[i - 1] > start

    def add(self, start: int, end: int) -> None:
        """Add a span that overlaps none of these (so the furthest end before it stays below it)."""
        i = bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._reach.insert(i, end)


def _add_times(text: str, lang: str | None, add: Callable[..., None]) -> None:
    """Clock times: "2:00 AM", "2 pm", "14:30", "14.30 Uhr", "2 Uhr nachts", with a zone after them
    (12-hour forms first, so "2:00 AM" is not read as "2:00")."""
    for m in _TIME_12.finditer(text):
        if lang != "en" and m.group(0).rstrip().endswith("am") and not _zone(m) and _CAPITAL_NEXT.match(text, m.end()):
            continue  # the German "2 am Montag"
        hour = int(m.group("h")) % 12 + (12 if m.group("ampm").lower() == "p" else 0)
        add("time", m.start(), m.end(), float(hour * 60 + int(m.group("m") or 0)), _zone(m), colon=True)
    for m in _TIME_24.finditer(text):
        hour, minute = int(m.group("h")), int(m.group("m")) + int(m.group("s") or 0) / 60
        if hour == 24 and minute:
            continue
        if not m.group("uhr") and not _zone(m) and (
                _RATIO_BEFORE.search(text, max(0, m.start() - _LOOK_BACK), m.start())
                or _RATIO_AFTER.match(text, m.end())):
            continue  # "im Verhältnis 1:10", "won 2:10"
        add("time", m.start(), m.end(), float(_day_part(hour, m.group("part")) * 60 + minute), _zone(m), colon=True)
    for m in _TIME_UHR.finditer(text):
        hour, minute = int(m.group("h")), int(m.group("m") or 0)
        if hour == 24 and minute:
            continue
        add("time", m.start(), m.end(), float(_day_part(hour, m.group("part")) * 60 + minute), _zone(m))
    for m in _RANGE_START.finditer(text):
        add("time", m.start(), m.end(), float(int(m.group("h")) * 60 + int(m.group("m") or 0)), "", colon=True)


def _zone(m: re.Match[str]) -> str:
    """The canonical name of the zone a time match names, "" for none."""
    raw = m.group("zone1") or m.group("zone2")
    if not raw:
        return ""
    raw = raw.replace(" ", "").replace("\u2212", "-").upper()
    offset = re.fullmatch(r"(?:UTC|GMT)([+-])(\d{1,2}):?(\d\d)?", raw)
    if offset:
        return f"UTC{offset.group(1)}{int(offset.group(2)):02d}:{offset.group(3) or '00'}"
    return _ZONE_ALIASES.get(raw, raw)


def _day_part(hour: int, part: str | None) -> int:
    """"8 Uhr abends" is 20 o'clock."""
    return hour + 12 if part and re.fullmatch(_AFTERNOON, part, re.IGNORECASE) and 1 <= hour < 12 else hour


def _share_range_zones(text: str, values: list[Value]) -> list[Value]:
    """The first end of a range takes the zone named after the second ("02:00–04:00 UTC")."""
    out = list(values)
    for i in range(len(out) - 2, -1, -1):
        first, second = out[i], out[i + 1]
        if first.kind == second.kind == "time" and not first.unit and second.unit and \
                _RANGE_JOIN.fullmatch(text, first.end, second.start):
            out[i] = Value("time", first.raw, first.normalized, second.unit, first.start, first.end)
    return out


# A "when" question is also answered by a time of day or a day of the week ("every Sunday
# from 02:00 to 04:00"). These are not values :func:`extract_values` returns: a clock time
# or weekday is rarely the fact two sources disagree on, and conflicts compare those values.
_CLOCK = re.compile(r"(?<![\w:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\w:])|"
                    r"(?<![\w.,])(?:1[0-2]|0?[1-9])(?:[:.][0-5]\d)?\s?[ap]\.?m\.?(?!\w)|"
                    r"(?<![\w.,:])(?:[01]?\d|2[0-3])(?:[.:][0-5]\d)?\s+Uhr\b|\b(?:noon|midnight|Mitternacht)\b",
                    re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(?:weekdays?|weekends?|business\s+days?)\b|"
                      r"\b(?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonnabend|sonntag)s?\b|"
                      r"\b(?:werktags?|werktagen|wochenendes?|wochentags?|wochentagen)\b", re.IGNORECASE)


# ... and by a bare year or decade ("in 1886", "the 1990s", "in den 90er Jahren"), which
# extract_values reads as a date only after a cue word.
_BARE_YEAR = re.compile(r"(?<![\w.,/:-])(?:1[0-9]\d\d|20\d\d)(?:s|er)?(?![\w.,/:-]|[.,]\d)|"
                        r"(?<![\w.,/:-])\d0(?:s|er)\b", re.IGNORECASE)


def when_markers(text: str) -> list[str]:
    """What answers "when" besides a date value: clock times, days of the week, bare years
    and decades ("02:00", "9 am", "14 Uhr", "Sonntag", "1886", "90er")."""
    found = [(m.start(), m.group(0)) for rx in (_CLOCK, _WEEKDAY, _BARE_YEAR) for m in rx.finditer(text)]
    return [raw for _, raw in sorted(found)]


# What a count counts, as written after it: a word and perhaps its rate ("30 requests per
# minute", "**120** requests/min", "5 Anfragen pro Sekunde"). Function words are no nouns
# ("30 are allowed", "10 bis 20").
_COUNTED = re.compile(rf"(?:\*\*|__)?{_SP}+(?P<noun>[^\W\d_][\w-]*)"
                      rf"(?P<rate>(?:{_SP}+(?:per|pro|je){_SP}+|{_SP}?/{_SP}?)[^\W\d_][\w-]*)?")
_FUNCTION_WORDS = STOPWORDS["en"] | STOPWORDS["de"]


def as_written(text: str, value: Value) -> str:
    """``value`` as a reader should see it quoted from ``text`` (the text it was extracted from):
    its sign and unit, without emphasis markup, and for a bare count what it counts
    ("-25 °C", "120 requests per minute"). A count with no noun after it stays a number."""
    shown = value.raw
    m = _COUNTED.match(text, value.end) if value.kind == "count" else None
    if m and m.group("noun").casefold() not in _FUNCTION_WORDS:
        shown = text[value.start: m.end()]
    return " ".join(shown.replace("**", "").replace("__", "").split())


def comparable(a: Value, b: Value) -> bool:
    """Whether ``a`` and ``b`` can be compared at all: the same kind, and for clock times no
    two different zones of which one has no known offset ("02:00 CST" and "02:00 UTC" may
    or may not be the same instant; neither equal nor a disagreement can be told)."""
    return a.kind == b.kind and (a.kind != "time" or _time_pair(a, b) is not None)


def _time_pair(a: Value, b: Value) -> tuple[float, float] | None:
    """Two times as comparable minutes: as UTC instants when both zones have known offsets,
    as clock readings when they name the same zone or at most one names one; else None."""
    x, y = float(a.normalized), float(b.normalized)
    if not a.unit or not b.unit or a.unit == b.unit:
        return x, y
    off_a, off_b = _zone_offset(a.unit), _zone_offset(b.unit)
    if off_a is None or off_b is None:
        return None
    return (x - off_a) % 1440, (y - off_b) % 1440


def _zone_offset(zone: str) -> int | None:
    m = re.fullmatch(r"UTC([+-])(\d\d):(\d\d)", zone)
    if m:
        return (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 60 + int(m.group(3)))
    return _ZONE_OFFSETS.get(zone)


def same_value(a: Value, b: Value) -> bool:
    """True if ``a`` and ``b`` state the same quantity (same kind, equal within 1e-9).

    Sizes in KB/MB/GB/TB also match their binary reading, because documentation uses
    "1 MB" for 1,048,576 bytes as often as for 1,000,000. Clock times are compared as
    :func:`comparable` says; times that cannot be compared are not the same.
    """
    if a.kind != b.kind:
        return False
    if a.kind == "time":
        pair = _time_pair(a, b)
        return pair is not None and _close(*pair)
    if isinstance(a.normalized, str) or isinstance(b.normalized, str):
        return a.normalized == b.normalized
    if a.kind == "size":
        return any(_close(x, y) for x in _size_readings(a) for y in _size_readings(b))
    return _close(a.normalized, b.normalized)


_QUESTION_FORMS: list[tuple[str, re.Pattern[str]]] = [
    ("duration", re.compile(
        r"\bhow\s+long\b|\bhow\s+(?:many|much)\s+(?:more\s+)?(?:seconds|minutes|hours|days|weeks|months|"
        r"years|time)\b|\bafter\s+(?:what|how\s+much)\s+time\b|\bafter\s+how\s+long\b|\bhow\s+soon\b|"
        r"\bwie\s+lange?\b|\bwie\s+viele?\s+(?:Sekunden|Minuten|Stunden|Tage|Wochen|Monate|Jahre)\b|"
        r"\bwie\s+viel\s+Zeit\b|\bnach\s+(?:welcher|wie\s+viel)\s+Zeit\b|\bnach\s+wie\s+vielen\s+"
        r"(?:Sekunden|Minuten|Stunden|Tagen|Wochen|Monaten|Jahren)\b|dauer\b|\bduration\b",
        re.IGNORECASE)),
    ("percent", re.compile(
        r"\bwhat\s+percent(?:age)?\b|\bhow\s+many\s+percent\b|\bwie\s+viel(?:e)?\s+Prozent\b|"
        r"\bpercentage\b|Prozentsatz", re.IGNORECASE)),
    ("money", re.compile(
        r"\bhow\s+much\b.*\b(?:cost|costs|charge[sd]?|pay|paid|billed|fee|price)\b|"
        r"\bwhat\s+does\b.*\bcost\b|\bwie\s+viel\b.*\b(?:kostet|kosten|zahlen|bezahlen|berechnet)\b|"
        r"\bkostet\b", re.IGNORECASE)),
    ("size", re.compile(
        r"\bhow\s+(?:large|big)\b|\bhow\s+many\s+(?:bytes|kilobytes|megabytes|gigabytes|KB|MB|GB)\b|"
        r"\bwie\s+gro(?:ß|ss)\b|\bwie\s+viele?\s+(?:Bytes?|Kilobyte|Megabyte|Gigabyte|KB|MB|GB)\b|"
        # an amount of memory or storage is a size ("6 GiB"), not a count
        r"\bhow\s+much\s+(?:memory|ram|disk|disk\s+space|storage|space|swap)\b|"
        r"\bwie\s+viel\s+(?:Arbeitsspeicher|Speicher|RAM|Festplatte\w*|Plattenplatz|Speicherplatz|Swap)\b",
        re.IGNORECASE)),
    ("count", re.compile(
        r"\bhow\s+many\b|\bhow\s+often\b|\bnumber\s+of\b|\bat\s+what\s+rate\b|\bwie\s+viele\b|\bwie\s+oft\b|"
        r"\bmit\s+welcher\s+(?:Rate|Geschwindigkeit)\b|\bAnzahl\b|"
        r"\bHöchstzahl\b|\bZahl\s+der\b", re.IGNORECASE)),
    ("date", re.compile(
        r"^\W*(?:and\s+|so\s+)?when\b|\b(?:since|until)\s+when\b|\b(?:what|which)\s+(?:date|day|year|month)\b|"
        r"\bin\s+(?:which|what)\s+year\b|\brelease\s+date\b|\bwann\b|\ban\s+welchem\s+(?:Datum|Tag)\b|"
        r"\bin\s+welchem\s+(?:Jahr|Monat)\b|\bwelche[sm]?\s+(?:Datum|Jahr)\b|\bStichtag\b",
        re.IGNORECASE)),
]
# Topic words, weaker than question forms: "How many messages are in the fee?" counts.
# They are skipped for questions about behaviour ("What happens when ...", "Warum ...").
_TOPIC_WORDS: list[tuple[str, re.Pattern[str]]] = [
    ("percent", re.compile(r"\buptime\b|\bavailability\b|\bSLA\b|verfügbarkeit|\bpercent\b|\bProzent\b",
                           re.IGNORECASE)),
    ("money", re.compile(r"\bprices?\b|\bfees?\b|\bcosts?\b|\bpreis|gebühr|\bkosten\b|\bentgelt", re.IGNORECASE)),
    ("size", re.compile(r"\bsize\b|gr(?:ö|oe)(?:ß|ss)e\b", re.IGNORECASE)),
    ("duration", re.compile(r"\btimeout\b|\bretention\s+period\b|\bretry\s+window\b|wiederholungsfenster|"
                            r"\bfrist\b|\bzeitraum\b", re.IGNORECASE)),
]

# Questions for a time of day. Not one of expected_kind's forms: the answer-type check
# (support.asked_kind) reads those and has no test for this kind; a "when" question
# (expected_kind "date") is answered by a time as well (when_markers).
_CLOCK_QUESTION = re.compile(
    r"\b(?:(?:at|by|until|till|from)\s+what\s+time|what\s+time\b|time\s+of\s+(?:the\s+)?day|"
    r"(?:um|ab|bis|gegen)\s+wie\s*viel\s+Uhr|(?:um|zu|ab|bis)\s+welche[rm]?\s+Uhrzeit|welche\s+Uhrzeit|Uhrzeit)",
    re.IGNORECASE)


def asks_clock_time(question: str) -> bool:
    """"At what time …", "Um wie viel Uhr …", "Zu welcher Uhrzeit …": a time of day is asked for."""
    return _CLOCK_QUESTION.search(question) is not None


# Questions for a temperature, kept apart from expected_kind's forms as clock times are:
# support.asked_kind asks this test after them, and conflicts.py to compare temperatures only.
# Compounds count ("Vorlauftemperatur").
_TEMPERATURE_QUESTION = re.compile(
    r"temperature|temperatur|\bhow\s+(?:hot|cold|warm)\b|\bwie\s+(?:heiß|heiss|kalt|warm)\b|"
    r"\bhow\s+many\s+degrees\b|\bwie\s+viel\s+Grad\b",
    re.IGNORECASE)


def asks_temperature(question: str) -> bool:
    """"What is the maximum flow temperature …", "Wie warm …": a temperature is asked for."""
    return _TEMPERATURE_QUESTION.search(question) is not None


_BEHAVIOUR_QUESTION = re.compile(
    r"^\W*(?:why|how\s+(?:do|does|can|could|should|to)|what\s+happens|what\s+if|is\s+it|can\s+i|"
    r"warum|weshalb|wieso|wozu|wie\s+(?:kann|funktioniert|richte|gehe|verhindere)|was\s+passiert|"
    r"was\s+geschieht|kann\s+ich)\b",
    re.IGNORECASE,
)


def expected_kind(question: str) -> str | None:
    """The kind of value a question asks for, or None if it asks for no typed value.

    Patterns are tried in order: explicit question forms first (duration before count,
    so "how many hours" is a duration), then topic words such as "uptime" or "Gebühr".
    """
    for kind, rx in _QUESTION_FORMS:
        if rx.search(question):
            return kind
    if _BEHAVIOUR_QUESTION.search(question):
        return None
    for kind, rx in _TOPIC_WORDS:
        if rx.search(question):
            return kind
    return None


# --- helpers ---------------------------------------------------------------------------


def _guess_language(text: str) -> str | None:
    de = len(_DE_HINTS.findall(text))
    en = len(_EN_HINTS.findall(text))
    if de == en:
        return None
    return "de" if de > en else "en"


def _parse_number(raw: str, lang: str | None) -> tuple[float, bool] | None:
    """``(value, is_integer_form)``, or None for version-like strings such as 1.2.3."""
    seps = [c for c in raw if c in ".,"]
    if not seps:
        return float(raw), True
    groups = re.split(r"[.,]", raw)
    if len(seps) > 1:
        if len(set(seps)) == 1:
            if all(len(g) == 3 for g in groups[1:]) and 1 <= len(groups[0]) <= 3:
                return float("".join(groups)), True
            return None
        dec = seps[-1]
        if any(s == dec for s in seps[:-1]) or not all(len(g) == 3 for g in groups[1:-1]):
            return None
        return float("".join(groups[:-1]) + "." + groups[-1]), False
    head, tail = groups
    thousands = len(tail) == 3 and 1 <= len(head) <= 3 and not head.startswith("0")
    if thousands and (lang is None or (lang == "en") == (seps[0] == ",")):
        return float(head + tail), True
    return float(head + "." + tail), False


def _amount(num: str | None, word: str | None, lang: str | None, integer: bool = False) -> float | None:
    if num is not None:
        parsed = _parse_number(num, lang)
        if parsed is None or (integer and not parsed[1]):
            return None
        return parsed[0]
    if word is None:
        return None
    low = word.lower()
    return float(_WORD_NUMBERS.get(low) or _ARTICLES.get(low) or 0) or None


def _duration_unit(unit: str) -> tuple[str, float] | None:
    for rx, name, factor in _DURATION_UNIT_RES:
        if rx.match(unit):
            return name, factor
    return None


def _iso_date(m: re.Match[str], order: str) -> str | None:
    a, b, c = m.group(1), m.group(2), m.group(3)
    if order == "ymd":
        y, mo, d = int(a), int(b), int(c)
    elif order == "dmy":
        d, y = int(a), int(c)
        mo = int(b) if b.isdigit() else _MONTHS[b.lower()]
    else:
        mo, d, y = _MONTHS[a.lower()], int(b), int(c)
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return f"{y:04d}-{mo:02d}-{d:02d}"


def _size_readings(v: Value) -> list[float]:
    n = float(v.normalized)
    power = _DECIMAL_SIZE_UNITS.get(v.unit)
    return [n] if power is None else [n, n / 1000**power * 1024**power]


def _close(x: float | str, y: float | str) -> bool:
    return isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=1e-9)
