"""Contextual compression: keep from each retrieved chunk only what bears on the question.

Each hit is split into citable sentences (:func:`beleg.sentences.split_sentences`,
the splitter the answerer quotes with; headings are left out, the heading path stays on
the hit). Sentences are scored offline by the cosine of the index embedder's query and
sentence vectors plus a share of the question's terms they contain; a hit keeps its best
sentence and those within ``margin`` of it (at most ``per_chunk``). With an LLM the
sentences are *extracted* instead: the model quotes them, and a quote counts only if it
is an exact substring of the hit (nothing it paraphrased or invented gets through).

Kept sentences that are adjacent form one run; every run becomes its own hit whose
``start``/``end`` are exact document offsets and whose ``text`` is the document's text
there, so citations of a compressed answer still verify. The first run keeps the chunk
id, later runs get ``CHUNK_ID#2``, ``#3`` (they are pieces of that chunk). Hits are taken
in rank order until ``budget_tokens`` words are spent; the first hit's best run is kept
whatever its size, so compression never turns a result into nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from beleg.errors import ConfigError
from beleg.index.analyzer import analyze_query
from beleg.sentences import Span, split_sentences
from beleg.types import Hit

#: How much the share of question terms a sentence contains adds to its cosine.
LEXICAL_WEIGHT = 0.2

EXTRACT_SYSTEM = ("You select evidence. From the passage, copy every sentence that helps answer the question, "
                  "exactly as written, one per line. Copy nothing else. If none helps, answer NONE.")
EXTRACT_USER = "Question: {question}\n\nPassage:\n{passage}"


@dataclass(frozen=True, slots=True)
class CompressOptions:
    """``budget_tokens``: words kept over all hits; ``per_chunk``: sentences kept per hit at most;
    ``margin``: a sentence is kept when its score is within this of the hit's best."""

    budget_tokens: int = 400
    per_chunk: int = 3
    margin: float = 0.05
    #: An LLM (:class:`beleg.backends.llms.base.LLM`) to extract with; None scores offline.
    llm: Any = None

    def __post_init__(self) -> None:
        if self.budget_tokens < 1 or self.per_chunk < 1 or self.margin < 0:
            raise ConfigError(f"compression needs budget_tokens >= 1, per_chunk >= 1 and margin >= 0; got "
                              f"{self.budget_tokens}, {self.per_chunk}, {self.margin}")


Embed = Callable[[list[str]], np.ndarray]


def compress(hits: Sequence[Hit], question: str, options: CompressOptions, embed_query: Callable[[str], np.ndarray],
             embed_sentences: Embed) -> list[Hit]:
    """The compressed hits, in rank order (see the module docstring)."""
    out: list[Hit] = []
    spent = 0
    query_vector: np.ndarray | None = None  # embedded once, and only when a hit is scored offline
    for hit in hits:
        spans = [s for s in split_sentences(hit.text) if s.kind != "heading" and s.text.strip()]
        if not spans:
            continue
        if options.llm is not None:
            kept = _extracted(hit, spans, question, options)
        else:
            query_vector = embed_query(question) if query_vector is None else query_vector
            kept = _scored(spans, question, options, query_vector, embed_sentences)
        for n, (a, b, score) in enumerate(_runs(spans, kept)):
            words = len(hit.text[a:b].split())
            if out and spent + words > options.budget_tokens:
                return out
            spent += words
            chunk_id = hit.chunk_id if n == 0 else f"{hit.chunk_id}#{n + 1}"
            out.append(replace(hit, chunk_id=chunk_id, start=hit.start + a, end=hit.start + b, text=hit.text[a:b],
                               scores={**hit.scores, "compress": round(score, 4)},
                               matched=hit.matched))
    return out


def _scored(spans: list[Span], question: str, options: CompressOptions, q: np.ndarray,
            embed_sentences: Embed) -> dict[int, float]:
    """Sentence index → score for the sentences a hit keeps (offline); ``q`` is the question's vector."""
    vectors = embed_sentences([s.text for s in spans])
    terms = set(analyze_query(question))
    scores = []
    for span, v in zip(spans, vectors):
        share = len(terms & set(analyze_query(span.text))) / len(terms) if terms else 0.0
        scores.append(float(v @ q) + LEXICAL_WEIGHT * share)
    order = sorted(range(len(spans)), key=lambda i: (-scores[i], i))
    best = scores[order[0]]
    return {i: scores[i] for i in order[: options.per_chunk] if scores[i] >= best - options.margin}


def _extracted(hit: Hit, spans: list[Span], question: str, options: CompressOptions) -> dict[int, float]:
    """Sentence index → 1.0 for the sentences the LLM quoted exactly (a quote may cover several)."""
    from beleg.backends.llms.base import Message

    reply = options.llm.complete([Message("system", EXTRACT_SYSTEM),
                                  Message("user", EXTRACT_USER.format(question=question, passage=hit.text))],
                                 max_tokens=400).text
    kept: dict[int, float] = {}
    for line in (ln.strip().strip('"“”') for ln in reply.splitlines()):
        if not line or line.upper() == "NONE":
            continue
        at = _find_exact(hit.text, line)
        if at is None:
            continue  # not a quote of this passage: dropped, never trusted
        for i, s in enumerate(spans):
            if s.start < at[1] and at[0] < s.end:
                kept[i] = 1.0
    return dict(sorted(kept.items())[: options.per_chunk])


def _find_exact(text: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` occurs in ``text``, allowing only a list marker the model dropped."""
    quote = re.sub(r"^(?:[-*+]|\d{1,3}[.)])\s+", "", quote)
    if len(quote) < 8:
        return None
    i = text.find(quote)
    return (i, i + len(quote)) if i >= 0 else None


def _runs(spans: list[Span], kept: dict[int, float]) -> list[tuple[int, int, float]]:
    """Runs of adjacent kept sentences as (start, end, best score) in hit-text offsets, best run first."""
    runs: list[tuple[int, int, float]] = []
    last = -2
    for i in sorted(kept):
        if i == last + 1 and runs:
            a, _, score = runs[-1]
            runs[-1] = (a, spans[i].end, max(score, kept[i]))
        else:
            runs.append((spans[i].start, spans[i].end, kept[i]))
        last = i
    return sorted(runs, key=lambda r: (-r[2], r[0]))
