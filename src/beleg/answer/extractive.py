"""The offline answerer: the best governing sentence, quoted and cited, or a refusal.

It never writes a word the sources do not contain, apart from fixed connecting phrases
("Sources disagree: ..."), so every claim is a verbatim quote with exact offsets. It
refuses when the best eligible sentence scores below a threshold calibrated on the demo
gold set's unanswerable questions and XQuAD dev (docs/benchmarks.md, "Answers"), or
when the question asks about a version no source covers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from beleg.answer.conflicts import conflict_lines, detect_conflicts
from beleg.answer.evidence import Target
from beleg.answer.scoring import (
    LEXICAL_WEIGHT_CROSS_LANGUAGE,
    LEXICAL_WEIGHT_SAME_LANGUAGE,
    Sentence,
    item_head,
    item_label,
    row_header,
)
from beleg.answer.types import REFUSAL, Citation, Conflict
from beleg.index.analyzer import analyze, detect_language
from beleg.markup import table_row
from beleg.sentences import Span, split_sentences

#: Refuse when the best eligible sentence scores below this ...
REFUSE_BELOW = 0.35
#: ... or when the eligible sources hold less than this share of the question's IDF weight.
#: (0.35 before the anchors rule, beleg.answer.support.unmentioned, took over the case this
#: was for, a rare term no source holds: on the demo gold set 0.35 refused five answerable
#: paraphrased questions and two unanswerable ones the anchors rule does not catch; 0.2
#: refuses two answerable ones; docs/benchmarks.md, "Supported and confidence".)
MIN_COVERAGE = 0.2
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
    #: A refusal's closest passage (the best sentence, quoted as an answer would be), when the
    #: refusal is "not confirmed" rather than "not covered": shown, never as the answer.
    closest: tuple[Citation, ...] = ()


#: The next sentence of the same paragraph joins the answer when it scores within this of the chosen one.
CONTINUE_MARGIN = 0.12
#: A quote with its context (a list, a command) stays within this many characters.
MAX_CONTEXT_CHARS = 1500
_MAX_LIST_SPANS = 12
#: A sentence that announces what follows: it is only useful with the list, command or table after it.
_ANNOUNCES = re.compile(r"\b(?:the\s+following|as\s+follows|below\b(?!\s*[-+\d])|(?:siehe|wie)\s+unten|"
                        r"folgende[nmrs]?|wie\s+folgt|im\s+folgenden|nachfolgende?[nmrs]?|nachstehende?[nmrs]?)",
                        re.IGNORECASE)
# What may stand between a sentence and the block it announces: blank lines, shortcode tags
# ({{< code >}}, {% highlight %}), table separator rows and list markers.
_GAP = re.compile(r"(?:\s|\{\{[%<].*?[%>]\}\}|\{%.*?%\}|\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?|"
                  r"(?<![^\s])(?:[-*+]|\d{1,3}[.)])(?=\s))*", re.DOTALL)


#: A sentence that points back at what the sentence before it named ("runs under this user",
#: "läuft dann unter diesem User", "these ports"): a demonstrative before a noun, or a
#: sentence that opens with one. Quoted alone it does not say what "this" is.
_REFERS_BACK = re.compile(r"\b(?:this|these|those|such)\s+(?!is\b|are\b|was\b|way\b|case\b)[^\W\d_]{3,}|"
                          r"^\W*(?:that|this|these|those|it|they)\b(?!\s+(?:is|are)\s+(?:why|how|what)\b)|"
                          # "Sie startet jeden Mittwoch …", "Er hält 20 Minuten": she, he, it. Not the
                          # polite "Sie können …" (a plural verb), nor "Es gibt" (no one referred to).
                          r"^\W*(?:er|sie)\s+(?:[^\W\d_]+t|ist|wird|kann|muss|darf|soll|will|mag)\b|"
                          r"\b(?:dies(?:e[mnrs]?)?|jene[mnrs]?|solche[mnrs]?|de(?:r|n|m)selben?|dieselben?|dasselbe)\b",
                          re.IGNORECASE)


def refers_back(sentence: str) -> bool:
    return _REFERS_BACK.search(sentence) is not None


#: "this endpoint", "these options", "diesem Befehl": a demonstrative naming a kind of thing.
_NAMES_BACK = re.compile(r"\b(?:this|these|that|those)\s+(?!is\b|are\b|was\b|way\b|case\b)[^\W\d_]{3,}|"
                         r"\b(?:diese[mnrs]?|jene[mnrs]?)\s+[^\W\d_]{3,}", re.IGNORECASE)
#: A line holding nothing but one code span: the endpoint, command or file a reference page names.
_CODE_LINE = re.compile(r"\s*`[^`\n]+`\s*")


def preceding_start(chosen: Sentence) -> int | None:
    """Where the quote starts when the chosen sentence refers back (document offset): at the
    sentence before it, when that is prose of the same paragraph of the same chunk, not
    withheld, and the two stay within :data:`MAX_CONTEXT_CHARS`; else None.

    A sentence naming "this endpoint" or "diesen Befehl" right under a line that holds only a
    code span (the endpoint itself, a blank line between) starts at that line, and at the
    sentence ending in ":" that introduces it: "The API provides a special endpoint for file
    uploads: `/api/documents/post_document/` POST a multipart form to this endpoint, …"
    ("POST a multipart form to this endpoint" alone does not say which endpoint)."""
    if chosen.span.kind != "sentence" or not refers_back(chosen.text):
        return None
    hit, quarantine = chosen.source.hit, chosen.source.quarantine
    rel_start = chosen.doc_start - hit.start
    before = [sp for sp in split_sentences(hit.text) if sp.end <= rel_start]
    if not before or before[-1].kind != "sentence":
        return None
    prev = before[-1]
    if "\n\n" in hit.text[prev.end:rel_start]:
        if not (_NAMES_BACK.search(chosen.text) and _CODE_LINE.fullmatch(prev.text)
                and hit.text.count("\n", prev.end, rel_start) <= 2):
            return None
        lead = before[-2] if len(before) > 1 else None
        if lead is not None and lead.kind == "sentence" and lead.text.rstrip().endswith(":") and \
                hit.text.count("\n", lead.end, prev.start) <= 2:
            prev = lead
    if chosen.doc_end - (hit.start + prev.start) > MAX_CONTEXT_CHARS or quarantine.overlaps(prev.start, rel_start):
        return None
    return hit.start + prev.start


def item_start(chosen: Sentence) -> int | None:
    """Where the quote starts when the chosen sentence continues a list item whose first
    sentence names what it is about (document offset): at that first sentence, when the item
    is labelled and the sentence does not name the label ("**Filter**: Clean the filter every three
    months. Replace it after two years") or the sentence refers back, within
    :data:`MAX_CONTEXT_CHARS` and not withheld; else None."""
    hit = chosen.source.hit
    head = item_head(hit.text, chosen.span)
    label = item_label(head) if head is not None else None
    if head is None or not (refers_back(chosen.text) or (label is not None and not _names(chosen, label))):
        return None
    rel_start = chosen.doc_start - hit.start
    if chosen.doc_end - (hit.start + head.start) > MAX_CONTEXT_CHARS or \
            chosen.source.quarantine.overlaps(head.start, rel_start):
        return None
    return hit.start + head.start


def _names(chosen: Sentence, label: str) -> bool:
    """Whether the sentence holds every word of ``label`` (stemmed in its language)."""
    lang = _language(chosen)
    return set(analyze(label, lang)) <= set(analyze(chosen.text, lang))


# A name a heading gives its section: a code span, a command-like token with inner dots,
# slashes, underscores or hyphens, camelCase, or a token mixing letters and digits.
_HEADING_NAME = re.compile(r"`[^`\n]+`|\b\w+[./_-]\w[\w./-]*|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+\d\w*\b|/\w[\w/.-]*")


def heading_start(chosen: Sentence) -> int | None:
    """Where the quote starts when the chosen sentence opens a section whose heading names
    what it describes (document offset): at the heading, when the heading holds a name
    (a command, an identifier, a path; ``## iobroker install adapterName``) that the
    sentence does not repeat ("Only installs the adapter and creates no instance."), the
    two are adjacent in the chunk and within :data:`MAX_CONTEXT_CHARS`; else None.

    Reference pages describe a command or endpoint under its heading; the description alone
    does not say which command it is."""
    if chosen.span.kind != "sentence":
        return None
    hit, quarantine = chosen.source.hit, chosen.source.quarantine
    rel_start = chosen.doc_start - hit.start
    before = [sp for sp in split_sentences(hit.text) if sp.end <= rel_start]
    if not before or before[-1].kind != "heading" or hit.text[before[-1].end:rel_start].count("\n") > 2:
        return None
    head = before[-1]
    # A section number ("5.1 Message size") is no name: a name holds a letter.
    names = [m.group(0).strip("`").casefold() for m in _HEADING_NAME.finditer(head.text)
             if re.search(r"[^\W\d_]", m.group(0))]
    said = chosen.text.casefold()
    if not names or any(n in said for n in names):
        return None
    if chosen.doc_end - (hit.start + head.start) > MAX_CONTEXT_CHARS or quarantine.overlaps(head.start, rel_start):
        return None
    return hit.start + head.start


def announces(sentence: str) -> bool:
    """True for "Run the following command:", "Die Werte sind wie folgt", "... below"."""
    return sentence.rstrip().endswith(":") or _ANNOUNCES.search(sentence) is not None


def _cite(s: Sentence, end: int | None = None, start: int | None = None, display: str | None = None) -> Citation:
    h = s.source.hit
    start = s.doc_start if start is None else start
    end = s.doc_end if end is None else end
    quote = h.text[start - h.start: end - h.start]
    return Citation(s.source.label, h.chunk_id, h.doc_id, h.source, quote, start, end, True, display=display)


def _gap_ok(gap: str, max_newlines: int) -> bool:
    """Only blank lines, shortcode tags, separators or list markers lie between two blocks."""
    m = _GAP.fullmatch(gap)
    return m is not None and gap.count("\n") <= max_newlines


def _following(chosen: Sentence) -> list[Span]:
    """The chunk's spans after the chosen sentence (chunk offsets); a line of shortcode tags
    alone (``{{< code >}}``) is markup around the next block, not a block."""
    rel_end = chosen.doc_end - chosen.source.hit.start
    return [sp for sp in split_sentences(chosen.source.hit.text)
            if sp.start >= rel_end and not _GAP.fullmatch(sp.text)]


def announced_end(chosen: Sentence) -> tuple[int, bool]:
    """Where the block a sentence announces ends (document offset), and whether it was cut.

    The first block after the sentence counts when it is a list (its items, up to the next
    non-item), a fenced code block, a table (its rows), or, after a sentence ending in
    ":", one short paragraph. The quote is bounded (:data:`MAX_CONTEXT_CHARS`; a long code
    block is cut at a line end) and never grows over a withheld sentence."""
    hit, quarantine = chosen.source.hit, chosen.source.quarantine
    text, base = hit.text, hit.start
    end = chosen.doc_end - base
    limit = chosen.doc_start - base + MAX_CONTEXT_CHARS
    spans = _following(chosen)
    if not spans or not _gap_ok(text[end:spans[0].start], 5):
        return end + base, False
    first = spans[0]
    if first.kind == "code":
        cut = first.end if first.end <= limit else text.rfind("\n", first.start, limit)
        if cut <= first.start or quarantine.overlaps(end, cut):
            return end + base, False
        return cut + base, cut < first.end
    if first.kind in ("list-item", "table-row"):
        kinds = ("list-item", "code") if first.kind == "list-item" else ("table-row",)
        for n, sp in enumerate(spans[:_MAX_LIST_SPANS]):
            if sp.kind not in kinds or sp.end > limit or quarantine.overlaps(end, sp.end):
                return end + base, n < len(spans) and sp.kind in kinds
            if n and not _gap_ok(text[end:sp.start], 2):
                break
            end = sp.end
        return end + base, False
    if first.kind == "sentence" and chosen.text.rstrip().endswith(":"):
        para_end = end
        for sp in spans:
            if sp.kind != "sentence" or "\n\n" in text[para_end:sp.start] and para_end != end:
                break
            para_end = sp.end
        if para_end <= limit and not quarantine.overlaps(end, para_end):
            return para_end + base, False
    return end + base, False


def extend(chosen: Sentence, scored: Sequence[Sentence]) -> int:
    """Where the quoted answer ends: a sentence that announces what follows (ends with ':',
    or says "the following", "below", "folgende", "wie folgt") takes that list, command or
    table; otherwise the next sentence of the same paragraph joins when it is nearly as good
    an answer. The quote stays one contiguous span of the document, and never grows over a
    withheld (instruction-like) sentence between the two."""
    if announces(chosen.text):
        return announced_end(chosen)[0]
    same = sorted((s for s in scored if s.source.label == chosen.source.label and s.doc_start > chosen.doc_start),
                  key=lambda s: s.doc_start)
    text = chosen.source.hit.text
    base = chosen.source.hit.start
    end = chosen.doc_end
    if same and same[0].span.kind == chosen.span.kind == "sentence" and same[0].score >= chosen.score - CONTINUE_MARGIN:
        if "\n\n" not in text[end - base: same[0].doc_start - base] and \
                not chosen.source.quarantine.overlaps(end - base, same[0].doc_end - base):
            end = same[0].doc_end
    return end


def through_announcement(chosen: Sentence, end: int) -> tuple[int, bool]:
    """Where the quote ends when the sentence right after it, in the same paragraph, ends in
    ":" and leads into a block: through that block ("… you require build tools on your
    system. For linux, just write:" and its `sudo apt-get install build-essential`), and
    whether the block was cut; else ``end`` (a document offset) unchanged."""
    hit, quarantine = chosen.source.hit, chosen.source.quarantine
    base = hit.start
    nxt = next((sp for sp in split_sentences(hit.text) if sp.start >= end - base), None)
    if nxt is None or nxt.kind != "sentence" or not nxt.text.rstrip().endswith(":") or \
            "\n\n" in hit.text[end - base:nxt.start] or quarantine.overlaps(end - base, nxt.end):
        return end, False
    announcer = replace(chosen, span=nxt, doc_start=base + nxt.start, doc_end=base + nxt.end)
    after = _following(announcer)
    if not after or after[0].kind not in ("code", "list-item", "table-row"):
        return end, False  # a paragraph after "…:" is prose the reader can follow; a block is the answer
    block_end, cut = announced_end(announcer)
    return (end, False) if block_end == announcer.doc_end else (block_end, cut)


def quote_answer(chosen: Sentence, scored: Sequence[Sentence]) -> tuple[Citation, str]:
    """The chosen sentence's citation with the context it depends on, and the text a person
    reads (markup removed; a table row named by its header: "Port: 8081; Host: ::1")."""
    if chosen.span.kind == "table-row":
        # The quote is the row alone: rows between the header and it are not shown, so no
        # check may read them. The header names the row's cells in what is shown, and the
        # support checks read it as the row's context (support.quote_context).
        header = row_header(chosen.source, chosen.span)
        display = table_row(header.text if header else None, chosen.text)
        c = _cite(chosen, display=display)
        return c, display
    end, cut = announced_end(chosen) if announces(chosen.text) else through_announcement(chosen, extend(chosen, scored))
    start, under_heading = preceding_start(chosen), False
    if start is None:
        start = item_start(chosen)
    if start is None:
        start = heading_start(chosen)
        under_heading = start is not None
    c = _cite(chosen, end, start=start)
    # The heading reads as the name of what the sentence says: "iobroker install x: Only installs …".
    shown = (re.sub(r"\s*\n\s*", ": ", c.shown, count=1) if under_heading else c.shown) + ("\n…" if cut else "")
    return (c if shown == c.shown else replace(c, display=shown)), shown


def below(value: float, floor: float) -> str:
    """"value < floor" with as many decimals as it takes to show the difference: a confidence
    of 0.8697 under a floor of 0.87 reads "0.8697 < 0.87", not "0.87 < 0.87"."""
    for digits in (2, 3, 4):
        if round(value, digits) < round(floor, digits):
            return f"{value:.{digits}f} < {floor:g}"
    return f"{value!r} < {floor!r}"


def refusal(reason: str) -> Extract:
    return Extract(REFUSAL, True, (), (), None, reason)


def choose(scored: Sequence[Sentence], refuse_below: float = REFUSE_BELOW,
           language: str | None = None, *, embed: Callable[[list[str]], np.ndarray] | None = None,
           ) -> Sentence | None:
    """The answer sentence: among eligible sentences near the best score, the most governing
    one (within that document, its best sentence), unless a sentence that fits the asked-for
    kind of value better scores as high.

    With ``language`` (the question's), a source in that language that governs equally
    (same version, status and authority) wins over its twin in another language when its
    best sentence is within :data:`LANGUAGE_MARGIN` of the best: a German question about a
    page that exists in German and English is answered from the German page. Of several such
    sentences, with ``embed`` the one closest in meaning to the chosen sentence is its twin
    (two German sentences scoring alike, "Andernfalls … ganztägigen Event" and "Wenn du dieses
    Feld nicht ausfüllst, … eintägigen Event", translate different English ones).

    (Ranking equally governing sources by sentence score instead of retrieval position was
    measured and lost: demo gold contains-gold 0.614 → 0.578.)"""
    eligible = [s for s in scored if s.source.eligible]
    if not eligible or eligible[0].score < refuse_below:
        return None
    best = eligible[0].score
    near = [s for s in eligible if s.score >= best - GOVERN_MARGIN]
    chosen = min(near, key=lambda s: (s.source.rank, -s.score))
    # Governance belongs to a document (its version, status and authority), so two chunks of
    # one document govern alike; which of them the retriever ranked first is no reason to
    # pass over the better sentence of the other. (Between documents, retrieval order stays:
    # see the docstring.)
    chosen = max((s for s in near if s.source.hit.doc_id == chosen.source.hit.doc_id), key=lambda s: s.score)
    # Governance may prefer a lower score, not a worse fit: a sentence holding the asked-for
    # kind of value ("how long": a duration) that scores at least as high is not passed over
    # for a better-ranked source's sentence that holds none.
    fitter = [s for s in near if s.type_match > chosen.type_match and s.score >= chosen.score]
    if fitter:
        chosen = min(fitter, key=lambda s: (s.source.rank, -s.score))
    if language in (None, "?") or _language(chosen) == language:
        return chosen
    twins = [s for s in eligible if as_cross_language(s) >= best - LANGUAGE_MARGIN and _language(s) == language
             and _governance(s) == _governance(chosen) and _same_statement(chosen, s)
             and s.type_match >= chosen.type_match]
    if not twins:
        return chosen
    twin = max(twins, key=as_cross_language)
    if embed is not None and len(twins) > 1:
        vectors = np.asarray(embed([chosen.text, *(t.text for t in twins)]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        closeness = vectors[1:] @ vectors[0]
        twin = max(zip(twins, closeness), key=lambda tc: (float(tc[1]), as_cross_language(tc[0])))[0]
    return replace(twin, score=max(as_cross_language(twin), chosen.score), translates=chosen.text)


def as_cross_language(s: Sentence) -> float:
    """A same-language sentence's score on the other-language scale, or its own if higher.

    The scorer weighs word overlap less for a sentence in another language than the
    question's (it has almost none), and meaning more. So a German twin with a partial word
    overlap (0.26) and a perfect meaning score (1.00) came out 0.19 below its English
    translation (0.08, 0.95), although by meaning it is the better one. Compared on the
    other-language scale, it is 1.01 against 0.94, and it wins."""
    shift = (LEXICAL_WEIGHT_SAME_LANGUAGE - LEXICAL_WEIGHT_CROSS_LANGUAGE) * (s.dense - s.lexical)
    return s.score + max(shift, 0.0)


#: How far below the best a same-language, equally governing sentence may score and still win.
LANGUAGE_MARGIN = 0.15


def _language(s: Sentence) -> str:
    return str(s.source.hit.metadata.get("language") or "en")


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CODE = re.compile(r"`([^`\n]+)`")


def _same_statement(chosen: Sentence, twin: Sentence) -> bool:
    """A translation keeps the numbers and code of the sentence it translates: the twin must
    hold every number and code span of the chosen sentence (sentences without either pass).
    (``choose`` also asks it to hold the asked-for kind of value if the chosen one does:
    "Enddatum: Hier gibst du das Enddatum ein" is no translation of "… will last one day".)"""
    def marks(text: str) -> set[str]:
        numbers = {n.replace(",", ".") for n in _NUMBER.findall(text)}
        return numbers | {c.strip().casefold() for c in _CODE.findall(text)}

    return marks(chosen.text) <= marks(twin.text)


def _governance(s: Sentence) -> tuple[str | None, str, str]:
    return s.source.version, s.source.status, s.source.authority


def _governing_statement(question: str, chosen: Sentence, conflicts: tuple[Conflict, ...], others: list[Sentence],
                         scored: Sequence[Sentence], refuse_below: float,
                         embed: Callable[[list[str]], np.ndarray] | None,
                         ) -> tuple[Sentence, tuple[Conflict, ...], list[Sentence]]:
    """The answer when a source that governs over the chosen one states the same fact otherwise.

    ``choose`` prefers the governing source only among sentences scoring within
    :data:`GOVERN_MARGIN` of the best, so a community post phrased like the question
    ("Maintenance actually starts at 3:00 AM CET") could outscore the reference ("… starts
    at 01:00 CET") and be answered, with the reference listed as contradicting it. A
    conflict is two values for one attribute: once one is found, the value of the source
    with the better standing (status, authority, version match) is the answer, and the
    chosen one becomes the contradicting claim, when the conflict check, run from that
    source, finds it so (the check is the same in both directions, or nothing changes)."""
    better = [s for s in others if s.source.eligible and s.source.governs_over(chosen.source)]
    if not better:
        return chosen, conflicts, others
    governing = min(better, key=lambda s: (s.source.standing, s.source.rank, -s.score))
    again, again_others = detect_conflicts(question, governing, scored, refuse_below, embed=embed)
    if not any(s.source.hit.doc_id == chosen.source.hit.doc_id for s in again_others):
        return chosen, conflicts, others
    return governing, again, again_others


def extract_answer(question: str, scored: Sequence[Sentence], target: Target, coverage: float = 1.0,
                   refuse_below: float = REFUSE_BELOW, min_coverage: float = MIN_COVERAGE, *,
                   embed: Callable[[list[str]], np.ndarray] | None = None) -> Extract:
    """The governing source's best sentence, quoted, with the conflicts other sources state.

    ``embed`` (the index's passage embedder) lets conflict detection match an attribute
    phrased with a synonym or in the other language (see :mod:`beleg.answer.attributes`)."""
    if target.unknown:
        return refusal(f"no source covers version {', '.join(target.unknown)}")
    chosen = choose(scored, refuse_below, detect_language(question, default="?"), embed=embed)
    if coverage < min_coverage:
        why = f"the sources cover {below(coverage, min_coverage)} of the question's terms"
        if chosen is None:
            return refusal(why)
        # Words the evidence lacks are no proof that it does not answer: a paraphrase uses none
        # of the page's words ("How can my server tell that an incoming callback genuinely comes
        # from you?" over the signature-checking page that ranked first). Not confirmed, then,
        # rather than not covered: the best sentence is shown as the closest passage.
        first, _ = quote_answer(chosen, scored)
        return replace(refusal(why), chosen=chosen, closest=(first,))
    if chosen is None:
        top = next((s.score for s in scored if s.source.eligible), None)
        return refusal("no eligible source" if top is None else f"best sentence scores {below(top, refuse_below)}")
    conflicts, others = detect_conflicts(question, chosen, scored, refuse_below, embed=embed)
    chosen, conflicts, others = _governing_statement(question, chosen, conflicts, others, scored, refuse_below, embed)
    first, shown = quote_answer(chosen, scored)
    text = f"{shown} [{chosen.source.label}]"
    citations = [first]
    if conflicts:
        citations.extend(_cite(s) for s in others)
        text += "\n\n" + "\n".join(conflict_lines(conflicts[0]))
    return Extract(text, False, tuple(citations), conflicts, chosen, "answered")
