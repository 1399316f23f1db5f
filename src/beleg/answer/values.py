"""Typed values in text (durations, sizes, percentages, money, dates, counts).

Conflict detection compares the *same fact* across sources: "72 Stunden" in a German
contract and "72 hours" in an English reference agree, "24 hours" in an old support note
does not. So each value is normalised to a comparable form:

* duration → seconds (month = 30 days, year = 365 days: contracts use them as periods),
* size → bytes; KB/MB/GB/TB are read as decimal (10^3, 10^6, ...) and KiB/MiB/GiB/TiB as
  binary (2^10, ...), as SI and IEC define them. Documentation often means 1 MB =
  1,048,576 bytes, so :func:`same_value` also accepts the binary reading of KB/MB/GB/TB,
* percent → the number (99.95), money → ``"EUR 3.50"``, date → ISO ``"2026-01-15"``
  (``"2026-01"`` for month and year, ``"1870"`` for a bare year after a cue word),
* count → the number, for bare integers that are not labels (versions, error codes,
  paths, section numbers, phone numbers, times), and for the number words one..twelve
  and eins..zwölf; articles ("an hour", "einer Stunde") count as 1 only before a unit.

Numbers: German writes ``1.000,50`` and English ``1,000.50``. A separator followed by
exactly three digits is ambiguous ("1.000", "1,000"); it is read as a thousands
separator when the text looks German (for ".") or English (for ","), and also when the
language cannot be told (table rows): a three-decimal number is much rarer in product
text than a thousand. Everything else with one separator is a decimal ("99,95", "3.50").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Value", "expected_kind", "extract_values", "same_value", "when_markers"]


@dataclass(frozen=True, slots=True)
class Value:
    """One typed value; ``text[start:end] == raw``."""

    kind: str  # duration | size | percent | money | date | count
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
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    re.compile(r"(?<![\w/])/[\w.{}~-]+(?:/[\w.{}~-]*)*"),  # API and file paths
    re.compile(r"\+\d[\d \u00a0()/-]{5,}\d"),  # phone numbers
    re.compile(r"(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])"),  # clock times
    # heading and list numbering ("## 5. Limits", "1. Open"), but not "15. Januar 2026"
    re.compile(rf"^[ \t]*(?:#{{1,6}}[ \t]+\d+(?:\.\d+)*\.?|\d+(?:\.\d+)*[.)])(?=[ \t]+(?!{_MONTH}))",
               re.MULTILINE),
    # postcodes after a street number ("Invalidenstraße 117, 10115 Berlin")
    re.compile(r"(?:(?<=\d, )|(?<=\bD-))\d{5}(?= [A-ZÄÖÜ])"),
]
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
    blocked = [(m.start(), m.end()) for rx in _EXCLUDED for m in rx.finditer(text)]
    claimed: list[tuple[int, int]] = []
    out: list[Value] = []

    def add(kind: str, start: int, end: int, normalized: float | str, unit: str) -> None:
        if any(a < end and start < b for a, b in claimed) or any(a < end and start < b for a, b in blocked):
            return
        if start >= 2 and text[start - 1] == "-" and text[start - 2].isalpha():
            return  # identifier such as E-4130 or UTF-8
        claimed.append((start, end))
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
    for m in _MONEY.finditer(text):
        parsed = _parse_number(m.group("num1") or m.group("num2"), lang)
        if parsed is not None:
            sign = (m.group("pre") or m.group("post") or "").lower()
            cur = "USD" if "$" in sign or "usd" in sign or "dollar" in sign else "EUR"
            add("money", m.start(), m.end(), f"{cur} {parsed[0]:.2f}", cur)
    for m in _PERCENT.finditer(text):
        parsed = _parse_number(m.group("num"), lang)
        if parsed is not None:
            add("percent", m.start(), m.end(), parsed[0], "%")
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


def same_value(a: Value, b: Value) -> bool:
    """True if ``a`` and ``b`` state the same quantity (same kind, equal within 1e-9).

    Sizes in KB/MB/GB/TB also match their binary reading, because documentation uses
    "1 MB" for 1,048,576 bytes as often as for 1,000,000.
    """
    if a.kind != b.kind:
        return False
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
