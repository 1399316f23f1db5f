"""Score the sentences of retrieved sources as answers to a question.

Offline, with no generative model, an answer is a sentence the sources actually contain,
so choosing it well is the whole job. A sentence's score mixes three signals:

* **lexical coverage**: the IDF-weighted share of the question's terms the sentence (or,
  at half weight, its section heading) contains. Terms the index has never seen weigh
  the most, so a question about "MQTT" is poorly covered by any sentence about queues.
* **dense similarity**: the e5 cosine between question and sentence, rescaled to [0, 1];
  it carries cross-lingual questions, where terms cannot match.
* **answer type**: "how long" wants a duration, "how large" a size; a sentence that holds
  a value of the expected kind gains, one that holds none loses. A how-to question ("how
  do I", "wie installiere ich") prefers a sentence with a command or code (inline, or the
  code block it leads into); a question asking for a name ("which option", "what was it
  called before", "wie hieß") prefers a sentence that names something the question does
  not, and one whose tense cue (previously/früher vs now/jetzt) matches the question's.

Lexical weight is lower when question and source differ in language. The weights were
set on XQuAD dev and the demo gold set (see docs/benchmarks.md, "Answers").
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np

from beleg.answer.anchors import STRONG, Anchor, missing_anchors, question_anchors
from beleg.answer.polarity import opposite_action
from beleg.answer.quarantine import PROSE_KINDS
from beleg.answer.types import Source
from beleg.answer.values import Value, extract_values
from beleg.index.analyzer import analyze, analyze_query, detect_language
from beleg.index.ports import Eligibility, SearchIndex
from beleg.retrieve.coverage import TermCoverage, evidence_terms
from beleg.sentences import Span, is_table_header, split_sentences, table_header, table_top

#: Sentence kinds that can answer (headings and code blocks cannot on their own).
_ANSWER_KINDS = PROSE_KINDS

#: Modal and auxiliary verbs the stopword lists keep (the German list has "kann" and "muss", not
#: "sollte", "sein" or "würde"): they say how a question is asked, not what it is about. Found in
#: a sentence, they made "Was sollte auf einem Slave installiert sein?" prefer one opening "Sollte
#: das nicht geschehen …" to the one that says what to install, so a sentence gets no lexical
#: credit for them (they stay in the total: see SentenceScorer.score). The support check's focus
#: terms keep them: dropping them there was measured and not kept (docs/benchmarks.md).
FUNCTION_VERBS = {
    "de": "soll sollst sollt sollen sollte solltest sollten solltet musst müssen müsst musste mussten müsste "
          "müssten kannst könnt konnte konnten könnte könnten darf darfst dürfen dürft durfte durften dürfte "
          "dürften will willst wollen wollt wollte wollten mag magst mögen möchte möchten möchtest sein bin bist "
          "seid wäre wären gewesen werde wirst werdet wurde wurden würde würden worden geworden habe hast habt "
          "hatten hätte hätten gehabt",
    "en": "be being been",
}


@cache
def function_verb_terms(language: str) -> frozenset[str]:
    """FUNCTION_VERBS of a question in ``language`` as analysed there ("sollte" is "sollt"); of
    every language when it is unknown ("?"). Per language: German "war" is a word in English."""
    langs = FUNCTION_VERBS if language == "?" else [language] if language in FUNCTION_VERBS else []
    return frozenset().union(*(analyze(FUNCTION_VERBS[lang], lang) for lang in langs))


_MIN_WORDS = 3


def is_question(text: str) -> bool:
    """The text asks ("Do I need Redis for my ioBroker or not?", an FAQ entry's heading line)."""
    return text.rstrip().rstrip("*_").endswith("?")


def can_answer(span: Span) -> bool:
    """The candidate rule: prose (a sentence, list item or table row) of 3+ words that does not
    itself ask a question. A question quoted as an answer is never support (``support``'s
    completeness check), so choosing one only hides the sentence that answers it: an FAQ's
    "Do I need Redis?" shares the asker's words and outscored its own answer below it."""
    return span.kind in _ANSWER_KINDS and len(span.text.split()) >= _MIN_WORDS and not is_question(span.text)


def row_header(source: Source, row: Span) -> Span | None:
    """The header of a table row of ``source``'s chunk (chunk offsets), unless withheld: an
    instruction-like header names nothing, and the row is then shown and read alone."""
    header = table_header(source.hit.text, row)
    if header is None and source.table_lead and row.kind == "table-row" and table_top(source.hit.text, row.start) == 0:
        # The chunk opens inside a long table whose header is in an earlier chunk (no offsets here).
        return Span(-1, -1, source.table_lead, "table-row")
    if header is None or source.quarantine.overlaps(header.start, header.end):
        return None
    return header


def sentence_passage(heading_path: Sequence[str], title: str, sentence: str) -> str:
    """What the embedder sees of a sentence: its section heading (else the document title)
    gives it context. Ingest (beleg.answer.sentence_vectors) stores vectors of this text."""
    heading = heading_path[-1] if heading_path else title
    return f"{heading}: {sentence}"

# Score weights (see module docstring).
LEXICAL_WEIGHT_SAME_LANGUAGE = 0.5
LEXICAL_WEIGHT_CROSS_LANGUAGE = 0.15
DENSE_FLOOR, DENSE_SPAN = 0.72, 0.18  # e5 cosines live in a narrow band; this maps it to [0, 1]
TYPE_BONUS = 0.12
HEADING_WEIGHT = 0.5
#: Bonus for sentences of the retriever's top chunk, decaying as 1 / retrieval position.
RETRIEVAL_PRIOR = 0.0
#: "What is E-5031?": the first sentence of a section whose heading names the subject defines
#: it, as does the table row whose first cell is the subject.
DEFINITION_BONUS = 0.1
#: When the question names one row of a table (its first cell: "the Business plan"; or the
#: identifier or number it holds: "KB-2001"), the other rows of that table state other keys'
#: facts: as wrong as a missing kind of value. (The named row gains nothing: it is no better
#: an answer than a sentence saying the same, only better than its neighbours.)
OTHER_ROW_PENALTY = TYPE_BONUS
_DEFINITION = re.compile(r"^\s*(?:what\s+is|what's|what\s+are|what\s+does|was\s+ist|was\s+sind|was\s+bedeutet|"
                         r"was\s+hei(?:ß|ss)t)\s+(?P<subject>.+?)(?:\s+(?:mean|stand\s+for))?\s*\??\s*$", re.IGNORECASE)


#: How-to questions: a sentence with a command or code, or leading into a code block, gains this.
HOWTO_CODE_BONUS = 0.06
#: How-to questions (the one rule: the scorer's code bonus and support's "instruction" kind).
_HOWTO = re.compile(r"^\W*(?:how\s+(?:do|can|could|should|would|must)\s+(?:i|we|you|one)\b|how\s+to\b|"
                    r"how\s+is\s+.+\s+(?:installed|configured|enabled|set|started|updated)\b|"
                    r"what\s+(?:command|setting)|"
                    r"what\s+(?:do|should|must|can)\s+(?:i|we|you)\s+(?:need\s+to\s+|have\s+to\s+)?"
                    r"(?:configure|set|change|enter|do|run|install|use)\b|"
                    r"was\s+(?:muss|soll|sollte|kann)\s+(?:ich|man)\s+(?:\w+\s+){0,4}?(?:einstellen|konfigurieren|"
                    r"tun|eintragen|machen|\u00e4ndern|setzen|installieren)\b|"
                    r"wie\s+(?:kann|k\u00f6nnte|muss|soll|sollte|l\u00e4sst|lasse)\s+(?:ich|man|wir|sich)\b|"
                    r"wie\s+\w+(?:e|t)\s+(?:ich|man)\b|"
                    r"wie\s+(?:richte|installiere|aktiviere|konfiguriere|\u00e4ndere|setze|starte|aktualisiere)\b|"
                    r"mit\s+welche[mr]\s+(?:befehl|kommando)|"
                    # "Where do I set …", "Wo setze ich …", "Wo kann ich … einstellen": a setting's place
                    r"where\s+(?:do|can|should|must|would)\s+(?:i|we|you|one)\s+(?:\w+\s+)?(?:set|change|configure|"
                    r"enter|put|add|enable|disable|define|specify|override)\b|"
                    r"wo\s+(?:setze|\u00e4ndere|trage|stelle|konfiguriere|aktiviere|deaktiviere|definiere|lege|"
                    r"hinterlege)\s+(?:ich|man)\b|"
                    r"wo\s+(?:kann|muss|soll|sollte)\s+(?:ich|man)\s+(?:\w+\s+){0,4}?(?:setzen|\u00e4ndern|eintragen|"
                    r"einstellen|festlegen|konfigurieren|aktivieren|deaktivieren|hinterlegen|definieren)\b)",
                    re.IGNORECASE)
#: Questions asking for a name: a sentence naming something the question does not gains this.
NAME_BONUS = 0.06
#: A question naming numbers ("since adapter version 3.4.0", "as of May 2021"): a sentence
#: holding them (or from a source of that version) gains this times the share it holds. The
#: support check's anchors test asks the same of the chosen quote.
NUMBER_BONUS = 0.06
#: ... and one whose tense cue matches the question's (asked "before", says "previously") this.
TENSE_BONUS = 0.05
#: The parts of a sentence's score, each a number the scorer reads off the sentence, and the
#: weight it gets: the score is their weighted sum. Lexical coverage and dense similarity are
#: split by whether the sentence is in the question's language, as their weights are.
WEIGHTS: dict[str, float] = {
    "lexical_same": LEXICAL_WEIGHT_SAME_LANGUAGE, "dense_same": 1 - LEXICAL_WEIGHT_SAME_LANGUAGE,
    "lexical_cross": LEXICAL_WEIGHT_CROSS_LANGUAGE, "dense_cross": 1 - LEXICAL_WEIGHT_CROSS_LANGUAGE,
    "type": TYPE_BONUS,  # +1 holds the asked-for kind of value, -1 does not, 0 no kind asked
    "opposite": -TYPE_BONUS,  # does the reverse of the asked action ("ausschalten" for "switch on")
    "definition": DEFINITION_BONUS,
    "other_row": -OTHER_ROW_PENALTY,  # a row or labelled item of an asked table or list that names another key
    "retrieval": RETRIEVAL_PRIOR,  # 1 / (1 + the chunk's retrieval position)
    "code": HOWTO_CODE_BONUS,  # a how-to question, and the sentence holds or leads into code
    "name": NAME_BONUS,  # a naming question, and the sentence names something the question does not
    "tense": TENSE_BONUS,  # a naming question: +1 / -1 as the tense cue matches or not
    "numbers": NUMBER_BONUS,  # the share of the question's numbers the sentence (or its version) holds
}
FEATURES = tuple(WEIGHTS)
_WHICH = re.compile(r"^\W*(?:which|welche[rsmn]?|was\s+f\u00fcr)\b", re.IGNORECASE)
_NAMING = re.compile(r"^\W*(?:what|was|wie)\b.*\b(?:called|named|name[sd]?|hei(?:\u00df|ss)t|hie(?:\u00df|ss)(?:en)?|"
                     r"hei(?:\u00df|ss)en|genannt|bezeichnet|namen?s?)\b", re.IGNORECASE)
_PAST = re.compile(r"\b(?:before|previously|formerly|old|older|earlier|originally|used\s+to|renamed\s+from|"
                   r"fr\u00fcher|vorher|zuvor|bisher|ehemals|ehemalige[nrms]?|alte[nrms]?|urspr\u00fcnglich|"
                   r"hie(?:\u00df|ss)(?:en)?|umbenannt)\b", re.IGNORECASE)
_PRESENT = re.compile(r"\b(?:now|new|newer|renamed\s+to|current|currently|jetzt|nun|neue[nrms]?|neu|aktuell)\b",
                      re.IGNORECASE)
# Names: code spans, quoted words, dotted/underscored identifiers, CamelCase, CONSTANTS, and
# product names with an inner capital ("PostgreSQL", "MySQL", "SQLite3"; never a German noun).
_NAME = re.compile(r"`([^`\n]+)`|[\"\u201e\u201c\u00ab]([^\"\u201c\u201d\u00bb\n]{1,60})[\"\u201c\u201d\u00bb]|"
                   r"\b([A-Za-z][\w-]*(?:[._:/][\w-]+)+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[a-z]{2,}\w*|"
                   r"[A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{3,}\d*)\b")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
# Between a sentence and the code block it leads into: blank lines and shortcode tags only.
_CODE_GAP = re.compile(r"(?:\s|\{\{[%<].*?[%>]\}\}|\{%.*?%\})*", re.DOTALL)


# A follow-up's opening conjunction ("And how do I ...", "Und wie prüfe ich dann ...") is no
# part of the question's form.
_LEAD = re.compile(r"^\W*(?:(?:and|und|but|aber|also|so|then|dann|ok(?:ay)?)\b[\s,]*)+", re.IGNORECASE)


#: A sentence boundary inside a question: "… besucht. Wie richte ich …", "… JavaScript-1. How do I …"
#: (after "z.", "e.g." or the ordinal of "am 1. Januar" none).
_SENTENCE_BREAK = re.compile(r"(?:(?<=\w\w[.!?:])|(?<=\w-\w[.!?:]))\s+(?=[A-ZÄÖÜ])")


#: A question word that opens the asking clause ("On a bare-metal install, how do I …").
_ASKING = re.compile(r",\s*(?=(?:how|what|which|where|when|why|who|wie|was|welche[rsmn]?|wo|wann|warum|wer)\b)",
                     re.IGNORECASE)
_ASKS_FIRST = re.compile(r"^\W*(?:how|what|which|where|when|why|who|whom|whose|is|are|do|does|did|can|could|should|"
                         r"will|would|was|were|has|have|wie|was|welche[rsmn]?|wo|wann|warum|wer|wem|wen|ist|sind|"
                         r"kann|können|muss|gibt|hat|haben|wird|werden)\b", re.IGNORECASE)


def question_form(question: str) -> str:
    """The asking sentence without a follow-up's opening conjunction. A question that first
    sets the scene ("My cron jobs only run when someone visits the site. How do I set up a
    real one?") asks in its last sentence, so that one says what kind of answer is wanted;
    so does the clause after a leading phrase ("On a bare-metal install, how do I …?")."""
    parts = _SENTENCE_BREAK.split(question.strip())
    if len(parts) > 1 and parts[-1].endswith("?"):
        question = parts[-1]
    question = _LEAD.sub("", question, count=1)
    if not _ASKS_FIRST.match(question):
        m = _ASKING.search(question)
        if m:
            question = question[m.end():]
    return question


def is_howto_question(question: str) -> bool:
    """"How do I install ...", "how to ...", "What command ...", "Wie kann ich ...", "Wie installiere ich ...",
    "Mit welchem Befehl ..."."""
    return _HOWTO.match(question_form(question)) is not None


def is_naming_question(question: str) -> bool:
    """"Which option ...", "Welche Datei ...", "What was the variable called before?", "Wie hieß ..."."""
    form = question_form(question)
    return _WHICH.match(form) is not None or _NAMING.match(form) is not None


def names_in(sentence: str, question: str) -> list[str]:
    """The names a sentence holds that the question does not (case-insensitive).

    The question holds a name when it writes it as a word of its own (or inflected: "defaultURL"
    in "defaultURLs"), not inside a longer one: `read` is not named by "iCalReadTrigger", and
    "Welchen String muss ich in iCalReadTrigger schreiben …?" is answered by the sentence that
    names `read` (the substring test gave that sentence no credit for its name, and the one
    naming `read https://...` won)."""
    asked = question.casefold()
    names = (next(g for g in m.groups() if g) for m in _NAME.finditer(sentence))
    return [n for n in names if n.strip() and not _written_in(n.strip().casefold(), asked)]


def _written_in(name: str, text: str) -> bool:
    """Whether ``name`` occurs in ``text`` as a word of its own, perhaps with an inflection ending."""
    return re.search(rf"(?<!\w){re.escape(name)}(?:s|es|e|en|n)?(?!\w)", text) is not None


def tense_match(question: str, sentence: str) -> int:
    """+1 when the sentence has the question's tense cue (past or present), -1 when it has only
    the other one, 0 when the question has none or the sentence has both or neither."""
    q_past, q_now = bool(_PAST.search(question)), bool(_PRESENT.search(question))
    if q_past == q_now:
        return 0
    s_past, s_now = bool(_PAST.search(sentence)), bool(_PRESENT.search(sentence))
    if s_past == s_now:
        return 0
    return 1 if s_past == q_past else -1


def _names_the_subject(row: str, q_terms: set[str], lang: str) -> bool:
    """Whether a table row's first cell ("| `E-5031` | 503 | …") holds only question terms."""
    first = row.strip().strip("|").split("|", 1)[0]
    terms = set(analyze(first, lang))
    return bool(terms) and terms <= q_terms


def _asked_row(row: str, q_terms: set[str], strong: Sequence[Anchor], source: Source) -> bool:
    """Whether the question names this table row: its first cell, or all the question's
    identifiers and numbers are in it."""
    lang = str(source.hit.metadata.get("language") or "en")
    return _names_the_subject(row, q_terms, lang) or (bool(strong) and not missing_anchors(list(strong), row))


# A labelled list item: "**Docker**: Version `>= 24.0.0`", "`PORT`: 8080", "Timeout: 30 s". Its
# label names what the item is about, as a table row's first cell does.
_ITEM_LABEL = re.compile(r"^(?:\*\*|__|`)?(?P<label>[^:*_`\n]{1,60}?)(?:\*\*|__|`)?\s*:\s+\S")
# Between two items of one list: only blank space and list markers ("- ", "2. ").
# (One whitespace run per marker: two adjacent runs made a long blank gap quadratic to reject.)
_ITEM_GAP = re.compile(r"\s*(?:(?:[-*+]|\d{1,3}[.)])\s*)*")


def item_label(span: Span) -> str | None:
    """The label of a labelled list item ("Vault" of "**Vault**: stores up to 200 GB"); else None."""
    m = _ITEM_LABEL.match(span.text) if span.kind == "list-item" else None
    return m.group("label") if m else None


def item_head(text: str, item: Span) -> Span | None:
    """The first sentence of the list item whose later sentence ``item`` is (a "list-item" span
    of chunk ``text`` on the same line as the sentences before it: "- **Filter**: Clean it every
    three months. Replace it after two years."); None for an item's first sentence or no item."""
    if item.kind != "list-item":
        return None
    spans = _spans(text)
    i = next((k for k, sp in enumerate(spans) if sp.start == item.start), None)
    head = None
    while i and spans[i - 1].kind == "list-item" and "\n" not in text[spans[i - 1].end:spans[i].start]:
        i -= 1
        head = spans[i]
    return head


@lru_cache(maxsize=64)
def _spans(text: str) -> tuple[Span, ...]:
    """A chunk's spans, split once per chunk for all its items (bounded: a server scores many chunks)."""
    return tuple(split_sentences(text))


def list_lead(spans: Sequence[Span], text: str, item: Span) -> Span | None:
    """The span before the list that ``item`` belongs to (its lead-in: "Each component has its
    limits:"), past the items above it; None when the list opens the text."""
    i = next((k for k, sp in enumerate(spans) if sp.start == item.start), None)
    while i is not None and i > 0 and spans[i - 1].kind == "list-item" and \
            _ITEM_GAP.fullmatch(text, spans[i - 1].end, spans[i].start):
        i -= 1
    return spans[i - 1] if i else None


def labelled_lists(sentences: Sequence[Sentence]) -> dict[int, tuple[tuple[str, int], str]]:
    """For each labelled list item among ``sentences`` (by index): its list (chunk id and the
    first item's offset) and its label. Items of one list follow each other in one chunk with
    nothing but list markers between them."""
    items: dict[str, list[tuple[int, int, int, str]]] = {}
    for i, s in enumerate(sentences):
        label = item_label(s.span)
        if label is not None:
            items.setdefault(s.source.hit.chunk_id, []).append((s.span.start, s.span.end, i, label))
    out: dict[int, tuple[tuple[str, int], str]] = {}
    for cid, found in items.items():
        found.sort()
        text = sentences[found[0][2]].source.hit.text
        first, end = found[0][0], None
        for a, b, i, label in found:
            if end is not None and not _ITEM_GAP.fullmatch(text, end, a):
                first = a
            out[i] = ((cid, first), label)
            end = b
    return out


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
    #: The sentence holds inline code or leads into a code block (see ``HOWTO_CODE_BONUS``).
    code_context: bool = False
    #: The other-language sentence this one was chosen instead of, as its twin in the
    #: question's language (extractive.choose); confidence then judges it as that sentence.
    translates: str = ""
    #: The score's parts (:data:`FEATURES`), for a trace and for fitting :data:`WEIGHTS`.
    features: dict[str, float] | None = field(default=None, compare=False)

    @property
    def text(self) -> str:
        return self.span.text


def candidate_sentences(sources: Sequence[Source], *, eligible_only: bool = False) -> list[Sentence]:
    """Every answer-capable sentence of the given sources, with document offsets (not a
    table's header row).

    Sentences withheld as instruction-like (``Source.quarantine``) are never candidates,
    so nothing downstream can quote, score or compare them."""
    out: list[Sentence] = []
    for src in sources:
        if (eligible_only and not src.eligible) or src.quarantine.whole:
            continue
        spans = split_sentences(src.hit.text)
        for i, span in enumerate(spans):
            # A table's header row names its columns and answers nothing: the row it names does.
            if not can_answer(span) or is_table_header(src.hit.text, span):
                continue
            if src.quarantine.overlaps(span.start, span.end):
                continue
            out.append(Sentence(src, span, src.hit.start + span.start, src.hit.start + span.end,
                                tuple(extract_values(span.text)),
                                code_context=_code_context(src.hit.text, span, _next_block(spans, i))))
    return out


def _next_block(spans: Sequence[Span], i: int) -> Span | None:
    """The span after ``spans[i]``, past lines that hold only shortcode tags."""
    return next((sp for sp in spans[i + 1:] if not _CODE_GAP.fullmatch(sp.text)), None)


def _code_context(text: str, span: Span, following: Span | None) -> bool:
    """The sentence holds inline code, or the next block, past blank lines and shortcode tags, is code."""
    if _INLINE_CODE.search(span.text):
        return True
    return following is not None and following.kind == "code" and \
        _CODE_GAP.fullmatch(text, span.end, following.start) is not None and \
        text.count("\n", span.end, following.start) <= 5


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

    def get(self, generation: int, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray],
            owners: Sequence[tuple[str, str]] | None = None) -> np.ndarray:
        # ``owners`` (each text's doc and chunk id) is for the stored cache that wraps this one
        # (beleg.answer.sentence_vectors.SentenceVectors); memory alone needs none.
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

    def __init__(self, index: SearchIndex, eligible: Eligibility,
                 embed_queries: Callable[[list[str]], np.ndarray] | None,
                 embed_passages: Callable[[list[str]], np.ndarray] | None, cache: VectorCache | None = None) -> None:
        self.index = index
        #: IDF over the chunks the asker may read (``eligible``): scores, which the trace shows,
        #: reveal nothing about documents they cannot read.
        self.terms = TermCoverage(index, eligible)
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
        # A function verb counts in the total but is never found: a sentence repeating "sollte"
        # gains nothing, and no sentence's share rises for the verbs it lacks.
        weights = {t: w for t, w in weights.items() if t not in function_verb_terms(q_lang)}
        # The kind of content the question asks for (a duration for "how long" and "how often",
        # a number for "which port", a version, a date for "when", an instruction for "how do
        # I") and its test are the support check's own, so the sentence preferred is one that
        # can pass that check. Not "name": "which …" asks as often for a common noun ("which
        # kind of heating element": "alcohol burners") as for a name, and a German sentence
        # capitalises every noun; naming questions get the softer NAME_BONUS below. A yes/no
        # question names no kind a sentence could hold.
        from beleg.answer.support import as_read, asked_kind, kind_present  # support imports this module

        kind = asked_kind(question)
        kind = None if kind in ("name", "yes-no") else kind
        dense = self._dense(question, sentences)
        definitional = is_definition_question(question)
        q_term_set = set(q_terms)
        howto, naming = is_howto_question(question), is_naming_question(question)
        numbers = [a for a in question_anchors(question, q_lang) if a.kind == "number"]
        strong = [a for a in question_anchors(question, q_lang) if a.kind in STRONG]
        headers = [row_header(s.source, s.span) if s.span.kind == "table-row" else None for s in sentences]
        asked_tables = {(s.source.hit.chunk_id, h.start) for s, h in zip(sentences, headers)
                        if h is not None and _asked_row(s.text, q_term_set, strong, s.source)}
        # Labelled list items are rows too: when the question names one item's label ("Docker"),
        # the items labelled otherwise ("Docker Compose") answer for another subject.
        lists = labelled_lists(sentences)
        list_sizes = Counter(group for group, _ in lists.values())
        asked_lists = {group for i, (group, label) in lists.items()
                       if list_sizes[group] > 1 and _asked_row(label, q_term_set, (), sentences[i].source)}
        firsts: dict[str, int] = {}
        for s in sentences:  # the first answer-capable sentence of each chunk
            cid = s.source.hit.chunk_id
            firsts[cid] = min(firsts.get(cid, s.doc_start), s.doc_start)
        out = []
        for i, s in enumerate(sentences):
            lang = str(s.source.hit.metadata.get("language") or "en")
            terms = set(analyze(s.text, lang))
            path = s.source.hit.heading_path
            heading = set(analyze(path[-1], lang)) if path else set()
            # Every heading above the sentence frames it, the page title too: a title's words
            # count for each sentence of the page, not only for those before its first subheading.
            framing = set().union(*(analyze(h, lang) for h in path))
            header = headers[i]
            if header is not None:
                framing |= set(analyze(header.text, lang))  # the header names the row's cells as a heading would
            head = item_head(s.source.hit.text, s.span)
            label = item_label(head) if head is not None else None
            if label is not None:
                framing |= set(analyze(label, lang))  # "Replace it after two years" under "**Filter**:"
            covered = sum(w for t, w in weights.items() if t in terms)
            covered += HEADING_WEIGHT * sum(w for t, w in weights.items() if t in framing and t not in terms)
            lexical = covered / total
            same = q_lang in ("?", lang)
            f = dict.fromkeys(FEATURES, 0.0)
            f["lexical_same" if same else "lexical_cross"] = lexical
            f["dense_same" if same else "dense_cross"] = float(dense[i])
            type_match = 0
            if kind is not None:
                # A sentence that introduces a code block carries the block's instruction.
                holds = (kind == "instruction" and bool(s.code_context)) or kind_present(kind, as_read(s.text), question)[0]
                type_match = 1 if holds else -1
            f["type"] = type_match
            # "ausschalten" for "switch on" is as wrong as a missing kind
            f["opposite"] = float(opposite_action(question, s.text) is not None)
            if (definitional and len(path) > 1 and s.doc_start == firsts[s.source.hit.chunk_id]
                    and q_term_set & heading):
                f["definition"] = 1.0
            elif definitional and s.span.kind == "table-row" and _names_the_subject(s.text, q_term_set, lang):
                f["definition"] = 1.0  # a glossary or error-code table: the row whose key is the subject
            if header is not None and (s.source.hit.chunk_id, header.start) in asked_tables and \
                    not _asked_row(s.text, q_term_set, strong, s.source):
                f["other_row"] += 1
            if i in lists and lists[i][0] in asked_lists and \
                    not _asked_row(lists[i][1], q_term_set, strong, s.source):
                f["other_row"] += 1
            if positions is not None and s.source.hit.chunk_id in positions:
                f["retrieval"] = 1 / (1 + positions[s.source.hit.chunk_id])
            f["code"] = float(howto and s.code_context)
            if naming:
                f["name"] = float(bool(names_in(s.text, question)))
                f["tense"] = tense_match(question, s.text)
            if numbers:
                about = f"{s.text}\nversion {s.source.version}" if s.source.version else s.text
                f["numbers"] = 1 - len(missing_anchors(numbers, about)) / len(numbers)
            score = sum(WEIGHTS[k] * v for k, v in f.items())
            out.append(Sentence(s.source, s.span, s.doc_start, s.doc_end, s.values, lexical, float(dense[i]),
                                type_match, float(score), s.code_context, features=f))
        out.sort(key=lambda s: (-s.score, s.source.rank, s.doc_start))
        return out

    def _dense(self, question: str, sentences: Sequence[Sentence]) -> np.ndarray:
        if self.embed_queries is None or self.embed_passages is None:
            return np.zeros(len(sentences))
        q = self.embed_queries([question])[0]
        texts = [sentence_passage(s.source.hit.heading_path, s.source.hit.title, s.text) for s in sentences]
        if self.cache is not None:
            m = self.cache.get(self.index.generation, texts, self.embed_passages,
                               owners=[(s.source.hit.doc_id, s.source.hit.chunk_id) for s in sentences])
        else:
            m = self.embed_passages(texts)
        cos = m @ q
        return np.clip((cos - DENSE_FLOOR) / DENSE_SPAN, 0.0, 1.0)

