"""Score the sentences of retrieved sources as answers to a question.

Offline, with no generative model, an answer is a sentence the sources actually contain,
so choosing it well is the whole job. A sentence's score mixes three signals:

* **lexical coverage**: the IDF-weighted share of the question's terms the sentence (or,
  at half weight, its section heading) contains. Terms the index has never seen weigh
  the most, so a question about "MQTT" is poorly covered by any sentence about queues.
* **dense similarity**: the e5 cosine between question and sentence, rescaled to [0, 1];
  it carries cross-lingual questions, where terms cannot match.
* **answer type**: "how long" wants a duration, "how large" a size; a sentence that holds
  a value of the expected kind gains, one that holds none loses.

Lexical weight is lower when question and source differ in language. The weights were
set on XQuAD dev and the demo gold set (see docs/benchmarks.md, "Answers").
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from beleg.answer.quarantine import PROSE_KINDS
from beleg.answer.sentences import Span, split_sentences
from beleg.answer.types import Source
from beleg.answer.values import Value, expected_kind, extract_values
from beleg.index.analyzer import analyze, analyze_query, detect_language
from beleg.index.snapshot import Snapshot
from beleg.retrieve.coverage import TermCoverage, evidence_terms

#: Sentence kinds that can answer (headings and code blocks cannot on their own).
_ANSWER_KINDS = PROSE_KINDS
_MIN_WORDS = 3

# Score weights (see module docstring).
LEXICAL_WEIGHT_SAME_LANGUAGE = 0.5
LEXICAL_WEIGHT_CROSS_LANGUAGE = 0.15
DENSE_FLOOR, DENSE_SPAN = 0.72, 0.18  # e5 cosines live in a narrow band; this maps it to [0, 1]
TYPE_BONUS = 0.12
HEADING_WEIGHT = 0.5
#: Bonus for sentences of the retriever's top chunk, decaying as 1 / retrieval position.
RETRIEVAL_PRIOR = 0.0
#: "What is E-5031?": the first sentence of a section whose heading names the subject defines it.
DEFINITION_BONUS = 0.1
_DEFINITION = re.compile(r"^\s*(?:what\s+is|what's|what\s+are|what\s+does|was\s+ist|was\s+sind|was\s+bedeutet|"
                         r"was\s+hei(?:ß|ss)t)\s+(?P<subject>.+?)(?:\s+(?:mean|stand\s+for))?\s*\??\s*$", re.IGNORECASE)


def is_definition_question(question: str) -> bool:
    """"What is E-5031?", "Was bedeutet der Fehlercode E-4012?": a short subject, no further clause."""
    m = _DEFINITION.match(question)
    return m is not None and len(m.group("subject").split()) <= 4


@dataclass(frozen=True, slots=True)
class Sentence:
    """A candidate answer sentence: where it is (chunk and document offsets) and its score parts."""

    source: Source
    span: Span
    doc_start: int
    doc_end: int
    values: tuple[Value, ...]
    lexical: float = 0.0
    dense: float = 0.0
    type_match: int = 0  # +1 holds the expected kind, -1 expected kind absent, 0 no expectation
    score: float = 0.0

    @property
    def text(self) -> str:
        return self.span.text


def candidate_sentences(sources: Sequence[Source], *, eligible_only: bool = False) -> list[Sentence]:
    """Every answer-capable sentence of the given sources, with document offsets.

    Sentences withheld as instruction-like (``Source.quarantine``) are never candidates,
    so nothing downstream can quote, score or compare them."""
    out: list[Sentence] = []
    for src in sources:
        if (eligible_only and not src.eligible) or src.quarantine.whole:
            continue
        for span in split_sentences(src.hit.text):
            if span.kind not in _ANSWER_KINDS or len(span.text.split()) < _MIN_WORDS:
                continue
            if src.quarantine.overlaps(span.start, span.end):
                continue
            out.append(Sentence(src, span, src.hit.start + span.start, src.hit.start + span.end,
                                tuple(extract_values(span.text))))
    return out


class VectorCache:
    """Sentence vectors by text, in memory only, for one index generation.

    Answers to nearby questions score the same sentences again; embedding them once
    makes the second answer cheap. It is dropped when the index changes, so an erased
    document's sentences do not outlive it, and it is never written to disk.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self.generation = -1
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def get(self, generation: int, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        if generation != self.generation:
            self._vectors.clear()
            self.generation = generation
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            for t, v in zip(todo, embed(todo)):
                self._vectors[t] = v
        out = np.stack([self._vectors[t] for t in texts])
        for t in texts:
            self._vectors.move_to_end(t)
        while len(self._vectors) > self.max_entries:
            self._vectors.popitem(last=False)
        return out


class SentenceScorer:
    """Scores sentences against a question using the index's IDF and the index's embedder."""

    def __init__(self, snapshot: Snapshot, embed_queries: Callable[[list[str]], np.ndarray] | None,
                 embed_passages: Callable[[list[str]], np.ndarray] | None, cache: VectorCache | None = None,
                 mask: np.ndarray | None = None) -> None:
        self.snapshot = snapshot
        #: IDF over the chunks the asker may read (``mask``): scores, which the trace shows,
        #: reveal nothing about documents they cannot read.
        self.terms = TermCoverage(snapshot, mask)
        self.embed_queries = embed_queries
        self.embed_passages = embed_passages
        self.cache = cache

    def idf(self, term: str) -> float:
        return self.terms.idf(term)

    def coverage(self, question: str, sources: Sequence[Source]) -> float:
        """IDF-weighted share of the question's terms found anywhere in the sources (text or headings).

        A question whose rarest terms ("MQTT", "SAML") occur in no retrieved source is
        unlikely to be answered by them, however similar they look to an embedder.
        """
        return self.terms.share(self.terms.weights(question), evidence_terms(s.hit for s in sources))

    def score(self, question: str, sentences: Sequence[Sentence],
              positions: dict[str, int] | None = None) -> list[Sentence]:
        """Return the sentences with scores filled in, best first.

        ``positions`` maps chunk ids to their retrieval position (0 = first); the
        retriever's ranking, which fuses both legs over whole chunks, is a prior.
        """
        if not sentences:
            return []
        q_lang = detect_language(question, default="?")
        q_terms = analyze_query(question)
        weights = {t: self.idf(t) for t in q_terms}
        total = sum(weights.values()) or 1.0
        kind = expected_kind(question)
        dense = self._dense(question, sentences)
        definitional = is_definition_question(question)
        firsts: dict[str, int] = {}
        for s in sentences:  # the first answer-capable sentence of each chunk
            cid = s.source.hit.chunk_id
            firsts[cid] = min(firsts.get(cid, s.doc_start), s.doc_start)
        out = []
        for i, s in enumerate(sentences):
            lang = str(s.source.hit.metadata.get("language") or "en")
            terms = set(analyze(s.text, lang))
            heading = set(analyze(s.source.hit.heading_path[-1], lang)) if s.source.hit.heading_path else set()
            covered = sum(w for t, w in weights.items() if t in terms)
            covered += HEADING_WEIGHT * sum(w for t, w in weights.items() if t in heading and t not in terms)
            lexical = covered / total
            a = LEXICAL_WEIGHT_SAME_LANGUAGE if q_lang in ("?", lang) else LEXICAL_WEIGHT_CROSS_LANGUAGE
            type_match = 0
            if kind is not None:
                type_match = 1 if any(v.kind == kind for v in s.values) else -1
            score = a * lexical + (1 - a) * dense[i] + TYPE_BONUS * type_match
            path = s.source.hit.heading_path
            if (definitional and len(path) > 1 and s.doc_start == firsts[s.source.hit.chunk_id]
                    and set(q_terms) & heading):
                score += DEFINITION_BONUS
            if positions is not None and s.source.hit.chunk_id in positions:
                score += RETRIEVAL_PRIOR / (1 + positions[s.source.hit.chunk_id])
            out.append(Sentence(s.source, s.span, s.doc_start, s.doc_end, s.values, lexical, float(dense[i]),
                                type_match, float(score)))
        out.sort(key=lambda s: (-s.score, s.source.rank, s.doc_start))
        return out

    def _dense(self, question: str, sentences: Sequence[Sentence]) -> np.ndarray:
        if self.embed_queries is None or self.embed_passages is None:
            return np.zeros(len(sentences))
        q = self.embed_queries([question])[0]
        texts = [_passage(s) for s in sentences]
        if self.cache is not None:
            m = self.cache.get(self.snapshot.generation, texts, self.embed_passages)
        else:
            m = self.embed_passages(texts)
        cos = m @ q
        return np.clip((cos - DENSE_FLOOR) / DENSE_SPAN, 0.0, 1.0)


def _passage(s: Sentence) -> str:
    """What the embedder sees of a sentence: its section heading gives it context."""
    heading = s.source.hit.heading_path[-1] if s.source.hit.heading_path else s.source.hit.title
    return f"{heading}: {s.text}"
