"""Probes of the leak suite: which documents are restricted, who attacks them, and how.

Everything is derived from the index: restricted documents (a tenant or an ACL), their
distinctive identifiers, the principals that must not see them and the insider who must
(a control). :mod:`beleg.evaluate.leaks` runs the probes and reports.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beleg.types import ANONYMOUS, Principal

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase

KINDS = ("search", "filter", "read-by-id", "ask", "chat", "strategy", "oracle")
#: Strategies probed as whole plans (hits and traces); hyde runs with the suite's echo LLM.
STRATEGY_PROBES = ("rewrite", "multi-query", "hyde", "decompose", "multi-hop", "iterative", "auto", "graph")
STRATEGY_K = 20
SEARCH_MODES = ("dense", "bm25", "hybrid", "hybrid+mmr")
MMR_LAMBDA = 0.5
#: A control search must rank the insider's document within this many hits.
CONTROL_K = 10
#: Identifiers asked about per restricted document (markers checked are never sampled).
DEFAULT_IDENTIFIERS = 5

Progress = Callable[[int, int], None]

# Identifier-shaped tokens: letters/digits joined by . - _ (hostnames, codes, queue names).
_TOKEN = re.compile(r"\w[\w.\-]*\w")
_PHONE = re.compile(r"\+\d{1,3}(?:[ \-/]\d{2,6}){2,5}")
_WORD = re.compile(r"[^\W\d_]{5,}")
#: A JSON key that names a field (``score``, ``heading_path``, ``bm25_weight``), not content.
_FIELD_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


# ---------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class LeakProbe:
    """One attempt to reach a restricted document, or (``control``) its rightful read.

    ``kind`` is one of :data:`KINDS`; ``mode`` the retriever (``dense``, ``bm25``,
    ``hybrid``, ``hybrid+mmr``), the answer path (``extractive``, ``llm``, ``context``) or
    the read (``document``, ``chunk``, ``source-as-id``). ``query`` is the query,
    question or id; ``filters``/``where``/``context`` are passed as given.
    """

    name: str
    kind: str
    mode: str
    principal: Principal
    role: str
    target: str
    query: str
    filters: tuple[tuple[str, str], ...] = ()
    where: str | None = None
    context: tuple[str, ...] = ()
    k: int = CONTROL_K
    control: bool = False
    #: ``oracle`` only: the made-up term the identifier is compared with.
    nonce: str | None = None

    def to_json(self) -> dict[str, Any]:
        p = self.principal
        return {"name": self.name, "kind": self.kind, "mode": self.mode, "role": self.role,
                "principal": {"user": p.user, "tenant": p.tenant, "groups": list(p.groups)},
                "target": self.target, "query": self.query, "filters": dict(self.filters) or None,
                "where": self.where, "context": list(self.context), "k": self.k, "control": self.control}


@dataclass(frozen=True, slots=True)
class Leak:
    """A probe that got back something of a document its principal may not read."""

    probe: LeakProbe
    what: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"probe": self.probe.to_json(), "what": list(self.what)}


@dataclass(frozen=True, slots=True)
class RestrictedDoc:
    """A document with a tenant or acl, and the strings that betray it."""

    doc_id: str
    source: str
    title: str
    tenant: str | None
    acl: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    #: What probes ask about (sampled markers, best first).
    identifiers: tuple[str, ...]
    #: Everything checked in outputs: markers lower-cased.
    markers: tuple[str, ...]
    #: identifier → heading of the chunk it occurs in (for the insider's chat question).
    headings: tuple[tuple[str, str], ...]
    #: Distinctive title words (``Nordwind``): oracle probes ask whether they exist.
    words: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "source": self.source, "title": self.title, "tenant": self.tenant,
                "acl": list(self.acl), "chunks": len(self.chunk_ids), "identifiers": list(self.identifiers),
                "words": list(self.words), "markers": len(self.markers)}


# ---------------------------------------------------------------------------- markers


def json_values(value: Any) -> str:
    """The scalar values of a JSON-like structure, one per line; schema keys are left out.

    Outputs are compared with restricted markers by their values only: a key such as
    ``"status"``, ``"score"`` or ``"source"`` is Beleg's own vocabulary, not content, and
    must not count as a leak of a restricted document titled "Status". A key that does not
    look like a field name (``"What is INC-7?"``: a trace grouping hits by query) is
    content and is kept."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                stack.append(sub)
                if not _FIELD_NAME.fullmatch(str(key)):
                    stack.append(str(key))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(reversed(list(item)))
        elif item is not None and not isinstance(item, bool):
            out.append(str(item))
    return "\n".join(out)



def find_markers(text: str, markers: Sequence[str]) -> list[str]:
    """The ``markers`` (lower-cased) that occur in ``text`` as whole tokens, case-insensitively.

    "Whole" means not glued to a letter or digit: ``nordwind`` is found in
    ``mq-nordwind-01`` but not in ``nordwinds``.
    """
    low = text.lower()
    found = []
    for m in markers:
        i = low.find(m)
        while i >= 0:
            j = i + len(m)
            glued_left = i > 0 and m[0].isalnum() and low[i - 1].isalnum()
            glued_right = j < len(low) and m[-1].isalnum() and low[j].isalnum()
            if not glued_left and not glued_right:
                found.append(m)
                break
            i = low.find(m, i + 1)
    return found


def candidate_markers(text: str, title: str) -> list[str]:
    """Identifier-shaped tokens, phone numbers and title words of a document, in text order.

    A token counts when it has a letter and a digit, or a letter and ``.``/``-``/``_``,
    and at least 5 characters; pure numbers, dates and times are too common to mean anything.
    """
    out: dict[str, None] = {}
    for m in _PHONE.finditer(text):
        out.setdefault(m.group(0), None)
    for m in _TOKEN.finditer(text):
        tok = m.group(0).strip(".-_")
        has_alpha = any(c.isalpha() for c in tok)
        if len(tok) >= 5 and has_alpha and (any(c.isdigit() for c in tok) or any(c in ".-_" for c in tok)):
            out.setdefault(tok, None)
    for word in _WORD.findall(title):
        out.setdefault(word, None)
    return list(out)


# ---------------------------------------------------------------------------- the index


@dataclass(frozen=True, slots=True)
class _Doc:
    doc_id: str
    source: str
    metadata: dict[str, Any]
    title: str
    text: str
    chunks: tuple[tuple[str, str, str], ...]  # (chunk_id, heading, text)

    @property
    def restricted(self) -> bool:
        return self.metadata.get("tenant") is not None or self.metadata.get("acl") is not None

    @property
    def searchable(self) -> str:
        """Everything of the document a reader of it may see."""
        return "\n".join([self.title, self.source, json_values(self.metadata), self.text])


def _load_docs(kb: KnowledgeBase) -> list[_Doc]:
    # The suite probes as an administrator: it reads every document to know what must not leak.
    index = kb.search_index()
    ids_by_doc: dict[str, list[str]] = defaultdict(list)
    for chunk_id, doc_id in index.chunk_documents():
        ids_by_doc[doc_id].append(chunk_id)
    docs = []
    for record in index.all_documents():
        doc = kb.store.document(record.doc_id)
        if doc is None:
            continue
        found = sorted(index.chunks(ids_by_doc.get(record.doc_id, [])).values(), key=lambda c: c.ordinal)
        chunks = tuple((c.chunk_id, (c.heading_path[-1] if c.heading_path else ""), c.text) for c in found)
        docs.append(_Doc(record.doc_id, record.source, record.metadata, record.title, doc.text, chunks))
    return docs


def _acl(meta: dict[str, Any]) -> tuple[str, ...]:
    acl = meta.get("acl")
    if acl is None:
        return ()
    return tuple(str(a) for a in (acl if isinstance(acl, (list, tuple)) else [acl]))


def restricted_documents(kb: KnowledgeBase, *, max_identifiers: int | None = DEFAULT_IDENTIFIERS) -> list[RestrictedDoc]:
    """Each restricted document of ``kb`` with its markers and the identifiers probes ask about."""
    return _restricted(_load_docs(kb), max_identifiers)


def _restricted(docs: Sequence[_Doc], max_identifiers: int | None) -> list[RestrictedDoc]:
    """Markers are candidates absent from every public document. Identifiers prefer markers
    that occur in no other document at all, then ones that start with a letter, then ones
    with a digit, then text order; the title is always asked about as well.
    """
    public = "\n".join(d.searchable for d in docs if not d.restricted)
    out = []
    for d in docs:
        if not d.restricted:
            continue
        others = "\n".join(o.searchable for o in docs if o.doc_id != d.doc_id)
        cands = [c for c in candidate_markers(d.text, d.title) if not find_markers(public, [c.lower()])]
        tokens = [c for c in cands if c not in _WORD.findall(d.title) or not c.isalpha()]
        ranked = sorted(range(len(tokens)), key=lambda i: (bool(find_markers(others, [tokens[i].lower()])),
                                                           not tokens[i][0].isalpha(),
                                                           not any(ch.isdigit() for ch in tokens[i]), i))
        picked = [tokens[i] for i in ranked][: max_identifiers if max_identifiers is not None else None]
        identifiers = [*picked, d.title]
        markers = [c.lower() for c in cands]
        if not find_markers(public, [d.title.lower()]):
            markers.append(d.title.lower())
        headings = tuple((ident, next((h for _, h, t in d.chunks if ident.lower() in t.lower()), d.title))
                         for ident in identifiers)
        words = tuple(c for c in cands if c.isalpha())[:2]
        out.append(RestrictedDoc(d.doc_id, d.source, d.title, _tenant(d.metadata), _acl(d.metadata),
                                 tuple(c for c, _, _ in d.chunks), tuple(identifiers), tuple(dict.fromkeys(markers)),
                                 headings, words))
    return out


def _tenant(meta: dict[str, Any]) -> str | None:
    t = meta.get("tenant")
    return None if t is None else str(t)


# ---------------------------------------------------------------------------- principals


def _tenant_groups(docs: Sequence[RestrictedDoc]) -> dict[str, tuple[str, ...]]:
    groups: dict[str, dict[str, None]] = {}
    for d in docs:
        if d.tenant is not None:
            groups.setdefault(d.tenant, {}).update(dict.fromkeys(d.acl))
    return {t: tuple(g) for t, g in sorted(groups.items())}


def insider(doc: RestrictedDoc) -> Principal:
    """The rightful reader of ``doc``: its tenant, every group of its acl."""
    return Principal(user=f"ops@{doc.tenant}" if doc.tenant else "insider", tenant=doc.tenant, groups=doc.acl)


def attackers(doc: RestrictedDoc, meta: dict[str, Any], tenants: dict[str, tuple[str, ...]]) -> list[tuple[str, Principal]]:
    """Principals that must not read ``doc``, by role (only those :meth:`Principal.may_read` denies)."""
    other = next((t for t in tenants if t != doc.tenant), "elsewhere")
    cands: list[tuple[str, Principal]] = [("anonymous", ANONYMOUS)]
    cands += [(f"tenant {t} (ops)", Principal(user=f"ops@{t}", tenant=t, groups=g)) for t, g in tenants.items()
              if t != doc.tenant]
    if doc.tenant is not None:
        cands.append(("same tenant, no acl group", Principal(user=f"staff@{doc.tenant}", tenant=doc.tenant,
                                                             groups=("staff",))))
        if doc.acl:
            cands.append(("acl group, wrong tenant", Principal(user=doc.acl[0], tenant=other, groups=doc.acl)))
        if doc.tenant.upper() != doc.tenant:
            cands.append(("tenant in upper case", Principal(user="ops@" + doc.tenant.upper(),
                                                            tenant=doc.tenant.upper(), groups=doc.acl)))
    elif doc.acl:
        cands.append(("other groups", Principal(user="outsider", tenant=other, groups=("staff",))))
    seen: set[Any] = set()
    out = []
    for role, p in cands:
        if p.access_key not in seen and not p.may_read(meta):
            seen.add(p.access_key)
            out.append((role, p))
    return out


@dataclass(frozen=True, slots=True)
class _Forbidden:
    """What ``principal`` must never see: ids of unreadable documents and their markers."""

    ids: dict[str, str]  # chunk id / doc id → owning source
    markers: dict[str, str]  # lower-cased marker (and source path) → owning source
    visible_hit_word: str | None  # a word with visible BM25 hits (oracle probes)


def _forbidden(docs: Sequence[_Doc], restricted: Sequence[RestrictedDoc], p: Principal) -> _Forbidden:
    visible_docs = [d for d in docs if p.may_read(d.metadata)]
    visible = "\n".join(d.searchable for d in visible_docs)
    ids: dict[str, str] = {}
    markers: dict[str, str] = {}
    meta = {d.doc_id: d.metadata for d in docs}
    for r in restricted:
        if p.may_read(meta[r.doc_id]):
            continue
        ids.update({x: r.source for x in (r.doc_id, *r.chunk_ids)})
        markers.update({m: r.source for m in (*r.markers, r.source.lower()) if not find_markers(visible, [m])})
    word = None
    for d in sorted(visible_docs, key=lambda d: (d.restricted, d.doc_id)):
        word = next(iter(w for w in _WORD.findall(d.title) if len(w) >= 6), None)
        if word:
            break
    return _Forbidden(ids, markers, word)


# ---------------------------------------------------------------------------- probes


def _q(value: str) -> str:
    return '"' + value + '"'


def _filter_variants(doc: RestrictedDoc, other: str) -> list[tuple[str, tuple[tuple[str, str], ...], str | None]]:
    """Filters naming the target: (label, filters, where). They must only ever narrow."""
    out: list[tuple[str, tuple[tuple[str, str], ...], str | None]] = []
    if doc.tenant is not None:
        out.append(("tenant", (("tenant", doc.tenant),), None))
        if '"' not in doc.tenant and '"' not in other:
            out.append(("tenant-or-not", (), f"tenant = {_q(doc.tenant)} or tenant != {_q(doc.tenant)}"))
            out.append(("not-other-tenant", (), f"not tenant = {_q(other)}"))
    if doc.acl:
        out.append(("acl", (("acl", doc.acl[0]),), None))
    return out


def build_probes(kb: KnowledgeBase, *, max_identifiers: int | None = DEFAULT_IDENTIFIERS,
                 kinds: Sequence[str] = KINDS) -> list[LeakProbe]:
    """Every probe :func:`run_leak_suite` would run on ``kb``, controls included."""
    docs = _load_docs(kb)
    return _build_probes(kb, _restricted(docs, max_identifiers), docs, kinds)


def _build_probes(kb: KnowledgeBase, restricted: Sequence[RestrictedDoc], docs: Sequence[_Doc],
                  kinds: Sequence[str]) -> list[LeakProbe]:
    meta = {d.doc_id: d.metadata for d in docs}
    tenants = _tenant_groups(restricted)
    big_k = len(kb.search_index()) + 10
    return [probe for doc in restricted for probe in _doc_probes(doc, meta[doc.doc_id], tenants, big_k, kinds)]


def _doc_probes(doc: RestrictedDoc, meta: dict[str, Any], tenants: dict[str, tuple[str, ...]], big_k: int,
                kinds: Sequence[str]) -> list[LeakProbe]:
    short = doc.source.rsplit("/", 1)[-1]
    other = next((t for t in tenants if t != doc.tenant), "elsewhere")
    roles = [(role, p, False) for role, p in attackers(doc, meta, tenants)]
    roles.append(("insider (control)", insider(doc), True))
    probes: list[LeakProbe] = []

    def add(kind: str, mode: str, role: str, p: Principal, control: bool, query: str, label: str = "",
            **kw: Any) -> None:
        if kind in kinds:
            shown = query if len(query) <= 48 else query[:45] + "..."
            name = f"{kind}/{mode}{'/' + label if label else ''}: {role} -> {short} {shown!r}"
            probes.append(LeakProbe(name, kind, mode, p, role, doc.doc_id, query, control=control,
                                    k=CONTROL_K if control else big_k, **kw))

    for role, p, control in roles:
        add("read-by-id", "document", role, p, control, doc.doc_id)
        for chunk_id in doc.chunk_ids:
            add("read-by-id", "chunk", role, p, control, chunk_id)
        if not control:
            add("read-by-id", "source-as-id", role, p, control, doc.source)
    headings = dict(doc.headings)
    for ident in doc.identifiers:
        insider_question = f"What does “{doc.title}” say about {headings.get(ident, doc.title)}?"
        for role, p, control in roles:
            for mode in SEARCH_MODES:
                add("search", mode, role, p, control, ident)
            for label, filters, where in _filter_variants(doc, other):
                for mode in SEARCH_MODES:
                    add("filter", mode, role, p, control, ident, filters=filters, where=where, label=label)
            if doc.tenant is not None:
                add("filter", "ask", role, p, control, f"What is {ident}?", filters=(("tenant", doc.tenant),),
                    label="tenant")
            add("ask", "extractive", role, p, control, f"What is {ident}?")
            add("ask", "llm", role, p, control, f"What is {ident}?")
            add("chat", "extractive", role, p, control, f"And what about {ident}?", context=(insider_question,))
            add("chat", "llm", role, p, control, f"And what about {ident}?", context=(insider_question,))
            add("chat", "context", role, p, control, "And how do I handle it?", context=(f"What is {ident}?",))
            for name in STRATEGY_PROBES:
                add("strategy", name, role, p, control, f"What is {ident}?")
    for term in [*(i for i in doc.identifiers if i != doc.title), *doc.words]:
        for role, p, control in roles:
            for mode in ("bm25", "hybrid"):
                add("oracle", mode, role, p, control, term)
    return probes
