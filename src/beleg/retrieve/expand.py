"""Widen hits after retrieval: small-to-big parents and neighbour expansion.

* **Parents** (``parent-child`` chunking): the index holds small children; a matched
  child is replaced by its parent, the size-capped heading section it lies in
  (:func:`beleg.ingest.chunking.parents_of_children`), with the child's offsets kept in
  ``Hit.matched``. A parent matched through several children is returned once, at the
  rank of its best child.
* **Neighbours** (``expand=N``, any chunking): the hit plus up to ``N`` units before and
  after it *in the same heading section* (units are the stored chunks, or the parents
  under ``parent-child``); the span runs from the first to the last of them.

Both only ever widen a hit inside its own document, read from the catalog at expansion
time. Access is per document in Beleg (tenant, ACL), so the widened text is readable by
whoever may read the hit; the document's metadata is still checked again against the
principal, and a hit whose document changed or vanished since the snapshot is dropped
rather than widened with text it did not match. A widened hit carries the injection flags
of every stored chunk it now covers, so quarantine sees them (:mod:`beleg.answer.quarantine`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from beleg.errors import ConfigError
from beleg.index.ports import ChunkRecord, SearchIndex
from beleg.ingest.chunking import ChunkingConfig, parents_of_children
from beleg.types import Document, Hit, Principal

Unit = tuple[int, int, tuple[str, ...]]  # (start, end, heading path) in document text

#: Parent spans per (doc id, content hash, max_tokens, chunking rules); documents are re-chunked rarely.
_PARENTS: OrderedDict[tuple[str, str, int, int], list[Unit]] = OrderedDict()
_PARENT_CACHE_SIZE = 512
_PARENTS_LOCK = threading.Lock()  # parallel sub-searches share the cache


class DocumentSource(Protocol):
    def document(self, doc_id: str) -> Document | None: ...


def parse_expand(spec: str | int | None) -> int:
    """``"neighbours=2"`` (or ``"neighbors=2"``, ``2``) → 2; None or ``"none"`` → 0."""
    if spec is None or spec == "none":
        return 0
    if isinstance(spec, int):
        n = spec
    else:
        key, sep, value = str(spec).partition("=")
        if not sep or key.strip() not in ("neighbours", "neighbors") or not value.strip().isdigit():
            raise ConfigError(f"--expand expects neighbours=N (N a whole number, e.g. neighbours=1), got {spec!r}")
        n = int(value)
    if not 0 <= n <= 20:
        raise ConfigError(f"neighbour expansion N={n} is outside 0..20; use a small number such as 1 or 2")
    return n


class Expander:
    """Reads what widening needs (documents, their chunks) once per call, as ``principal``."""

    def __init__(self, index: SearchIndex, store: DocumentSource, principal: Principal) -> None:
        self.index = index
        self.store = store
        self.principal = principal
        self._docs: dict[str, Document | None] = {}
        self._chunks: dict[str, list[ChunkRecord]] = {}

    def document(self, doc_id: str) -> Document | None:
        """The document, or None when it is gone or the principal may not read it (fail closed)."""
        if doc_id not in self._docs:
            doc = self.store.document(doc_id)
            self._docs[doc_id] = doc if doc is not None and self.principal.may_read(doc.metadata) else None
        return self._docs[doc_id]

    def current(self, hit: Hit) -> Document | None:
        """The hit's document if its text at the hit's offsets is still the hit's text."""
        doc = self.document(hit.doc_id)
        return doc if doc is not None and doc.text[hit.start:hit.end] == hit.text else None

    def stored(self, doc_id: str) -> list[ChunkRecord]:
        """The document's stored chunks in order (empty when the principal may not read it)."""
        if doc_id not in self._chunks:
            self._chunks[doc_id] = self.index.document_chunks(doc_id, self.principal)
        return self._chunks[doc_id]

    def parents(self, doc: Document, chunking: ChunkingConfig) -> list[Unit]:
        key = (doc.doc_id, doc.content_hash, chunking.max_tokens, chunking.rules)
        with _PARENTS_LOCK:
            found = _PARENTS.get(key)
            if found is not None:
                _PARENTS.move_to_end(key)
                return found
        children = [(c.start, c.end, tuple(c.heading_path)) for c in self.stored(doc.doc_id)]
        found = parents_of_children(doc.text, children, chunking)
        with _PARENTS_LOCK:
            _PARENTS[key] = found
            while len(_PARENTS) > _PARENT_CACHE_SIZE:
                _PARENTS.popitem(last=False)
        return found

    def flags_within(self, doc_id: str, start: int, end: int) -> tuple[str, ...]:
        """Injection flags of every stored chunk that overlaps ``[start, end)``."""
        found: dict[str, None] = {}
        for c in self.stored(doc_id):
            if c.start < end and start < c.end:
                found.update(dict.fromkeys(c.flags))
        return tuple(found)

    def widen(self, hit: Hit, doc: Document, start: int, end: int) -> Hit:
        """``hit`` over ``[start, end)`` of its document; the matched span is kept."""
        matched = hit.matched or (hit.start, hit.end)
        flags = tuple(dict.fromkeys((*hit.flags, *self.flags_within(doc.doc_id, start, end))))
        return replace(hit, start=start, end=end, text=doc.text[start:end], matched=matched, flags=flags)


def to_parents(hits: Sequence[Hit], index: SearchIndex, store: DocumentSource, principal: Principal,
               chunking: ChunkingConfig, k: int) -> list[Hit]:
    """Replace child hits by their parents, best child first, each parent once; at most ``k``."""
    ex = Expander(index, store, principal)
    out: list[Hit] = []
    seen: set[tuple[str, int]] = set()
    for hit in hits:
        doc = ex.current(hit)
        if doc is None:
            continue
        parent = _containing(ex.parents(doc, chunking), hit.start, hit.end)
        if parent is None:  # a child outside every parent cannot happen for one chunker; keep it as is
            parent = (hit.start, hit.end, hit.heading_path)
        if (hit.doc_id, parent[0]) in seen:
            continue
        seen.add((hit.doc_id, parent[0]))
        out.append(ex.widen(hit, doc, parent[0], parent[1]))
        if len(out) == k:
            break
    return out


def expand_neighbours(hits: Sequence[Hit], index: SearchIndex, store: DocumentSource, principal: Principal, n: int,
                      parents_of: ChunkingConfig | None = None) -> list[Hit]:
    """Each hit plus ``n`` units before and after it in its heading section.

    ``parents_of`` (the index's chunking config) makes the units the parents of a
    ``parent-child`` index; otherwise they are the stored chunks. A hit whose widened
    span lies inside an earlier result's is dropped (it adds no text).
    """
    if n <= 0:
        return list(hits)
    ex = Expander(index, store, principal)
    out: list[Hit] = []
    for hit in hits:
        doc = ex.current(hit)
        if doc is None:
            continue
        units: list[Unit] = (ex.parents(doc, parents_of) if parents_of is not None
                             else [(c.start, c.end, tuple(c.heading_path)) for c in ex.stored(doc.doc_id)])
        start, end = _neighbourhood(units, hit, n)
        if any(h.doc_id == hit.doc_id and h.start <= start and end <= h.end for h in out):
            continue
        out.append(ex.widen(hit, doc, start, end))
    return out


def _containing(units: Sequence[Unit], start: int, end: int) -> Unit | None:
    for unit in units:
        if unit[0] <= start and end <= unit[1]:
            return unit
    return None


def _neighbourhood(units: Sequence[Unit], hit: Hit, n: int) -> tuple[int, int]:
    """The span from ``n`` same-section units before the hit to ``n`` after it."""
    overlapping = [i for i, (s, e, _) in enumerate(units) if s < hit.end and hit.start < e]
    if not overlapping:
        return hit.start, hit.end
    first, last = overlapping[0], overlapping[-1]
    path = tuple(hit.heading_path)
    lo = first
    while lo > 0 and first - lo < n and units[lo - 1][2] == path:
        lo -= 1
    hi = last
    while hi + 1 < len(units) and hi - last < n and units[hi + 1][2] == path:
        hi += 1
    return min(hit.start, units[lo][0]), max(hit.end, units[hi][1])
