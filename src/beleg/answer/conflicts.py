"""Detect sources that state a different value for the fact a question asks about.

A conflict is two values for the *same attribute* of the same subject (the retry window
of webhook deliveries), not two values of the same unit kind. Checked in code:

1. the governing sentence holds a typed value (duration, size, percentage, amount, date,
   clock time, count) of the kind the question asks for; with several, the one the author
   emphasised, else the one whose attribute best covers the question's focus;
2. another source's sentence scores within ``CONFLICT_MARGIN`` of it and holds a value of
   that kind whose attribute (:mod:`beleg.answer.attributes`: the words bound to the value,
   plus the heading) covers the question's focus and is the governing value's attribute.
   A sentence in another language than the governing one is measured against the best
   sentence of its own language instead: the scorer weighs the question's words less
   across languages, so a German question's best English sentence scores far below the
   German answer even when it states the same fact. Across languages only the closest
   statement (e5) of each language and version counts: a translated twin is closer to the
   governing clause than its neighbours, while no fixed similarity tells them apart;
3. the values differ and can be compared (:func:`beleg.answer.values.comparable`: clock
   times in two zones of unknown offset cannot). A document that also states the governing
   value for the attribute ("72 hours instead of 24 hours") is not in conflict: it mentions
   the other as history.

Each other value gets a ``relation`` to the governing one: ``superseded`` (an older
version, or a historical/deprecated source), ``later`` (a newer version than the one that
governs, as when the question asks about 2.0 and 2.10 says otherwise: a change, not a
contradiction) or ``contradicts`` (same version, or unversioned). Sentences holding several differing values for the attribute without emphasis
are skipped as ambiguous: a missed conflict is better than an invented one.

A source that also holds instruction-like text still states its facts: its withheld
sentences are never candidates (see :mod:`beleg.answer.quarantine`), but a value from one
of its factual sentences is reported, marked ``contains_instructions`` ("contains
instructions; not followed"), so a planted note cannot hide a disagreement either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from beleg.answer.attributes import (
    Attribute,
    attribute_name,
    attribute_of,
    focus_match,
    overlap,
    question_focus,
    question_words,
    same_attribute,
    similarity,
)
from beleg.answer.scoring import Sentence, row_header
from beleg.answer.types import Conflict, ConflictValue, Source
from beleg.answer.values import (
    Value,
    as_written,
    asks_clock_time,
    asks_temperature,
    comparable,
    expected_kind,
    same_value,
)
from beleg.index.analyzer import detect_language
from beleg.index.filters import number_key

#: A competing sentence must score within this of the governing one to be "about the same fact".
CONFLICT_MARGIN = 0.2
#: Statuses whose values were replaced by a later source.
HISTORICAL_STATUSES = frozenset({"historical", "superseded", "deprecated", "archived", "obsolete", "retired"})

_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def fact_name(sentence: Sentence) -> str:
    """The fact's name: the governing sentence's section heading ("Retry window"), "" when it
    has none. A document's title names the page, not a fact, and the question is no name at
    all ("Und auf welche Temperatur?" as a conflict's title)."""
    path = sentence.source.hit.heading_path
    return _NUMBERING.sub("", path[-1]).strip() if len(path) > 1 else ""


def _typed(s: Sentence, kind: str) -> list[Value]:
    # Number words ("for one message") are counts in prose far more often than stated facts.
    return [v for v in s.values if v.kind == kind and any(ch.isdigit() for ch in v.raw)]


def _emphasised(s: Sentence, vals: Sequence[Value]) -> list[Value]:
    bold = [m.span() for m in _BOLD.finditer(s.text)]
    # The number decides: "**30** seconds" emphasises the value as much as "**30 seconds**".
    return [v for v in vals if any(a <= v.start < b for a, b in bold)]


def _language(s: Sentence) -> str:
    lang = s.source.hit.metadata.get("language")
    return str(lang) if lang else detect_language(s.text, default="en")


def _attribute(s: Sentence, v: Value) -> Attribute:
    hit = s.source.hit
    header = row_header(s.source, s.span) if s.span.kind == "table-row" else None
    page = " ".join((hit.title, str(hit.metadata.get("product") or ""), *hit.heading_path[:-1]))
    return attribute_of(s.text, v, hit.heading_path, _language(s), s.values, header.text if header is not None else "",
                        page)


def _governing_value(s: Sentence, kind: str, focus: frozenset[str]) -> tuple[Value, Attribute] | None:
    """The emphasised value of the kind, else the one whose attribute covers the question best."""
    vals = _typed(s, kind)
    if not vals:
        return None
    bold = _emphasised(s, vals)
    if len(bold) == 1:
        return bold[0], _attribute(s, bold[0])
    pairs = [(v, _attribute(s, v)) for v in vals]
    # "raised from 60 to 120": the sentence states 120; 60 is what it no longer is
    pairs = [p for p in pairs if p[1].role != "former"] or pairs
    return max(pairs, key=lambda p: focus_match(p[1], focus))  # max keeps the first of equals


def _version_key(version: str) -> tuple[tuple[int, str], ...] | None:
    parts = re.findall(r"\d+", version)
    return tuple(number_key(p) for p in parts) if parts else None


def relation(governing: Source, other: Source) -> str:
    """``superseded`` for an older version or a historical source, ``later`` for a newer
    version, else ``contradicts``."""
    if governing.version and other.version and governing.version != other.version:
        g, o = _version_key(governing.version), _version_key(other.version)
        if g is not None and o is not None and o != g:
            return "superseded" if o < g else "later"
    if other.status in HISTORICAL_STATUSES and governing.status not in HISTORICAL_STATUSES:
        return "superseded"
    return "contradicts"


def _entry(s: Sentence, v: Value, governs: bool, rel: str) -> ConflictValue:
    src = s.source
    return ConflictValue(as_written(s.text, v), src.hit.source, src.hit.chunk_id, src.label, src.version, src.status,
                         src.authority, governs, s.text, src.quarantine.active, rel, v.kind, v.normalized)


def _chunk_range(s: Sentence) -> tuple[int, int]:
    base = s.source.hit.start
    return s.doc_start - base, s.doc_end - base


def _document_values(candidates: Sequence[Sentence], kind: str, gov_attr: Attribute, focus: frozenset[str],
                     asked: frozenset[str], embed: Callable[[list[str]], np.ndarray] | None,
                     ) -> list[tuple[Sentence, Value, float]]:
    """One document's statements of the governing attribute: (sentence, value, closeness), best first.

    Closeness is the focus and term overlap in the governing language, the e5 similarity
    across languages (where no term is shared). A sentence with several differing values
    for the attribute and no single emphasised one is ambiguous and dropped."""
    out: list[tuple[Sentence, Value, float]] = []
    for s in candidates:
        matched = [(v, a) for v in _typed(s, kind)
                   if same_attribute(gov_attr, a := _attribute(s, v), focus, embed, asked)]
        if len({str(v.normalized) for v, _ in matched}) > 1:
            bold = _emphasised(s, [v for v, _ in matched])
            matched = [(v, a) for v, a in matched if v in bold] if len(bold) == 1 else []
        out.extend((s, v, focus_match(a, focus) + overlap(gov_attr, a) if a.language == gov_attr.language
                    else similarity(gov_attr, a, embed)) for v, a in matched)
    return sorted(out, key=lambda x: -x[2])


def _closest_per_language(stated: dict[str, list[tuple[Sentence, Value, float]]], gov_lang: str,
                          ) -> dict[str, list[tuple[Sentence, Value, float]]]:
    """Of the documents in another language than the governing one, keep for each language and
    version the one whose statement is closest to the governing attribute."""
    best: dict[tuple[str, str], tuple[str, float]] = {}
    for doc, values in stated.items():
        s, _, closeness = values[0]
        lang = _language(s)
        if lang == gov_lang:
            continue
        key = (lang, s.source.version or "")
        if key not in best or closeness > best[key][1]:
            best[key] = (doc, closeness)
    keep = {doc for doc, _ in best.values()}
    return {doc: values for doc, values in stated.items() if _language(values[0][0]) == gov_lang or doc in keep}


def _thresholds(governing: Sentence, scored: Sequence[Sentence], floor: float) -> dict[str, float]:
    """The score a sentence of each language needs to be a candidate.

    Scores are comparable within one language only: the scorer weighs the question's words
    less across languages, so an English page that states the fact a German answer quotes
    scores far below it (0.35 against 0.81), below even ``floor``, the answerer's bar for
    sentences of the question's language. In a language whose best sentence scores below the
    governing one, that best sentence stands in for it and the floor does not apply; the
    attribute checks decide, across languages strictly (names, e5, the closest only)."""
    gov_lang = _language(governing)
    out: dict[str, float] = {}
    for s in scored:  # best first
        lang = _language(s)
        if lang not in out:
            own = lang == gov_lang or s.score >= governing.score
            out[lang] = max(floor, governing.score - CONFLICT_MARGIN) if own else s.score - CONFLICT_MARGIN
    return out


def _memoised(embed: Callable[[list[str]], np.ndarray] | None) -> Callable[[list[str]], np.ndarray] | None:
    """Each attribute phrase is embedded once per call (the governing one is compared with many)."""
    if embed is None:
        return None
    cache: dict[str, np.ndarray] = {}

    def cached(texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            cache.update(zip(todo, embed(todo)))
        return np.stack([cache[t] for t in texts])

    return cached


def detect_conflicts(question: str, governing: Sentence, scored: Sequence[Sentence], floor: float, *,
                     embed: Callable[[list[str]], np.ndarray] | None = None,
                     ) -> tuple[tuple[Conflict, ...], list[Sentence]]:
    """Conflicts with the governing sentence, and the sentences that state the other values.

    ``embed`` (e5 passages, normalised) lets a value in another language than the
    governing one match by the similarity of the two attribute phrases."""
    kind = "time" if asks_clock_time(question) else expected_kind(question) or (
        "temperature" if asks_temperature(question) else None)
    if kind == "date" and not _typed(governing, "date") and _typed(governing, "time"):
        kind = "time"  # "Wann beginnt die Wartung?" is answered by a time of day as well as by a date
    if kind is None or not _typed(governing, kind):
        # No kind asked for, or the chosen answer holds none ("notice period for price
        # changes" is a duration, not money): the answer's own value decides.
        kind = next((v.kind for v in governing.values if any(ch.isdigit() for ch in v.raw)), None)
    if kind is None:
        return (), []
    focus = question_focus(question)
    found = _governing_value(governing, kind, focus)
    if found is None:
        return (), []
    gv, gov_attr = found
    embed = _memoised(embed)
    asked = question_words(question)
    gov_lang = _language(governing)
    by_doc: dict[str, list[Sentence]] = {}
    thresholds = _thresholds(governing, scored, floor)
    for s in scored:
        doc = s.source.hit.doc_id
        # Withheld (instruction-like) sentences are not among the candidates at all.
        if s.score < thresholds[_language(s)] or doc == governing.source.hit.doc_id or \
                s.source.quarantine.overlaps(*_chunk_range(s)):
            continue
        by_doc.setdefault(doc, []).append(s)
    stated_by_doc: dict[str, list[tuple[Sentence, Value, float]]] = {}
    for doc, candidates in by_doc.items():  # in order of each document's best-scoring sentence
        stated = [x for x in _document_values(candidates, kind, gov_attr, focus, asked, embed) if comparable(x[1], gv)]
        if stated:
            stated_by_doc[doc] = stated
    others: list[tuple[Sentence, Value]] = []
    for stated in _closest_per_language(stated_by_doc, gov_lang).values():
        if any(same_value(v, gv) for _, v, _ in stated):
            continue  # states the governing value too
        others.append(stated[0][:2])
    if not others:
        return (), []
    gov_src = governing.source
    values = (_entry(governing, gv, True, "governs"),
              *(_entry(s, v, False, relation(gov_src, s.source)) for s, v in others))
    return (Conflict(fact_name(governing), values, attribute_name(gov_attr)),), [s for s, _ in others]


def _standing(v: ConflictValue, gov: ConflictValue) -> str:
    """"superseded by 3.0" / "changed in 2.10" / "contradicts the 3.0 contract", in words."""
    if v.relation == "superseded":
        return f"superseded by {gov.version}" if gov.version else f"superseded by {gov.label}"
    if v.relation == "later":
        return f"changed in {v.version}"
    target = f"the {gov.version} {gov.authority}" if gov.version else f"the {gov.authority} {gov.label}"
    return f"contradicts {target}"


def conflict_lines(conflict: Conflict) -> list[str]:
    """The plain-text report of a conflict: contradictions first, then superseded versions,
    then which source governs. Used by the extractive answer and the CLI alike."""
    gov = conflict.governing
    if gov is None:
        return []
    contra = [v for v in conflict.values if not v.governs and v.relation not in ("superseded", "later")]
    later = [v for v in conflict.values if not v.governs and v.relation == "later"]
    older = [v for v in conflict.values if not v.governs and v.relation == "superseded"]
    title = ("Sources disagree" if contra else "Values in other versions" if later and older
             else "Later values" if later else "Earlier values")
    # Without a known fact name the title stays bare: the governing line below says what it is.
    lines = [f"{title} on {conflict.fact}:" if conflict.fact and contra else
             f"{title} of {conflict.fact}:" if conflict.fact else f"{title}:"]
    for v in (*contra, *later, *older):
        note = f"; {v.note}" if v.note else ""
        lines.append(f"- {v.value} in {v.label}: {_standing(v, gov)} ({v.authority}, version {v.version or '-'}, "
                     f"{v.status}{note}) [{v.label}]")
    lines.append(f"{gov.label} governs: {gov.value}, {gov.authority}, version {gov.version or '-'}, {gov.status}.")
    return lines
