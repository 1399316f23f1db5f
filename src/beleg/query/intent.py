"""Questions that need no retrieval, recognised by rule and answered without sources.

* **arithmetic**: the whole question is a calculation ("What is 12 multiplied by 8?",
  "Was ist 7 mal 6?", "12*8", "what's 15% of 200"), computed exactly by
  :mod:`beleg.query.arithmetic` (no ``eval``);
* **small talk**: greetings, thanks, goodbyes and questions about the assistant itself
  ("hi", "danke", "what can you do?", "wer bist du"), answered with a fixed short text in
  English or German that says what Beleg does: never with a quote from some document.

Everything else, including off-topic general-knowledge questions ("Who won the 2014
World Cup?"), goes to retrieval, which finds sources or refuses. The rules are anchored to
the whole question, so "hi, what does E-4012 mean?" or "What is 12 × 8 in the invoice?"
are not intercepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from beleg.query.arithmetic import Calculation, parse_calculation

_GREETING = (r"hi|hello|hey|hallo|moin|servus|grüß gott|gruess gott|guten (?:morgen|tag|abend)|"
             r"good (?:morning|afternoon|evening)|ok(?:ay)?")
_THANKS = r"danke(?: schön| sehr)?|vielen dank|dankeschön|thanks?(?: you)?(?: (?:so|very) much)?|thx|cheers"
_BYE = r"bye|goodbye|tschüss|tschüs|ciao|bis bald"
_ABOUT = (r"(?:what|which things?) (?:can|could) you (?:do|help(?: me)? with)|who are you|what are you|"
          r"how can you help(?: me)?|help|hilfe|was kannst du(?: alles)?(?: tun| machen)?|wer bist du|"
          r"was bist du|wie kannst du (?:mir )?helfen")
_ADDRESS = r"(?:[\s,!.]+(?:there|again|everyone|beleg|bot))?"
_SMALL_TALK = re.compile(
    rf"^\W*(?:(?P<greeting>(?:{_GREETING}){_ADDRESS})|(?P<thanks>(?:{_THANKS}){_ADDRESS})|"
    rf"(?P<goodbye>(?:{_BYE}){_ADDRESS})|(?P<about>{_ABOUT}))\W*$",
    re.IGNORECASE,
)
_GERMAN = re.compile(r"\b(?:hallo|moin|servus|grüß|gruess|guten|danke\w*|vielen|tschüs+|bis bald|hilfe|"
                     r"kannst|wer|bist|wie)\b", re.IGNORECASE)

CAPABILITIES = {
    "en": ("I answer questions from the documents in this index: each answer quotes its sources, the "
           "citations are checked against the documents, and I say so when the sources do not answer. "
           "Ask me, for example, what an error code means or how a feature works in a given version."),
    "de": ("Ich beantworte Fragen aus den Dokumenten dieses Index: Jede Antwort zitiert ihre Quellen, die "
           "Zitate werden gegen die Dokumente geprüft, und ich sage es, wenn die Quellen die Frage nicht "
           "beantworten. Fragen Sie zum Beispiel, was ein Fehlercode bedeutet oder wie eine Funktion in "
           "einer bestimmten Version arbeitet."),
}
_OPENERS = {
    "en": {"greeting": "Hello.", "thanks": "You're welcome.", "goodbye": "Goodbye.", "about": "I am Beleg."},
    "de": {"greeting": "Hallo.", "thanks": "Gern geschehen.", "goodbye": "Auf Wiedersehen.", "about": "Ich bin Beleg."},
}


_PROBLEMS_DE = {
    "division by zero has no value": "eine Division durch null hat keinen Wert",
    "only whole-number exponents are computed exactly": "nur ganzzahlige Exponenten werden exakt berechnet",
    "the result is too large to compute here": "das Ergebnis ist zu groß",
}


@dataclass(frozen=True, slots=True)
class Intent:
    """A question answered without retrieval: ``kind`` is ``"arithmetic"`` or ``"small-talk"``."""

    kind: str
    answer: str
    #: small talk: greeting, thanks, goodbye or about; arithmetic: the operation read.
    detail: str = ""
    language: str = "en"
    calculation: Calculation | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "detail": self.detail, "language": self.language}
        if self.calculation is not None:
            out.update(expression=self.calculation.expression, result=self.calculation.result or None,
                       problem=self.calculation.problem)
        return out


def small_talk_kind(question: str) -> str | None:
    """``"greeting"``, ``"thanks"``, ``"goodbye"`` or ``"about"`` when the whole question is small talk."""
    m = _SMALL_TALK.match(question.strip())
    if m is None:
        return None
    return next(kind for kind, text in m.groupdict().items() if text)


def is_small_talk(question: str) -> bool:
    """Greetings, thanks, goodbyes and questions about the assistant itself."""
    return small_talk_kind(question) is not None


def no_retrieval_intent(question: str) -> Intent | None:
    """The answer to a question that needs no retrieval, or None (then retrieval decides)."""
    kind = small_talk_kind(question)
    if kind is not None:
        language = "de" if _GERMAN.search(question) else "en"
        text = f"{_OPENERS[language][kind]} {CAPABILITIES[language]}".strip()
        return Intent("small-talk", text, kind, language)
    calc = parse_calculation(question)
    if calc is None:
        return None
    language = "de" if re.search(r"\b(?:was|wie|mal|geteilt|durch|hoch|berechne|rechne|prozent|von)\b", question,
                                 re.IGNORECASE) else "en"
    if calc.value is None:
        problem = calc.problem or ""
        if language == "de":
            text = f"{calc.expression} lässt sich nicht berechnen: {_PROBLEMS_DE.get(problem, problem)}."
        else:
            text = f"{calc.expression} cannot be computed: {problem}."
        return Intent("arithmetic", text, "problem", language, calc)
    return Intent("arithmetic", f"{calc.expression} = {calc.result}", "calculation", language, calc)


__all__ = ["CAPABILITIES", "Intent", "is_small_talk", "no_retrieval_intent", "small_talk_kind"]
