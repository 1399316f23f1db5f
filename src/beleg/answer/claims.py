"""What an LLM answer's claim says, checked against the text it cites and the governing source.

A claim sentence can share most of its words and every number with the text it cites and
still say something else: "512 GB" for the cited "512 MB", "30 sync jobs" for "30 snapshots",
"is not 512 MB", "512 MB, and there is no limit for tenants". Four checks, each one a person
can redo by reading:

* **values**: every typed value of the claim (:mod:`beleg.answer.values`: duration, size,
  percentage, money, date, clock time) equals a value of the cited text in kind and
  quantity, so "512 GB" is not "512 MB". Equal quantities in other units count as equal,
  as ``values.same_value`` normalises them ("0.5 GB" = "512 MB" in its binary reading,
  "72 hours" = "3 days"), and their numbers need not be written in the cited text
  (:func:`converted_numbers`); a less precise date ("2026") is backed by a full one. A number
  that the cited text states without a unit values.py reads ("512 Megabytes", a table cell)
  cannot be compared and is left to the number check.
* **counts**: a bare count followed by what it counts ("30 sync jobs", "5 Webhook-Abonnements",
  "drei Versuche") is backed only where the cited text counts the same thing with that
  number: the counted noun is among the words after the number there, or in the sentence
  around it, its table header or the headings ("Snapshots are kept ... at most 30."), unless
  another number of that sentence counts it. "30 sync jobs" is not "30 snapshots"
  (:func:`count_gaps`).
* **clauses**: the claim is cut into clauses (at ``;``, at a comma, at "and"/"but"/"und"/
  "aber" …); each clause with two or more content terms needs more than half of them
  in the cited text or its headings, so a clause the source does not back ("unlimited per
  day") is not carried by the rest of the sentence.
* **polarity**: a clause says "not/no/never/without …" ("nicht/kein/nie/ohne …") exactly
  when the cited clause that shares the most of its terms does. A correct answer that
  states a limit by its complement ("you cannot upload more than 512 MB" for "at most
  512 MB") fails this check: an unsupported right answer is the safe error.

:func:`governing_check` asks another question: whether the value the answer gives comes
from a source that the governing source contradicts or supersedes (:mod:`beleg.answer.conflicts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from beleg.answer.attributes import MIN_COMPOUND_PART
from beleg.answer.conflicts import detect_conflicts
from beleg.answer.quarantine import shown_heading_path, shown_value
from beleg.answer.scoring import Sentence
from beleg.answer.types import Conflict, ConflictValue, Source
from beleg.answer.values import Value, extract_values, same_value
from beleg.index.analyzer import STOPWORDS, analyze, detect_language
from beleg.sentences import Span, split_sentences, table_header

#: A clause needs more than this share of its content terms in the cited text (a whole claim
#: needs this share: citations.SUPPORT_SHARE).
CLAUSE_SHARE = 0.5
#: Value kinds compared by quantity; a bare count is a number, compared as digits and by
#: what it counts (:func:`count_gaps`).
TYPED_KINDS = ("duration", "size", "percent", "money", "date", "time")

LABELS = re.compile(r"\[(?:S\d+)(?:\s*[,;]\s*S\d+)*\]")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|without|cannot)\b|n['’]t\b|"
    r"\b(?:nicht|nichts|kein|keine|keinen|keinem|keiner|keines|nie|niemals|nirgends|ohne|weder)\b",
    re.IGNORECASE)
# Where one clause ends and the next begins: a semicolon, a colon before a clause, a comma,
# or a conjunction that joins two statements. A bare "and" also joins nouns ("upload and
# download limits"); such a fragment has fewer than two content terms and is not judged alone.
_CLAUSE_BREAK = re.compile(
    r"\s*[;:]\s+|(?<!\d),\s*|,(?!\d)\s*|\s+(?:and|but|or|whereas|while|although|though|und|aber|oder|sondern|jedoch|während|"
    r"obwohl)\s+", re.IGNORECASE)
# A clause that only says where the answer comes from ("According to the documentation,",
# "Laut Handbuch,") states nothing the source must back.
_ATTRIBUTION = re.compile(r"^\W*(?:according\s+to|as\s+(?:stated|described|documented|noted)\s+in|based\s+on|"
                          r"per\s+the|laut|gemäß|nach\s+(?:angaben|auskunft)|wie\s+(?:in|im)\b)", re.IGNORECASE)


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (English or German)."""
    return _NEGATION.search(text) is not None


def clauses(text: str) -> list[str]:
    """``text`` cut into clauses (see :data:`_CLAUSE_BREAK`), without empty parts."""
    return [c.strip() for c in _CLAUSE_BREAK.split(text) if c and c.strip()]


def typed_values(text: str) -> list[Value]:
    """The values of ``text`` that are compared by quantity (:data:`TYPED_KINDS`)."""
    return [v for v in extract_values(text) if v.kind in TYPED_KINDS and any(ch.isdigit() for ch in v.raw)]


def _backs(cited: Value, claimed: Value) -> bool:
    if same_value(cited, claimed):
        return True
    # "in 2026" is backed by "2026-01-10"; the claim may be less precise than its source.
    return (cited.kind == claimed.kind == "date" and isinstance(cited.normalized, str)
            and isinstance(claimed.normalized, str) and cited.normalized.startswith(claimed.normalized))


def value_gaps(claim: str, cited_text: str) -> list[str]:
    """The claim's typed values that no value of ``cited_text`` equals, each with what the text has."""
    have = extract_values(cited_text)
    # Numbers values.py read only as bare counts: their unit ("512 Megabytes", a column's
    # header) is unknown here, so a claim's "512 MB" cannot be told right or wrong by them.
    untyped = {float(v.normalized) for v in have if v.kind == "count" and isinstance(v.normalized, float)}
    gaps = []
    for v in typed_values(claim):
        if any(_backs(c, v) for c in have):
            continue
        number = _leading_number(v.raw)
        if number is not None and number in untyped:
            continue
        same_kind = list(dict.fromkeys(c.raw.replace("**", "") for c in have if c.kind == v.kind))
        gaps.append(f"{v.raw}: the cited text has " + (", ".join(same_kind[:3]) if same_kind else f"no {v.kind}"))
    return gaps


# What a count is per, written after it ("120 requests per minute", "50 req/s", "5 Anfragen pro
# Sekunde", "twice a day"): the time unit, up to three words after the number.
_RATE = re.compile(r"\W{0,3}(?:[^\W\d_][\w-]*\s*){0,3}?(?:per|pro|je|a|an|each|every|jede[nmrs]?|/)\s*"
                   r"(?P<unit>seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|weeks?|months?|years?|"
                   r"sekunden?|minuten?|stunden?|tage?s?|wochen?|monate?s?|jahre?s?)\b", re.IGNORECASE)
_RATE_UNITS = {"s": "second", "sec": "second", "min": "minute", "h": "hour", "hr": "hour", "sekunde": "second", "minute": "minute", "stunde": "hour", "tag": "day", "tage": "day",
               "tages": "day", "woche": "week", "monat": "month", "monate": "month", "monates": "month",
               "jahr": "year", "jahre": "year", "jahres": "year"}


def _rate_unit(text: str, end: int) -> str | None:
    """The time unit a number ending at ``end`` is counted per, or None."""
    m = _RATE.match(text, end)
    if m is None:
        return None
    unit = m.group("unit").casefold()
    unit = _RATE_UNITS.get(unit, _RATE_UNITS.get(unit.rstrip("sn"), unit.rstrip("s")))
    return unit


def rate_gaps(claim: str, cited_text: str) -> list[str]:
    """The claim's counts per time unit ("120 requests per second") whose number the cited text
    counts per another unit only ("120 requests per minute"): the number check finds 120, the
    value check knows no rates, and the answer was marked supported. A number the cited text
    writes with no time unit after it is not judged (a table's header may say it)."""
    text = LABELS.sub("", claim)
    have = [(float(v.normalized), _rate_unit(cited_text, v.end)) for v in extract_values(cited_text)
            if v.kind == "count" and isinstance(v.normalized, float)]
    gaps = []
    for v in extract_values(text):
        unit = _rate_unit(text, v.end) if v.kind == "count" and isinstance(v.normalized, float) else None
        if unit is None:
            continue
        units = {u for n, u in have if n == v.normalized}
        stated = {u for u in units if u is not None}
        if units and stated == units and unit not in stated:
            gaps.append(f"{v.raw} per {unit}: the cited text counts {v.raw} per {', '.join(sorted(stated))}")
    return gaps


def backed_values(claim: str, cited_text: str) -> list[str]:
    """The claim's typed values, as written, that an equal quantity of the cited text backs,
    perhaps in another unit ("0.5 GB" for "512 MB", "3 days" for "72 hours"): their numbers
    and unit words need not be written in the cited text themselves."""
    have = extract_values(cited_text)
    return [v.raw for v in typed_values(claim) if any(_backs(c, v) for c in have)]


def converted_numbers(claim: str, cited_text: str) -> set[str]:
    """The numbers of :func:`backed_values`, as the number checks write them ("0.5")."""
    return {n.replace(",", ".") for raw in backed_values(claim, cited_text) for n in re.findall(r"\d+(?:[.,]\d+)?", raw)}


def _leading_number(raw: str) -> float | None:
    m = re.search(r"\d+(?:[.,]\d+)?", raw)
    return float(m.group(0).replace(",", ".")) if m else None


# --------------------------------------------------------------------------- counts

# A word after a number (emphasis around either may stay: "**30** snapshots"); only spaces
# between, so "30-day", "30, and" and "30 (daily)" have no counted word.
_NEXT_WORD = re.compile(r"(?:\*\*|__|\*|_)?[ \t\u00a0\u202f]+(?:\*\*|__|\*|_)?([^\W\d_](?:[\w-]*[^\W_])?)(?:\*\*|__|\*|_)?")
# The word right before a number.
_WORD_BEFORE = re.compile(r"(?<![\w.-])(?P<word>[^\W\d_][\w.-]*)[ \t\u00a0\u202f]+\Z")
#: Capitalised words that open a count at a sentence's start ("Only 3 retries", "Höchstens
#: 5 Abonnements") rather than name a product ("Python 3", "Windows 10"), besides stopwords.
#: Missing one only leaves a count unchecked.
_QUANTIFIERS = frozenset({"only", "up", "about", "around", "approximately", "over", "under", "exactly", "just",
                          "nearly", "almost", "after", "within", "all", "max", "maximum", "min", "minimum", "nur",
                          "bis", "über", "unter", "etwa", "rund", "ca", "circa", "genau", "höchstens", "mindestens",
                          "maximal", "insgesamt", "alle", "innerhalb"})
#: Words a counted phrase never runs into, which the stopword lists do not hold: how often
#: ("3 times", "3 Mal"), per what ("30 per vault"), and prepositions ("503 during deploys").
_NOT_COUNTED = frozenset({"times", "time", "mal", "fold", "x", "per", "pro", "je", "each", "every", "jeweils",
                          "more", "less", "fewer", "mehr", "weniger", "during", "after", "before", "within",
                          "without", "until", "since", "across", "via", "over", "under", "above", "below",
                          "between", "through", "including", "except", "plus", "while", "während", "seit",
                          "ohne", "gegen", "innerhalb", "außerhalb", "zwischen", "ab", "laut", "wegen"})
#: How far before a number its word is looked for (from the text's start it was quadratic).
_LOOK_BACK = 80
#: How many words after a number may hold what it counts ("3 failed login attempts").
_COUNTED_WORDS = 3
_DIGITS = re.compile(r"(?<![\w.,])\d{1,3}(?:([.,])\d{3})(?:\1\d{3})*(?![\w]|[.,]\d)|(?<![\w.,])\d+(?![\w]|[.,]\d)")


def _counted(text: str, value: Value, language: str) -> tuple[str, str] | None:
    """What the count ``value`` of ``text`` counts: (its phrase as written, the counted noun),
    or None when no noun follows it within :data:`_COUNTED_WORDS` words.

    The noun is the first word of the phrase that reads as one without parsing: in German a
    capitalised word ("drei fehlgeschlagene Versuche"), in English a plural ("30 sync jobs"),
    which is what a count of two or more takes; an English singular noun cannot be told from
    a verb ("Python 3 uses"), so "1 job" counts nothing here. A number right after a
    capitalised word is a name's ("Python 3", "Windows 10", "macOS 14", "js-controller 5"),
    not a count, unless that word is a stopword or one of :data:`_QUANTIFIERS`."""
    stop = STOPWORDS.get(language, STOPWORDS["en"])
    before = _WORD_BEFORE.search(text, max(0, value.start - _LOOK_BACK), value.start)
    if before:
        word = before.group("word")
        if re.search(r"[\d.-]", word) or any(c.isupper() for c in word[1:]) or (
                word[0].isupper() and word.casefold() not in stop | _QUANTIFIERS):
            return None
    pos = value.end
    for _ in range(_COUNTED_WORDS):
        m = _NEXT_WORD.match(text, pos)
        if m is None:
            return None
        word = m.group(1)
        low = word.casefold()
        if low in stop or low in _NOT_COUNTED:
            return None
        pos = m.end(1)
        if word[0].isupper() if language == "de" else (low.endswith("s") and not low.endswith(("ss", "us", "is"))):
            return text[value.start:pos], word
    return None


def _noun(word: str, language: str) -> str | None:
    """The stem that names what ``word`` is: a compound's last part ("Webhook-Abonnements": "abonnement")."""
    terms = [t for t in analyze(word, language) if t.isalpha()]
    return terms[-1] if terms else None


def _same_noun(a: str, b: str, language: str) -> bool:
    """Stems of one noun; in German also a closed compound and its last part ("webhookabonnement",
    "abonnement"), which names the same kind of thing."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return language == "de" and len(short) >= MIN_COMPOUND_PART and long.isalpha() and long.endswith(short)


def _noun_in(noun: str, terms: set[str], language: str) -> bool:
    return any(_same_noun(noun, t, language) for t in terms)


class _CountedInText:
    """Each count of the cited texts: the phrase after it, and what its sentence names besides."""

    def __init__(self, cited: Sequence[tuple[str, str]], language: str) -> None:
        self.language = language
        #: (number, terms of its phrase, its noun, its phrase as written, terms of its sentence,
        #: table header and headings that no other number of the sentence counts)
        self.counts: list[tuple[float, set[str], str | None, str, set[str]]] = []
        self.written: set[float] = set()
        for text, headings in cited:
            framed = set(analyze(headings, language))
            for span in split_sentences(text):
                self._add_sentence(span.text, framed | self._header_terms(text, span))

    def _header_terms(self, text: str, span: Span) -> set[str]:
        header = table_header(text, span)
        return set(analyze(header.text, self.language)) if header is not None else set()

    def _add_sentence(self, sentence: str, framed: set[str]) -> None:
        values = extract_values(sentence)
        taken = [(v.start, v.end) for v in values]
        found: list[tuple[float, set[str], str | None, str]] = []
        for v in values:
            if v.kind != "count" or not isinstance(v.normalized, float):
                continue
            counted = _counted(sentence, v, self.language)
            if counted is None:
                found.append((v.normalized, set(), None, ""))
            else:
                phrase, word = counted
                found.append((v.normalized, set(analyze(phrase, self.language)), _noun(word, self.language), phrase))
        for m in _DIGITS.finditer(sentence):
            number = float(re.sub(r"[.,]", "", m.group(0)))
            self.written.add(number)
            # Digits no value holds (inline code "`max_snapshots: 30`", a path) count what
            # their sentence names; digits of a typed value ("30 days") count nothing.
            if not any(a < m.end() and m.start() < b for a, b in taken):
                found.append((number, set(), None, ""))
        around = set(analyze(sentence, self.language)) | framed
        for i, (number, terms, noun, phrase) in enumerate(found):
            # "Snapshots are kept ... at most 30", "a limit of 30 applies to snapshots": the number
            # counts what its sentence names, unless another number counts that ("30 snapshots
            # and 4 sync jobs": the 30 counts no sync jobs).
            elsewhere = set().union(*(other[1] for j, other in enumerate(found) if j != i))
            self.counts.append((number, terms, noun, phrase, around - elsewhere))

    def backing(self, number: float, noun: str, phrase_terms: set[str]) -> tuple[bool, list[str]]:
        """Whether a count of ``number`` here counts ``noun`` (or what ``phrase_terms`` name);
        if not, the phrases that ``number`` counts here."""
        others = []
        for n, terms, own, phrase, sentence in self.counts:
            if n != number:
                continue
            if (_noun_in(noun, terms | sentence, self.language)
                    or (own is not None and _noun_in(own, phrase_terms, self.language))):
                return True, []
            if phrase:
                others.append(phrase)
        return False, list(dict.fromkeys(others))


def count_gaps(claim: str, cited: Sequence[tuple[str, str]], language: str) -> list[str]:
    """The claim's counts of a thing ("30 sync jobs") whose number counts another thing in the
    cited texts ("30 snapshots"), or nothing at all. ``cited``: (readable text, headings) per
    cited source. A claim in another language than the cited text is not judged here: its noun
    is not written there (:func:`clause_gaps` says the same for words). A count in digits that
    the cited text does not write is left to the number check, which reports it."""
    text = LABELS.sub("", claim)
    if detect_language(text, default=language) != language:
        return []
    found: _CountedInText | None = None
    gaps = []
    for v in extract_values(text):
        # "one" is as often "a" or "a single": a number word counts from two.
        if v.kind != "count" or not isinstance(v.normalized, float) or (
                v.normalized < 2 and not any(ch.isdigit() for ch in v.raw)):
            continue
        counted = _counted(text, v, language)
        if counted is None:
            continue
        phrase, word = counted
        noun = _noun(word, language)
        if noun is None:
            continue
        found = found or _CountedInText(cited, language)
        if any(ch.isdigit() for ch in v.raw) and v.normalized not in found.written:
            continue
        backed, others = found.backing(v.normalized, noun, set(analyze(phrase, language)))
        if not backed:
            gaps.append(f"{phrase!r}: " + (f"the cited text counts {', '.join(repr(o) for o in others[:3])}"
                                           if others else f"no cited sentence with {v.raw} names {word}"))
    return gaps


def clause_gaps(claim: str, cited: Sequence[tuple[str, str]], language: str) -> list[str]:
    """Clauses of ``claim`` that the cited texts do not back, or whose polarity is the reverse
    of the cited clause closest to them. ``cited``: (readable text, headings) per cited source.
    A claim written in another language than the cited text (a German answer quoting an English
    page) has no words to compare: its values are still compared (:func:`value_gaps`)."""
    if detect_language(LABELS.sub("", claim), default=language) != language:
        return []
    text_terms = set().union(*(analyze(t + "\n" + h, language) for t, h in cited)) if cited else set()
    text_terms |= set(analyze(" ".join(backed_values(claim, "\n".join(t for t, _ in cited))), language))
    # A heading or title names its topic ("Limits") as a statement would: positively, unless it
    # says otherwise; it is one of the clauses a claim's polarity is compared with.
    parts = [c for t, h in cited for c in (*(c for sp in split_sentences(t) for c in clauses(sp.text)),
                                          *h.splitlines())]
    cited_clauses = [(set(analyze(c, language)), negated(c)) for c in parts]
    gaps = []
    for clause in clauses(LABELS.sub("", claim)):
        clause = clause.rstrip(" .!?")
        terms = set(analyze(clause, language))
        if len(terms) < 2 or _ATTRIBUTION.match(clause):
            continue  # a phrase, not a statement: judged with its sentence
        # More than half: a clause has few terms, and at exactly half ("there is no limit for
        # tenants" under the title "Limits") its point may be the word the text lacks.
        if len(terms & text_terms) / len(terms) <= CLAUSE_SHARE:
            gaps.append(f"{clause[:60]!r} is not in the cited text")
            continue
        overlaps = [(len(terms & t), neg) for t, neg in cited_clauses if terms & t]
        if not overlaps:
            continue  # its terms are spread over the text (or in markup split_sentences skips)
        best = max(n for n, _ in overlaps)
        polarity = negated(clause)
        if all(neg != polarity for n, neg in overlaps if n == best):
            gaps.append(f"{clause[:60]!r} " + ("negates what the cited text states" if polarity else
                                               "drops the cited text's negation"))
    return gaps


def claim_gaps(claim: str, cited: Sequence[tuple[str, str]], language: str) -> list[str]:
    """Everything :func:`value_gaps`, :func:`rate_gaps`, :func:`count_gaps` and :func:`clause_gaps` find in one claim sentence."""
    text = LABELS.sub("", claim)
    joined = "\n".join(t for t, _ in cited)
    return (value_gaps(text, joined) + rate_gaps(text, joined) + count_gaps(text, cited, language)
            + clause_gaps(text, cited, language))


def cited_texts(sources: Sequence[Source]) -> list[tuple[str, str]]:
    """(readable text, headings) of each source: withheld instruction-like text backs nothing."""
    return [(s.quarantine.redact(s.hit.text),
             "\n".join([shown_value(s.hit.title), shown_heading_path(s.hit.heading_path, "\n")])) for s in sources]


def claim_labels(claim: str) -> list[str]:
    return re.findall(r"S\d+", " ".join(LABELS.findall(claim)))


# --------------------------------------------------------------------------- governing


def _ranks_as_high(src: Source, governing: Source) -> bool:
    return src.label == governing.label or (src.eligible and src.rank <= governing.rank)


def _holds(entry: ConflictValue, value: Value) -> bool:
    return any(same_value(v, value) for v in extract_values(entry.value))


def _stated(value: Value, values: Sequence[Value]) -> bool:
    return any(same_value(v, value) for v in values)


def governing_problems(question: str, claims: Sequence[str], governing: Sentence | None, scored: Sequence[Sentence],
                       conflicts: Sequence[Conflict], floor: float,
                       embed: Callable[[list[str]], np.ndarray] | None = None) -> list[str]:
    """Values the answer takes from a source that the governing one contradicts or supersedes.

    A claim's value is checked when only sources ranked below the governing one (or not
    eligible) back it among those the claim cites. The answer's own ``conflicts`` say whether
    the governing source states another value for the same attribute; a cited sentence that
    scored too low to be compared there (conflicts.py compares sentences near the governing
    score) is compared as if it scored as high: the answer uses it, so it is about the fact.
    An answer that also states the governing value reports the disagreement and passes."""
    if governing is None:
        return []
    all_values = [v for claim in claims for v in extract_values(LABELS.sub("", claim))]
    problems = []
    for claim in claims:
        labels = set(claim_labels(claim))
        for value in extract_values(LABELS.sub("", claim)):
            if not any(ch.isdigit() for ch in value.raw):
                continue
            backing = [s for s in scored if s.source.label in labels and _stated(value, s.values)]
            if not backing or any(_ranks_as_high(s.source, governing.source) for s in backing):
                continue
            found = [c for c in conflicts if any(not v.governs and v.label in labels and _holds(v, value)
                                                 for v in c.values)]
            if not found:
                lifted = [replace(s, score=max(s.score, governing.score)) for s in backing]
                found = list(detect_conflicts(question, governing, lifted, floor, embed=embed)[0])
            for conflict in found:
                gov = conflict.governing
                other = next((v for v in conflict.values if not v.governs and v.label in labels and _holds(v, value)),
                             None)
                if gov is None or other is None or any(_holds(gov, v) for v in all_values):
                    continue
                where = f"{other.label} ({other.authority}{', version ' + other.version if other.version else ''})"
                standing = {"superseded": f"which the governing {gov.label} ({gov.value}) supersedes",
                            "later": f"a later version than the governing {gov.label} ({gov.value})"}.get(
                    other.relation, f"which the governing {gov.label} ({gov.value}) contradicts")
                problems.append(f"the answer's value {value.raw} comes from {where}, {standing}")
                break
    return list(dict.fromkeys(problems))
