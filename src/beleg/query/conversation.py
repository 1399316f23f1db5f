"""Follow-up questions in a conversation, resolved offline.

"And in 2.4?" or "How large may it be at most?" cannot be searched alone. Without an LLM
we do what can be done honestly: when a question looks like a follow-up (short, opens
with "and"/"und", or leans on a pronoun), the retrieval query becomes the previous
question plus this one. Only *questions* from the conversation are used, never earlier
answers, so no claim from the conversation is taken as a fact. The version asked about
is carried over by :func:`beleg.answer.evidence.find_target`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_OPENERS = re.compile(r"^\s*(?:and|und|also|what about|how about|und was ist mit|was ist mit|und wie|and how|and what|"
                      r"then|dann|but|aber)\b", re.IGNORECASE)
_PRONOUNS = re.compile(r"\b(?:it|its|this|that|these|those|they|them|there|es|sie|das|dies|diese|dieser|dieses|"
                       r"dann|dort|ihn|ihm|ihr|dafür|damit|davon|dazu)\b", re.IGNORECASE)
_SHORT_WORDS = 4


def looks_follow_up(question: str) -> bool:
    words = question.split()
    return bool(_OPENERS.match(question)) or len(words) <= _SHORT_WORDS or bool(_PRONOUNS.search(question))


def retrieval_query(question: str, context: Sequence[str]) -> str:
    """The text to search with: the question, preceded by the last earlier question when it is
    a follow-up. A greeting that opens it and "please"/"bitte" are left out: they are said to
    the assistant, and searched they find the sentences that say "please", not the topic."""
    from beleg.query.intent import without_pleasantries

    question = without_pleasantries(question) or question
    if not context or not looks_follow_up(question):
        return question
    return f"{context[-1]} {question}"
