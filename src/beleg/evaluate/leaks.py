"""An adversarial permission-leak suite: can a principal learn what it may not read?

The suite derives its probes from the index itself. For every restricted document (one
with a ``tenant`` or an ``acl``) it collects *markers*: strings that occur in that
document but in no public one (identifier-shaped tokens such as ``mq-nordwind-01.internal``
or ``INC-SH-2101``, phone numbers, distinctive title words, the title). A few of them
become *identifiers* to ask about. Then every principal that may **not** read the
document (anonymous, another tenant with its ops group, the same tenant without the acl
group, the acl group under the wrong tenant, the tenant spelled in another case) probes:

* ``search``: each retriever (dense, bm25, hybrid, hybrid + MMR) for each identifier,
  with ``k`` larger than the whole index, so nothing is hidden by the cut-off;
* ``filter``: the same with filters naming the target (``{"tenant": T}``,
  ``tenant = T or tenant != T``, ``not tenant = X``, ``{"acl": A}``), and an answer under one;
* ``read-by-id``: :meth:`KnowledgeBase.document` and :meth:`KnowledgeBase.chunk` with the
  document's own ids (and its source path as an id);
* ``ask``: an extractive answer and an LLM answer about the identifier; without an LLM
  the suite uses a :class:`~beleg.testing.scripted.ScriptedLLM` that echoes its whole
  prompt, so any restricted text that reaches the prompt shows up in the answer;
* ``chat``: follow-ups (``"And what about <identifier>?"`` after an insider's question,
  and an identifier that occurs only in the earlier question);
* ``oracle``: a side channel. The same query is run with the identifier and with a
  made-up term of the same shape that is nowhere in the index; for a principal to whom
  the identifier's terms match nothing, the BM25 leg (scores, ``bm25_weight``) must not
  tell the two apart, or the ranking reveals that the identifier exists somewhere.

A *leak* is a restricted document's chunk id, document id or source in what a probe got
back, or one of its markers in returned text, answers, sources, citations, conflicts,
the trace or the prompt an LLM received (markers the prober typed itself, in the
question, context or filter, are not counted). Every probe also runs as the rightful
principal as a positive control: the insider must find the document, so a suite that
finds nothing because it searched for nothing cannot pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from beleg.types import Hit, Principal

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase

from beleg.evaluate.leak_probes import (  # noqa: F401 (re-exported: the suite's public API)
    CONTROL_K,
    DEFAULT_IDENTIFIERS,
    KINDS,
    MMR_LAMBDA,
    SEARCH_MODES,
    STRATEGY_K,
    STRATEGY_PROBES,
    Leak,
    LeakProbe,
    Progress,
    RestrictedDoc,
    _build_probes,
    _Doc,
    _Forbidden,
    _forbidden,
    _load_docs,
    _restricted,
    attackers,
    build_probes,
    candidate_markers,
    find_markers,
    insider,
    json_values,
    restricted_documents,
)


@dataclass
class LeakReport:
    """What the suite ran and what leaked: counts per kind, mode and role, and every leak."""

    documents: list[RestrictedDoc]
    probes: int = 0
    leaks: list[Leak] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: kind → mode → {"probes": n, "leaks": n}
    counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    by_role: dict[str, dict[str, int]] = field(default_factory=dict)
    controls: int = 0
    controls_found: int = 0
    #: kind → {"controls": n, "found": n}
    controls_by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    missed_controls: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        """No leak and no probe that failed to run."""
        return not self.leaks and not self.errors

    @property
    def control_rate(self) -> float | None:
        return self.controls_found / self.controls if self.controls else None

    def leaks_by_kind(self) -> dict[str, int]:
        return {kind: sum(m["leaks"] for m in modes.values()) for kind, modes in self.counts.items()}

    def probes_by_kind(self) -> dict[str, int]:
        return {kind: sum(m["probes"] for m in modes.values()) for kind, modes in self.counts.items()}

    def by_mode(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for modes in self.counts.values():
            for mode, c in modes.items():
                slot = out.setdefault(mode, {"probes": 0, "leaks": 0})
                slot["probes"] += c["probes"]
                slot["leaks"] += c["leaks"]
        return out

    def _record(self, probe: LeakProbe, found: bool | None, what: Sequence[str]) -> None:
        if probe.control:
            self.controls += 1
            slot = self.controls_by_kind.setdefault(probe.kind, {"controls": 0, "found": 0})
            slot["controls"] += 1
            if found:
                self.controls_found += 1
                slot["found"] += 1
            else:
                self.missed_controls.append(probe.name)
            return
        self.probes += 1
        c = self.counts.setdefault(probe.kind, {}).setdefault(probe.mode, {"probes": 0, "leaks": 0})
        r = self.by_role.setdefault(probe.role, {"probes": 0, "leaks": 0})
        c["probes"] += 1
        r["probes"] += 1
        if what:
            c["leaks"] += 1
            r["leaks"] += 1
            self.leaks.append(Leak(probe, tuple(what)))

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "documents": [d.to_json() for d in self.documents],
            "probes": self.probes,
            "leaks_total": len(self.leaks),
            "by_kind": {k: {"probes": n, "leaks": self.leaks_by_kind()[k]} for k, n in self.probes_by_kind().items()},
            "by_mode": self.by_mode(),
            "by_kind_mode": self.counts,
            "by_role": self.by_role,
            "controls": self.controls,
            "controls_found": self.controls_found,
            "control_rate": None if self.control_rate is None else round(self.control_rate, 4),
            "controls_by_kind": self.controls_by_kind,
            "missed_controls": self.missed_controls,
            "leaks": [leak.to_json() for leak in self.leaks],
            "errors": self.errors,
            "elapsed_s": round(self.elapsed_s, 2),
        }

    def render_text(self, max_leaks: int = 20) -> str:
        """A table of probes and leaks per kind and mode, the controls, and the first leaks."""
        head = (f"Permission-leak suite: {len(self.documents)} restricted documents, "
                f"{sum(len(d.identifiers) for d in self.documents)} identifiers, {self.probes} probes "
                f"in {self.elapsed_s:.1f} s")
        lines = [head, "",
                 f"{'kind':<11} {'mode':<18} {'probes':>7} {'leaks':>6}", "-" * 45]
        for kind in sorted(self.counts, key=lambda k: KINDS.index(k) if k in KINDS else len(KINDS)):
            for mode, c in self.counts[kind].items():
                lines.append(f"{kind:<11} {mode:<18} {c['probes']:>7} {c['leaks']:>6}")
        lines += ["-" * 45, f"{'total':<30} {self.probes:>7} {len(self.leaks):>6}", ""]
        for role, c in self.by_role.items():
            lines.append(f"as {role:<27} {c['probes']:>7} {c['leaks']:>6}")
        rate = self.control_rate
        lines += ["", f"controls (the rightful principal finds the document): {self.controls_found}/{self.controls}"
                  + ("" if rate is None else f" ({100 * rate:.1f}%)")]
        for kind, c in self.controls_by_kind.items():
            lines.append(f"  {kind:<11} {c['found']}/{c['controls']}")
        if self.errors:
            lines += ["", f"{len(self.errors)} probes failed to run:"] + [f"  {e}" for e in self.errors[:max_leaks]]
        if self.leaks:
            lines += ["", f"LEAKS ({len(self.leaks)} probes):"]
            for leak in self.leaks[:max_leaks]:
                lines.append(f"  {leak.probe.name}")
                lines += [f"      {w}" for w in leak.what[:5]]
            if len(self.leaks) > max_leaks:
                lines.append(f"  ... and {len(self.leaks) - max_leaks} more (see --json)")
        else:
            lines += ["", "no leaks" if not self.errors else "no leaks among the probes that ran"]
        return "\n".join(lines)


# ---------------------------------------------------------------------------- running


class _QueryMemo:
    """Wraps an embedder so each distinct query is embedded once during the suite.

    Embedding is deterministic, so this changes no result; it only keeps thousands of
    probes over a dozen distinct queries fast. Everything else passes through.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self._inner.embed_queries(missing)))
        if not texts:
            return np.asarray(self._inner.embed_queries(texts))
        return np.stack([self._memo[t] for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._inner.embed_documents(texts))

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one batch (much faster than one by one) for later lookups."""
        self.embed_queries([t for t in dict.fromkeys(texts) if t.strip()])


@contextmanager
def _memo_queries(kb: Any) -> Iterator[_QueryMemo | None]:
    if "_embedder" not in vars(kb):  # a proxy or another implementation: run unmemoised
        yield None
        return
    inner = kb.embedder  # loads the model and checks its fingerprint against the index
    memo = _QueryMemo(inner)
    kb._embedder = memo
    try:
        yield memo
    finally:
        kb._embedder = inner


def _echo(messages: list[Any]) -> str:
    return "\n\n".join(m.content for m in messages)


def _nonce(ident: str, stored_terms: Callable[[list[str]], set[str]]) -> str | None:
    """A made-up string shaped like ``ident`` whose analysed terms are nowhere in the index
    (``stored_terms``: :meth:`beleg.index.ports.Store.stored_terms`)."""
    from beleg.index.analyzer import analyze_query

    want = len(analyze_query(ident))
    for shift in (13, 7, 19, 3, 11, 5, *range(1, 26)):
        cand = "".join(_shift(c, shift) for c in ident)
        terms = analyze_query(cand)
        if cand.lower() != ident.lower() and len(terms) == want and not stored_terms(terms):
            return cand
    return None


def _shift(c: str, n: int) -> str:
    if "a" <= c <= "z":
        return chr((ord(c) - 97 + n) % 26 + 97)
    if "A" <= c <= "Z":
        return chr((ord(c) - 65 + n) % 26 + 65)
    if c.isdigit():
        return str((int(c) + (n % 10 or 1)) % 10)
    return c


class _Runner:
    def __init__(self, kb: KnowledgeBase, docs: Sequence[_Doc], restricted: Sequence[RestrictedDoc], llm: Any) -> None:
        from beleg.testing.scripted import ScriptedLLM

        self.kb = kb
        self.docs = docs
        self.restricted = restricted
        self.llm = llm if llm is not None else ScriptedLLM(responder=_echo, name="echo")
        self._forbidden: dict[Any, _Forbidden] = {}
        self._scans: dict[tuple[Any, str], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._hit_scans: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self.stored_terms = kb.store.stored_terms

    def forbidden(self, p: Principal) -> _Forbidden:
        key = p.access_key
        if key not in self._forbidden:
            self._forbidden[key] = _forbidden(self.docs, self.restricted, p)
        return self._forbidden[key]

    def scan(self, p: Principal, part: str, text: str, echo: str = "") -> list[str]:
        """Forbidden ids and markers in ``text``; markers the prober typed itself (in ``echo``) do not count."""
        f = self.forbidden(p)
        key = (p.access_key, text)
        if key not in self._scans:
            self._scans[key] = (tuple(x for x in f.ids if x in text), tuple(find_markers(text, list(f.markers))))
        ids, marks = self._scans[key]
        typed = set(find_markers(echo, marks)) if echo else set()
        return ([f"{part}: id {x!r} of {f.ids[x]}" for x in ids]
                + [f"{part}: {m!r} of {f.markers[m]}" for m in marks if m not in typed])

    def queries(self, probes: Sequence[LeakProbe]) -> list[str]:
        """The texts the probes will embed as queries (to embed them in one batch)."""
        from beleg.query.conversation import retrieval_query

        out = []
        for probe in probes:
            if probe.kind in ("search", "filter") and probe.mode != "ask":
                out.append(probe.query)
            elif probe.kind in ("ask", "chat", "filter"):
                out.append(retrieval_query(probe.query, probe.context))
            elif probe.kind == "oracle" and probe.mode == "hybrid":
                word, nonce = self.forbidden(probe.principal).visible_hit_word, _nonce(probe.query, self.stored_terms)
                if word is not None and nonce is not None:
                    out += [f"{word} {probe.query}", f"{word} {nonce}"]
        return out

    # -- kinds -------------------------------------------------------------------------
    def run(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        if probe.kind == "read-by-id":
            return self._read(probe)
        if probe.kind == "oracle":
            return self._oracle(probe)
        if probe.kind in ("ask", "chat") or probe.mode == "ask":
            return self._ask(probe)
        if probe.kind == "strategy":
            return self._strategy(probe)
        return self._search(probe)

    def _strategy(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        """A whole retrieval plan as the principal: every step's hits and the trace are scanned."""
        from beleg.strategies import run_strategy

        p = probe.principal
        result = run_strategy(self.kb, probe.mode, probe.query, principal=p, k=STRATEGY_K, llm=self.llm)
        found = any(h.doc_id == probe.target for h in result.hits)
        if probe.control:
            return found, []
        out = self._hits_leaks(p, result.hits, "hits")
        for group in (result.groups or {}).values():
            out += self._hits_leaks(p, group, "group")
        out += self.scan(p, "trace", json_values(result.trace.to_json()), probe.query)
        return found, list(dict.fromkeys(out))

    def _do_search(self, probe: LeakProbe, query: str, mode: str, k: int) -> list[Hit]:
        mmr = MMR_LAMBDA if mode == "hybrid+mmr" else None
        return self.kb.search(query, mode="hybrid" if mode == "hybrid+mmr" else mode, k=k,
                              filters=dict(probe.filters) or None, where=probe.where, mmr_lambda=mmr,
                              principal=probe.principal)

    def _hits_leaks(self, p: Principal, hits: Sequence[Hit], part: str) -> list[str]:
        f = self.forbidden(p)
        out = []
        for h in hits:
            if h.doc_id in f.ids or h.chunk_id in f.ids:
                out.append(f"{part}: chunk {h.chunk_id} of {f.ids.get(h.doc_id) or f.ids[h.chunk_id]}")
            # A hit's metadata is its document's (one per document in a snapshot); the rest is keyed whole.
            key = (p.access_key, h.chunk_id, h.doc_id, h.title, h.source, h.heading_path, h.text)
            if key not in self._hit_scans:
                text = "\n".join([h.title, h.source, " > ".join(h.heading_path), h.text, json_values(h.metadata)])
                self._hit_scans[key] = tuple(self.scan(p, "", text))
            out += [f"{part}{w}" for w in self._hit_scans[key]]
        return list(dict.fromkeys(out))

    def _search(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        hits = self._do_search(probe, probe.query, probe.mode, probe.k)
        found = any(h.doc_id == probe.target for h in hits)
        return found, ([] if probe.control else self._hits_leaks(probe.principal, hits, "hits"))

    def _read(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        p = probe.principal
        if probe.mode == "chunk":
            chunk = self.kb.chunk(probe.query, p)
            if chunk is None:
                return False, []
            return chunk.doc_id == probe.target, [f"chunk(): chunk {chunk.chunk_id} of {chunk.doc_id} returned"]
        doc = self.kb.document(probe.query, p)
        if doc is None:
            return False, []
        return doc.doc_id == probe.target, [f"document(): {doc.source} returned"]

    def _ask(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        p = probe.principal
        use_llm = probe.mode == "llm"
        calls = getattr(self.llm, "calls", None)
        before = len(calls) if isinstance(calls, list) else 0
        answer = self.kb.ask(probe.query, principal=p, filters=dict(probe.filters) or None, where=probe.where,
                             context=list(probe.context), llm=self.llm if use_llm else None)
        found = any(s.hit.doc_id == probe.target for s in answer.sources)
        if probe.control:
            return found, []
        echo = "\n".join([probe.query, *probe.context, probe.where or "", json.dumps(dict(probe.filters))])
        out = self._hits_leaks(p, [s.hit for s in answer.sources], "sources")
        # Values only: JSON keys ("source", "status", "score") are not content (see json_values).
        parts = {"answer": answer.answer,
                 "citations": json_values([c.to_json() for c in answer.citations]),
                 "conflicts": json_values([c.to_json() for c in answer.conflicts]),
                 "trace": json_values(json.loads(json.dumps(answer.trace, ensure_ascii=False, default=str)))}
        if use_llm and isinstance(calls, list):
            parts["prompt"] = "\n\n".join(m.content for call in calls[before:] for m in call)
        for part, text in parts.items():
            out += self.scan(p, part, text, echo)
        return found, list(dict.fromkeys(out))

    def _oracle(self, probe: LeakProbe) -> tuple[bool | None, list[str]]:
        """Identifier vs a same-shaped unknown term: the BM25 leg must not tell them apart."""
        p = probe.principal
        word = self.forbidden(p).visible_hit_word
        nonce = _nonce(probe.query, self.stored_terms)
        if word is None or nonce is None:
            return None, []  # nothing to compare with
        if not probe.control and self.kb.search(probe.query, mode="bm25", k=1, principal=p):
            return None, []  # some of its terms are visible to p: a difference would be legitimate
        one = self._do_search(probe, f"{word} {probe.query}", probe.mode, CONTROL_K)
        two = self._do_search(probe, f"{word} {nonce}", probe.mode, CONTROL_K)
        if probe.mode == "bm25":
            a, b = [(h.chunk_id, round(h.score, 6)) for h in one], [(h.chunk_id, round(h.score, 6)) for h in two]
            what = "BM25 ranking/scores"
        else:
            a = [(k, round(v, 6)) for k, v in sorted({k: v for h in one for k, v in h.scores.items()
                                                      if k == "bm25_weight"}.items())]
            b = [(k, round(v, 6)) for k, v in sorted({k: v for h in two for k, v in h.scores.items()
                                                      if k == "bm25_weight"}.items())]
            bm1 = {h.chunk_id: round(h.scores["bm25"], 6) for h in one if "bm25" in h.scores}
            bm2 = {h.chunk_id: round(h.scores["bm25"], 6) for h in two if "bm25" in h.scores}
            common = set(bm1) & set(bm2)
            a += sorted((c, bm1[c]) for c in common)
            b += sorted((c, bm2[c]) for c in common)
            what = "hybrid bm25_weight / BM25 leg scores"
        differ = a != b
        if probe.control:
            return differ, []
        if not differ:
            return False, []
        owner = self.forbidden(p).markers.get(probe.query.lower(), "a restricted document")
        return True, [(f"oracle: {what} for {word!r} + {probe.query!r} differ from {word!r} + {nonce!r} "
                       f"(a term nowhere in the index): {a[:2]} vs {b[:2]}; reveals that {probe.query!r} "
                       f"occurs in a document the principal may not read ({owner})")]


def run_leak_suite(kb: KnowledgeBase, *, llm: Any = None, progress: Progress | None = None,
                   max_identifiers: int | None = DEFAULT_IDENTIFIERS, kinds: Sequence[str] = KINDS) -> LeakReport:
    """Probe every restricted document of ``kb`` as every principal that may not read it.

    Args:
        kb: The knowledge base (anything with ``search``/``ask``/``document``/``chunk``,
            ``store`` and ``search_index()`` like :class:`~beleg.kb.KnowledgeBase`).
        llm: The LLM for ``ask``/``chat`` probes of mode ``llm``; default: a ScriptedLLM that
            echoes its prompt (so whatever reaches the prompt is checked twice).
        progress: Called as ``progress(done, total)`` after each probe.
        max_identifiers: Identifiers asked about per document (None: all); every marker
            is checked in outputs regardless.
        kinds: Which probe kinds to run (see :data:`KINDS`).
    """
    unknown = set(kinds) - set(KINDS)
    if unknown:
        from beleg.errors import ConfigError

        raise ConfigError(f"unknown probe kinds {sorted(unknown)}; use {', '.join(KINDS)}")
    t0 = time.perf_counter()
    docs = _load_docs(kb)
    restricted = _restricted(docs, max_identifiers)
    probes = _build_probes(kb, restricted, docs, kinds)
    report = LeakReport(restricted)
    runner = _Runner(kb, docs, restricted, llm)
    with _memo_queries(kb) as memo:
        if memo is not None:
            memo.prefetch(runner.queries(probes))
        for i, probe in enumerate(probes, 1):
            try:
                found, what = runner.run(probe)
            except Exception as exc:  # noqa: BLE001 - a probe that cannot run is reported, not fatal
                report.errors.append(f"{probe.name}: {type(exc).__name__}: {exc}")
            else:
                if found is not None:  # None: the probe does not apply (an oracle without a comparison)
                    report._record(probe, found, what)
            if progress is not None:
                progress(i, len(probes))
    report.elapsed_s = time.perf_counter() - t0
    return report


__all__ = ["KINDS", "SEARCH_MODES", "Leak", "LeakProbe", "LeakReport", "RestrictedDoc", "attackers",
           "build_probes", "candidate_markers", "find_markers", "insider", "restricted_documents", "run_leak_suite"]
