"""Opposite actions: "switch on" is not answered by the line that switches off.

A how-to page often lists an action next to its reverse: "#96*5* – Callmonitor einschalten"
above "#96*4* – Callmonitor ausschalten", "enable the adapter" beside "disable it". The
reverse shares every other word of the question (and, across languages, sits just as close
to it for an embedder), so neither term coverage nor dense similarity tells them apart. The
words that say which way the action goes do, in English and German alike.

A text answers against the question's direction when it holds a word of the opposite
direction and none of the asked one; a text that holds both ("disable X, then enable Y")
is left to the other checks.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Each pair: one direction's pattern, then its reverse's. English and German forms in one
# pattern, so a German source is judged for an English question and the other way round.
# German separable verbs are matched in their joined forms only ("einschalten",
# "eingeschaltet"), not "schaltet … ein": a miss there only leaves the text to the other checks.
_PAIRS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(forward, re.IGNORECASE), re.compile(reverse, re.IGNORECASE))
    for forward, reverse in (
        (  # on / off
            r"\b(?:switch(?:es|ed|ing)?|turn(?:s|ed|ing)?)\s+(?:\w+\s+){0,3}?on\b|\b(?:ein|an)(?:zu)?schalt\w*|"
            r"\b(?:ein|an)geschaltet\b",
            r"\b(?:switch(?:es|ed|ing)?|turn(?:s|ed|ing)?)\s+(?:\w+\s+){0,3}?off\b|\b(?:aus|ab)(?:zu)?schalt\w*|"
            r"\b(?:aus|ab)geschaltet\b"),
        (  # enable / disable
            r"\benabl\w*|\bactivat\w*|\baktivier\w*|\bfreischalt\w*",
            r"\bdisabl\w*|\bdeactivat\w*|\bdeaktivier\w*"),
        (  # install / uninstall
            r"\binstall\w*",
            r"\buninstall\w*|\bdeinstall\w*"),
    ))


@lru_cache(maxsize=256)
def _asked(question: str) -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]:
    """(asked direction, its reverse) for each pair the question takes one side of; the
    scorer asks this for every candidate sentence of one question."""
    out = []
    for forward, reverse in _PAIRS:
        for asked, other in ((forward, reverse), (reverse, forward)):
            if asked.search(question) and not other.search(question):
                out.append((asked, other))
    return tuple(out)


def opposite_action(question: str, text: str) -> str | None:
    """The word of ``text`` that goes against the question's action ("ausschalten" for
    "How do I switch on …"), or None when there is no such reversal."""
    for asked, other in _asked(question):
        found = other.search(text)
        if found and not asked.search(text):
            return found.group(0)
    return None
