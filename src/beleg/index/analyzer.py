"""Text analysis for BM25: technical identifiers stay whole, words are stemmed per language.

Help-centre questions name things exactly (``E-4012``, ``/api/v3``, ``X-Request-Id``,
``retry_window_hours``) or loosely ("request id header", "Fehler 4012"). So every
identifier is indexed twice over: as the whole, lower-cased token (exact lookups rank
first) and as its stemmed parts (loose queries still match). Plain words are stemmed
with the Snowball stemmer of the text's language and umlauts are folded, so "Größe",
"Groesse"-free spellings like "Grosse" and "Größen" meet.
"""

from __future__ import annotations

import re
from functools import cache

import Stemmer

#: Bumped whenever the token stream for the same text changes (part of the index version).
ANALYZER_VERSION = "3"

# A raw token: letters/digits joined by identifier punctuation. Leading "/" is kept so
# that "/api/v3" stays a path; trailing sentence punctuation is stripped afterwards.
_RAW = re.compile(r"/?[\w{}]+(?:[./\-:#@+]+[\w{}]+)*/?", re.UNICODE)
_PART = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_VERSION = re.compile(r"v(\d+(?:\.\d+)+)")
_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss", "é": "e", "è": "e", "à": "a"})

STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        """a an and are as at be been but by can could did do does for from had has have how i if in
        into is it its may might must no not of on or our shall should so than that the their them
        then there these they this those to was we were what when where which who whom why will
        with would you your""".split()
    ),
    "de": frozenset(
        """aber als am an auch auf aus bei bin bis bist da damit dann das dass dem den der des die
        dies diese dieser dieses doch dort du durch ein eine einem einen einer eines er es für hat
        hatte haben ich ihr im in ist ja kann können man mit muss nach nicht noch nur ob oder sich
        sie sind so über um und uns unter vom von vor war waren was welche welcher welches wenn wer
        werden wie wir wird wo zu zum zur""".split()
    ),
}

_STEMMER_NAMES = {"en": "english", "de": "german"}
SUPPORTED_LANGUAGES = tuple(_STEMMER_NAMES)


@cache
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(_STEMMER_NAMES[language])


#: The words that count for a language in detect_language: its stopwords plus question words
#: the stopword lists lack (content for BM25 in neither language, so a language signal only):
#: "In welchem Jahr starb Tesla?" tied on "in" and read as no language at all, so its words
#: were weighed against English pages as if it were English.
_LANGUAGE_WORDS = {
    "de": STOPWORDS["de"] | {"wann", "warum", "wieso", "weshalb", "welchem", "welchen", "wem", "wen", "wessen",
                             "womit", "wofür", "wozu", "woher", "wohin", "worin", "worüber", "wodurch", "woraus",
                             "worauf"},
    "en": STOPWORDS["en"] | {"whose"},
}


def detect_language(text: str, default: str = "en") -> str:
    """Guess German or English from stopword and question-word counts; ``default`` when there is no signal."""
    words = re.findall(r"[a-zäöüß]+", text[:5000].lower())
    de = sum(w in _LANGUAGE_WORDS["de"] for w in words) + 2 * sum(any(c in w for c in "äöüß") for w in words)
    en = sum(w in _LANGUAGE_WORDS["en"] for w in words)
    if de == en:
        return default
    return "de" if de > en else "en"


def _stem_words(words: list[str], language: str) -> list[str]:
    stems = _stemmer(language).stemWords(words)
    return [s.translate(_FOLD) for s in stems]


def _is_plain_word(token: str) -> bool:
    return token.isalnum()


def analyze(text: str, language: str = "en", *, keep_stopwords: bool = False) -> list[str]:
    """Turn text into BM25 terms (with repeats, in order).

    Args:
        text: Any text.
        language: ``"en"`` or ``"de"``; anything else is analysed as English.
        keep_stopwords: Keep function words (used for queries made only of them).

    Example:
        >>> analyze("Retry POST /v5/queues/{id}/redrive on E-4012", "en")
        ['retri', 'post', '/v5/queues/{id}/redrive', 'v5', 'queue', 'id', 'redriv', 'e-4012', '4012']
    """
    lang = language if language in _STEMMER_NAMES else "en"
    stop = STOPWORDS[lang]
    out: list[str] = []
    # Collect words first, then stem them in one call (PyStemmer is much faster per batch).
    slots: list[str | None] = []
    words: list[str] = []
    for match in _RAW.finditer(text):
        raw = match.group(0).rstrip("/:.-")
        if not raw:
            continue
        low = raw.lower()
        if _is_plain_word(low):
            parts = [p.lower() for p in _CAMEL.split(raw)] if _CAMEL.search(raw) else [low]
            if len(parts) > 1:
                slots.append(low)
            for p in parts:
                if keep_stopwords or p not in stop:
                    slots.append(None)
                    words.append(p)
            continue
        # A compound identifier: the whole token, then its parts as words.
        slots.append(low)
        version = _VERSION.fullmatch(low)
        if version:
            slots.append(version.group(1))
        for part in _PART.findall(raw):
            for p in _CAMEL.split(part):
                # Single characters ("e" of E-4012, "x" of X-Request-Id) match everything
                # and mean nothing on their own.
                if len(p) > 1:
                    slots.append(None)
                    words.append(p.lower())
    stems = iter(_stem_words(words, lang))
    for slot in slots:
        out.append(next(stems) if slot is None else slot)
    return out


def analyze_query(text: str, language: str | None = None) -> list[str]:
    """Analyse a query into unique terms.

    The query's language is detected when not given; when detection has no signal,
    words are stemmed both ways so the query can meet German and English documents.
    A query made only of stopwords keeps them rather than becoming empty.
    """
    langs = [language] if language else _query_languages(text)
    terms: list[str] = []
    for lang in langs:
        terms.extend(analyze(text, lang))
    if not terms:
        for lang in langs:
            terms.extend(analyze(text, lang, keep_stopwords=True))
    return list(dict.fromkeys(terms))


def _query_languages(text: str) -> list[str]:
    sentinel = "?"
    guess = detect_language(text, default=sentinel)
    return ["en", "de"] if guess == sentinel else [guess]
