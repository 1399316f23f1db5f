"""Detect sources that state different values for the fact a question asks about.

A conflict needs three things, all checked in code: the governing sentence holds a typed
value (a duration, size, percentage, amount, date or count), another source's sentence
is nearly as good an answer to the same question, and that sentence's value of the same
kind differs. Sentences holding several values of the kind ("grew from 12 to 24 hours")
are skipped as ambiguous, except the governing one, whose first value is taken: a missed
conflict is better than an invented one.

A source that also holds instruction-like text still states its facts: its withheld
sentences are never candidates (see :mod:`beleg.answer.quarantine`), but a value from one
of its factual sentences is reported, marked ``contains_instructions`` ("contains
instructions; not followed"), so a planted note cannot hide a disagreement either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from beleg.answer.scoring import Sentence
from beleg.answer.types import Conflict, ConflictValue
from beleg.answer.values import Value, expected_kind, same_value

#: A competing sentence must score within this of the governing one to be "about the same fact".
CONFLICT_MARGIN = 0.2

_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")


def fact_name(sentence: Sentence, question: str) -> str:
    """Name the fact by the governing sentence's section heading, else by the question."""
    path = sentence.source.hit.heading_path
    if len(path) > 1:
        return _NUMBERING.sub("", path[-1]).strip() or question
    return question


_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def _value(s: Sentence, kind: str, first: bool) -> Value | None:
    """The sentence's value of ``kind``. With several, the one the author emphasised wins
    ("the default is **10**; the maximum is 50"); without emphasis the sentence is
    ambiguous (unless ``first``: the governing sentence's first value is taken)."""
    # Number words ("for one message") are counts in prose far more often than stated facts.
    vals = [v for v in s.values if v.kind == kind and any(ch.isdigit() for ch in v.raw)]
    if len(vals) > 1:
        bold = [m.span() for m in _BOLD.finditer(s.text)]
        emphasised = [v for v in vals if any(a <= v.start and v.end <= b for a, b in bold)]
        if len(emphasised) == 1:
            return emphasised[0]
        if not first:
            return None
    return vals[0] if vals else None


def _entry(s: Sentence, v: Value, governs: bool) -> ConflictValue:
    src = s.source
    return ConflictValue(v.raw, src.hit.source, src.hit.chunk_id, src.label, src.version, src.status, src.authority,
                         governs, s.text, src.quarantine.active)


def _chunk_range(s: Sentence) -> tuple[int, int]:
    base = s.source.hit.start
    return s.doc_start - base, s.doc_end - base


def detect_conflicts(question: str, governing: Sentence, scored: Sequence[Sentence],
                     floor: float) -> tuple[tuple[Conflict, ...], list[Sentence]]:
    """Conflicts with the governing sentence, and the sentences that state the other values."""
    kind = expected_kind(question)
    if kind is None:
        kind = next((v.kind for v in governing.values if any(ch.isdigit() for ch in v.raw)), None)
    if kind is None:
        return (), []
    gv = _value(governing, kind, first=True)
    if gv is None:
        return (), []
    threshold = max(floor, governing.score - CONFLICT_MARGIN)
    seen = {governing.source.hit.doc_id}
    others: list[tuple[Sentence, Value]] = []
    for s in scored:  # best first, so each document contributes its best statement
        doc = s.source.hit.doc_id
        # Withheld (instruction-like) sentences are not among the candidates at all.
        if s.score < threshold or doc in seen or s.source.quarantine.overlaps(*_chunk_range(s)):
            continue
        v = _value(s, kind, first=False)
        if v is None:
            continue
        seen.add(doc)
        if not same_value(v, gv):
            others.append((s, v))
    if not others:
        return (), []
    values = (_entry(governing, gv, True), *(_entry(s, v, False) for s, v in others))
    return (Conflict(fact_name(governing, question), values),), [s for s, _ in others]
