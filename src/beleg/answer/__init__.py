"""Answers with verified citations: evidence assessment, extractive and LLM answering, verification."""

from beleg.answer.answerer import AnswerOptions, answer_question
from beleg.answer.evidence import GovernancePolicy
from beleg.answer.types import (
           REFUSAL,
           WITHHELD,
           Answer,
           Citation,
           Conflict,
           ConflictValue,
           Source,
)

__all__ = [
           "REFUSAL",
           "WITHHELD",
           "Answer",
           "AnswerOptions",
           "Citation",
           "Conflict",
           "ConflictValue",
           "GovernancePolicy",
           "Source",
           "answer_question",
]
