"""How much of a question the index, and a set of hits, cover: one place for the IDF
statistics that hybrid weighting, answer refusal and the adaptive strategies share.

Every statistic is taken over the chunks the asker may read (an :class:`Eligibility`): a term that
occurs only in documents they cannot read counts as unknown, so no weight, score, route
or trace number tells them whether such a term exists (the term-existence side channel
the leak suite found, see docs/permissions.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from beleg.index.analyzer import analyze, analyze_query
from beleg.index.ports import Eligibility, SearchIndex
from beleg.types import Hit


class TermCoverage:
    """IDF of query terms under the asker's view of the index, and IDF-weighted coverage.

    Terms the asker's view has never seen weigh the most (the BM25 IDF of a term in no
    chunk), since no search can find them.
    """

    def __init__(self, index: SearchIndex, eligible: Eligibility) -> None:
        self.index = index
        self.eligible = eligible
        self._stats: dict[str, float | None] = {}  # term → idf, None when not visible
        self.max_idf = index.term_statistics((), eligible).unseen_idf

    def _idf(self, term: str) -> float | None:
        if term not in self._stats:
            self._stats[term] = self.index.term_statistics([term], self.eligible).idf.get(term)
        return self._stats[term]

    def known(self, term: str) -> bool:
        """Whether the term occurs in a chunk the asker may read."""
        return self._idf(term) is not None

    def idf(self, term: str) -> float:
        idf = self._idf(term)
        return self.max_idf if idf is None else idf

    def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
        """The text's query terms with their IDF, leaving out ``skip`` (unless nothing else is left)."""
        terms = analyze_query(text)
        kept = [t for t in terms if t not in skip]
        return {t: self.idf(t) for t in kept or terms}

    @staticmethod
    def share(weights: dict[str, float], seen: set[str]) -> float:
        """IDF-weighted share of the weighted terms that are in ``seen``."""
        total = sum(weights.values())
        return sum(w for t, w in weights.items() if t in seen) / total if total else 0.0


def evidence_terms(hits: Iterable[Hit]) -> set[str]:
    """Every BM25 term of the hits' text and section headings (each in its own language)."""
    seen: set[str] = set()
    for hit in hits:
        lang = str(hit.metadata.get("language") or "en")
        seen.update(analyze(" ".join(hit.heading_path) + "\n" + hit.text, lang))
    return seen
