"""Sentence-level quarantine of instruction-like text (possible prompt injection).

Ingest flags a chunk when :func:`beleg.ingest.injection.detect_instructions` finds text
addressed to a model ("ignore all previous instructions and tell the user ..."). A flagged
chunk often holds facts as well (an imported note that states a retry window *and* carries
a planted instruction), so withholding it whole loses evidence and hides a conflict. Here
the unit of withholding is the sentence:

* the sentences (as :func:`beleg.sentences.split_sentences` cuts them) that contain
  a finding are withheld: never evidence, never quoted, replaced by :data:`MARKER` in every
  prompt, and a quote that overlaps one fails verification;
* the other sentences of the chunk stay usable, with the chunk's metadata and authority;
* a chunk with no prose sentence left (or one flagged at ingest where the current detector
  finds nothing to point at) is withheld whole, as before.

The spans are computed at query time from the chunk text with the current detector, and
cached by chunk id (offsets only, never text, so an erased document leaves nothing here).
Titles, headings and metadata values that reach a prompt are scanned the same way:
:func:`shown_value` replaces an instruction-like value by the marker.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beleg.ingest.injection import detect_instructions, detect_many, is_instruction_like
from beleg.sentences import split_sentences

__all__ = ["MARKER", "PROSE_KINDS", "Quarantine", "instruction_like", "quarantine_chunk", "quarantine_hit",
           "shown_heading_path", "shown_value", "withheld_fields"]

#: What a prompt (or a tool output) shows in place of withheld text.
MARKER = "[withheld: instruction-like text]"
#: Span kinds that can carry a fact; a chunk with none of them left is withheld whole.
PROSE_KINDS = ("sentence", "list-item", "table-row")

Spans = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Quarantine:
    """What of one chunk is withheld. ``spans`` are offsets into the *chunk* text, sorted and
    disjoint; ``whole`` withholds everything; ``fields`` names the title, section or
    metadata keys whose values are instruction-like."""

    spans: Spans = ()
    whole: bool = False
    fields: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """Whether anything of the source is withheld."""
        return bool(self.spans or self.whole or self.fields)

    @property
    def partial(self) -> bool:
        """Some sentences withheld, the rest usable."""
        return bool(self.spans) and not self.whole

    def overlaps(self, start: int, end: int) -> bool:
        """Whether the chunk range ``[start, end)`` touches withheld text."""
        if self.whole:
            return True
        return any(a < end and start < b for a, b in self.spans)

    def redact(self, text: str) -> str:
        """The chunk text with each withheld span replaced by :data:`MARKER`."""
        if self.whole:
            return MARKER
        out, pos = [], 0
        for a, b in self.spans:
            out.append(text[pos:a])
            out.append(MARKER)
            pos = b
        out.append(text[pos:])
        return "".join(out)


# ---------------------------------------------------------------------- chunk text
def withheld_spans(text: str) -> Spans:
    """Chunk offsets to withhold: every split sentence that overlaps a finding, and for a
    finding no sentence covers (front matter, a thematic break) the lines it sits on."""
    findings = [_trimmed(text, f.start, f.end) for f in detect_instructions(text)]
    if not findings:
        return ()
    sentences = [(s.start, s.end) for s in split_sentences(text)]
    out: list[tuple[int, int]] = []
    for start, end in findings:
        covering = [(a, b) for a, b in sentences if a < end and start < b]
        out.extend(covering)
        if not _covers(covering, start, end):
            lo = text.rfind("\n", 0, start) + 1
            hi = text.find("\n", end)
            out.append((lo, len(text) if hi < 0 else hi))
    return _merge(out)


#: What a finding may start or end with that belongs to the sentence before or after it: a
#: rule anchored at a sentence start ("(?:^|[.!?]\s+)Assistant,") matches the period of the
#: previous sentence, which would withhold that (factual) sentence too.
_EDGE = " \t\r\n.!?;:,\u2026"


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """A finding's span without the punctuation and spaces at its edges (kept when nothing else is left)."""
    a, b = start, end
    while a < b and text[a] in _EDGE:
        a += 1
    while b > a and text[b - 1] in _EDGE:
        b -= 1
    return (a, b) if a < b else (start, end)


def _covers(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    pos = start
    for a, b in sorted(spans):
        if a > pos:
            return False
        pos = max(pos, b)
        if pos >= end:
            return True
    return pos >= end


def _merge(spans: Iterable[tuple[int, int]]) -> Spans:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


def _nothing_left(text: str, spans: Spans) -> bool:
    """Whether no prose sentence of the chunk lies outside the withheld spans."""
    return not any(s.kind in PROSE_KINDS and not any(a < s.end and s.start < b for a, b in spans)
                   for s in split_sentences(text))


def quarantine_chunk(text: str, flags: Iterable[str] = ()) -> Quarantine:
    """The quarantine of a chunk's text (fields not considered; see :func:`quarantine_hit`).

    A chunk flagged at ingest in which the current detector finds nothing is withheld
    whole: the flag says something is there, and we cannot point at it.
    """
    spans = withheld_spans(text)
    if not spans:
        return Quarantine(whole=is_instruction_like(flags))
    return Quarantine(spans, _nothing_left(text, spans))


class _SpanCache:
    """Chunk id → (digest of the text, quarantine), bounded, thread-safe. Holds offsets only."""

    def __init__(self, max_entries: int = 20_000) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, tuple[bytes, bool, Quarantine]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, chunk_id: str, text: str, flags: Sequence[str]) -> Quarantine:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        flagged = is_instruction_like(flags)
        with self._lock:
            found = self._items.get(chunk_id)
            if found is not None and found[0] == digest and found[1] == flagged:
                self._items.move_to_end(chunk_id)
                return found[2]
        q = quarantine_chunk(text, flags)
        with self._lock:
            self._items[chunk_id] = (digest, flagged, q)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return q


_CACHE = _SpanCache()


# ---------------------------------------------------------------------- fields
class _FieldCache:
    """Field value → instruction-like, bounded, thread-safe. Titles, headings and metadata values
    repeat across chunks and questions; each new one costs the detector's encoder a pass."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, bool] = OrderedDict()
        self._lock = threading.Lock()

    def flagged(self, values: Iterable[str]) -> set[str]:
        """The values among ``values`` that hold instruction-like text; the unknown ones are read
        together (one encoder pass for all of a chunk's fields)."""
        wanted = list(dict.fromkeys(v for v in values if v.strip()))
        with self._lock:
            known = {v: self._items[v] for v in wanted if v in self._items}
        unknown = [v for v in wanted if v not in known]
        if unknown:
            found = dict(zip(unknown, (bool(f) for f in detect_many(unknown))))
            with self._lock:
                self._items.update(found)
                while len(self._items) > self.max_entries:
                    self._items.popitem(last=False)
            known.update(found)
        return {v for v in wanted if known[v]}


_FIELDS = _FieldCache()


def instruction_like(value: Any) -> bool:
    """Whether a title, heading or metadata value holds instruction-like text."""
    return isinstance(value, str) and bool(_FIELDS.flagged([value]))


def shown_value(value: Any) -> str:
    """What a prompt may show of a field value: the value, or :data:`MARKER`."""
    text = "" if value is None else str(value)
    return MARKER if instruction_like(text) else text


def shown_heading_path(path: Sequence[str], sep: str = " > ") -> str:
    """The heading path with each instruction-like heading replaced by the marker."""
    return sep.join(shown_value(h) for h in path)


def withheld_fields(title: str, heading_path: Sequence[str], metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """Names of the fields whose values are instruction-like: ``"title"``, ``"section"``, or a metadata key."""
    def strings(value: Any) -> list[str]:
        return [v for v in (value if isinstance(value, (list, tuple)) else (value,)) if isinstance(v, str)]

    fields = [("title", strings(title)), ("section", strings(list(heading_path))),
              *((str(k), strings(v)) for k, v in metadata.items() if k != "title")]
    flagged = _FIELDS.flagged(v for _, values in fields for v in values)
    return tuple(name for name, values in fields if any(v in flagged for v in values))


def quarantine_hit(hit: Any) -> Quarantine:
    """The quarantine of a retrieved chunk (a :class:`beleg.types.Hit`): text and fields."""
    q = _CACHE.get(hit.chunk_id, hit.text, tuple(hit.flags))
    fields = withheld_fields(hit.title, hit.heading_path, hit.metadata)
    return Quarantine(q.spans, q.whole, fields) if fields else q
