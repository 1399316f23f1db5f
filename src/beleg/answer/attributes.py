"""What a value measures: the attribute a typed value is bound to in its sentence.

Two sources disagree only when they give different values for the *same attribute*
("the retry window of webhook deliveries"), not merely values of the same unit kind: in
one section a 72-hour retry window, a 6-hour ``Retry-After`` cap and a 30-second timeout
are three attributes. The attribute of a value is read from its sentence, in code:

* the **clause** around the value (split at ``; : ( ) |``, commas and "and/und/but/aber")
  gives the bound words, weighted by closeness: the nearest content words on each side
  are the value's **heads** ("``Retry-After`` header of up to 6 hours" → header,
  "werden 72 Stunden lang wiederholt" → wiederhol), the rest of the clause weighs less,
  the rest of the sentence and the section heading less again;
* words are stemmed with the index's analyzer (English and German), compound
  identifiers (``Retry-After``, ``max_delivery_attempts``) are kept whole as well.

:func:`focus_match` says how much of the question's focus the attribute covers;
:func:`same_attribute` whether two attributes measure the same thing: they must share
weighted terms, every head of the other value must be known (named by the question or
by the governing attribute), and an identifier bound to the other value must be named by
the question or the governing attribute. Across languages, where stems cannot meet, the
words written alike in both (names: identifiers and their parts, acronyms, a table row's
first cell, capitalised words inside an English sentence) must not name another subject,
and then a shared identifier or an e5 similarity of the two attribute phrases (when an
embedder is given) stands in. A table row's value is also bound to its column's header
("| Business | €59 / month |" under "| Plan | Price |" measures the price).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from beleg.answer.values import Value
from beleg.index.analyzer import analyze, detect_language

# Weights of a term by where it stands relative to the value.
HEAD_WEIGHT = 1.0
CLAUSE_WEIGHT = 0.6
SENTENCE_WEIGHT = 0.25
HEADING_WEIGHT = 0.5
#: How many content words on each side of the value are its heads.
HEAD_SPAN = 2
#: The attribute must cover this share of the question's focus ...
MIN_FOCUS = 0.2
#: ... and two attributes must share this much weight (overlap coefficient) to be one.
MIN_OVERLAP = 0.2
#: Across languages: cosine of the e5 vectors of the two attribute phrases.
MIN_CROSS_LINGUAL_COSINE = 0.88
#: Same language, a head word neither the question nor the governing clause names: e5 cosine.
MIN_SYNONYM_COSINE = 0.92

_TOKEN = re.compile(r"[^\W_][\w{}]*(?:[\-_.][\w{}]+)*", re.UNICODE)
_CLAUSE_BREAK = re.compile(r"[;:()|\[\]]|,\s|\s(?:and|but|while|whereas|und|aber|während|sowie)\s", re.IGNORECASE)
_NUMBER = re.compile(r"^\d[\d.,]*$")
# Words that qualify a value without naming what it measures ("up to", "at least",
# "höchstens", "lang" in "72 Stunden lang") are never heads.
_FILLERS = frozenset("""
    up least most about approximately around roughly maximum minimum max min guaranteed guarantee total
    only exactly just full whole default fixed overall per each every within after before over under
    instead between than set value values bis zu statt anstelle zwischen als
    last lasts take takes amount amounts equal equals beträgt betragen liegt liegen dauert dauern gilt gelten
    mindestens höchstens maximal minimal etwa ungefähr rund lang garantiert insgesamt genau
    jeweils pro je innerhalb nach vor über standardmäßig ab
    """.split())
# Question words that ask for the kind of value, not for an attribute.
_QUESTION_WORDS = frozenset("""
    long many much often large big soon tell know default current currently now when
    lang lange viel viele oft groß gross aktuell derzeit wann uhr uhrzeit
    """.split())


@dataclass(frozen=True, slots=True)
class Attribute:
    """The words a value is bound to: stemmed terms with weights, heads and identifiers."""

    phrase: str
    terms: dict[str, float] = field(default_factory=dict)
    heads: frozenset[str] = frozenset()
    #: The stems of the single nearest content word on each side.
    nearest: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    language: str = "en"
    #: "statement" (the attribute is the value), "condition" ("below 99%": a threshold
    #: in a rule about something else), "frequency" ("every 24 hours", "between two
    #: attempts": an interval) or "former" (the value a change left: "raised from 60 to 120");
    #: a time of day "start" or "end".
    role: str = "statement"
    #: For a count: the stems of the word right after it, what is counted ("3 users").
    counted: frozenset[str] = frozenset()
    #: The value's head words as written, in text order ("retries delivery").
    head_words: str = ""
    heading: str = ""
    #: Words the value is bound to that are written alike in every language (casefolded):
    #: identifiers and their parts, acronyms, a table row's first cell, capitalised words
    #: inside an English sentence ("Business" in "the Business plan costs").
    names: frozenset[str] = frozenset()
    #: Every word of the sentence, its heading and its table header as written (casefolded,
    #: compounds also split at - _ .): where another language's names are looked up.
    words: frozenset[str] = frozenset()

    @property
    def described(self) -> str:
        """Heading and clause, what an embedder compares across languages."""
        return f"{self.heading}: {self.phrase}" if self.heading else self.phrase


def _language(text: str, lang: str | None) -> str:
    return lang if lang in ("en", "de") else detect_language(text, default="en")


def _stems(token: str, lang: str) -> list[str]:
    """Stemmed content terms of one token; identifiers give their whole form first."""
    return analyze(token, lang)


def _is_identifier(token: str) -> bool:
    return bool(re.search(r"[\-_.]", token)) and not _NUMBER.match(token)


def _clause_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    left, right = 0, len(text)
    for m in _CLAUSE_BREAK.finditer(text):
        if m.end() <= start:
            left = m.end()
        elif m.start() >= end:
            right = m.start()
            break
    return left, right


def attribute_of(text: str, value: Value, heading_path: Sequence[str] = (), lang: str | None = None,
                 values: Sequence[Value] = (), header: str = "", page: str = "") -> Attribute:
    """The attribute ``value`` (found in ``text``) measures; ``values`` are the sentence's others,
    ``header`` the header row of the table ``text`` is a row of, ``page`` the words that frame
    the whole page (title, product, upper headings): the product a sentence names is no
    subject of its own ("Ferrolink retries …" on a Ferrolink page)."""
    lang = _language(text, lang)
    # A table row is one clause: its first cells name what the value cells measure.
    row = text.lstrip().startswith("|")
    lo, hi = (0, len(text)) if row else _clause_bounds(text, value.start, value.end)
    others = [(v.start, v.end) for v in values if v.start != value.start]
    left: list[list[str]] = []
    right: list[list[str]] = []
    left_words: list[str] = []  # the clause's content words as written, for the display name
    right_words: list[str] = []
    rest: list[str] = []
    identifiers: set[str] = set()
    for m in _TOKEN.finditer(text):
        a, b = m.span()
        if a < value.end and value.start < b or any(x < b and a < y for x, y in others):
            continue  # the value itself and other values are not words about it
        token = m.group(0).strip(".")
        low = token.lower()
        if not token or _NUMBER.match(token) or low in _FILLERS:
            continue
        stems = [s for s in _stems(token, lang) if s not in _FILLERS]
        if not stems:
            continue
        if lo <= a and b <= hi:
            if _is_identifier(token):
                identifiers.add(low)
            (left if b <= value.start else right).append(stems)
            (left_words if b <= value.start else right_words).append(token)
        else:
            rest.extend(stems)
    terms: dict[str, float] = {}

    def put(term: str, weight: float) -> None:
        terms[term] = max(terms.get(term, 0.0), weight)

    heads: set[str] = set()
    column = _column_header(text, value, header) if row else ""
    if column:  # the column's header names what the cell measures ("Price"), as a word next to it would
        left.append([s for s in analyze(column, lang) if s not in _FILLERS])
        left_words.append(column)
    nearest = {s for side in (left[-1:], right[:1]) for stems in side for s in stems}
    for side in (left[::-1], right):
        for i, stems in enumerate(side):
            weight = HEAD_WEIGHT if i < HEAD_SPAN else CLAUSE_WEIGHT
            for s in stems:
                put(s, weight)
                if i < HEAD_SPAN:
                    heads.add(s)
    for s in rest:
        put(s, SENTENCE_WEIGHT)
    if heading_path:
        for s in analyze(re.sub(r"^\s*[\d.]+\s+", "", heading_path[-1]), lang):
            put(s, HEADING_WEIGHT)
    phrase = " ".join(f"{text[lo:value.start]} {text[value.end:hi]}".replace("*", " ").replace("|", " ").split())
    heading = re.sub(r"^\s*[\d.]+\s+", "", heading_path[-1]).strip() if heading_path else ""
    counted = frozenset(right[0]) if value.kind == "count" and right and re.match(
        r"[\s*_`]*[^\W\d_]", text[value.end:]) else frozenset()
    head_words = " ".join(left_words[-HEAD_SPAN:] + right_words[:HEAD_SPAN])
    if column:
        phrase = f"{column}: {phrase}"
    framing = _surface_words(page)
    names = _names(text, value, values, lo, hi, lang, row) - framing
    words = _surface_words(" ".join((text, heading, header))) | framing
    return Attribute(phrase, terms, frozenset(heads), frozenset(nearest), frozenset(identifiers), lang,
                     value_role(text, value, text[lo:hi]), counted, head_words, heading, names, words)


def _cells(row: str) -> list[tuple[int, int]]:
    """The (start, end) of each cell of a Markdown table row."""
    bars = [i for i, ch in enumerate(row) if ch == "|"]
    return [(a + 1, b) for a, b in zip(bars, bars[1:])]


def _column_header(row: str, value: Value, header: str) -> str:
    """The header cell above the value's cell ("Price" for "€59" in "| Business | €59 / month |")."""
    if not header:
        return ""
    cells = _cells(row)
    index = next((i for i, (a, b) in enumerate(cells) if a <= value.start < b), None)
    heads = [header[a:b].strip().strip("*_` ") for a, b in _cells(header)]
    return heads[index] if index is not None and index < len(heads) and len(heads) == len(cells) else ""


# Capitalised in English and translated into German: no names.
_TRANSLATED = frozenset("""
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december i
    """.split())
_ACRONYM = re.compile(r"[A-Z].*[A-Z]|[^\W\d_].*\d|\d.*[^\W\d_]")


def _surface_words(text: str) -> frozenset[str]:
    out: set[str] = set()
    for m in _TOKEN.finditer(text):
        token = m.group(0).strip(".").casefold()
        out.add(token)
        out.update(p for p in re.split(r"[\-_.]", token) if p)
    return frozenset(out)


def _names(text: str, value: Value, values: Sequence[Value], lo: int, hi: int, lang: str, row: bool) -> frozenset[str]:
    """The words bound to the value that another language writes alike (see ``Attribute.names``)."""
    first_cell = _cells(text)[0] if row and _cells(text) else (0, 0)
    if first_cell[0] <= value.start < first_cell[1]:
        first_cell = (0, 0)  # the value is the key itself
    taken = [(v.start, v.end) for v in values] + [(value.start, value.end)]
    sentence_start = len(text) - len(text.lstrip(" *_#>|-"))
    out: set[str] = set()
    for m in _TOKEN.finditer(text, lo, hi):
        a, b = m.span()
        token = m.group(0).strip(".")
        if not token or _NUMBER.match(token) or any(x < b and a < y for x, y in taken):
            continue
        low = token.casefold()
        if _is_identifier(token):
            out.add(low)
            out.update(p for p in re.split(r"[\-_.]", low) if len(p) > 1 and not p.isdigit())
        elif _ACRONYM.search(token) or first_cell[0] <= a < first_cell[1]:
            out.add(low)
        elif lang == "en" and token[0].isupper() and a > sentence_start and low not in _TRANSLATED \
                and not re.search(r"[.!?:]\s*[*_]*\Z", text[:a]):
            out.add(low)
    return frozenset(out - _FILLERS)


_CONDITION = re.compile(
    r"(?:below|above|under|over|less\s+than|more\s+than|fewer\s+than|greater\s+than|longer\s+than|"
    r"shorter\s+than|exceeds?|exceeding|unter|über|unterhalb|oberhalb|weniger\s+als|mehr\s+als|"
    r"länger\s+als|kürzer\s+als|größer\s+als|überschreitet)\s*[*_`]*\s*$", re.IGNORECASE)
_FREQUENCY = re.compile(r"(?:every|each|alle|jede[nrs]?)\s*[*_`]*\s*$", re.IGNORECASE)
_SPACING = re.compile(r"\b(?:between|zwischen)\b", re.IGNORECASE)
# A time of day starts or ends something: the preposition right before it says which, else
# the clause's verb ("Die Wartung beginnt um 02:00 Uhr", "Maintenance ends at 04:00").
_START_BEFORE = re.compile(r"\b(?:from|since|starting(?:\s+at)?|between|ab|von|seit|zwischen)\s*[*_`]*\s*$",
                           re.IGNORECASE)
_END_BEFORE = re.compile(r"(?:\b(?:until|till|to|by|through|before|no\s+later\s+than|bis|vor|spätestens(?:\s+um)?)|"
                         r"\b(?:between|zwischen)\s+\S+\s+(?:and|und)|[\u2013\u2014-])\s*[*_`]*\s*$", re.IGNORECASE)
_START_VERB = re.compile(r"\b(?:begin|begins|began|start|starts|started|open|opens|opened|beginnt|beginnen|begann|"
                         r"startet|starten|öffnet|öffnen|eröffnet)\b", re.IGNORECASE)
_END_VERB = re.compile(r"\b(?:end|ends|ended|finish|finishes|finished|close|closes|closed|endet|enden|endete|"
                       r"schließt|schliesst|schließen)\b", re.IGNORECASE)
_RANGE_AFTER = re.compile(r"\s*(?:[\u2013\u2014-]|to|until|till|bis)\s*\d", re.IGNORECASE)


# A change of value ("raised from 60 to 120", "von 60 auf 120 erhöht", "moved from 02:00 to
# 03:00"): the value after "from" is the one it no longer has. Only with a verb of change in
# the sentence: "from 5 to 10 users" alone is a range. (The sentence, not the value's clause:
# clauses break at the colon of "02:00".)
_CHANGE_VERB = re.compile(
    r"\b(?:rais|increas|reduc|lower|decreas|chang|extend|shorten|bump|mov|went|grew|grown|dropp|fell|fallen|"
    r"doubl|halv|adjust|erhöh|gesenkt|senk|geändert|änder|angehoben|anheb|hebt|reduzier|verringer|verkürz|"
    r"verlänger|gestiegen|steig|gesunken|sink|umgestellt|angepasst|verdoppel|halbier|verschob|verschoben)\w*",
    re.IGNORECASE)
_FROM_BEFORE = re.compile(r"\b(?:from|von)\s*[*_`]*\s*$", re.IGNORECASE)
_TO_AFTER = re.compile(r"[*_`]*\s*(?:to|auf|into)\s+[*_`]*[\d€$£]", re.IGNORECASE)
_TO_BEFORE = re.compile(r"\b(?:to|auf|into)\s*[*_`]*\s*$", re.IGNORECASE)
_FROM_VALUE = re.compile(r"\b(?:from|von)\s+[*_`]*[\d€$£]", re.IGNORECASE)


def _changed_role(text: str, value: Value) -> str | None:
    """"former" for the old value of a change, "statement" for its new one, else None."""
    if not _CHANGE_VERB.search(text):
        return None
    before = text[max(0, value.start - 24):value.start]
    if _FROM_BEFORE.search(before) and _TO_AFTER.match(text, value.end):
        return "former"
    if _TO_BEFORE.search(before) and _FROM_VALUE.search(text, max(0, value.start - 60), value.start):
        return "statement"  # not the end of a window: "to 03:00" after "moved from 02:00"
    return None


def value_role(text: str, value: Value, clause: str = "") -> str:
    """What the value does in its sentence: states the attribute, sets a threshold, or an
    interval ("every 24 hours", "24 hours between two attempts"), or is the value a change
    left behind ("former": "raised from 60 to 120"); a time of day instead starts or ends
    something, or is stated (:func:`_time_role`)."""
    changed = _changed_role(text, value)
    if changed is not None:
        return changed
    before = text[max(0, value.start - 24):value.start]
    if _CONDITION.search(before):
        return "condition"
    if value.kind == "time":  # "between 02:00 and 04:00" is a window, not the spacing of attempts
        return _time_role(text, value, clause)
    if _FREQUENCY.search(before) or _SPACING.search(clause):
        return "frequency"
    return "statement"


def _time_role(text: str, value: Value, clause: str) -> str:
    before = text[max(0, value.start - 24):value.start]
    if _START_BEFORE.search(before):
        return "start"
    if _END_BEFORE.search(before):
        return "end"
    if _RANGE_AFTER.match(text, value.end):
        return "start"  # the first end of "02:00–04:00"
    starts, ends = bool(_START_VERB.search(clause)), bool(_END_VERB.search(clause))
    return "start" if starts and not ends else "end" if ends and not starts else "statement"


def _roles_agree(a: str, b: str) -> bool:
    """The same role; a time stated without a start or end word may be either."""
    return a == b or ("statement" in (a, b) and {a, b} <= {"statement", "start", "end"})


_TIME_ASKED = re.compile(r"\b(?:at|by|until|till|from)?\s*what\s+time\b|\btime\s+of\s+(?:the\s+)?day\b", re.IGNORECASE)


def question_focus(question: str) -> frozenset[str]:
    """The stemmed content terms of the question, without the words that ask for a kind of value."""
    lang = detect_language(question, default="en")
    question = _TIME_ASKED.sub(" ", question)  # "at what time": the kind, not what is timed
    skip = {s for w in _QUESTION_WORDS | _FILLERS for s in analyze(w, lang)} | _QUESTION_WORDS | _FILLERS
    return frozenset(t for t in analyze(question, lang) if t not in skip)


#: German compounds meet their parts: "Wiederholungsfenster" ~ "wiederholt", "Kündigungsfrist" ~ "Frist".
MIN_COMPOUND_PART = 5


def _related(a: str, b: str, compounds: bool) -> bool:
    if a == b:
        return True
    if not compounds or not (a.isalpha() and b.isalpha()):
        return False
    short, long = sorted((a, b), key=len)
    return len(short) >= MIN_COMPOUND_PART and (long.startswith(short) or long.endswith(short))


def weight(attr: Attribute, term: str) -> float:
    """The attribute's weight for ``term``; in German also through a compound it is part of."""
    if term in attr.terms or attr.language != "de":
        return attr.terms.get(term, 0.0)
    return max((w for t, w in attr.terms.items() if _related(t, term, True)), default=0.0)


def _known(term: str, known: set[str], compounds: bool) -> bool:
    return term in known or (compounds and any(_related(term, k, True) for k in known))


def focus_match(attr: Attribute, focus: frozenset[str]) -> float:
    """The weighted share of the question's focus terms the attribute holds (0..1)."""
    if not focus:
        return 0.0
    return sum(weight(attr, t) for t in focus) / len(focus)


def overlap(a: Attribute, b: Attribute) -> float:
    """Weighted overlap coefficient of two attributes' terms (0..1)."""
    shared = sum(min(w, weight(b, t)) for t, w in a.terms.items())
    smaller = min(sum(a.terms.values()), sum(b.terms.values()))
    return shared / smaller if smaller else 0.0


def foreign_identifier(other: Attribute, governing: Attribute, focus: frozenset[str]) -> str | None:
    """An identifier bound to ``other`` that neither the question nor the governing attribute
    names, whole or as all of its parts ("Idempotency-Key" = "idempotency key")."""
    known = set(governing.terms) | set(governing.identifiers) | set(focus)
    for ident in sorted(other.identifiers):
        parts = [p for p in analyze(ident, other.language) if p != ident]
        if ident not in known and not (parts and all(p in known for p in parts)):
            return ident
    return None


def unknown_heads(other: Attribute, governing: Attribute, focus: frozenset[str]) -> bool:
    """True when the word right next to the other value, on either side, is named neither by
    the question nor by the governing attribute ("Retry-After header of 6 hours": header)."""
    if not other.nearest:
        return False
    known = set(governing.terms) | set(focus)
    return not any(_known(t, known, other.language == "de") for t in other.nearest)


def other_subject(other: Attribute, governing: Attribute, focus: frozenset[str]) -> bool:
    """True when the other clause names its own subject: it lacks most of the question's terms
    the governing clause holds and holds clause words neither names ("call recordings are kept
    for 90 days" against "chat transcripts are kept for 2 years")."""
    asked = {t for t in focus if governing.terms.get(t, 0.0) >= CLAUSE_WEIGHT}
    missing = {t for t in asked if weight(other, t) == 0.0}
    known = set(governing.terms) | set(focus)
    # The word next to the value is its predicate ("stored" for "kept"), judged by unknown_heads.
    novel = {t for t, w in other.terms.items() if w >= CLAUSE_WEIGHT and t not in other.nearest
             and not _known(t, known, other.language == "de")}
    return bool(novel) and len(missing) * 2 > len(asked)


def _cosine(a: str, b: str, embed: Callable[[list[str]], np.ndarray] | None) -> float | None:
    if embed is None or not a or not b:
        return None
    vectors = embed([a, b])
    return float(vectors[0] @ vectors[1])


def _similar(a: str, b: str, embed: Callable[[list[str]], np.ndarray] | None, floor: float) -> bool:
    cos = _cosine(a, b, embed)
    return cos is not None and cos >= floor


def similarity(a: Attribute, b: Attribute, embed: Callable[[list[str]], np.ndarray] | None) -> float:
    """e5 cosine of the two attributes' heading + clause (0 without an embedder)."""
    return _cosine(a.described, b.described, embed) or 0.0


def _written_in(name: str, words: frozenset[str]) -> bool:
    """``name`` is one of ``words``, or starts or ends one ("business" in "businesspaket")."""
    return name in words or (len(name) >= 4 and any(w.startswith(name) or w.endswith(name) for w in words))


def foreign_names(a: Attribute, words: frozenset[str]) -> bool:
    """``a``'s value is bound to names ("Team", "Enterprise-Paket") none of which ``words`` hold:
    across languages, where nothing else can be compared word for word, another subject."""
    return bool(a.names) and not any(_written_in(n, words) for n in a.names)


def same_attribute(governing: Attribute, other: Attribute, focus: frozenset[str],
                   embed: Callable[[list[str]], np.ndarray] | None = None,
                   asked: frozenset[str] = frozenset()) -> bool:
    """True when ``other`` measures the attribute ``governing`` measures (and the question asks).

    ``asked``: the question's words as written (:func:`question_words`), where names of the
    other language may be found too."""
    if not _roles_agree(other.role, governing.role):
        return False  # a threshold, an interval or the end of a window is not the value of the attribute
    if other.language != governing.language:
        return _same_across_languages(governing, other, asked, embed)
    if governing.counted and other.counted and not (governing.counted & other.counted):
        return False  # "3 users" and "10 projects" count different things
    # An identifier only the other value is bound to ("Retry-After" next to a retry window)
    # names another attribute; the governing one's identifier may be paraphrased by the other.
    if foreign_identifier(other, governing, focus):
        return False
    if focus_match(other, focus) < MIN_FOCUS or overlap(governing, other) < MIN_OVERLAP:
        return False
    if other_subject(other, governing, focus):
        return False
    # Heads are checked both ways: the other value's next to a word the question and the
    # governing clause do not name, or the governing value next to one (the answer quoted
    # a "Retry-After header of 6 hours") that the question and the other do not name.
    # Such a word may be a synonym ("retained" for "kept"): e5 decides, if given.
    if unknown_heads(other, governing, focus) or unknown_heads(governing, other, focus):
        return _similar(governing.phrase, other.phrase, embed, MIN_SYNONYM_COSINE)
    return True


def _same_across_languages(governing: Attribute, other: Attribute, asked: frozenset[str],
                           embed: Callable[[list[str]], np.ndarray] | None) -> bool:
    """Stems cannot meet: names written alike must not point at another subject either way,
    then a shared identifier, else the phrases' e5 vectors. e5 alone puts a German price of
    the Business plan as close to the Team plan's row (0.87-0.93) as to its own (0.90-0.95)."""
    if foreign_names(other, governing.words | asked) or foreign_names(governing, other.words):
        return False
    if governing.identifiers & other.identifiers:
        return True
    return _similar(governing.described, other.described, embed, MIN_CROSS_LINGUAL_COSINE)


def question_words(question: str) -> frozenset[str]:
    """The question's words as written, casefolded (names are compared in this form)."""
    return _surface_words(question)


def attribute_name(attr: Attribute) -> str:
    """A short display name: the heading and the value's nearest words ("Retry window: retries delivery")."""
    return f"{attr.heading}: {attr.head_words}" if attr.heading and attr.head_words else attr.heading or attr.phrase
