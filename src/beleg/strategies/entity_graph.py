"""The entity graph behind the ``graph`` strategy: entities found in chunks, and the chunks
that support each relation.

Derived from the catalog like the search snapshot: built lazily, kept in memory for one
index generation, never written to a file (so erasing a document needs nothing extra).
Instruction-like sentences of flagged chunks are left out (a chunk with nothing else is
left out whole; :mod:`beleg.answer.quarantine`). See :mod:`beleg.strategies.graph` for
the traversal and the permission rules.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from beleg.answer.quarantine import quarantine_chunk, shown_value
from beleg.ingest.injection import is_instruction_like

if TYPE_CHECKING:
    from beleg.index.ports import Eligibility, SearchIndex
    from beleg.kb import KnowledgeBase


# ----------------------------------------------------------------------------- entities

_URL = re.compile(r"https?://[^\s`'\"<>()\[\]]+")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+", re.IGNORECASE)
_ERROR = re.compile(r"(?<![\w-])E-\d{4}(?![\w-])")
_STATUS = re.compile(r"\bHTTP\s+([1-5]\d\d)\b")
_PATH = re.compile(r"(?<![\w/.\-{}])/(?:api/)?v\d+(?:/[\w{}.:\-]+)*", re.IGNORECASE)
_HEADER = re.compile(r"(?<![\w-])X-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")
_KNOWN_HEADERS = re.compile(
    r"(?<![\w-])(?:Retry-After|Idempotency-Key|Content-Type|Content-Length|Accept-Language|User-Agent|If-Match|"
    r"If-None-Match|Last-Modified|Cache-Control)(?![\w-])", re.IGNORECASE)
_CODE = re.compile(r"(?<![\w-])[A-Z]{2,}(?:-[A-Z0-9]+)*-\d+(?![\w-])|(?<![\w-])[A-Z]{2,}(?:-[A-Z]{2,}){2,}(?![\w-])")
_HOST = re.compile(r"(?<![\w.@-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:internal|example|local|com|de|net|org|io)"
                   r"(?![\w-])", re.IGNORECASE)
_SETTING = re.compile(r"(?<![\w.$-])[a-z][a-z0-9]*(?:[._][a-z0-9]+)+(?![\w-])")
_BACKTICK = re.compile(r"`([^`\s]{3,80})`")
_SPECIAL = re.compile(r"[_\-./:{}@=\d]|[a-z][A-Z]")
_AUTH = re.compile(r"`Authorization`|(?<![\w-])Authorization(?=:)")
_TRAIL = ".,:;"

#: Entity kinds in the order their patterns claim text (an earlier kind wins an overlap).
KINDS = ("host", "path", "email", "error", "status", "header", "code", "setting", "id", "version", "product")
#: Kinds that connect too much to expand through (their own chunks are not collected).
HUB_KINDS = frozenset({"product", "version"})


@dataclass(frozen=True, slots=True)
class Entity:
    """A node: ``key`` (lower-cased name) identifies it, ``name`` is how it is written."""

    key: str
    name: str
    kind: str


def extract_entities(text: str, *, products: Iterable[str] = (), versions: Iterable[str] = ()) -> list[Entity]:
    """Identifier-like entities in ``text``, in order of first occurrence, each once.

    ``products`` and ``versions`` are the front-matter values of the corpus: a product
    name counts where it stands as a word, a version where it is asked or written about
    ("Ferrolink 2.4", "version 3.0", "v3.0") and is a known version.

    Example:
        >>> [e.name for e in extract_entities("HTTP 429 with `E-4290`: wait `Retry-After` seconds")]
        ['E-4290', 'HTTP 429', 'Retry-After']
    """
    found: list[tuple[int, Entity]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    def add(start: int, end: int, name: str, kind: str, claim: bool = True) -> None:
        name = name.rstrip(_TRAIL)
        if len(name) < 2 or not free(start, end):
            return
        if claim:
            taken.append((start, end))
        found.append((start, Entity(_key(name, kind), name, kind)))

    for m in _URL.finditer(text):
        raw = m.group(0).rstrip(_TRAIL)
        parts = urlsplit(raw)
        taken.append((m.start(), m.start() + len(raw)))
        if parts.hostname:
            found.append((m.start(), Entity(parts.hostname.lower(), parts.hostname, "host")))
        path = parts.path.rstrip("/")
        if path and _PATH.fullmatch(path):
            found.append((m.start() + 1, Entity(_key(path, "path"), path, "path")))
    for m in _EMAIL.finditer(text):
        add(m.start(), m.end(), m.group(0), "email")
    for m in _ERROR.finditer(text):
        add(m.start(), m.end(), m.group(0), "error")
    for m in _STATUS.finditer(text):
        add(m.start(), m.end(), f"HTTP {m.group(1)}", "status")
    for m in _PATH.finditer(text):
        add(m.start(), m.end(), m.group(0).rstrip("/"), "path")
    for pattern in (_HEADER, _KNOWN_HEADERS, _AUTH):
        for m in pattern.finditer(text):
            add(m.start(), m.end(), m.group(0).strip("`"), "header")
    for m in _CODE.finditer(text):
        add(m.start(), m.end(), m.group(0), "code")
    for m in _HOST.finditer(text):
        add(m.start(), m.end(), m.group(0), "host")
    for m in _SETTING.finditer(text):
        name = m.group(0).rstrip(_TRAIL)
        if "_" in name:
            add(m.start(), m.end(), name, "id" if any(c.isdigit() for c in name.split(".")[-1]) else "setting")
    for m in _BACKTICK.finditer(text):
        inner = m.group(1).strip(_TRAIL)
        if _SPECIAL.search(inner) and not inner.isdigit() and re.search(r"[A-Za-z]", inner):
            add(m.start(1), m.end(1), inner, "code")
    known_versions = {str(v) for v in versions}
    product_list = [str(p) for p in products if p]
    if known_versions:
        from beleg.query.versions import version_mentions

        for v in version_mentions(text, product_list):
            if v in known_versions:
                found.append((text.find(v), Entity(_key(v, "version"), v, "version")))
    for product in product_list:
        for m in re.finditer(rf"(?<![\w.@/-]){re.escape(product)}(?![\w@-]|\.\w)", text, re.IGNORECASE):
            found.append((m.start(), Entity(_key(product, "product"), product, "product")))
            break
    out: dict[str, Entity] = {}
    for _, entity in sorted(found, key=lambda item: item[0]):
        out.setdefault(entity.key, entity)
    return list(out.values())


def _key(name: str, kind: str) -> str:
    if kind == "version":
        return f"version:{name.lower().lstrip('v')}"
    if kind == "product":
        return f"product:{name.lower()}"
    return name.lower()


# ----------------------------------------------------------------------------- the graph


@dataclass(slots=True)
class EntityGraph:
    """The entity graph of one index view (positions index ``chunk_ids``, the graph's own order).

    Co-occurrence is not stored as pairs: ``mentions`` (entity → chunk positions) and
    ``chunk_entities`` (position → entities) are the bipartite chunk–entity graph, and a
    walk derives an entity's co-occurring neighbours from the visible chunks that mention
    it. That keeps memory linear in mentions and every edge limited to visible support.
    """

    generation: int
    chunk_ids: list[str]
    positions: dict[str, int]
    entities: dict[str, Entity]
    mentions: dict[str, np.ndarray]
    defines: dict[str, np.ndarray]
    chunk_entities: list[tuple[str, ...]]
    #: Front-matter entities (product, version) → chunk positions of their documents.
    members: dict[str, np.ndarray]
    #: product key → version key → chunk positions of documents with both.
    version_of: dict[str, dict[str, np.ndarray]]
    products: tuple[str, ...]
    versions: tuple[str, ...]
    content_hashes: list[str]
    build_ms: float = 0.0

    @classmethod
    def build(cls, index: SearchIndex) -> EntityGraph:
        """Build from every chunk of an index view (a walk applies the asker's eligibility)."""
        t0 = time.perf_counter()
        documents = index.all_documents()
        products = sorted({str(d.metadata["product"]) for d in documents if d.metadata.get("product")})
        versions = sorted({str(d.metadata["version"]) for d in documents if d.metadata.get("version") is not None})
        chunk_docs = list(index.chunk_documents())
        records = index.chunks([cid for cid, _ in chunk_docs])
        chunk_ids: list[str] = []
        hashes: list[str] = []
        chunk_entities: list[tuple[str, ...]] = []
        entities: dict[str, Entity] = {}
        mention_lists: dict[str, list[int]] = {}
        define_lists: dict[str, list[int]] = {}
        for pos, (cid, _) in enumerate(chunk_docs):
            record = records.get(cid)
            if record is None:  # deleted after the view was taken
                chunk_ids.append("")
                hashes.append("")
                chunk_entities.append(())
                continue
            heading_path, text, flags = record.heading_path, record.text, record.flags
            chunk_ids.append(cid)
            hashes.append(content_hash(text))
            if is_instruction_like(flags):  # only flagged chunks pay for the sentence-level scan
                quarantine = quarantine_chunk(text, flags)
                if quarantine.whole:
                    chunk_entities.append(())
                    continue
                text = quarantine.redact(text)
            found = extract_entities(text, products=products, versions=versions)
            heading = shown_value(heading_path[-1]) if heading_path else ""
            defined = {e.key for e in extract_entities(heading, products=products, versions=versions)}
            for e in found:
                entities.setdefault(e.key, e)
                mention_lists.setdefault(e.key, []).append(pos)
                if e.key in defined:
                    define_lists.setdefault(e.key, []).append(pos)
            chunk_entities.append(tuple(e.key for e in found))
        members: dict[str, list[int]] = {}
        pairs: dict[tuple[str, str], list[int]] = {}
        doc_chunks: dict[str, list[int]] = {}
        for pos, (_, doc_id) in enumerate(chunk_docs):
            doc_chunks.setdefault(doc_id, []).append(pos)
        for doc in documents:
            meta = doc.metadata
            chunks = doc_chunks.get(doc.doc_id, [])
            product, version = meta.get("product"), meta.get("version")
            keys = []
            if product:
                entity = Entity(_key(str(product), "product"), str(product), "product")
                entities.setdefault(entity.key, entity)
                keys.append(entity.key)
            if version is not None:
                entity = Entity(_key(str(version), "version"), str(version), "version")
                entities.setdefault(entity.key, entity)
                keys.append(entity.key)
            for key in keys:
                members.setdefault(key, []).extend(chunks)
            if len(keys) == 2:
                pairs.setdefault((keys[0], keys[1]), []).extend(chunks)
        version_of: dict[str, dict[str, np.ndarray]] = {}
        for (p, v), chunks in pairs.items():
            version_of.setdefault(p, {})[v] = _arr(chunks)
        return cls(
            generation=index.generation, chunk_ids=chunk_ids,
            positions={cid: i for i, cid in enumerate(chunk_ids) if cid},
            entities=entities, mentions={k: _arr(v) for k, v in mention_lists.items()},
            defines={k: _arr(v) for k, v in define_lists.items()}, chunk_entities=chunk_entities,
            members={k: _arr(v) for k, v in members.items()}, version_of=version_of,
            products=tuple(products), versions=tuple(versions), content_hashes=hashes,
            build_ms=1000 * (time.perf_counter() - t0))

    def allowed(self, eligible: Eligibility) -> np.ndarray | None:
        """The graph positions ``eligible`` admits, as a mask (None: every chunk)."""
        if eligible.count == len(self.chunk_ids):  # the graph and the eligibility share one view
            return None
        return np.fromiter((bool(c) and c in eligible for c in self.chunk_ids), dtype=bool, count=len(self.chunk_ids))

    def visible(self, key: str, allowed: np.ndarray | None) -> bool:
        """Whether a chunk the caller may see mentions the entity (or, for front-matter
        entities, belongs to a document that names it)."""
        for table in (self.mentions, self.members):
            pos = table.get(key)
            if pos is not None and len(_only(pos, allowed)):
                return True
        return False

    def find(self, names: Iterable[str], allowed: np.ndarray | None) -> list[str]:
        """Keys of the visible entities among ``names`` (keys or spellings), in order."""
        out: dict[str, None] = {}
        for name in names:
            low = name.lower()
            for key in (low, f"version:{low.lstrip('v')}", f"product:{low}"):
                if key in self.entities and self.visible(key, allowed):
                    out.setdefault(key, None)
                    break
        return list(out)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _arr(values: Sequence[int]) -> np.ndarray:
    return np.unique(np.asarray(values, dtype=np.int64))


def _only(positions: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    return positions if allowed is None else positions[allowed[positions]]


@dataclass(slots=True)
class _KBGraphs:
    graph: EntityGraph | None = None
    #: LLM triples by chunk content hash: ((subject, relation, object), ...).
    triples: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_GRAPHS: weakref.WeakKeyDictionary[KnowledgeBase, _KBGraphs] = weakref.WeakKeyDictionary()
_GRAPHS_LOCK = threading.Lock()


def _state(kb: KnowledgeBase) -> _KBGraphs:
    with _GRAPHS_LOCK:
        state = _GRAPHS.get(kb)
        if state is None:
            state = _GRAPHS[kb] = _KBGraphs()
        return state


def entity_graph(kb: KnowledgeBase, index: SearchIndex | None = None) -> EntityGraph:
    """The entity graph of ``kb``'s current snapshot, built on first use per generation.

    Kept in memory only; a new generation (ingest, delete) replaces it on the next call,
    and LLM triples of chunks no longer in the index are dropped then as well.
    """
    view = index or kb.search_index()
    state = _state(kb)
    with state.lock:
        if state.graph is None or state.graph.generation != view.generation:
            state.graph = EntityGraph.build(view)
            live = set(state.graph.content_hashes)
            state.triples = {h: t for h, t in state.triples.items() if h in live}
        return state.graph
