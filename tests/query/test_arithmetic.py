"""Arithmetic by rule: modulo, bracketed numbers, thousands separators by language, number
words, and one minus sign (red-team findings F10, F11, F12, F18)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from beleg.query.arithmetic import (
    AMBIGUOUS,
    PERCENT_TERM,
    ArithmeticProblem,
    parse_calculation,
    to_fraction,
    words_value,
)
from beleg.query.intent import no_retrieval_intent


def _answer(question: str) -> str:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.kind == "arithmetic", question
    return intent.answer


@pytest.mark.parametrize("question,answer", [
    ("what is 10 % 3", "10 mod 3 = 1"),
    ("12 mod 5", "12 mod 5 = 2"),
    ("What is 12 modulo 5?", "12 mod 5 = 2"),
    ("Was ist 17 modulo (2 + 3)?", "17 mod (2 + 3) = 2"),
    ("what's 15% of 200", "15% of 200 = 30"),  # percent, not a remainder
    ("What is 50% + 10?", "50% + 10 = 10.5"),
    ("(((1)))", "(((1))) = 1"),
    ("What is (7)?", "(7) = 7"),
])
def test_a_percent_sign_between_numbers_is_the_remainder_and_brackets_make_an_expression(question: str,
                                                                                       answer: str) -> None:
    assert _answer(question) == answer


def test_a_remainder_by_zero_has_no_value() -> None:
    assert _answer("10 % 0") == "10 mod 0 cannot be computed: division by zero has no value."


@pytest.mark.parametrize("question,answer", [
    ("Was ist 1.000 + 1?", "1.000 + 1 = 1001"),
    ("Was ist 2.500 mal 2?", "2.500 × 2 = 5000"),
    ("Was ist 1.000.000 + 1?", "1.000.000 + 1 = 1000001"),
    ("Was ist 1,5 + 1?", "1,5 + 1 = 2,5"),
    ("Was ist 1,000 + 1?", "1,000 + 1 = 2"),  # a German decimal comma
    ("Was ist 9 durch 8?", "9 ÷ 8 = 1,125"),  # not "1.125", which a German reader takes for 1125
    ("What is 1,000 + 1?", "1,000 + 1 = 1001"),
    ("What is 2,500 times 2?", "2,500 × 2 = 5000"),
    ("What is 1.000 + 1?", "1.000 + 1 = 2"),
    ("What is 9 divided by 8?", "9 ÷ 8 = 1.125"),
])
def test_a_separator_before_three_digits_is_read_in_the_questions_language(question: str, answer: str) -> None:
    assert _answer(question) == answer


@pytest.mark.parametrize("question", ["1.000 + 1", "1,000 + 1", "2.500 × 2", "(1,500)"])
def test_without_a_language_such_a_number_is_not_guessed(question: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.calculation is not None
    assert intent.calculation.value is None and intent.calculation.problem == AMBIGUOUS
    assert "cannot be computed" in intent.answer


def test_the_result_in_json_keeps_the_decimal_point() -> None:
    intent = no_retrieval_intent("Was ist 9 durch 8?")
    assert intent is not None and intent.to_json()["result"] == "1.125"


def test_number_formats_by_language() -> None:
    assert to_fraction("1.000", "de") == 1000 and to_fraction("1.000", "en") == 1
    assert to_fraction("1,000", "en") == 1000 and to_fraction("1,000", "de") == 1
    assert to_fraction("0,125") == Fraction(1, 8)  # a leading zero is never a thousands group
    assert to_fraction("1234.567") == Fraction(1234567, 1000)
    with pytest.raises(ArithmeticProblem):
        to_fraction("1.000")
    assert parse_calculation("1.2.3 + 1", "en") is None  # a version, not a number


@pytest.mark.parametrize("question,answer", [
    ("what is seven plus five", "7 + 5 = 12"),
    ("Was ist sieben mal acht?", "7 × 8 = 56"),
    ("Was ergibt drei plus vier?", "3 + 4 = 7"),
    ("Wie viel ist zwölf geteilt durch vier?", "12 ÷ 4 = 3"),
    ("what is half of 10?", "½ of 10 = 5"),
    ("Was ist die Hälfte von 10?", "½ of 10 = 5"),
    ("What is a third of 9?", "⅓ of 9 = 3"),
    ("What is twenty-one times two?", "21 × 2 = 42"),
    ("What is one hundred and five minus five?", "105 - 5 = 100"),
    ("What is two thousand five hundred divided by 5?", "2500 ÷ 5 = 500"),
    ("Was ist einundzwanzig plus zweihundertdreißig?", "21 + 230 = 251"),
    ("Was ist dreitausendfünfhundert plus eins?", "3500 + 1 = 3501"),
    ("what is negative five squared", "(-5)² = 25"),
    ("what is minus five squared", "-5² = -25"),
])
def test_arithmetic_in_words(question: str, answer: str) -> None:
    assert _answer(question) == answer


@pytest.mark.parametrize("question", [
    "How many of the seven steps are optional?",
    "Die Einrichtung besteht aus sieben Schritten",
    "Wie viele der sieben Schritte sind optional?",
    "What is seven?",
    "What is one plus?",
    "What is five five plus one?",
    "What is half of the retry window?",
    "Was ist ein Drittel der Nachrichten?",
    "What is the one thing I must configure?",
])
def test_number_words_in_a_documentation_question_are_no_arithmetic(question: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is None or intent.kind != "arithmetic", question


def test_number_words_written_apart() -> None:
    assert words_value(["twenty", "one"]) == 21
    assert words_value(["one", "hundred", "five"]) == 105
    assert words_value(["zwei", "tausend"]) == 2000
    assert words_value(["five", "five"]) is None and words_value(["ten", "five"]) is None


@pytest.mark.parametrize("question,answer", [
    ("what is -5 squared", "-5² = -25"),  # "-5²" is -(5²) by convention
    ("what is (-5) squared", "(-5)² = 25"),
    ("What is 3 - -2?", "3 - -2 = 5"),
    ("What is 2 − 7?", "2 - 7 = -5"),
])
def test_one_minus_sign_in_the_expression_and_the_result(question: str, answer: str) -> None:
    text = _answer(question)
    assert text == answer and "−" not in text


# ---------------------------------------------------------------------- red team, round 2
@pytest.mark.parametrize("question", [
    "What is 0x80070005?", "What is 0x10?", "Was ist 0x80004005?", "What is 0x0?", "What is 0x5 + 1?",
    "Was ist 2 x 0x10?", "What is 0b1010?", "What is 0o755 + 1?",
])
def test_a_hex_binary_or_octal_literal_is_no_multiplication(question: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is None or intent.kind != "arithmetic", question


@pytest.mark.parametrize("question,answer", [
    ("What is 0 x 5 + 1?", "0 × 5 + 1 = 1"),  # spaced, it is a multiplication
    ("What is 4x4?", "4 × 4 = 16"),
])
def test_x_between_numbers_still_multiplies(question: str, answer: str) -> None:
    assert _answer(question) == answer


@pytest.mark.parametrize("words,value", [
    ("tausend Millionen", 10**9),
    ("one thousand million", 10**9),
    ("one hundred thousand million", 10**11),
    ("two thousand five hundred million", 2_500_000_000),
    ("one million one thousand", 1_001_000),
    ("three million two hundred thousand", 3_200_000),
    ("one hundred twenty three thousand", 123_000),
    ("hundert tausend", 100_000),
    ("fifteen hundred", 1500),
    ("thousand thousand", None),
    ("million million", None),
    ("five thousand three thousand", None),
    ("two million three million", None),
    ("thousand hundred", None),
    ("five hundred hundred", None),
])
def test_a_larger_scale_multiplies_everything_before_it(words: str, value: int | None) -> None:
    assert words_value(words.split()) == value


@pytest.mark.parametrize("question,answer", [
    ("Was ist tausend Millionen plus eins?", "1000000000 + 1 = 1000000001"),
    ("What is one thousand million plus 1?", "1000000000 + 1 = 1000000001"),
    ("What is one hundred thousand million plus 0?", "100000000000 + 0 = 100000000000"),
])
def test_scale_words_in_a_calculation(question: str, answer: str) -> None:
    assert _answer(question) == answer


@pytest.mark.parametrize("question", [
    "What is thousand thousand plus 1?", "What is five thousand three thousand plus 0?",
    "What is million million plus 1?",
])
def test_a_run_of_number_words_that_is_no_number_is_no_arithmetic(question: str) -> None:
    assert no_retrieval_intent(question) is None, question


@pytest.mark.parametrize("question", [
    "What is 16:9?", "What is 15:30?", "Was ist 16:9?",  # a ratio, a time
    "What is 2024/01/15?",  # a date
    "What is 0800-123-456?",  # a phone number
    "What is 2020–2024?",  # a range
    "What is 10% 200?",  # a percentage of 200 with "of" left out, not 10 mod 200
])
def test_notations_that_are_not_sums_go_to_retrieval(question: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is None or intent.kind != "arithmetic", question


@pytest.mark.parametrize("question,answer", [
    ("What is 12 : 4?", "12 ÷ 4 = 3"),  # with spaces, a colon divides
    ("What is 2 – 7?", "2 - 7 = -5"),
    ("What is 10%3?", "10 mod 3 = 1"),
    ("What is 200 + 10% of 200?", "200 + 10% of 200 = 220"),
])
def test_the_spaced_or_explicit_forms_still_compute(question: str, answer: str) -> None:
    assert _answer(question) == answer


@pytest.mark.parametrize("question,language", [
    ("What is 200 + 10%?", "en"), ("What is 100 - 10 percent?", "en"), ("Was ist 100 minus 10 Prozent?", "de"),
])
def test_a_percentage_added_to_a_number_is_refused_as_ambiguous(question: str, language: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.calculation is not None and intent.calculation.value is None
    assert intent.calculation.problem == PERCENT_TERM and intent.language == language
    assert ("mehrdeutig" if language == "de" else "ambiguous") in intent.answer
