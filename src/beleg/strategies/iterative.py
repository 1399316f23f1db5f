"""Iterative retrieval: search again for what the evidence does not cover yet.

After each round the strategy measures **coverage**: the IDF-weighted share of the
question's content terms found in the evidence so far (the top hits of every round, text
and section headings), the measure :meth:`beleg.answer.scoring.SentenceScorer.coverage`
uses, with the index's own IDF (``ctx.term_coverage()``). For a multi-part question
("What are the maximum message size and the default max_delivery_attempts?") each
sub-part is measured on its own as well, so one well-covered part cannot hide a missing one.

What is not covered is a **gap**. The next round searches for it:

* offline: the uncovered sub-part (with the question's product and version), or the
  uncovered terms together with their nearest content words in the question, the
  question's constraints (product, version) and its two rarest covered words (which keep
  the query on topic);
* with an LLM: one call per round asking what is missing and for a query (JSON); the
  model sees the question and the evidence so far as passages, quarantined and fenced as
  in the answer prompt (:mod:`beleg.strategies.passages`); its query passes
  ``enforce_constraints``; the offline query is used when the reply is unusable, the
  check rejects the query, or the LLM budget is spent.

Stop rules, each noted in the trace: coverage reached the threshold (all sub-parts
too); a round covered no new question term (no progress); the remaining gap terms
occur nowhere in the index (no search can find them); the query would repeat; or the
budget ends. Every round notes its coverage.

Hits: round 1's top hits first, then the hits of later rounds that covered a term no
earlier evidence covered (they fill the gap), then everything else fused with RRF. A gap
round's other hits are no better than round 1's and do not displace them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from beleg.backends.llms.base import Message
from beleg.index.analyzer import analyze, detect_language
from beleg.query.conversation import retrieval_query
from beleg.query.versions import version_mentions
from beleg.retrieve.coverage import TermCoverage, evidence_terms
from beleg.strategies.base import StrategyContext, StrategyResult, fuse
from beleg.strategies.passages import PASSAGES_ARE_DATA, passages
from beleg.strategies.rewrite import enforce_constraints
from beleg.types import Hit

if TYPE_CHECKING:
    pass

#: Stop when this share of the question's (IDF-weighted) terms is covered, and every sub-part too.
COVERAGE_THRESHOLD = 0.85
#: A sub-part of a multi-part question counts as covered from this share on.
PART_THRESHOLD = 0.75
#: How many top hits of each round count as evidence (what an answerer reads).
EVIDENCE_DEPTH = 5
#: The question's rarest covered words added to an offline gap query, to keep it on topic.
RARE_ANCHORS = 2

_WORD = re.compile(r"/?[\w{}]+(?:[./\-:#@+]+[\w{}]+)*/?", re.UNICODE)
_WH = (r"what|which|how|where|when|why|who|is|are|does|do|did|can|could|should|was|were|"
       r"wie|was|welche\w*|wo|wann|warum|wer|ist|sind|gibt|kann|muss|werden|wird")
#: Boundaries between the parts of a multi-part question.
_PART_SPLIT = re.compile(
    rf"\?\s+|\s*[;]\s+|,\s*(?:and|und|or|oder)\s+(?=(?:{_WH})\b)|\s+(?:and|und)\s+(?=(?:{_WH})\b)",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------- coverage
#: Question words that carry no content (interrogatives, pronouns, light verbs): what the
#: evidence is checked for is the *subject* of the question, not how it is asked.
_QUESTION_WORDS = (
    "how", "much", "many", "long", "far", "soon", "often", "quickly", "what", "which", "who", "whom",
    "whose", "where", "when", "why", "whether", "me", "my", "mine", "us", "our", "ours", "i", "you",
    "your", "yours", "we", "they", "it", "its", "there", "here", "one", "ones", "some", "any", "tell",
    "told", "mean", "means", "meant", "happen", "happens", "happened", "get", "gets", "got", "go",
    "goes", "going", "went", "gone", "give", "gives", "gave", "make", "makes", "made", "need", "needs",
    "want", "wants", "know", "let", "lets", "please", "also", "exactly", "such", "most", "least",
    "wie", "viel", "viele", "vielen", "welch", "welche", "welcher", "welches", "welchen", "wann", "wo",
    "warum", "wer", "wem", "wen", "wessen", "mein", "meine", "meinen", "meiner", "mir", "mich",
    "unser", "unsere", "uns", "euch", "ihr", "hoch", "lange", "gibt", "geht", "machen", "macht",
    "bedeutet", "bedeuten", "passiert", "bekomme", "bekommen", "soll", "sollen", "muss", "müssen",
    "darf", "dürfen", "tun", "solche", "solcher", "höchstens",
)


@lru_cache(maxsize=1)
def question_noise() -> frozenset[str]:
    """The BM25 terms (both languages) of :data:`_QUESTION_WORDS`."""
    terms: set[str] = set()
    for word in _QUESTION_WORDS:
        for lang in ("en", "de"):
            terms.update(analyze(word, lang, keep_stopwords=True))
    return frozenset(terms)


# ---------------------------------------------------------------------- question parts
def query_languages(text: str) -> list[str]:
    guess = detect_language(text, default="?")
    return ["en", "de"] if guess == "?" else [guess]


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    terms: frozenset[str]  # empty for stopwords


def question_words(text: str) -> list[Word]:
    """The question's words in order, each with the BM25 terms it contributes."""
    langs = query_languages(text)
    out = []
    for m in _WORD.finditer(text):
        raw = m.group(0).rstrip("/:.-")
        if not raw:
            continue
        terms: set[str] = set()
        for lang in langs:
            terms.update(analyze(raw, lang))
        out.append(Word(raw, frozenset(terms)))
    return out


def visible_products(ctx: StrategyContext) -> set[str]:
    """Product names of the documents the principal may read."""
    return ctx.kb.metadata_values("product", ctx.principal)


def anchors(question: str, products: Iterable[str]) -> list[str]:
    """Constraint words a follow-up query must keep: product names and the versions asked about."""
    names = {p.casefold() for p in products}
    words = [m.group(0) for m in _WORD.finditer(question) if m.group(0).casefold() in names]
    return list(dict.fromkeys([*words, *version_mentions(question, products)]))


def split_parts(question: str) -> list[str]:
    """Sub-parts of a multi-part question (several questions, or coordinated clauses); ``[question]`` if one."""
    parts = [p.strip(" ,;?") for p in _PART_SPLIT.split(question)]
    parts = [p for p in parts if any(w.terms for w in question_words(p))]
    return parts if len(parts) >= 2 else [question]


def gap_query(question: str, uncovered: set[str], extra: Sequence[str] = ()) -> str:
    """The uncovered terms' words, their nearest content words in the question, and ``extra`` constraints."""
    words = question_words(question)
    keep: set[int] = set()
    content = [i for i, w in enumerate(words) if w.terms]
    for pos, i in enumerate(content):
        if words[i].terms & uncovered:
            keep.add(i)
            if pos > 0:
                keep.add(content[pos - 1])
            if pos + 1 < len(content):
                keep.add(content[pos + 1])
    chosen = [words[i].text for i in sorted(keep)]
    low = {c.casefold() for c in chosen}
    chosen += [a for a in extra if a.casefold() not in low]
    return " ".join(dict.fromkeys(chosen))


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in an LLM reply (code fences and prose around it are tolerated)."""
    start = text.find("{")
    while start >= 0:
        depth = 0
        for end in range(start, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start:end + 1])
                    except json.JSONDecodeError:
                        break
                    return value if isinstance(value, dict) else None
        start = text.find("{", start + 1)
    return None


# ---------------------------------------------------------------------- strategy
_GAP_SYSTEM = ("You help a search system answer a question from documents. Given the question and the passages "
               "found so far, say what information is still missing and write one short search query for it. "
               'Reply with JSON only: {"missing": "...", "query": "..."}; when nothing is missing reply '
               '{"missing": null}. Keep product names and versions of the question in the query. '
               + PASSAGES_ARE_DATA)


class IterativeStrategy:
    """Search, measure coverage, search for the gap; repeat until covered, stuck or out of budget."""

    name = "iterative"
    offline = True

    def __init__(self, threshold: float = COVERAGE_THRESHOLD, part_threshold: float = PART_THRESHOLD,
                 depth: int = EVIDENCE_DEPTH) -> None:
        self.threshold = threshold
        self.part_threshold = part_threshold
        self.depth = depth

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        query = retrieval_query(question, ctx.conversation)
        hits = ctx.search(query, step="round 1")
        return self.run_from(question, ctx, query, hits)

    def run_from(self, question: str, ctx: StrategyContext, query: str, first: list[Hit]) -> StrategyResult:
        """Continue from a first round already searched (``query`` gave ``first``); used by ``auto``."""
        cov = ctx.term_coverage()
        weights = cov.weights(query, question_noise())
        parts = split_parts(question)
        part_weights = [cov.weights(p, question_noise()) for p in parts] if len(parts) > 1 else []
        extra = anchors(query, visible_products(ctx))
        rounds: list[list[Hit]] = [first]
        filling: list[Hit] = []  # hits of later rounds that cover a term nothing before covered
        seen = evidence_terms(first[: self.depth])
        issued = {query.casefold()}
        covered = {t for t in weights if t in seen}
        number = 1
        while True:
            share = cov.share(weights, seen)
            part_shares = [cov.share(w, seen) for w in part_weights]
            detail = f"; parts {', '.join(f'{s:.2f}' for s in part_shares)}" if part_shares else ""
            ctx.note(f"round {number}: coverage {share:.2f}{detail}")
            if share >= self.threshold and all(s >= self.part_threshold for s in part_shares):
                ctx.note(f"stop: coverage {share:.2f} reached the threshold {self.threshold:g}")
                break
            gap = self._gap(question, weights, parts, part_weights, seen, cov, extra)
            if gap is None:
                ctx.note("stop: the uncovered terms occur nowhere in the index; no search can find them")
                break
            if ctx.rounds_left <= 0:
                ctx.note(f"stop: retrieval budget of {ctx.budget.max_rounds} rounds spent")
                break
            next_query = self._llm_query(question, ctx, rounds, gap) if ctx.llm is not None else gap
            if next_query is None:
                ctx.note("stop: the LLM says nothing is missing")
                break
            if next_query.casefold() in issued:
                ctx.note(f"stop: the next query would repeat {next_query!r}")
                break
            issued.add(next_query.casefold())
            number += 1
            hits = ctx.search(next_query, step=f"round {number}")
            rounds.append(hits)
            gap_terms = {t for t in weights if t not in seen}
            filling += [h for h in hits[: self.depth] if evidence_terms([h]) & gap_terms]
            seen |= evidence_terms(hits[: self.depth])
            now = {t for t in weights if t in seen}
            if not (now - covered) and not any(
                    cov.share(w, seen) > s for w, s in zip(part_weights, part_shares)):
                ctx.note(f"round {number}: coverage {cov.share(weights, seen):.2f}")
                ctx.note(f"stop: round {number} covered no new question term (no progress)")
                break
            covered = now
        return StrategyResult(self._order(rounds, filling, ctx.k), ctx.trace)

    def _order(self, rounds: list[list[Hit]], filling: list[Hit], k: int) -> list[Hit]:
        """Round 1's top hits, then the later hits that filled a gap, then the rest (RRF of all rounds).

        A gap round searches for a part of the question; its other hits are no better
        than round 1's, so they do not displace them.
        """
        out: dict[str, Hit] = {}
        for h in [*rounds[0][: self.depth], *filling, *fuse(rounds, max(k, sum(len(r) for r in rounds)))]:
            out.setdefault(h.chunk_id, h)
        return list(out.values())[:k]

    def _gap(self, question: str, weights: dict[str, float], parts: list[str], part_weights: list[dict[str, float]],
             seen: set[str], cov: TermCoverage, extra: Sequence[str]) -> str | None:
        """The offline query for the biggest gap; None when nothing uncovered is in the index."""
        if part_weights:
            shares = [cov.share(w, seen) for w in part_weights]
            worst = min(range(len(parts)), key=lambda i: shares[i])
            missing = {t for t in part_weights[worst] if t not in seen and cov.known(t)}
            if shares[worst] < self.part_threshold and missing:
                low = parts[worst].casefold()
                return " ".join([parts[worst], *(a for a in extra if a.casefold() not in low)])
        uncovered = {t for t in weights if t not in seen and cov.known(t)}
        if not uncovered:
            return None
        # The question's rarest covered words keep the gap query on topic ("control" alone
        # finds anything; "visibility_timeout_seconds control" finds the setting).
        covered_words = [w for w in question_words(question) if w.terms & (set(weights) - uncovered)]
        covered_words.sort(key=lambda w: -max(cov.idf(t) for t in w.terms))
        rare = [w.text for w in covered_words[:RARE_ANCHORS]]
        return gap_query(question, uncovered, [*extra, *rare]) or None

    def _llm_query(self, question: str, ctx: StrategyContext, rounds: list[list[Hit]], fallback: str) -> str | None:
        """One LLM call: what is missing, and a query for it. ``fallback`` when the reply is unusable."""
        if ctx.llm_calls_left <= 0:
            ctx.note("LLM budget spent: offline gap query")
            return fallback
        evidence = [h for hits in rounds for h in hits[: self.depth]]
        text = ctx.complete([Message("system", _GAP_SYSTEM),
                             Message("user", f"Question: {question}\n\nPassages:\n{passages(evidence, n=8, chars=300)}")],
                            step="gap (LLM)", max_tokens=120)
        data = parse_json_object(text)
        if data is None:
            ctx.note("LLM reply was not JSON: offline gap query")
            return fallback
        if not data.get("missing"):
            return None
        query = str(data.get("query") or "").strip()
        if not query:
            ctx.note("LLM gave no query: offline gap query")
            return fallback
        ctx.note(f"LLM: missing {str(data['missing'])[:80]!r}")
        # The same check as every generated query (rewrite, multi-query, decompose): no
        # version, product, identifier or number the user did not ask for.
        products = sorted(visible_products(ctx))
        checked = enforce_constraints(query, "\n".join([question, *ctx.context]), anchors(question, products),
                                      products).note_to(ctx, "gap query check")
        if checked.rejected:
            ctx.note("LLM gap query rejected: offline gap query")
            return fallback
        return checked.query


__all__ = ["COVERAGE_THRESHOLD", "IterativeStrategy", "TermCoverage", "anchors", "evidence_terms", "gap_query",
           "parse_json_object", "passages", "question_words", "split_parts", "visible_products"]
