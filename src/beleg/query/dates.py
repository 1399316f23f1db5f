"""Date ranges named in a question: "since 2025", "before March 2024", "seit 2025", "vor 2024".

Only explicit range words count (since/after/from, before/until, between, and their German
twins seit/nach/ab, vor/bis, zwischen), each followed by a year or a month and a year;
relative ranges ("last year", "letztes Jahr", "in the last 6 months") are resolved against
``today``. A bare year ("the 2014 World Cup", "in 2024") is not a range: it may name an
event, and the question did not say "since" or "before".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_MONTHS = {
    "january": 1, "jan": 1, "januar": 1, "jänner": 1, "february": 2, "feb": 2, "februar": 2, "march": 3, "mar": 3,
    "märz": 3, "maerz": 3, "april": 4, "apr": 4, "may": 5, "mai": 5, "june": 6, "jun": 6, "juni": 6, "july": 7,
    "jul": 7, "juli": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10,
    "oktober": 10, "okt": 10, "november": 11, "nov": 11, "december": 12, "dec": 12, "dezember": 12, "dez": 12,
}
_MONTH = "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True))
# A period: "2025", "March 2024", "März 2024", "2024-03".
_PERIOD = rf"(?:(?P<{{p}}m>{_MONTH})\.?\s+(?P<{{p}}y>(?:19|20)\d\d)|(?P<{{p}}iy>(?:19|20)\d\d)-(?P<{{p}}im>0[1-9]|1[0-2])|(?P<{{p}}by>(?:19|20)\d\d))\b"


def _period(prefix: str) -> str:
    return _PERIOD.replace("{p}", prefix)


_FROM_WORDS = r"since|after|from|starting|seit|nach|ab"
_UNTIL_WORDS = r"before|prior\s+to|until|till|up\s+to|vor|bis(?:\s+zum|\s+zur|\s+ende)?"
_BETWEEN = re.compile(rf"\b(?:between|zwischen)\s+{_period('a')}\s+(?:and|und)\s+{_period('b')}", re.IGNORECASE)
_FROM = re.compile(rf"\b(?P<w>{_FROM_WORDS})\s+(?:(?:the\s+)?(?:year|jahr)\s+)?{_period('a')}", re.IGNORECASE)
_UNTIL = re.compile(rf"\b(?P<w>{_UNTIL_WORDS})\s+(?:(?:the\s+)?(?:year|jahr)\s+)?{_period('a')}", re.IGNORECASE)
_LAST_YEAR = re.compile(r"\b(?:last|previous|past)\s+year\b|\b(?:letzte[snm]?|vorige[snm]?|vergangene[snm]?)\s+jahr(?:es)?\b",
                        re.IGNORECASE)
_THIS_YEAR = re.compile(r"\bthis\s+year\b|\b(?:dieses|diesem|in\s+diesem)\s+jahr\b", re.IGNORECASE)
_LAST_N = re.compile(r"\b(?:(?:in\s+)?the\s+)?(?:last|past)\s+(?P<n>\d{1,3})\s+(?P<unit>days?|weeks?|months?|years?)\b|"
                     r"\b(?:in\s+den\s+)?letzten\s+(?P<gn>\d{1,3})\s+(?P<gunit>tage?n?|wochen|monate?n?|jahre?n?)\b",
                     re.IGNORECASE)
# "vor 3 Tagen" / "nach 5 Minuten" are durations, not dates: the period needs a year.


@dataclass(frozen=True, slots=True)
class DateRange:
    """``start <= date < end`` (either bound may be open), and the words that named it."""

    start: dt.date | None
    end: dt.date | None
    words: str


def _bounds(m: re.Match[str], prefix: str) -> tuple[dt.date, dt.date]:
    """The first day of the named period and the first day after it."""
    g = m.groupdict()
    if g.get(f"{prefix}m"):
        year, month = int(g[f"{prefix}y"]), _MONTHS[g[f"{prefix}m"].casefold()]
    elif g.get(f"{prefix}iy"):
        year, month = int(g[f"{prefix}iy"]), int(g[f"{prefix}im"])
    else:
        year = int(g[f"{prefix}by"])
        return dt.date(year, 1, 1), dt.date(year + 1, 1, 1)
    first = dt.date(year, month, 1)
    return first, (dt.date(year + 1, 1, 1) if month == 12 else dt.date(year, month + 1, 1))


def _months_back(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, min(day.day, 28))


def date_ranges(question: str, today: dt.date | None = None) -> list[DateRange]:
    """Every date range the question names, in order of appearance."""
    today = today or dt.date.today()
    found: list[tuple[int, DateRange]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match[str], start: dt.date | None, end: dt.date | None) -> None:
        if any(a < m.end() and m.start() < b for a, b in taken):
            return  # part of a longer phrase already read ("between 2023 and 2024")
        taken.append((m.start(), m.end()))
        found.append((m.start(), DateRange(start, end, m.group(0).strip())))

    for m in _BETWEEN.finditer(question):
        add(m, _bounds(m, "a")[0], _bounds(m, "b")[1])
    for m in _FROM.finditer(question):
        first, after = _bounds(m, "a")
        # "since/from/seit/ab March 2024" includes March; "after/nach 2024" starts after it.
        add(m, after if m.group("w").casefold() in ("after", "nach") else first, None)
    for m in _UNTIL.finditer(question):
        first, after = _bounds(m, "a")
        inclusive = re.match(r"(?:until|till|up|bis)", m.group("w"), re.IGNORECASE) is not None
        add(m, None, after if inclusive else first)
    for m in _LAST_YEAR.finditer(question):
        add(m, dt.date(today.year - 1, 1, 1), dt.date(today.year, 1, 1))
    for m in _THIS_YEAR.finditer(question):
        add(m, dt.date(today.year, 1, 1), None)
    for m in _LAST_N.finditer(question):
        n = int(m.group("n") or m.group("gn"))
        unit = (m.group("unit") or m.group("gunit")).casefold()
        if unit.startswith(("day", "tag")):
            start = today - dt.timedelta(days=n)
        elif unit.startswith(("week", "woche")):
            start = today - dt.timedelta(weeks=n)
        elif unit.startswith(("month", "monat")):
            start = _months_back(today, n)
        else:
            start = _months_back(today, 12 * n)
        add(m, start, None)
    return [r for _, r in sorted(found, key=lambda item: item[0])]


__all__ = ["DateRange", "date_ranges"]
