"""Markdown tables in extractive answers: a header row (or a separator row) is never an
answer candidate; a row is scored with its header's words, and when the question names one
row (by its first cell, or by the identifier it asks about) the other rows of that table
lose; the quote is the chosen row alone, so every support check reads only what the answer
shows: the row and, as its context, its header.

Small made-up tables, English and German; the real scoring code with IDF 1 and no embedder.
"""

from __future__ import annotations

from typing import Any

from beleg.answer.evidence import Target
from beleg.answer.extractive import extract_answer
from beleg.answer.scoring import SentenceScorer, candidate_sentences
from beleg.answer.support import extractive_support
from beleg.answer.types import Source
from beleg.types import Hit

PLANS = ("Our plans:\n\n| Plan | Monthly fee | Backup space | Reply time |\n|:---|---:|---|---|\n"
         "| Basic | USD 5 | 100 GB | 3 working days |\n| Pro | USD 30 | 2 TB | 6 hours |\n"
         "| Ultimate | on request | unlimited | 30 minutes |\n")
TARIFE = ("| Tarif | Preis | Speicherplatz | Antwortzeit |\n|---|---|---|---|\n"
          "| Klein | 5 EUR | 100 GB | 3 Werktage |\n| Mittel | 30 EUR | 2 TB | 6 Stunden |\n"
          "| Groß | auf Anfrage | unbegrenzt | 30 Minuten |\n")
CODES = ("| Code | Meaning | Remedy |\n|---|---|---|\n"
         "| QX-101 | Queue is paused by an operator | Resume it with `qx resume` |\n"
         "| QX-202 | Message is larger than the limit | Shorten the message or raise the limit |\n"
         "| QX-303 | Token has expired | Renew the token with `qx login` |\n")


class _Flat:
    def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
        from beleg.index.analyzer import analyze_query

        terms = analyze_query(text)
        return {t: 1.0 for t in [t for t in terms if t not in skip] or terms}


def _source(text: str, language: str = "en") -> Source:
    meta = {"language": language, "status": "current", "authority": "guide"}
    return Source("S1", Hit("c1", "d1", "d1.md", "Doc", ("Doc",), 0, len(text), 1.0, text, meta), 1)


def _scorer() -> SentenceScorer:
    """The real scoring code with every term weighing 1 and no embedder (dense part 0)."""
    scorer = SentenceScorer.__new__(SentenceScorer)
    scorer.terms = type("Terms", (), {"idf": staticmethod(lambda term: 1.0)})()  # type: ignore[assignment]
    scorer.embed_queries = scorer.embed_passages = None
    scorer.cache = None
    return scorer


def _answer(question: str, text: str, language: str = "en") -> Any:
    src = _source(text, language)
    ex = extract_answer(question, _scorer().score(question, candidate_sentences([src])), Target(None, "none"),
                        refuse_below=0.0)
    assert not ex.refused, ex.reason
    return ex


def test_a_header_row_is_never_a_candidate_nor_is_a_separator_row() -> None:
    for text in (PLANS, TARIFE, CODES):
        rows = [s.text for s in candidate_sentences([_source(text)])]
        header = text[text.index("|"):text.index("\n", text.index("|"))]
        assert header not in rows and not any("---" in r for r in rows)
        assert len([r for r in rows if r.startswith("|")]) == 3  # the three data rows


def test_the_row_whose_first_cell_the_question_names_is_the_answer() -> None:
    ex = _answer("What is the reply time on the Pro plan?", PLANS)
    assert ex.citations[0].quote == "| Pro | USD 30 | 2 TB | 6 hours |"
    assert ex.answer == "Plan: Pro; Monthly fee: USD 30; Backup space: 2 TB; Reply time: 6 hours [S1]"
    ex = _answer("Wie lange ist die Antwortzeit im Tarif Mittel?", TARIFE, "de")
    assert ex.citations[0].quote == "| Mittel | 30 EUR | 2 TB | 6 Stunden |"
    assert ex.answer.startswith("Tarif: Mittel; Preis: 30 EUR")


def test_a_row_is_scored_with_its_header_words_as_a_sentence_with_its_heading() -> None:
    # "plan" and "backup space" are only in the header; the prose sentence below holds two of
    # the question's words itself, the Ultimate row only "unlimited".
    text = PLANS + "\nExtra backup space costs 1 dollar per 100 GB.\n"
    assert _answer("Which plan includes unlimited backup space?", text).citations[0].quote.startswith("| Ultimate")
    ex = _answer("Welcher Tarif hat unbegrenzten Speicherplatz?", TARIFE + "\nMehr Speicherplatz kostet 1 EUR.\n", "de")
    assert ex.citations[0].quote.startswith("| Groß")


def test_the_row_of_the_asked_identifier_wins_over_rows_holding_the_asked_kind() -> None:
    # "What should I do" asks for an instruction: the QX-101 and QX-303 rows hold commands,
    # the asked QX-202 row does not; those rows are about other codes all the same.
    ex = _answer("What should I do about QX-202?", CODES)
    c = ex.citations[0]
    assert c.quote == "| QX-202 | Message is larger than the limit | Shorten the message or raise the limit |"
    assert CODES[c.start:c.end] == c.quote


def test_the_quote_is_the_shown_row_and_the_checks_read_only_it_and_its_header() -> None:
    src = _source(CODES)
    row = "| QX-303 | Token has expired | Renew the token with `qx login` |"
    a = CODES.index(row)
    ex = _answer("What is QX-303?", CODES)
    assert (ex.citations[0].start, ex.citations[0].end) == (a, a + len(row))  # the row, not header..row
    # The QX-303 row quoted for a question about QX-202: the QX-202 row above it is not shown,
    # so it names nothing for this quote, and the row's own command is no answer to it.
    from beleg.answer.types import Citation

    cite = Citation("S1", "c1", "d1", "d1.md", row, a, a + len(row), True)
    s = extractive_support("What should I do about QX-202?", [cite], [src], _Flat())  # type: ignore[arg-type]
    anchors = s.check("anchors")
    assert anchors is not None and anchors.passed is False and not s.supported
    # The header is the row's context: a question worded by its column names finds them.
    s = extractive_support("What is the remedy for QX-303?", [cite], [src], _Flat())  # type: ignore[arg-type]
    focus = s.check("focus")
    assert focus is not None and focus.passed and s.supported


def test_rows_of_a_long_tables_later_chunks_are_read_with_its_header(tmp_path: Any) -> None:
    """A table too long for one chunk is cut between rows (chunking rules 3); the rows of its
    later chunks are read with the header from the document, as the first chunk's rows are:
    shown as "Variable: …; Default: …" and checked against it."""
    import beleg.kb as kbm
    from beleg.index.config import ChunkingConfig, IndexConfig

    rows = "\n".join(f"| `GIZMO_OPTION_{i}` | `{i * 7}` | Sets the gizmo's option number {i} for the worker pool. |"
                     for i in range(40))
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "settings.md").write_text(
        "# Gizmo settings\n\nEvery setting of the gizmo service:\n\n| Variable | Default | Meaning |\n"
        "|---|---|---|\n" + rows + "\n", encoding="utf-8")
    kb = kbm.open(tmp_path / "idx", IndexConfig(ChunkingConfig(max_tokens=80)))
    kb.ingest(corpus)
    chunks = [h for h in kb.search("GIZMO_OPTION_33 default", k=10) if "GIZMO_OPTION_33`" in h.text]
    assert chunks and "| Variable |" not in chunks[0].text  # the row's chunk does not hold the header
    answer = kb.ask("What is the default of GIZMO_OPTION_33?")
    assert answer.citations and answer.citations[0].quote.startswith("| `GIZMO_OPTION_33` |")
    assert answer.answer.startswith("Variable: `GIZMO_OPTION_33`; Default: `231`;"), answer.answer
    assert answer.support.supported, answer.support


def test_the_header_of_a_table_that_goes_on_from_lines_above() -> None:
    from beleg.sentences import continued_table_header

    text = "Intro.\n\n| Name | Default |\n|---|---|\n| A | 1 |\n| B | 2 |\n\n| C | 3 |\n| D | 4 |\n"
    assert continued_table_header(text, text.index("| B |")) == "| Name | Default |"
    assert continued_table_header(text, text.index("| A |")) == "| Name | Default |"
    assert continued_table_header(text, text.index("| C |")) is None  # a new table, after a blank line
    assert continued_table_header(text, text.index("| D |")) is None  # that table has no header row
    assert continued_table_header(text, text.index("Intro")) is None


def test_a_score_is_the_weighted_sum_of_its_parts() -> None:
    # benchmarks/sentence_weights.py fits WEIGHTS from the parts the scorer records: the score
    # must be exactly what the parts and weights give, or a fit would describe another scorer.
    from beleg.answer.scoring import FEATURES, WEIGHTS

    scored = _scorer().score("Which code means the token has expired?", candidate_sentences([_source(CODES)]))
    assert scored and all(s.features is not None and set(s.features) == set(FEATURES) for s in scored)
    assert any(s.features["other_row"] > 0 or s.features["lexical_same"] > 0 for s in scored)
    for s in scored:
        assert s.score == sum(WEIGHTS[k] * v for k, v in s.features.items())
