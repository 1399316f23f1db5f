"""Opposite actions (beleg.answer.polarity): the reverse of the asked action answers nothing."""

from __future__ import annotations

from beleg.answer.polarity import opposite_action
from beleg.answer.scoring import SentenceScorer, candidate_sentences
from beleg.answer.support import extractive_support
from beleg.answer.types import Citation, Source
from beleg.types import Hit

ON = "How do I switch on the call monitor of the Fritz!Box?"
TABLE = "| Code | Action |\n|---|---|\n| `#96*4*` | Callmonitor ausschalten |\n| `#96*5*` | Callmonitor einschalten |\n"


def test_the_reverse_action_is_found_across_languages() -> None:
    assert opposite_action(ON, "`#96*4*` – Callmonitor ausschalten") == "ausschalten"
    assert opposite_action(ON, "`#96*5*` – Callmonitor einschalten") is None
    assert opposite_action("Wie deaktiviere ich den Adapter?", "Enable the adapter in the instance tab.") == "Enable"
    assert opposite_action("How do I install the adapter?", "To uninstall it, run `iobroker del`.") == "uninstall"
    assert opposite_action("How do I turn the LED off?", "Turn the LED on with `led.on`.") is not None


def test_a_text_with_both_directions_or_no_direction_is_left_alone() -> None:
    assert opposite_action("How do I install the adapter?", "Uninstall it, then install it again.") is None
    assert opposite_action("How do I switch on the monitor?", "The monitor shows incoming calls.") is None
    assert opposite_action("What does the monitor show?", "Switch the monitor off at night.") is None  # nothing asked


def _source(text: str) -> Source:
    hit = Hit("c1", "d1", "fritzbox.md", "Fritz!Box", ("Call monitor",), 0, len(text), 1.0, text, {"language": "de"})
    return Source("S1", hit, 1)


def test_support_fails_the_reverse_row() -> None:
    src = _source(TABLE)
    quote = "| `#96*4*` | Callmonitor ausschalten |"
    a = TABLE.index(quote)
    cite = Citation("S1", "c1", "d1", "fritzbox.md", quote, a, a + len(quote), True)

    class Flat:
        def weights(self, text: str, skip: frozenset[str] = frozenset()) -> dict[str, float]:
            return {"callmonitor": 1.0}  # covered: only the direction is wrong

    focus = extractive_support(ON, [cite], [src], Flat()).check("focus")  # type: ignore[arg-type]
    assert focus.passed is False and "ausschalten" in focus.why


def test_the_scorer_prefers_the_asked_direction() -> None:
    # The real scoring code with every term weighing 1 and no embedder (dense part 0): the two
    # rows differ only in their direction word, the reverse row comes first in the table.
    scorer = SentenceScorer.__new__(SentenceScorer)
    scorer.terms = type("Terms", (), {"idf": staticmethod(lambda term: 1.0)})()  # type: ignore[assignment]
    scorer.embed_queries = scorer.embed_passages = None
    scorer.cache = None
    rows = "`#96*4*` – Callmonitor ausschalten.\n\n`#96*5*` – Callmonitor einschalten."
    best = scorer.score("How do I switch on the Callmonitor?", candidate_sentences([_source(rows)]))[0]
    assert "einschalten" in best.text
