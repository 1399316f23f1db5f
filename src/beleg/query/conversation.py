"""Follow-up questions in a conversation, resolved offline.

"And in 2.4?" or "How large may it be at most?" cannot be searched alone. Without an LLM
we do what can be done honestly: when a question is a follow-up (:func:`follow_up`), the
retrieval query becomes the previous question plus this one, and the version an earlier
question named is carried over (:func:`beleg.query.versions.asked_versions`). A question
that names its own subject ("What does KB-1042 mean?", "Wie groß darf eine Datei höchstens
sein?") is not a follow-up: it is searched and answered as if asked alone, so an earlier
"in Kestrel 1.2" does not hold it to an old version. Only *questions* from the conversation
are used, never earlier answers, so no claim from the conversation is taken as a fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from beleg.index.analyzer import STOPWORDS, analyze, detect_language

# "What about the Team plan?", "Und was ist mit 2.4?": elliptic by construction, whatever follows.
_ELLIPSIS = re.compile(r"^\s*(?:(?:and|und|but|aber)\s+)?(?:what about|how about|what of|was ist mit|"
                       r"wie ist es mit|wie sieht es mit|wie steht es mit)\b", re.IGNORECASE)
_OPENERS = re.compile(r"^\s*(and|und|also|then|dann|but|aber|or|oder)\b", re.IGNORECASE)
# Pronouns that always point back ("delete them", "the smallest one", "wie prüfe ich dann ...").
_STRONG = re.compile(r"\b(?:they|them|their|theirs|its|ihn|ihm|dort|dann|then|dabei|dafür|damit|davon|dazu|"
                     r"darauf|daran|darin|darüber)\b|\b(?:the|which|that|this|each)\s+(?:\w+\s+)?ones?\b|"
                     r"\b(?:from|with|into|in|to|for|on|about|of|by|at)\s+it\b|\b(?:it|es)\s*[?.!]*\s*$|"
                     r"(?-i:\b(?:er|sie|ihnen)\b)", re.IGNORECASE)  # capitalised "Sie", "Ihnen": the polite "you"
# Elsewhere "it"/"es"/"there" may be expletive ("Is it possible to ...", "Gibt es ...", "Is there
# a limit on ..."): then they count only when the rest of the question names no subject of its own.
_DEMONSTRATIVES = {"this", "that", "these", "those", "das", "dies", "diese", "dieser", "dieses", "diesen", "diesem"}
# Words that ask for a value but name no subject ("How long?", "What's the default?", "Was kostet ...").
_RELATIONAL = {"long", "large", "big", "small", "many", "much", "often", "default", "maximum", "minimum", "max",
               "min", "most", "least", "cost", "costs", "price", "mean", "means", "work", "works", "happen",
               "happens", "allowed", "possible", "supported", "lange", "groß", "gross", "klein", "viel", "viele",
               "oft", "höchstens", "mindestens", "maximal", "kostet", "kosten", "bedeutet", "heißt", "geht",
               "funktioniert", "passiert", "erlaubt", "möglich", "darf", "sein"}
# Said to the assistant or framing a version, not a subject.
_FILLER = {"me", "my", "mine", "mir", "mich", "mein", "meine", "meinen", "please", "bitte", "version", "versions",
           "versionen", "release", "releases", "also", "too", "still", "auch", "noch", "oder", "or"}
_STOP = STOPWORDS["en"] | STOPWORDS["de"] | _FILLER | _DEMONSTRATIVES | {"it", "es", "there", "sie", "ones", "one"}
#: A question of this many content words, none of them the previous question's, names its own subject.
_OWN_SUBJECT_WORDS = 3


@dataclass(frozen=True, slots=True)
class FollowUp:
    """Whether a question leans on the conversation, why, and on which earlier questions."""

    follow_up: bool
    reason: str
    #: The earlier questions it leans on (oldest first): the previous question and the
    #: follow-ups before it, back to the last question that stood alone; empty when it stands alone.
    context: tuple[str, ...] = ()
    #: The question judged: a judgement passed on as ``context`` (see :func:`judged`) is for this question only.
    question: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"follow_up": self.follow_up, "reason": self.reason, "leans_on": list(self.context)}


def follow_up(question: str, context: Sequence[str]) -> FollowUp:
    """Whether ``question`` is a follow-up of the conversation's earlier questions ``context``.

    A follow-up is elliptic or refers back: "And in 2.0?", "What about the Team plan?",
    "How do I change it?", "Was kostet das?", "and the default?". A question that names its
    own identifier ("What does KB-1042 mean?") or several content words none of which the
    previous question used stands alone, even if it opens with "and" or has an expletive
    "it"/"es" ("Is it possible to encrypt snapshots?").
    """
    if not context:
        return FollowUp(False, "no earlier question", question=question)
    leans, reason = _judge(question, context[-1])
    if not leans:
        return FollowUp(False, reason, question=question)
    # Earlier follow-ups lean on their own predecessors: "And in 2.4?" after "retry window in
    # 3.0?" keeps both; a question before the last one that stood alone is not part of it.
    start = len(context) - 1
    while start > 0 and _judge(context[start], context[start - 1])[0]:
        start -= 1
    return FollowUp(True, reason, tuple(context[start:]), question)


#: What the steps of an answer take as its conversation: the earlier questions (oldest first),
#: or the :class:`FollowUp` judgement of the question against them, made once at the start.
Conversation: TypeAlias = Sequence[str] | FollowUp


def judged(question: str, context: Conversation) -> FollowUp:
    """``question`` judged against the earlier questions ``context`` (:func:`follow_up`), or
    ``context`` itself when it is that judgement already: one answer passes the judgement made
    at its start to its self-query, version target, search query and strategy, so a question
    is judged once, not by each of them.

    Raises:
        ValueError: ``context`` is the judgement of another question.
    """
    if not isinstance(context, FollowUp):
        return follow_up(question, context)
    if context.question != question:
        raise ValueError(f"the follow-up judgement passed is of {context.question!r}, not of {question!r}; "
                         "pass the earlier questions instead")
    return context


def earlier_questions(context: Conversation) -> Sequence[str]:
    """The earlier questions ``context`` holds: all of them, or those a judgement found the question leans on."""
    return context.context if isinstance(context, FollowUp) else context


def _judge(question: str, previous: str) -> tuple[bool, str]:
    from beleg.answer.anchors import question_anchors
    from beleg.query.intent import without_pleasantries

    question = without_pleasantries(question) or question
    if m := _ELLIPSIS.match(question):
        return True, f"asks '{m.group(0).strip()} …' of the previous question"
    language = detect_language(question)
    folded_previous = previous.casefold()
    anchors = [a.text for a in question_anchors(question, language) if a.kind in ("identifier", "acronym")]
    new_anchors = [a for a in anchors if a.casefold() not in folded_previous]
    rest = question
    for a in anchors:
        rest = rest.replace(a, " ")
    words = [w for w in re.findall(r"[^\W\d_]+", rest) if len(w) > 1 and w.casefold() not in _STOP]
    subject = [w for w in words if w.casefold() not in _RELATIONAL]
    opener = _OPENERS.match(question)
    if new_anchors and (words or not opener):
        return False, f"names its own identifier {', '.join(new_anchors)}"
    if not subject and not new_anchors:
        return True, "no subject of its own" + (f" (only: {', '.join(words)})" if words else "")
    if m := _STRONG.search(question):
        return True, f"refers back with '{m.group(0)}'"
    shared = _stems(" ".join(words)) & _stems(previous)
    if len(words) >= _OWN_SUBJECT_WORDS and not shared:
        return False, f"names its own subject ({', '.join(words)}), no word of the previous question"
    if opener:
        return True, f"opens with '{opener.group(1)}'"
    if pointer := _weak_reference(question, language):
        return True, f"refers back with '{pointer}'"
    return False, "names its own subject" + (f" ({', '.join(subject)})" if subject else "")


def _weak_reference(question: str, language: str) -> str | None:
    """'it'/'es'/'there' or a demonstrative used as a pronoun ("change that?", "Was kostet das?")."""
    tokens = re.findall(r"[^\W_]+|[?.!,;:]", question)
    for i, token in enumerate(tokens):
        low = token.casefold()
        after = tokens[i + 1] if i + 1 < len(tokens) else "?"
        if low in ("it", "es", "there"):
            return token
        # "this error", "diese Datei": a determiner before its noun is no reference.
        if low in _DEMONSTRATIVES and (not after[0].isalnum() or after.casefold() in _STOP
                                       or (after[0].islower() and language == "de")):
            return token
    return None


def _stems(text: str) -> set[str]:
    return {t for t in analyze(text, detect_language(text)) if not any(c.isdigit() for c in t)}


def retrieval_query(question: str, context: Conversation) -> str:
    """The text to search with: the question, preceded by the last earlier question when it is
    a follow-up. A greeting that opens it and "please"/"bitte" are left out: they are said to
    the assistant, and searched they find the sentences that say "please", not the topic."""
    from beleg.query.intent import without_pleasantries

    conversation = judged(question, context)  # the judgement leaves out pleasantries itself
    question = without_pleasantries(question) or question
    if not conversation.follow_up:
        return question
    return f"{conversation.context[-1]} {question}"
