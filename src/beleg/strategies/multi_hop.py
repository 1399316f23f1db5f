"""Multi-hop retrieval: a fact found in hop 1 builds the query of hop 2.

"What was the maximum message size of the Ferrolink version that reached end of life on
30 June 2024?" cannot be answered by one search: the documents that state the limit do
not mention the date, and the one that mentions the date does not state the limit. The
question holds an **unresolved part** ("the Ferrolink version that reached end of life on
30 June 2024"); hop 1 resolves it to a **bridge fact** ("1.8"), and hop 2 searches the
question with the bridge put in its place ("... of Ferrolink 1.8?").

* **Hop 1** searches the question (after a follow-up, together with the previous question).
  When its top hits do not resolve the unresolved part, the part is searched on its own.
* **Bridge**, offline: the unresolved part is a noun phrase with a relative or participle
  clause ("the version that reached ...", "the error code logged for ...", "die Version,
  die ..."); its head noun says what kind of fact is wanted (version, error code, path,
  header, identifier). Of hop 1's top sentences, the one that best covers the clause
  (IDF-weighted, as :class:`~beleg.answer.scoring.SentenceScorer` measures coverage) and
  holds a fact of that kind gives the bridge; facts the question already states (the
  date) are not bridges. Without such a clause there is no second hop offline (hop 1's
  hits are the result). With an LLM: one call returns the bridge and the follow-up
  query as JSON. The model sees the question and hop 1's top passages, quarantined and
  fenced as in the answer prompt (:mod:`beleg.strategies.passages`); its query passes
  ``enforce_constraints`` (only the bridge may add a version, identifier or number).
  Instruction-like sentences are no evidence: they give no bridge, offline or from the LLM.
* **Consistency check** between the hops: a version bridge must be the version of a hop-1
  source (metadata, not just text), of the product the question names, and must agree
  with a version the caller's filter pins or the question asks about outside the
  unresolved part. Other bridges must occur in hop 1's text. A rejected bridge is noted;
  a rejected LLM bridge falls back to the offline method.
* **Hop 2** searches the rewritten question, restricted to the bridge version
  (``extra={"version": ...}``) when the bridge is a version.

Hits: hop 2's top three, then the hop-1 chunk that states the bridge (so an answer can cite
why that version was chosen), then the rest of hop 2, then hop 1. The trace notes the bridge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from beleg.answer.evidence import version_from_filter
from beleg.answer.quarantine import quarantine_hit, shown_value
from beleg.answer.values import extract_values
from beleg.backends.llms.base import Message
from beleg.index.analyzer import analyze
from beleg.query.conversation import retrieval_query
from beleg.query.versions import version_mentions
from beleg.sentences import split_sentences
from beleg.strategies.base import StrategyContext, StrategyResult
from beleg.strategies.iterative import (
    anchors,
    parse_json_object,
    question_noise,
    visible_products,
)
from beleg.strategies.passages import PASSAGES_ARE_DATA, passages
from beleg.strategies.rewrite import enforce_constraints
from beleg.types import Hit

#: Hop-1 hits whose sentences are searched for the bridge.
BRIDGE_DEPTH = 6
#: A sentence must cover at least this share of the clause's terms to give a bridge.
MIN_CLAUSE_COVERAGE = 0.5
#: Hop-2 hits placed before the bridge's hop-1 chunk.
HOP2_LEAD = 3

_DET_EN = r"(?:the|a|an)"
_HEAD = r"(?P<head>(?:[\w\-]+\s+){0,3}?[\w\-]+)"
_REL_EN = re.compile(
    rf"\b{_DET_EN}\s+{_HEAD}\s+(?P<clause>(?:that|which|whose|who)\s+[^?,;]+)", re.IGNORECASE)
_PARTICIPLE_EN = re.compile(
    rf"\b{_DET_EN}\s+{_HEAD}\s+(?P<clause>\w+ed\s+(?:for|on|in|by|at|with|to|from|after|before|during|when)\s+"
    rf"[^?,;]+)", re.IGNORECASE)
_REL_DE = re.compile(
    r"\b(?:der|die|das|den|dem|des)\s+(?P<head>(?:[\w\-]+\s+){0,3}?[\w\-]+),?\s+"
    r"(?P<clause>(?:der|die|das|dem|den|deren|dessen|welche[rsmn]?)\s+[^?;]+)", re.IGNORECASE)
_CLAUSE_PATTERNS = (_REL_EN, _PARTICIPLE_EN, _REL_DE)

#: Head noun → the kind of fact it asks for.
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("version", re.compile(r"\b(?:version\w*|release\w*|ausgabe)\b", re.IGNORECASE)),
    ("code", re.compile(r"\b(?:error|fehler\w*|code\w*|status)\b", re.IGNORECASE)),
    ("path", re.compile(r"\b(?:endpoints?|paths?|routes?|urls?|endpunkt\w*|pfad\w*)\b", re.IGNORECASE)),
    ("header", re.compile(r"\b(?:headers?|kopfzeile\w*)\b", re.IGNORECASE)),
    ("identifier", re.compile(r"\b(?:setting|parameter|option|field|key|queue|name|einstellung\w*|feld\w*|"
                              r"schlüssel\w*|warteschlange\w*)s?\b", re.IGNORECASE)),
)
_CODE = re.compile(r"(?<![\w-])[A-Z]{1,4}-\d{3,5}(?![\w-])")
_PATH = re.compile(r"(?:(?:GET|POST|PUT|PATCH|DELETE)\s+)?(?<![\w/])/[\w{}.~-]+(?:/[\w{}.~-]+)+")
_HEADER = re.compile(r"(?<![\w-])(?:X|[A-Z][a-z]+)(?:-[A-Z][A-Za-z]*)+(?![\w-])")
_TICKED = re.compile(r"`([^`\n]{2,80})`")
_VERSIONISH = re.compile(r"^(?:[A-Za-z][\w-]*\s+)?v?(\d{1,3}\.\d{1,3})$", re.IGNORECASE)
_VERSION_CUE = re.compile(r"\b(?:version|release|v)\s*(\d{1,3}\.\d{1,3})\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Unresolved:
    """The part of the question hop 1 must resolve: ``question[start:end]``."""

    start: int
    end: int
    head: str
    clause: str
    kind: str  # version | code | path | header | identifier | any


@dataclass(frozen=True, slots=True)
class Bridge:
    value: str
    kind: str
    hit: Hit | None  # the hop-1 chunk that states it (None when unknown)
    sentence: str
    origin: str  # "offline" | "llm"
    query: str | None = None  # the LLM's follow-up query


def find_unresolved(question: str) -> Unresolved | None:
    """The innermost noun phrase with a relative or participle clause, and the kind of fact its head asks for."""
    best: re.Match[str] | None = None
    for pattern in _CLAUSE_PATTERNS:
        for start in range(len(question)):
            m = pattern.match(question, start)
            if m and (best is None or m.start() > best.start()):
                best = m
    if best is None:
        return None
    head = best.group("head").strip()
    kind = next((name for name, rx in _KINDS if rx.search(head)), "any")
    return Unresolved(best.start(), best.end(), head, best.group("clause").strip(), kind)


def candidates(text: str, kind: str, products: Sequence[str]) -> list[tuple[str, str]]:
    """Facts of ``kind`` in ``text`` as (value, kind), in order of appearance within each kind."""
    out: list[tuple[str, str]] = []
    if kind in ("version", "any"):
        found = version_mentions(text, products) + [m.group(1) for m in _VERSION_CUE.finditer(text)]
        out += [(v, "version") for v in dict.fromkeys(found)]
    if kind in ("code", "any"):
        out += [(m.group(0), "code") for m in _CODE.finditer(text)]
    if kind in ("path", "any"):
        out += [(m.group(0), "path") for m in _PATH.finditer(text)]
    if kind in ("header", "any"):
        out += [(m.group(0), "header") for m in _HEADER.finditer(text)]
    if kind in ("identifier", "any"):
        out += [(m.group(1), "identifier") for m in _TICKED.finditer(text)]
    if kind == "any":
        out += [(v.raw, v.kind) for v in extract_values(text) if v.kind != "count"]
    return list(dict.fromkeys(out))


def _in_question(value: str, question: str) -> bool:
    if value.casefold() in question.casefold():
        return True
    qvalues = {(v.kind, v.normalized) for v in extract_values(question)}
    return any((v.kind, v.normalized) in qvalues for v in extract_values(value))


def substitute(question: str, part: Unresolved | None, bridge: Bridge, product: str | None) -> str:
    """The question with the unresolved part replaced by the bridge ("... of Ferrolink 1.8?")."""
    phrase = bridge.value
    if bridge.kind == "version":
        phrase = f"{product} {bridge.value}" if product else f"version {bridge.value}"
    if part is None:
        return f"{question.rstrip(' ?')} {phrase}"
    return question[: part.start] + phrase + question[part.end:]


class MultiHopStrategy:
    """Two hops: resolve the question's unresolved part in hop 1, search the rewritten question in hop 2."""

    name = "multi-hop"
    offline = True

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        hop1 = ctx.search(retrieval_query(question, ctx.conversation), step="hop 1")
        if not hop1:
            ctx.note("hop 1 found nothing: no bridge")
            return StrategyResult(hop1, ctx.trace)
        products = sorted(visible_products(ctx))
        part = find_unresolved(question)
        if part is None and ctx.llm is None:
            # Offline, a bridge needs a clause that says what to resolve; expanding every
            # question with some identifier of hop 1 is query expansion, not a second hop.
            ctx.note("no unresolved part (no relative or participle clause): a single hop")
            return StrategyResult(hop1, ctx.trace)
        if part is not None:
            ctx.note(f"unresolved part: {question[part.start:part.end]!r} (wants a {part.kind})")
        bridge: Bridge | None = None
        if ctx.llm is not None and ctx.llm_calls_left > 0:
            bridge = self._llm_bridge(question, ctx, hop1)
            if bridge is not None:
                reason = self._reject(bridge, question, part, hop1, products, ctx)
                if reason:
                    ctx.note(f"bridge {bridge.value!r} from the LLM rejected: {reason}; trying the offline bridge")
                    bridge = None
        if bridge is None:
            bridge = self._offline_bridge(question, part, hop1, products, ctx)
        if bridge is None and part is not None and ctx.rounds_left > 1:
            # The whole question may rank the answer's topic above the bridge ("retry window"
            # above "expired certificate"): search the unresolved part on its own.
            extra_hits = ctx.search(question[part.start:part.end], step="hop 1 (unresolved part)")
            hop1 = _merge(hop1, extra_hits)
            bridge = self._offline_bridge(question, part, extra_hits, products, ctx, context=hop1)
        if bridge is None:
            ctx.note("no bridge fact found in hop 1: hop-1 hits only")
            return StrategyResult(hop1, ctx.trace)
        ctx.note(f"bridge: {bridge.value} ({bridge.kind}, {bridge.origin}) from "
                 f"{_where(bridge.hit)}: {bridge.sentence[:160]!r}")
        product = self._product(question, bridge, products)
        query = self._checked_query(question, bridge, ctx, products) or substitute(question, part, bridge, product)
        extra = {"version": bridge.value} if bridge.kind == "version" else None
        if ctx.rounds_left <= 0:
            ctx.note("no retrieval budget left for hop 2: hop-1 hits only")
            return StrategyResult(hop1, ctx.trace)
        hop2 = ctx.search(query, step="hop 2", extra=extra)
        if not hop2:
            ctx.note("hop 2 found nothing: hop-1 hits only")
            return StrategyResult(hop1, ctx.trace)
        return StrategyResult(_combine(hop2, hop1, bridge.hit, ctx.k), ctx.trace)

    # ------------------------------------------------------------------ bridges
    def _offline_bridge(self, question: str, part: Unresolved | None, hop1: list[Hit], products: list[str],
                        ctx: StrategyContext, context: list[Hit] | None = None) -> Bridge | None:
        """The best-supported bridge in the top sentences of ``hop1``; ``context`` (default ``hop1``)
        is the hop-1 evidence the consistency check uses."""
        cov = ctx.term_coverage()
        clause = part.clause if part is not None else question
        weights = cov.weights(clause, question_noise())
        kind = part.kind if part is not None else "any"
        scored: list[tuple[float, int, int, Bridge]] = []
        for rank, hit in enumerate(hop1[:BRIDGE_DEPTH]):
            lang = str(hit.metadata.get("language") or "en")
            heading = shown_value(hit.heading_path[-1]) if hit.heading_path else ""
            withheld = quarantine_hit(hit)
            for pos, span in enumerate(split_sentences(hit.text)):
                if span.kind not in ("sentence", "list-item", "table-row"):
                    continue
                if withheld.overlaps(span.start, span.end):
                    continue  # instruction-like text is no evidence, so it gives no bridge either
                share = cov.share(weights, set(analyze(span.text, lang)))
                if share < MIN_CLAUSE_COVERAGE:
                    continue
                found = candidates(span.text, kind, products)
                if not found and kind not in ("version", "any"):
                    found = candidates(heading, kind, products)  # "E-5042 — Webhook target TLS error"
                if part is None:  # no clause (an LLM bridge was rejected): identifiers and versions only
                    found = [f for f in found if f[1] in ("version", "code", "path", "header", "identifier")]
                for value, vkind in found:
                    if _in_question(value, question):
                        continue
                    bridge = Bridge(value, vkind, hit, span.text, "offline")
                    reason = self._reject(bridge, question, part, context or hop1, products, ctx)
                    if reason:
                        ctx.note(f"bridge candidate {value!r} rejected: {reason}")
                        continue
                    scored.append((share, rank, pos, bridge))
                    break
        if not scored:
            return None
        scored.sort(key=lambda item: (-item[0], item[1], item[2]))
        return scored[0][3]

    def _llm_bridge(self, question: str, ctx: StrategyContext, hop1: list[Hit]) -> Bridge | None:
        system = ("You resolve multi-hop questions. The question depends on an intermediate fact (the bridge: a "
                  "version, an error code, an endpoint, a name) that the passages state. Find it and write the "
                  "follow-up search query with the bridge in place of the description. Reply with JSON only: "
                  '{"bridge": "...", "query": "..."}; if the passages do not state it, reply {"bridge": null}. '
                  + PASSAGES_ARE_DATA)
        text = ctx.complete([Message("system", system),
                             Message("user", f"Question: {question}\n\nPassages:\n{passages(hop1)}")],
                            step="bridge (LLM)", max_tokens=120)
        data = parse_json_object(text)
        if data is None or not data.get("bridge"):
            ctx.note("the LLM gave no bridge" + ("" if data is not None else " (reply was not JSON)"))
            return None
        value = str(data["bridge"]).strip()
        query = str(data.get("query") or "").strip() or None
        m = _VERSIONISH.match(value)
        if m:
            return Bridge(m.group(1), "version", _stating(hop1, m.group(1)), "", "llm", query)
        return Bridge(value, "any", _stating(hop1, value), "", "llm", query)

    @staticmethod
    def _checked_query(question: str, bridge: Bridge, ctx: StrategyContext, products: list[str]) -> str | None:
        """The LLM's hop-2 query after the constraint check every generated query passes
        (rewrite, multi-query, decompose, iterative): besides the question and the conversation
        only the bridge may add a version, identifier or number. None: no usable query."""
        if bridge.query is None:
            return None
        allowed = "\n".join([question, *ctx.context, bridge.value])
        checked = enforce_constraints(bridge.query, allowed, [*anchors(question, products), bridge.value],
                                      products).note_to(ctx, "hop-2 query check")
        if checked.rejected:
            ctx.note("the LLM's hop-2 query was rejected: the question with the bridge in place is searched")
            return None
        return checked.query

    def _reject(self, bridge: Bridge, question: str, part: Unresolved | None, hop1: list[Hit],
                products: list[str], ctx: StrategyContext) -> str | None:
        """Why a bridge is inconsistent with hop 1 or the question; None when it is consistent."""
        if bridge.kind != "version":
            if bridge.hit is None:
                return "it occurs in no hop-1 source"
            return None
        asked_products = [p for p in products if re.search(rf"\b{re.escape(p)}\b", question, re.IGNORECASE)]
        versions = {str(h.metadata["version"]) for h in hop1 if h.metadata.get("version") is not None
                    and (not asked_products or str(h.metadata.get("product") or "").casefold()
                         in {p.casefold() for p in asked_products})}
        if bridge.value not in versions:
            shown = ", ".join(sorted(versions)) or "none"
            product = f" of {asked_products[0]}" if asked_products else ""
            return f"version {bridge.value} is not a version{product} in the hop-1 sources (those have {shown})"
        pinned = version_from_filter(ctx.filter)
        if pinned is not None and pinned != bridge.value:
            return f"the filter pins version {pinned}"
        outside = question if part is None else question[: part.start] + " " + question[part.end:]
        named = version_mentions(outside, products)
        if named and bridge.value not in named:
            return f"the question asks about version {', '.join(named)}"
        return None

    @staticmethod
    def _product(question: str, bridge: Bridge, products: list[str]) -> str | None:
        for p in products:
            m = re.search(rf"\b{re.escape(p)}\b", question, re.IGNORECASE)
            if m:
                return m.group(0)
        if bridge.hit is not None and bridge.hit.metadata.get("product"):
            return str(bridge.hit.metadata["product"]).capitalize()
        return None


def _stating(hits: Sequence[Hit], value: str) -> Hit | None:
    """The first hit whose text states ``value`` (as a whole token)."""
    rx = re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", re.IGNORECASE)
    return next((h for h in hits if rx.search(quarantine_hit(h).redact(h.text))), None)


def _merge(first: list[Hit], second: list[Hit]) -> list[Hit]:
    out: dict[str, Hit] = {}
    for h in [*first, *second]:
        out.setdefault(h.chunk_id, h)
    return list(out.values())


def _where(hit: Hit | None) -> str:
    if hit is None:
        return "?"
    return " > ".join(hit.heading_path) or hit.title or hit.doc_id


def _combine(hop2: list[Hit], hop1: list[Hit], bridge_hit: Hit | None, k: int) -> list[Hit]:
    """Hop 2's lead, the bridge's chunk, the rest of hop 2, then hop 1; each chunk once, ``k`` in all."""
    order = hop2[:HOP2_LEAD] + ([bridge_hit] if bridge_hit is not None else []) + hop2[HOP2_LEAD:] + hop1
    out: dict[str, Hit] = {}
    for h in order:
        out.setdefault(h.chunk_id, h)
    return list(out.values())[:k]


__all__ = ["Bridge", "MultiHopStrategy", "Unresolved", "candidates", "find_unresolved", "substitute"]
