"""The offline answerer: the best governing sentence, quoted and cited, or a refusal.

It never writes a word the sources do not contain, apart from fixed connecting phrases
("Sources disagree: ..."), so every claim is a verbatim quote with exact offsets. It
refuses when the best eligible sentence scores below a threshold calibrated on the demo
gold set's unanswerable questions and XQuAD dev (docs/benchmarks.md, "Answers"), or
when the question asks about a version no source covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from beleg.answer.conflicts import detect_conflicts
from beleg.answer.evidence import Target
from beleg.answer.scoring import Sentence
from beleg.answer.types import REFUSAL, Citation, Conflict

#: Refuse when the best eligible sentence scores below this ...
REFUSE_BELOW = 0.35
#: ... or when the eligible sources hold less than this share of the question's IDF weight.
MIN_COVERAGE = 0.35
#: Among sentences scoring within this of the best, the most governing source's wins.
GOVERN_MARGIN = 0.08


@dataclass(frozen=True, slots=True)
class Extract:
    answer: str
    refused: bool
    citations: tuple[Citation, ...]
    conflicts: tuple[Conflict, ...]
    chosen: Sentence | None
    reason: str


#: The next sentence of the same paragraph joins the answer when it scores within this of the chosen one.
CONTINUE_MARGIN = 0.12
_MAX_LIST_ITEMS = 5


def _cite(s: Sentence, end: int | None = None) -> Citation:
    h = s.source.hit
    end = s.doc_end if end is None else end
    quote = h.text[s.doc_start - h.start: end - h.start]
    return Citation(s.source.label, h.chunk_id, h.doc_id, h.source, quote, s.doc_start, end, True)


def extend(chosen: Sentence, scored: Sequence[Sentence]) -> int:
    """Where the quoted answer ends: a sentence that introduces a list (ends with ':') takes
    the list items after it; otherwise the next sentence of the same paragraph joins when
    it is nearly as good an answer. The quote stays one contiguous span of the document,
    and never grows over a withheld (instruction-like) sentence between the two."""
    same = sorted((s for s in scored if s.source.label == chosen.source.label and s.doc_start > chosen.doc_start),
                  key=lambda s: s.doc_start)
    text = chosen.source.hit.text
    base = chosen.source.hit.start
    quarantine = chosen.source.quarantine
    end = chosen.doc_end
    if chosen.text.rstrip().endswith(":"):
        for n, s in enumerate(same[:_MAX_LIST_ITEMS]):
            gap = text[end - base: s.doc_start - base]
            # Markdown puts a blank line between "The causes are:" and its list, none inside it.
            if s.span.kind != "list-item" or gap.count("\n") > (2 if n == 0 else 1):
                break
            if quarantine.overlaps(end - base, s.doc_end - base):
                break
            end = s.doc_end
        return end
    if same and same[0].span.kind == chosen.span.kind == "sentence" and same[0].score >= chosen.score - CONTINUE_MARGIN:
        if "\n\n" not in text[end - base: same[0].doc_start - base] and \
                not quarantine.overlaps(end - base, same[0].doc_end - base):
            end = same[0].doc_end
    return end


def refusal(reason: str) -> Extract:
    return Extract(REFUSAL, True, (), (), None, reason)


def choose(scored: Sequence[Sentence], refuse_below: float = REFUSE_BELOW) -> Sentence | None:
    """The answer sentence: among eligible sentences near the best score, the most governing one.

    (Ranking equally governing sources by sentence score instead of retrieval position was
    measured and lost: demo gold contains-gold 0.614 → 0.578.)"""
    eligible = [s for s in scored if s.source.eligible]
    if not eligible or eligible[0].score < refuse_below:
        return None
    best = eligible[0].score
    near = [s for s in eligible if s.score >= best - GOVERN_MARGIN]
    return min(near, key=lambda s: (s.source.rank, -s.score))


def extract_answer(question: str, scored: Sequence[Sentence], target: Target, coverage: float = 1.0,
                   refuse_below: float = REFUSE_BELOW, min_coverage: float = MIN_COVERAGE) -> Extract:
    if target.unknown:
        return refusal(f"no source covers version {', '.join(target.unknown)}")
    if coverage < min_coverage:
        return refusal(f"the sources cover {coverage:.2f} of the question's terms (< {min_coverage})")
    chosen = choose(scored, refuse_below)
    if chosen is None:
        top = next((s.score for s in scored if s.source.eligible), None)
        return refusal("no eligible source" if top is None else f"best sentence scores {top:.2f} < {refuse_below}")
    conflicts, others = detect_conflicts(question, chosen, scored, refuse_below)
    first = _cite(chosen, extend(chosen, scored))
    text = f"{first.quote} [{chosen.source.label}]"
    citations = [first]
    if conflicts:
        lines = [f"Sources disagree on {conflicts[0].fact}:"]
        for s, v in zip(others, conflicts[0].values[1:]):
            src = s.source
            note = f"; {v.note}" if v.note else ""
            lines.append(f"- {v.value} in {src.label} ({src.authority}, version {src.version or '-'}, {src.status}"
                         f"{note}) [{src.label}]")
            citations.append(_cite(s))
        gov = chosen.source
        lines.append(f"{gov.label} governs: {gov.authority}, version {gov.version or '-'}, {gov.status}.")
        text += "\n\n" + "\n".join(lines)
    return Extract(text, False, tuple(citations), conflicts, chosen, "answered")
