"""What an answer is made of: labelled sources, verified citations, conflicts.

Every value is frozen, so what a trace shows is what produced the answer. ``to_json``
methods give the ``beleg ask --json`` contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from beleg.answer.quarantine import Quarantine, quarantine_hit
from beleg.markup import plain
from beleg.types import Hit

REFUSAL = "The sources do not answer this."
#: An answer was found but not shown: its confidence is below the floor, or an LLM's answer
#: failed the citation checks. It is not "the sources do not answer this": the closest
#: passages shown under it may well answer, Beleg could not show that they do.
WITHHELD = "No answer could be confirmed from the sources."


@dataclass(frozen=True, slots=True)
class Source:
    """One piece of evidence shown to the reader (and to an LLM) under a label like ``S1``.

    ``rank`` is its place after evidence assessment (1 = governs); ``reasons`` say why it
    ranked there ("version 3.0 matches", "status historical", "authority contract").
    ``eligible`` is False for sources that may be shown but must not carry the answer
    (another version than the one asked about, a draft). ``flags`` carries ingest-time
    findings such as ``"instruction-like"`` (possible prompt injection); ``quarantine``
    says which of its sentences and fields are withheld for holding instruction-like text
    (computed at query time, see :mod:`beleg.answer.quarantine`).
    """

    label: str
    hit: Hit
    rank: int
    eligible: bool = True
    reasons: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    #: Computed from the hit when not given, so no Source can carry unscanned text.
    quarantine: Quarantine = None  # type: ignore[assignment]
    #: The header row of the table this chunk opens inside when the header is in an earlier
    #: chunk (a long table is cut between rows): the chunk's first table reads its rows with it.
    table_lead: str = ""
    #: How well it governs, without the retrieval position (lower governs): eligibility,
    #: version match, status and authority as evidence assessment ranks them; () when unknown.
    standing: tuple[int, ...] = ()

    def governs_over(self, other: Source) -> bool:
        """Whether this source governs over ``other`` by standing, not merely by retrieval order."""
        return bool(self.standing) and bool(other.standing) and self.standing < other.standing

    def __post_init__(self) -> None:
        if self.quarantine is None:
            object.__setattr__(self, "quarantine", quarantine_hit(self.hit))

    @property
    def version(self) -> str | None:
        v = self.hit.metadata.get("version")
        return None if v is None else str(v)

    @property
    def status(self) -> str:
        return str(self.hit.metadata.get("status") or "unknown")

    @property
    def authority(self) -> str:
        return str(self.hit.metadata.get("authority") or "unknown")

    @property
    def date(self) -> str | None:
        d = self.hit.metadata.get("date")
        return None if d is None else str(d)

    def to_json(self) -> dict[str, Any]:
        h = self.hit
        return {
            "label": self.label,
            "chunk_id": h.chunk_id,
            "doc_id": h.doc_id,
            "source": h.source,
            "title": h.title,
            "heading_path": " > ".join(h.heading_path),
            "version": self.version,
            "status": self.status,
            "authority": self.authority,
            "date": self.date,
            "language": h.metadata.get("language"),
            "rank": self.rank,
            "eligible": self.eligible,
            "reasons": list(self.reasons),
            "flags": list(self.flags),
            "withheld": _withheld_json(self),
            "start": h.start,
            "end": h.end,
            "score": h.score,
            "text": h.text,
        }


def _withheld_json(src: Source) -> dict[str, Any]:
    """What of the source is withheld; spans are document offsets like ``start``/``end``."""
    q, base = src.quarantine, src.hit.start
    return {"whole": q.whole, "spans": [[base + a, base + b] for a, b in q.spans], "fields": list(q.fields)}


@dataclass(frozen=True, slots=True)
class Citation:
    """A label in the answer, resolved to the chunk it names and checked in code.

    ``quote`` is the exact text the claim rests on; ``start``/``end`` index into the
    cited *document's* text, so ``document.text[start:end] == quote`` when verified.
    ``problem`` says why verification failed (unknown label, quote not in chunk, ...).
    """

    label: str
    chunk_id: str | None
    doc_id: str | None
    source: str | None
    quote: str
    start: int | None
    end: int | None
    verified: bool
    problem: str | None = None
    #: What a person reads: the quote without markup (:func:`beleg.markup.plain`),
    #: or a rendering such as a table row with its header's names; None means ``plain(quote)``.
    display: str | None = None

    @property
    def shown(self) -> str:
        return self.display if self.display is not None else plain(self.quote)

    def to_json(self) -> dict[str, Any]:
        out = {
            "label": self.label,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "source": self.source,
            "quote": self.quote,
            "display": self.shown,
            "start": self.start,
            "end": self.end,
            "offsets": "document-text",
            "verified": self.verified,
        }
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True, slots=True)
class ConflictValue:
    """One source's value in a conflict. ``value`` is what a reader sees, as the source writes it
    (sign, unit and, for a count, what it counts: "-25 °C", "120 requests per minute");
    ``kind`` and ``normalized`` are what the comparison used (:mod:`beleg.answer.values`)."""

    value: str
    source: str
    chunk_id: str
    label: str
    version: str | None
    status: str
    authority: str
    governs: bool
    quote: str = ""
    #: The source also holds instruction-like text (withheld, not followed); the value
    #: itself comes from one of its factual sentences.
    contains_instructions: bool = False
    #: How the value stands to the governing one: "governs", "superseded" (an older
    #: version or a historical source), "later" (a newer version than the governing one,
    #: which governs because the question asks about its version) or "contradicts" (same
    #: version, or unversioned).
    relation: str = ""
    #: The value's kind (duration, size, percent, money, temperature, date, time, count).
    kind: str = ""
    #: The value as compared: seconds, bytes, percent, "EUR 3.50", degrees Celsius, an ISO
    #: date, minutes since midnight, or the number; None when not given.
    normalized: float | str | None = None

    @property
    def note(self) -> str:
        return "contains instructions; not followed" if self.contains_instructions else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "source": self.source,
            "chunk_id": self.chunk_id,
            "label": self.label,
            "version": self.version,
            "status": self.status,
            "authority": self.authority,
            "governs": self.governs,
            "quote": self.quote,
            "contains_instructions": self.contains_instructions,
            "relation": self.relation,
            "kind": self.kind,
            "normalized": self.normalized,
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """Sources that state different values for the same fact; exactly one value governs."""

    #: The fact's name: the governing value's section heading, "" when it has none.
    fact: str
    values: tuple[ConflictValue, ...]
    #: What the values measure: the governing value's heading and the words bound to it.
    attribute: str = ""

    @property
    def governing(self) -> ConflictValue | None:
        return next((v for v in self.values if v.governs), None)

    def to_json(self) -> dict[str, Any]:
        return {"fact": self.fact, "attribute": self.attribute, "values": [v.to_json() for v in self.values]}


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer a person can check.

    ``verified`` (= ``quotes_verified``) is True when every citation verified and no claim
    sentence lacks a citation; ``problems`` lists what failed otherwise. A refusal has no
    citations and ``verified`` True (there is nothing to check), except one made below
    ``min_confidence``: it keeps the closest passages' citations, which its text marks as not
    shown to answer. ``verified`` says nothing about
    whether the quote answers the question: that is ``supported``, with ``confidence`` in
    [0, 1], from ``support`` (:class:`beleg.answer.support.Support`; None for answers made
    before support was assessed). ``trace`` records how it was made: queries, retrieval,
    assessment, prompts' sizes, LLM calls, regenerations.
    """

    question: str
    answer: str
    refused: bool
    citations: tuple[Citation, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    sources: tuple[Source, ...] = ()
    verified: bool = True
    problems: tuple[str, ...] = ()
    backend: str = "extractive"
    trace: dict[str, Any] = field(default_factory=dict)
    support: Any = None

    @property
    def quotes_verified(self) -> bool:
        """Labels exist, quotes are in the cited chunks, offsets are exact (the old ``verified``)."""
        return self.verified

    @property
    def supported(self) -> bool:
        """The cited text answers this question (see :mod:`beleg.answer.support`)."""
        return bool(self.support is not None and self.support.supported)

    @property
    def confidence(self) -> float:
        return 0.0 if self.support is None else float(self.support.confidence)

    @property
    def withheld(self) -> bool:
        """Not answered although a candidate answer was found (``trace["withheld_answer"]``):
        below ``min_confidence``, or an LLM answer that failed the citation checks. A refusal
        that is not withheld found nothing to answer with: the sources do not cover it."""
        return self.refused and "withheld_answer" in self.trace

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "refused": self.refused,
            "withheld": self.withheld,
            "verified": self.verified,
            "quotes_verified": self.quotes_verified,
            "supported": self.supported,
            "confidence": round(self.confidence, 4),
            "support": None if self.support is None else self.support.to_json(),
            "problems": list(self.problems),
            "backend": self.backend,
            "citations": [c.to_json() for c in self.citations],
            "conflicts": [c.to_json() for c in self.conflicts],
            "sources": [s.to_json() for s in self.sources],
            "trace": self.trace,
        }
