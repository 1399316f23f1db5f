"""Multi-query retrieval: search several formulations of one question and fuse them with RRF.

A question phrased in the user's words ("items that gave up") can miss documents written
in the product's words ("dead-lettered messages"), and a German question can miss the
English page that answers it. Searching several formulations and fusing the lists (RRF)
raises recall without letting one bad formulation dominate.

* **LLM method**: one call writes three alternative phrasings (one per line, at least one
  in the other corpus language, German ↔ English); each is checked in code
  (:func:`beleg.strategies.rewrite.enforce_constraints`): the question's identifiers and
  versions must survive, versions and products not in the question or conversation are
  removed (feature, header and setting names may be added: naming what the question
  describes is the point of a phrasing). Each is searched, together with the question.
* **Offline method**: pseudo-relevance feedback (RM3-like). The original question is
  searched; from its top five hits the most discriminative terms (weight in the feedback
  chunks × idf of the index, present in at least two of them) that are not in the question
  are picked; an expanded query (question + terms) and a BM25-only query with the
  expansion are searched and fused with the original, at half its weight. Expansion never
  adds numbers, versions or identifiers (no invented constraints).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from beleg.answer.quarantine import quarantine_hit
from beleg.backends.llms.base import Message
from beleg.index.analyzer import STOPWORDS, analyze, analyze_query, detect_language
from beleg.retrieve.fusion import rrf
from beleg.strategies.base import StrategyContext, StrategyResult, fuse
from beleg.strategies.parallel import SubSearch, search_all
from beleg.strategies.rewrite import (
    conversation_block,
    enforce_constraints,
    find_constraints,
    known_products,
    output_lines,
)
from beleg.types import Hit

LANGUAGE_NAMES = {"en": "English", "de": "German"}

MULTI_QUERY_SYSTEM = """You write alternative search queries for a product documentation search engine.
The documentation is in English and German.
Rules:
- Write exactly 3 alternative phrasings of the question, one per line, no numbering, no explanation.
- Use different words than the question: the terms product documentation would use, synonyms, the
  name of the feature, header or setting the question describes.
- At least one phrasing must be in {other}.
- Keep every constraint of the question exactly as written: product, version, identifiers such as error
  codes (E-4012), API paths (/api/v3), header and setting names.
- Add no product or version that is not in the question or the conversation, and no answer."""

MULTI_QUERY_USER = """Earlier questions of the conversation (for reference only, oldest first):
{conversation}

Question ({language}): {question}

3 alternative phrasings:"""

#: Feedback depth, expansion size.
FEEDBACK_DOCS = 5
MIN_TERMS = 5
MAX_TERMS = 8
#: A term must occur in at least this many feedback hits (one chunk's oddities are not expanded).
MIN_SUPPORT = 2
#: RRF weights: original question, expanded query, BM25 expansion. RM3 interpolates the
#: expansion with the original query; here a chunk that only the expansions find enters the
#: top ten when both rank it high (2 x 0.5 / (60 + 4) > 1 / (60 + 10)), while one expansion
#: alone cannot push out the question's own hits.
PRF_WEIGHTS = (1.0, 0.5, 0.5)
_WORD = re.compile(r"[^\W\d_][\w\-]*[^\W\d_]|[^\W\d_]{2,}", re.UNICODE)


class MultiQueryStrategy:
    """Several formulations (LLM) or pseudo-relevance-feedback expansions (offline), fused with RRF."""

    name = "multi-query"
    offline = True

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        if ctx.llm is None:
            return self._prf(question, ctx)
        return self._llm(question, ctx)

    # ------------------------------------------------------------------ LLM
    def _llm(self, question: str, ctx: StrategyContext) -> StrategyResult:
        ctx.note("multi-query method: LLM phrasings")
        lists = [ctx.search(question, step="search")]
        products = known_products(ctx)
        language = detect_language(question)
        other = "German" if language == "en" else "English"
        messages = [Message("system", MULTI_QUERY_SYSTEM.format(other=other)),
                    Message("user", MULTI_QUERY_USER.format(conversation=conversation_block(ctx.context),
                                                            language=LANGUAGE_NAMES.get(language, language),
                                                            question=question))]
        reply = ctx.complete(messages, step="multi-query-llm", max_tokens=200)
        allowed = "\n".join([question, *ctx.context])
        require = find_constraints(question, products).terms
        phrasings: list[str] = []
        for i, line in enumerate(output_lines(reply)[:3], 1):
            checked = enforce_constraints(line, allowed, require, products,
                                          check_identifiers=False).note_to(ctx, f"phrasing {i} check")
            if not checked.rejected and checked.query.casefold() != question.casefold() \
                    and checked.query not in phrasings:
                phrasings.append(checked.query)
        if not phrasings:
            ctx.note("the LLM gave no usable phrasing; only the question was searched")
        searched = phrasings[:max(ctx.rounds_left, 0)]
        if len(searched) < len(phrasings):
            ctx.note(f"retrieval budget spent: {len(phrasings) - len(searched)} phrasing(s) not searched")
        # Independent phrasings run in parallel threads; results and trace keep this order.
        lists.extend(search_all(ctx, [SubSearch(p, f"phrasing-{i}") for i, p in enumerate(searched, 1)]))
        return StrategyResult(fuse(lists, ctx.k), ctx.trace)

    # ------------------------------------------------------------------ offline
    def _prf(self, question: str, ctx: StrategyContext) -> StrategyResult:
        ctx.note("multi-query method: offline pseudo-relevance feedback")
        first = ctx.search(question, step="search")
        terms = expansion_terms(question, first[:FEEDBACK_DOCS], ctx)
        if not terms:
            ctx.note("no expansion terms found in the feedback hits; only the question was searched")
            return StrategyResult(first, ctx.trace)
        ctx.note(f"expansion terms from the top {min(FEEDBACK_DOCS, len(first))} hits: {', '.join(terms)}")
        expansion = " ".join(terms)
        second = [SubSearch(f"{question} {expansion}", "prf-expanded"),
                  SubSearch(f"{question} {expansion}", "prf-bm25", mode="bm25")][:max(ctx.rounds_left, 0)]
        lists = [first, *search_all(ctx, second)]  # both in parallel threads, in this order
        return StrategyResult(weighted_fuse(lists, PRF_WEIGHTS[:len(lists)], ctx.k), ctx.trace)


def weighted_fuse(lists: Sequence[Sequence[Hit]], weights: Sequence[float], k: int) -> list[Hit]:
    """RRF with a weight per list (``fuse`` with weights); the first occurrence's hit object is kept."""
    by_id: dict[str, Hit] = {}
    for hits in lists:
        for hit in hits:
            by_id.setdefault(hit.chunk_id, hit)
    fused = rrf([[h.chunk_id for h in hits] for hits in lists], weights=weights)
    return [by_id[cid] for cid, _ in fused[:k]]


def expansion_terms(question: str, feedback: Sequence[Hit], ctx: StrategyContext,
                    limit: int = MAX_TERMS) -> list[str]:
    """The most discriminative words of the feedback hits that the question lacks, as surface words.

    A stem's weight is the sum over feedback chunks of its relative frequency in the chunk,
    weighted by the chunk's rank (1/sqrt(rank)) and multiplied by the stem's idf in the
    index. Stems in the question, stopwords, words of one or two letters and anything with
    a digit (numbers, versions, codes) are skipped. Between ``MIN_TERMS`` and ``limit``
    words are returned: beyond the minimum, a word must weigh at least half the best.
    """
    question_terms = set(analyze_query(question, "en")) | set(analyze_query(question, "de"))
    weights: dict[str, float] = defaultdict(float)
    surfaces: dict[str, Counter[str]] = defaultdict(Counter)
    support: Counter[str] = Counter()
    for rank, hit in enumerate(feedback, 1):
        # Withheld (instruction-like) sentences give no words: a planted order would steer the search.
        text = quarantine_hit(hit).redact(hit.text)
        language = str(hit.metadata.get("language") or detect_language(text))
        stop = STOPWORDS.get(language, STOPWORDS["en"])
        counts: Counter[str] = Counter()
        for word in _WORD.findall(text):
            low = word.casefold()
            if len(low) < 3 or low in stop or "_" in low:
                continue
            stems = analyze(word, language)
            if not stems:
                continue
            stem = stems[0]
            counts[stem] += 1
            surfaces[stem][low] += 1
        total = sum(counts.values()) or 1
        for stem, tf in counts.items():
            weights[stem] += (tf / total) / math.sqrt(rank)
            support[stem] += 1
    # Statistics over what the asker may read: a stem of a visible hit is visible.
    index = ctx.kb.search_index()
    stats = index.term_statistics(list(weights), index.eligible(None, ctx.principal))
    scored = []
    for stem, weight in weights.items():
        if not stats.known(stem) or stem in question_terms:
            continue
        if support[stem] < MIN_SUPPORT:
            continue
        scored.append((weight * stats.idf_of(stem), stem))
    scored.sort(key=lambda x: (-x[0], x[1]))
    out: list[str] = []
    for score, stem in scored:
        if len(out) >= limit or (len(out) >= MIN_TERMS and score < 0.5 * scored[0][0]):
            break
        surface = surfaces[stem].most_common(1)[0][0]
        if surface not in out:
            out.append(surface)
    return out
