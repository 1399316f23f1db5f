"""Citation verification, in code, for answers from every backend.

An answer is a sequence of sentences; a sentence cites sources with labels like ``[S1]``
or ``[S1, S3]`` and may quote them (``"exact words" [S1]``). For each citation we check:

* the label names a source that was given to the answerer;
* an explicit quote occurs in the cited chunk (after normalising whitespace, quotes and
  case); its offsets are then exact offsets into the document;
* without an explicit quote, the claim must be *supported*: every number in the sentence
  appears in the cited chunks, and most of its content terms do; its typed values equal
  values of the cited text in quantity and unit ("512 GB" is not "512 MB"), each of its
  clauses is backed, and none negates what the cited text states (:mod:`beleg.answer.claims`).
  The quote recorded is then the chunk sentence that supports it best.

A sentence that makes a claim without any label is reported as uncited.

Quotes are checked against the original chunk text and offsets, never the redacted text a
prompt showed; a quote that overlaps a sentence withheld as instruction-like
(``Source.quarantine``) fails, and withheld sentences never support an unquoted claim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from beleg.answer.claims import backed_values, cited_texts, claim_gaps, converted_numbers
from beleg.answer.types import REFUSAL, Citation, Source
from beleg.index.analyzer import analyze
from beleg.sentences import split_sentences

_LABELS = re.compile(r"\[((?:S\d+)(?:\s*[,;]\s*S\d+)*)\]")
_QUOTE = re.compile(r"[\"“„«]([^\"“”„«»]{8,}?)[\"”“»]")
WRITTEN_NUMBER = re.compile(r"\d{1,3}(?:[.,]\d{3}){2,}|\d+(?:[.,]\d+)?")
#: Share of a claim's content terms that must occur in the cited chunks.
SUPPORT_SHARE = 0.5
_NOT_CLAIMS = re.compile(r"^(?:sources?|quellen?|note|hinweis|answer|antwort)\b.{0,40}:?$", re.IGNORECASE)
REFUSALS = (REFUSAL, "Die Quellen beantworten das nicht.")


@dataclass(frozen=True, slots=True)
class Verification:
    citations: tuple[Citation, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _norm(text: str) -> tuple[str, list[int]]:
    """Casefolded text with whitespace runs collapsed and quotes/dashes unified, plus a map
    from each normalised character back to its index in the original."""
    out, idx = [], []
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if prev_space:
                continue
            ch, prev_space = " ", True
        else:
            prev_space = False
            ch = {"“": '"', "”": '"', "„": '"', "’": "'", "‘": "'", "–": "-", "—": "-", "\u00a0": " "}.get(ch, ch)
        out.append(ch.casefold())
        idx.append(i)
    return "".join(out), idx


def locate(quote: str, text: str) -> tuple[int, int] | None:
    """Offsets of ``quote`` in ``text`` (tolerant of whitespace, quote style and case)."""
    return next(locate_all(quote, text), None)


def locate_all(quote: str, text: str) -> Iterator[tuple[int, int]]:
    """Offsets of every occurrence of ``quote`` in ``text``, first to last."""
    q, _ = _norm(quote.strip())
    if not q:
        return
    t, idx = _norm(text)
    pos = t.find(q)
    while pos >= 0:
        yield idx[pos], idx[pos + len(q) - 1] + 1
        pos = t.find(q, pos + 1)


def _locate_in(quote: str, sources: Sequence[Source]) -> tuple[Source | None, tuple[int, int] | None]:
    """The first occurrence of ``quote`` outside withheld text in the cited sources, else
    (the source where it occurs only inside withheld text, None), else (None, None)."""
    withheld_in: Source | None = None
    for src in sources:
        for a, b in locate_all(quote, src.hit.text):
            if not src.quarantine.overlaps(a, b):
                return src, (a, b)
            withheld_in = withheld_in or src
    return withheld_in, None


def is_refusal(answer: str) -> bool:
    a = answer.strip().casefold()
    return any(a.startswith(r.casefold().rstrip(".")) for r in REFUSALS)


_GROUPED = re.compile(r"\d{1,3}(?:([.,])\d{3})(?:\1\d{3})*")


def number_forms(number: str) -> set[str]:
    """The readings of a written number: a decimal comma as a point ("1,5" = "1.5"), and for
    digits grouped in threes, the plain number ("1,000" = "1.000" = "1000", as English and
    German write a thousand)."""
    forms = {number.replace(",", ".")}
    if _GROUPED.fullmatch(number):
        forms.add(re.sub(r"[.,]", "", number))
    return forms


def _support(claim: str, sources: Sequence[Source]) -> tuple[Source, int, int, str] | str:
    """The cited chunk sentence that best supports an unquoted claim, or why it is unsupported."""
    claim_text = _LABELS.sub("", claim)
    numbers = set(WRITTEN_NUMBER.findall(claim_text))
    # Only what the sources may say counts: withheld sentences are replaced by the marker.
    cited = cited_texts(sources)
    readable = {s.label: text for s, (text, _) in zip(sources, cited, strict=True)}
    chunk_numbers = {f for text in readable.values() for n in WRITTEN_NUMBER.findall(text) for f in number_forms(n)}
    # A claim's words may be its source's heading ("The maximum upload size is 512 MB" under
    # "Upload size", for "Archives may be at most 512 MB"): the heading frames every sentence.
    framed = {s.label: f"{text}\n{headings}" for s, (text, headings) in zip(sources, cited, strict=True)}
    # A value an equal quantity of the text backs ("0.5 GB" for "512 MB") is backed, words and all.
    values = backed_values(claim_text, "\n".join(readable.values()))
    converted = converted_numbers(claim_text, "\n".join(readable.values()))
    absent = sorted(n for n in numbers if not number_forms(n) & (chunk_numbers | converted))
    if absent:
        return f"{', '.join(absent)} not in the cited text"
    best: tuple[float, Source, int, int, str] | None = None
    for src in sources:
        lang = str(src.hit.metadata.get("language") or "en")
        terms = set(analyze(claim_text, lang))
        seen = set(analyze(framed[src.label], lang)) | set(analyze(" ".join(values), lang))
        share = len(terms & seen) / len(terms) if terms else 0.0
        spans = [sp for sp in split_sentences(src.hit.text) if not src.quarantine.overlaps(sp.start, sp.end)]
        if not spans or (best is not None and share <= best[0]):
            continue
        top = max(spans, key=lambda sp: len(terms & set(analyze(sp.text, lang))))
        best = (share, src, src.hit.start + top.start, src.hit.start + top.end, top.text)
    if best is None or best[0] < SUPPORT_SHARE:
        return "too few of its words are in the cited text"
    gaps = claim_gaps(claim_text, cited, str(best[1].hit.metadata.get("language") or "en"))
    if gaps:
        return "; ".join(gaps[:2])
    return best[1], best[2], best[3], best[4]


def verify_answer(answer: str, sources: Sequence[Source]) -> Verification:
    """Resolve and check every citation in ``answer`` against ``sources`` (by label)."""
    if is_refusal(answer):
        return Verification((), ())
    by_label = {s.label: s for s in sources}
    citations: list[Citation] = []
    problems: list[str] = []
    for span in split_sentences(answer):
        sentence = span.text
        groups = list(_LABELS.finditer(sentence))
        if not groups:
            if span.kind in ("sentence", "list-item") and not _NOT_CLAIMS.match(sentence) and len(sentence.split()) > 3:
                problems.append(f"uncited claim: {sentence[:120]}")
            continue
        labels = [lab.strip() for g in groups for lab in re.split(r"[,;]", g.group(1))]
        cited = [by_label[lab] for lab in labels if lab in by_label]
        for lab in labels:
            if lab not in by_label:
                citations.append(Citation(lab, None, None, None, "", None, None, False, "no source has this label"))
                problems.append(f"[{lab}] names no source")
        if not cited:
            continue
        quotes = _QUOTE.findall(sentence)
        if quotes:
            for quote in quotes:
                src, at = _locate_in(quote, cited)
                if at is None:
                    if src is not None:
                        citations.append(Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source, quote,
                                                  None, None, False, "quote overlaps withheld instruction-like text"))
                        problems.append(f"quote overlaps withheld instruction-like text in [{src.label}]: "
                                        f"{quote[:80]}")
                        continue
                    src = cited[0]
                    citations.append(Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source, quote,
                                              None, None, False, "quote not found in the cited source"))
                    problems.append(f"quote not in [{src.label}]: {quote[:80]}")
                    continue
                a, b = at
                assert src is not None
                citations.append(Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source,
                                          src.hit.text[a:b], src.hit.start + a, src.hit.start + b, True))
            continue
        support = _support(sentence, cited)
        if isinstance(support, str):
            src = cited[0]
            citations.append(Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source, "", None, None,
                                      False, f"the cited source does not support this sentence ({support})"))
            problems.append(f"unsupported by [{', '.join(s.label for s in cited)}] ({support}): {sentence[:100]}")
            continue
        src, a, b, text = support
        citations.append(Citation(src.label, src.hit.chunk_id, src.hit.doc_id, src.hit.source, text, a, b, True))
    return Verification(tuple(citations), tuple(problems))


def verify_quotes(citations: Sequence[Citation], sources: Sequence[Source],
                  document_text: Callable[[str], str | None]) -> Verification:
    """Check citations that carry their own quote and offsets (the extractive answerer's):
    the label exists, the quote lies inside the cited chunk, and the document's text at
    the offsets is the quote."""
    by_label = {s.label: s for s in sources}
    checked, problems = [], []
    for c in citations:
        src = by_label.get(c.label)
        problem = None
        if src is None or src.hit.chunk_id != c.chunk_id:
            problem = "no source has this label"
        elif c.start is None or c.end is None or not (src.hit.start <= c.start <= c.end <= src.hit.end):
            problem = "quote lies outside the cited chunk"
        elif src.quarantine.overlaps(c.start - src.hit.start, c.end - src.hit.start):
            problem = "quote overlaps withheld instruction-like text"
        elif not check_offsets(c, document_text(src.hit.doc_id) or ""):
            problem = "the document's text at these offsets is not the quote"
        if problem:
            problems.append(f"[{c.label}] {problem}: {c.quote[:80]}")
        checked.append(replace(c, verified=problem is None, problem=problem))
    return Verification(tuple(checked), tuple(problems))


def check_offsets(citation: Citation, document_text: str) -> bool:
    """True when the citation's offsets select exactly its quote in the document."""
    if citation.start is None or citation.end is None:
        return False
    return document_text[citation.start:citation.end] == citation.quote
