"""Questions that need no retrieval: exact arithmetic without eval, small talk with a fixed text."""

from __future__ import annotations

from fractions import Fraction

import pytest

from beleg.query import arithmetic
from beleg.query.arithmetic import format_number, parse_calculation, to_fraction
from beleg.query.intent import CAPABILITIES, is_small_talk, no_retrieval_intent


@pytest.mark.parametrize("question,result", [
    ("What is 12 multiplied by 8?", "96"),
    ("Was ist 7 mal 6?", "42"),
    ("12*8", "96"),
    ("what's 15% of 200", "30"),
    ("What is 20 percent of 50?", "10"),
    ("Wie viel sind 15 Prozent von 80?", "12"),
    ("What is 0.1 + 0.2?", "0.3"),
    ("How much is 100 divided by 8?", "12.5"),
    ("Berechne 12 geteilt durch 4", "3"),
    ("Wie viel ist 3 hoch 4?", "81"),
    ("2^10", "1024"),
    ("2 ** 3 ** 2", "512"),  # right-associative
    ("-2^2", "-4"),
    ("What is (3 + 4) × 2?", "14"),
    ("3 + 4 * 2", "11"),
    ("What is 3 - -2?", "5"),
    ("2,5 mal 4", "10"),
    ("1,000 + 1", "1001"),
    ("7 : 2", "3.5"),
    ("What is 5 squared?", "25"),
    ("1/3", "1/3 (≈ 0.333333)"),
    ("12 x 8 =", "96"),
])
def test_arithmetic_is_exact(question: str, result: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.kind == "arithmetic", question
    assert intent.calculation is not None and intent.calculation.result == result
    assert intent.answer.endswith(f"= {result}")


@pytest.mark.parametrize("question", [
    "Who won the 2014 World Cup?",
    "What is E-4012?",
    "What does error E-4012 mean?",
    "What is 2.4?",
    "What is the retry window in 2.4 vs 3.0?",
    "What is 2024-01-15?",
    "What happened on 15.01.2024?",
    "+49 30 1234",
    "What is 12 times?",
    "x 8",
    "12 of 8",
    "What is 99.95% of the month?",
    "How many retries are there in 24 hours?",
    "What is 12 × 8 in the invoice?",
    "import os; 1+1",
    "__import__('os').system('ls')",
    "What does 5 mean?",
    "",
])
def test_not_arithmetic_goes_to_retrieval(question: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is None or intent.kind != "arithmetic", question


def test_no_eval_anywhere() -> None:
    source = open(arithmetic.__file__, encoding="utf-8").read()
    assert "eval(" not in source.replace("evaluate", "") and "exec(" not in source


def test_problems_are_answered_with_the_reason() -> None:
    for question, words in (("10 / 0", "division by zero"), ("2^0.5", "whole-number exponents"),
                            ("9^9^9", "too large")):
        intent = no_retrieval_intent(question)
        assert intent is not None and intent.calculation is not None
        assert intent.calculation.value is None and words in intent.answer
    german = no_retrieval_intent("Was ist 10 geteilt durch 0?")
    assert german is not None and "Division durch null" in german.answer


def test_long_inputs_are_not_calculated() -> None:
    assert parse_calculation("1+" * 200 + "1") is None


def test_number_formats() -> None:
    assert to_fraction("2,5") == Fraction(5, 2)
    assert to_fraction("1.234,5") == Fraction(2469, 2)
    assert to_fraction("1,234.5") == Fraction(2469, 2)
    assert to_fraction("1.000.000") == 1000000
    assert format_number(Fraction(-5, 2)) == "-2.5"
    assert format_number(Fraction(1, 8)) == "0.125"
    assert format_number(Fraction(1, 1000)) == "0.001"


@pytest.mark.parametrize("question,kind,language", [
    ("hi", "greeting", "en"),
    ("Hallo!", "greeting", "de"),
    ("Good morning, Beleg!", "greeting", "en"),
    ("danke", "thanks", "de"),
    ("thank you so much", "thanks", "en"),
    ("What can you do?", "about", "en"),
    ("was kannst du?", "about", "de"),
    ("wer bist du", "about", "de"),
    ("Who are you?", "about", "en"),
    ("bye", "goodbye", "en"),
])
def test_small_talk_gets_the_capability_text(question: str, kind: str, language: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.kind == "small-talk"
    assert (intent.detail, intent.language) == (kind, language)
    assert CAPABILITIES[language] in intent.answer and is_small_talk(question)


def test_questions_with_small_talk_in_them_are_not_small_talk() -> None:
    for question in ("hi, what does E-4012 mean?", "Thanks, and how long are webhooks retried?",
                     "Can you help me with E-4012?"):
        assert no_retrieval_intent(question) is None, question
