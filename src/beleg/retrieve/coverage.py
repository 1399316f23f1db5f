"""How much of a question the index, and a set of hits, cover: one place for the IDF
statistics that hybrid weighting, answer refusal and the adaptive strategies share.

Every statistic is taken over the chunks the asker may read (``mask``): a term that
occurs only in documents they cannot read counts as unknown, so no weight, score, route
or trace number tells them whether such a term exists (the term-existence side channel
the leak suite found, see docs/permissions.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from beleg.index.analyzer import analyze, analyze_query
from beleg.index.snapshot import Snapshot
from beleg.types import Hit


class TermCoverage:
    """IDF of query terms under the asker's view of the index, and IDF-weighted coverage.

    Terms the asker's view has never seen weigh the most (the BM25 IDF of a term in no
    chunk), since no search can find them.
    """

    def __init__(self, snapshot: Snapshot, mask: np.ndarray | None = None) -> None:
        self.snapshot = snapshot
        self.mask = mask
        self.max_idf = math.log1p((max(len(snapshot), 1) + 0.5) / 0.5)

    def known(self, term: str) -> bool:
        """Whether the term occurs in a chunk the asker may read."""
        tid = self.snapshot.vocab.get(term)
        return (tid is not None and tid < len(self.snapshot.bm25.idf)
                and self.snapshot.bm25.occurs_in(tid, self.mask))

    def idf(self, term: str) -> float:
        if not self.known(term):
            return self.max_idf
        return float(self.snapshot.bm25.idf[self.snapshot.vocab[term]])

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
