"""Self-query: constraints a question states in words, turned into filters and boosts, by rule.

"How long does Ferrolink 3.0 retry failed webhook deliveries?" is about version 3.0; a
search that ignores that ranks the 1.8 and 2.4 contracts above the 3.0 one. The rules here
read, offline and without an LLM:

============  ===========================================================  ===========
key           words                                                        applied as
============  ===========================================================  ===========
product       a product name that a visible document carries               filter
version       a decimal after a cue or a product name (``versions.py``)    boost
status        "current"/"aktuell"/"latest" · "historical"/"old versions"/  filter
              "früher"/"damals" · "draft"/"Entwurf"
language      "in German", "auf Englisch", "German docs", "englische Doku"   filter
date          "since 2025", "before March 2024", "seit 2025", "vor 2024"   filter
============  ===========================================================  ===========

**Filters** narrow what is searched, exactly like ``--where``. **The version is a boost,
not a filter**: the search runs twice inside the permission-checked retriever, once as
asked and once pinned to the asked version(s), and the two rankings are fused with RRF.
Hits of the asked version score in both lists and move up; hits of other versions keep
their place in the first list, demoted, so a question whose answer exists only in another
version still finds it (the answer layer then says which version answered). A boost only
reorders hits the asker may see under the caller's filters; it never adds one.

Values come only from ``values(key)``: what the asker may see. A product, status or
language no visible document has is never inferred, and a version no visible document has
is reported as unknown exactly as a version that does not exist at all, so a question
cannot probe what is hidden. A caller's filter on a key (``--filter version=2.4``,
``--where "status = draft"``) disables the inferred constraint on that key.

With an LLM (``self_query="llm"``), :mod:`beleg.query.self_query_llm` asks the model for
constraints as well, offers it only these visible values, accepts only them, and merges
its proposals with the rules' (the rules win where they decided a key).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from beleg.errors import ConfigError
from beleg.index.filters import Cmp, Expr, combine, named_keys
from beleg.query.dates import date_ranges
from beleg.query.versions import asked_versions, version_spans
from beleg.retrieve.fusion import rrf

if TYPE_CHECKING:
    from beleg.query.conversation import Conversation
    from beleg.types import Hit

FILTER = "filter"
BOOST = "boost"
#: Why a status word yields to a version (the rules' reason, and the LLM merge's).
VERSION_DECIDES = "the question names a version; the version boost decides which documents lead"
#: ``self_query=`` values: "auto" is "llm" when an LLM is configured and "rules" otherwise;
#: True (the Python API's default) means "rules", False means "off".
MODES = ("auto", "rules", "llm", "off")

# ---------------------------------------------------------------------- status words
_CURRENT = re.compile(r"\b(?:current(?:ly)?|latest|newest|up-to-date|aktuell\w*|neueste[nrs]?|derzeit\w*|"
                      r"momentan\w*|gegenwärtig\w*)\b", re.IGNORECASE)
_HISTORICAL = re.compile(
    r"\b(?:historical|historic|historisch\w*|legacy|formerly|previously|damals|ehemalig\w*|"
    r"(?:old|older|previous|earlier|prior|former|past)\s+(?:versions?|releases?|docs|documentation|contracts?)|"
    r"(?:alte[nrs]?|ältere[nrs]?|frühere[nrs]?|vorherige[nrs]?|vorige[nrs]?)\s+(?:version\w*|release\w*|"
    r"fassung\w*|dokumentation|vertr[aä]g\w*)|früher(?!\s+als)|"
    # The stored status synonyms (ingest/metadata.py) name a status when they qualify the
    # documents themselves ("deprecated docs", "veraltete Dokumente"); alone they ask about a
    # feature's deprecation ("Is /api/v2 deprecated?"), which the current pages answer.
    r"(?:deprecated|obsolete|outdated|archived|superseded|retired|veraltete[nrs]?|archivierte[nrs]?|"
    r"überholte[nrs]?|abgelöste[nrs]?)\s+(?:versions?|releases?|docs|documentation|documents?|pages?|"
    r"contracts?|manuals?|dokument\w*|version\w*|fassung\w*|seiten?|handb[uü]ch\w*|vertr[aä]g\w*))\b",
    re.IGNORECASE)
_DRAFT = re.compile(r"\b(?:drafts?|entw[uü]rf\w*|unreleased|unveröffentlicht\w*)\b", re.IGNORECASE)
#: Each status cue and the stored status names it may mean (the visible ones are used).
_STATUS_CUES = (
    (_CURRENT, ("current", "active", "released", "published", "aktuell")),
    (_HISTORICAL, ("historical", "archived", "deprecated", "superseded", "obsolete", "historisch")),
    (_DRAFT, ("draft", "entwurf", "proposal")),
)

# ---------------------------------------------------------------------- language words
_LANG_WORD = r"german|english|deutsch\w*|englisch\w*"
_LANG_IN = re.compile(r"\b(?:in|auf)\s+(?P<l>german|english|deutsch|englisch)\b", re.IGNORECASE)
_LANG_DOCS = re.compile(
    rf"\b(?P<l>{_LANG_WORD})[-\s]+(?:language\s+|sprachige\w*\s+)?(?:docs?|documents?|documentation|sources?|"
    r"pages?|texts?|versions?|manuals?|guides?|dokument\w*|doku\w*|quellen?|unterlagen|fassung\w*|texte?n?|"
    r"seiten|anleitung\w*)\b",
    re.IGNORECASE)
# "What is the hymn known as in English?", "Wie heißt das auf Deutsch?": a question about a
# translation, not a request for documents in that language.
_TRANSLATION = re.compile(r"\b(?:called|known\s+as|named|say|said|mean\w*|word|term|translat\w*|spell\w*|"
                          r"pronounc\w*|heißt|heisst|hieß\w*|genannt|bedeute\w*|übersetz\w*|sagt\s+man|"
                          r"nennt\s+man|wort|begriff|ausgesprochen)\b", re.IGNORECASE)
# "in German" asks for documents in German only next to words about documents or reading
# ("documented in German", "available in English", "Wo steht das auf Englisch?"); "his
# last statement was in German" describes content.
_DOC_CUE = re.compile(r"\b(?:docs?|documents?|documentation|documented|sources?|guides?|manuals?|pages?|articles?|"
                      r"available|written|described|explain\w*|answer\w*|read|show|find|search|list|"
                      r"steht|stehen|lesen|dokument\w*|doku\w*|unterlagen|quellen?|anleitung\w*|seiten?|"
                      r"verfügbar|geschrieben|beschrieben|erklär\w*|antwort\w*|zeig\w*|such\w*|find\w*|gibt\s+es)\b",
                      re.IGNORECASE)
#: Language names and the stored language values they may mean.
_LANGUAGES = {"de": ("de", "deu", "ger", "german", "deutsch"), "en": ("en", "eng", "english", "englisch")}


def _language_of(word: str) -> str:
    return "de" if word.casefold().startswith(("german", "deutsch")) else "en"


# ---------------------------------------------------------------------- the result
@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint read from the question.

    ``words`` are the question's words that produced it; ``applied_as`` is ``"filter"``
    (hard) or ``"boost"`` (reorders only); ``status`` is ``"applied"``, ``"overridden"``
    (a caller's filter names the key) or ``"skipped"`` (``reason`` says why). ``origin``
    is ``"rules"`` or ``"llm"`` (proposed by the model, checked against visible values;
    ``words`` is empty then: the model does not say which words it read).
    """

    key: str
    op: str  # "=", "in", ">=", "<"
    value: str | tuple[str, ...]
    words: str
    applied_as: str
    status: str = "applied"
    reason: str = ""
    origin: str = "rules"

    def expr(self) -> Cmp:
        return Cmp(self.key, self.op, self.value)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "op": self.op,
                               "value": list(self.value) if isinstance(self.value, tuple) else self.value,
                               "words": self.words, "applied_as": self.applied_as, "status": self.status,
                               "origin": self.origin}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class Inferred:
    """What self-query read from a question, and how it is applied (see the module docstring)."""

    constraints: tuple[Constraint, ...] = ()
    #: Versions the question names that no visible document has (answering refuses them).
    unknown_versions: tuple[str, ...] = ()
    #: Where the version came from: "question", "conversation" or "none".
    version_origin: str = "none"
    method: str = "rules"
    #: The LLM pass (:class:`beleg.query.self_query_llm.LLMPass`) when ``method`` is "llm".
    llm: Any = None

    def applied(self, how: str | None = None) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.status == "applied" and how in (None, c.applied_as))

    def filter_expr(self) -> Expr | None:
        """The hard part: every applied filter constraint, ANDed."""
        return combine(*(c.expr() for c in self.applied(FILTER)))

    def boost_expr(self) -> Expr | None:
        """The documents a boost favours (the asked versions), or None."""
        return combine(*(c.expr() for c in self.applied(BOOST)))

    def overridden_by(self, expr: Expr | None) -> Inferred:
        """This inference with every constraint on a key the caller's filter names marked overridden."""
        keys = filter_keys(expr)
        if not keys:
            return self
        changed = tuple(replace(c, status="overridden", reason=f"your filter on {c.key!r} wins")
                        if c.status == "applied" and c.key in keys else c for c in self.constraints)
        return replace(self, constraints=changed)

    def notes(self) -> list[str]:
        """One line per constraint, for trace notes."""
        out = []
        for c in self.constraints:
            value = ", ".join(c.value) if isinstance(c.value, tuple) else c.value
            source = "proposed by the LLM" if c.origin == "llm" else f"from {c.words!r}"
            line = f"self-query: {c.key} {c.op} {value} {source} ({c.applied_as}, {c.status})"
            out.append(line + (f": {c.reason}" if c.reason else ""))
        if self.unknown_versions:
            out.append(f"self-query: no visible document has version {', '.join(self.unknown_versions)}")
        if self.llm is not None:
            out.extend(self.llm.notes())
        return out

    def to_json(self) -> dict[str, Any]:
        f, b = self.filter_expr(), self.boost_expr()
        out = {"enabled": True, "method": self.method, "constraints": [c.to_json() for c in self.constraints],
               "unknown": {"version": list(self.unknown_versions)}, "version_origin": self.version_origin,
               "filter": None if f is None else repr(f), "boost": None if b is None else repr(b)}
        if self.llm is not None:
            out["llm"] = self.llm.to_json()
        return out


def self_query_mode(value: bool | str | None, has_llm: bool) -> str:
    """``"rules"``, ``"llm"`` or ``"off"`` for a ``self_query=`` value (see :data:`MODES`).

    ``"llm"`` without an LLM is an error, not a quiet fall back to the rules.
    """
    if value is None or value is True:
        return "rules"
    if value is False:
        return "off"
    mode = str(value).strip().casefold()
    if mode not in MODES:
        raise ConfigError(f"self-query mode {value!r} is not known; use one of {', '.join(MODES)}")
    if mode == "auto":
        return "llm" if has_llm else "rules"
    if mode == "llm" and not has_llm:
        raise ConfigError("self-query 'llm' needs an LLM, and none is configured; pass --llm PROVIDER:MODEL "
                          "or use --self-query rules")
    return mode


def disabled_json() -> dict[str, Any]:
    """The ``self_query`` trace object when self-query is switched off."""
    return {"enabled": False, "constraints": [], "unknown": {"version": []}, "filter": None, "boost": None}


def filter_keys(expr: Expr | None) -> set[str]:
    """Every metadata key a filter expression names."""
    return set(named_keys(expr))


# ---------------------------------------------------------------------- inference
def infer_constraints(question: str, values: Callable[[str], set[str]], *, today: dt.date | None = None,
                      context: Conversation = ()) -> Inferred:
    """Read the constraints ``question`` states, using only values ``values(key)`` returns.

    ``values`` gives the distinct values of a metadata key among the documents the asker
    may see (``KnowledgeBase.metadata_values(key, principal)``); it is called at most once
    per key, and only for keys the question has words for. ``context`` holds earlier
    questions of a conversation, or their judgement for this question
    (:func:`beleg.query.conversation.judged`): a follow-up that names no version keeps the one
    asked before (the same rule as the answer's target version). ``today`` resolves "last year".
    """
    from beleg.query.conversation import earlier_questions

    cache: dict[str, set[str]] = {}

    def visible(key: str) -> set[str]:
        if key not in cache:
            cache[key] = {str(v) for v in values(key)}
        return cache[key]

    constraints: list[Constraint] = []
    products = sorted(visible("product"))
    constraints += _products(question, products)
    asked = asked_versions(question, context, visible("version"), products) \
        if _has_digit(question, earlier_questions(context)) else None
    if asked is not None and asked.known:
        spans = version_spans(asked.text, products, visible("version"))
        words = ", ".join(spans.get(v, v) for v in asked.known)
        constraints.append(_one_or_in("version", asked.known, words, BOOST))
    constraints += _status(question, lambda: visible("status"), versioned=bool(asked and asked.known))
    constraints += _language(question, lambda: visible("language"))
    constraints += _dates(question, lambda: visible("date"), today)
    return Inferred(tuple(constraints), asked.unknown if asked else (), asked.origin if asked else "none")


def _has_digit(question: str, context: Sequence[str]) -> bool:
    return any(re.search(r"\d", text) for text in (question, *context))


def _one_or_in(key: str, found: Sequence[str], words: str, how: str) -> Constraint:
    found = tuple(dict.fromkeys(found))
    return Constraint(key, "=", found[0], words, how) if len(found) == 1 else Constraint(key, "in", found, words, how)


def _products(question: str, products: Iterable[str]) -> list[Constraint]:
    found: dict[str, str] = {}
    for product in products:
        m = re.search(rf"(?<!\w){re.escape(product)}(?!\w)", question, re.IGNORECASE)
        if m:
            found[product] = m.group(0)
    if not found:
        return []
    return [_one_or_in("product", list(found), ", ".join(found.values()), FILTER)]


def _pick(candidates: Iterable[str], visible: set[str]) -> list[str]:
    """The stored spellings of ``candidates`` among the visible values (case-insensitive)."""
    by_fold = {v.casefold(): v for v in visible}
    return [by_fold[c] for c in candidates if c in by_fold]


def _status(question: str, visible: Callable[[], set[str]], *, versioned: bool) -> list[Constraint]:
    hits = [(m.group(0), names) for pattern, names in _STATUS_CUES if (m := pattern.search(question))]
    if not hits:
        return []
    words = ", ".join(w for w, _ in hits)
    if len(hits) > 1:
        return [Constraint("status", "=", "", words, FILTER, "skipped",
                           "the question contrasts several statuses; none is applied")]
    word, names = hits[0]
    chosen = _pick(names, visible())
    if not chosen:
        return [Constraint("status", "=", names[0], word, FILTER, "skipped",
                           "no document you may see has this status")]
    found = _one_or_in("status", chosen, word, FILTER)
    if versioned:
        return [replace(found, status="skipped", reason=VERSION_DECIDES)]
    return [found]


def _language(question: str, visible: Callable[[], set[str]]) -> list[Constraint]:
    named: dict[str, str] = {}
    translation: list[str] = []
    for pattern in (_LANG_IN, _LANG_DOCS):
        for m in pattern.finditer(question):
            if _TRANSLATION.search(question[max(0, m.start() - 40): m.start()]) or (
                    pattern is _LANG_IN and not _DOC_CUE.search(question)):
                translation.append(m.group(0))
            else:
                named.setdefault(_language_of(m.group("l")), m.group(0))
    if not named:
        return [Constraint("language", "=", "", ", ".join(translation), FILTER, "skipped",
                           "not a request for documents in that language (a translation, or no word about "
                           "documents)")] \
            if translation else []
    chosen = [v for code in named for v in _pick(_LANGUAGES[code], visible())]
    words = ", ".join(named.values())
    if not chosen:
        return [Constraint("language", "=", next(iter(named)), words, FILTER, "skipped",
                           "no document you may see is in this language")]
    return [_one_or_in("language", chosen, words, FILTER)]


def _dates(question: str, visible: Callable[[], set[str]], today: dt.date | None) -> list[Constraint]:
    ranges = date_ranges(question, today)
    if not ranges:
        return []
    if not visible():
        return [Constraint("date", "=", "", ", ".join(r.words for r in ranges), FILTER, "skipped",
                           "no document you may see has a date")]
    out = []
    for r in ranges:
        if r.start is not None:
            out.append(Constraint("date", ">=", r.start.isoformat(), r.words, FILTER))
        if r.end is not None:
            out.append(Constraint("date", "<", r.end.isoformat(), r.words, FILTER))
    return out


# ---------------------------------------------------------------------- applying
def apply_constraints(run: Callable[[Expr | None], list[Hit]], expr: Expr | None, inferred: Inferred,
                      k: int) -> list[Hit]:
    """Search with the inferred constraints inside the caller's filter ``expr``.

    ``run(expr)`` is one permission-checked search. Filters are ANDed to ``expr``; a boost
    runs the same search pinned to the boosted values as well and fuses both rankings with
    RRF (k=60), so only hits the first search may return are reordered or added from the
    pinned one, which is a narrowing of it.
    """
    inferred = inferred.overridden_by(expr)
    narrowed = combine(expr, inferred.filter_expr())
    hits = run(narrowed)
    boost = inferred.boost_expr()
    if boost is None:
        return hits
    pinned = run(combine(narrowed, boost))
    return _fuse_boost(hits, pinned, k)


def _fuse_boost(hits: list[Hit], pinned: list[Hit], k: int) -> list[Hit]:
    by_id = {h.chunk_id: h for h in [*hits, *pinned]}
    boosted = {h.chunk_id for h in pinned}
    fused = rrf([[h.chunk_id for h in hits], [h.chunk_id for h in pinned]])[:k]
    return [replace(by_id[cid], score=score,
                    scores={**by_id[cid].scores, "self_query_rrf": score, "boosted": float(cid in boosted)})
            for cid, score in fused]


__all__ = ["BOOST", "FILTER", "MODES", "VERSION_DECIDES", "Constraint", "Inferred", "apply_constraints",
           "disabled_json", "filter_keys", "infer_constraints", "self_query_mode"]
