"""What an LLM answer's claim says, checked against the text it cites and the governing source.

A claim sentence can share most of its words and every number with the text it cites and
still say something else: "512 GB" for the cited "512 MB", "is not 512 MB", "512 MB, and
there is no limit for tenants". Three checks, each one a person can redo by reading:

* **values**: every typed value of the claim (:mod:`beleg.answer.values`: duration, size,
  percentage, money, date, clock time) equals a value of the cited text in kind and
  quantity, so "512 GB" is not "512 MB". Equal quantities in other units count as equal,
  as ``values.same_value`` normalises them ("0.5 GB" = "512 MB" in its binary reading,
  "72 hours" = "3 days"), and their numbers need not be written in the cited text
  (:func:`converted_numbers`); a less precise date ("2026") is backed by a full one. A number
  that the cited text states without a unit values.py reads ("512 Megabytes", a table cell)
  cannot be compared and is left to the number check.
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

from beleg.answer.conflicts import detect_conflicts
from beleg.answer.quarantine import shown_heading_path, shown_value
from beleg.answer.scoring import Sentence
from beleg.answer.types import Conflict, ConflictValue, Source
from beleg.answer.values import Value, extract_values, same_value
from beleg.index.analyzer import analyze, detect_language
from beleg.sentences import split_sentences

#: A clause needs more than this share of its content terms in the cited text (a whole claim
#: needs this share: citations.SUPPORT_SHARE).
CLAUSE_SHARE = 0.5
#: Value kinds compared by quantity; a bare count is a number, compared as digits.
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
    """Everything :func:`value_gaps` and :func:`clause_gaps` find in one claim sentence."""
    text = LABELS.sub("", claim)
    return value_gaps(text, "\n".join(t for t, _ in cited)) + clause_gaps(text, cited, language)


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
