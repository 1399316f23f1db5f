"""Markdown tables in extractive answers: a header row (or a separator row) is never an
answer candidate; it names the columns of the rows under it.

Small made-up tables, English and German; the real scoring code with IDF 1 and no embedder.
"""

from __future__ import annotations

from beleg.answer.scoring import candidate_sentences
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


def _source(text: str, language: str = "en") -> Source:
    meta = {"language": language, "status": "current", "authority": "guide"}
    return Source("S1", Hit("c1", "d1", "d1.md", "Doc", ("Doc",), 0, len(text), 1.0, text, meta), 1)


def test_a_header_row_is_never_a_candidate_nor_is_a_separator_row() -> None:
    for text in (PLANS, TARIFE, CODES):
        rows = [s.text for s in candidate_sentences([_source(text)])]
        header = text[text.index("|"):text.index("\n", text.index("|"))]
        assert header not in rows and not any("---" in r for r in rows)
        assert len([r for r in rows if r.startswith("|")]) == 3  # the three data rows
