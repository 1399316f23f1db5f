"""Questions that need no retrieval: exact arithmetic without eval, small talk with a fixed text."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from beleg.query import arithmetic
from beleg.query.arithmetic import format_number, parse_calculation, to_fraction
from beleg.query.intent import CAPABILITIES, is_small_talk, no_retrieval_intent, without_pleasantries


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
    ("What is 1,000 + 1?", "1001"),
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


@pytest.mark.parametrize("question,language", [
    ("Bis morgen", "de"), ("Bis später!", "de"), ("Gute Nacht", "de"), ("Schönen Tag noch!", "de"),
    ("Good night", "en"), ("See you later", "en"), ("Bye for now", "en"), ("Have a nice day!", "en"),
    ("Auf Wiedersehen", "de"), ("Tschüss, bis dann", "de"),
])
def test_farewells_are_small_talk(question: str, language: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and (intent.kind, intent.detail, intent.language) == ("small-talk", "goodbye", language)


def test_questions_with_small_talk_in_them_are_not_small_talk() -> None:
    for question in ("hi, what does E-4012 mean?", "Thanks, and how long are webhooks retried?",
                     "Can you help me with E-4012?", "Bis morgen wird die Wartung dauern?",
                     "Good night mode?", "Was passiert bis morgen?"):
        assert no_retrieval_intent(question) is None, question


# ---------------------------------------------------------------------- small talk without a fixed phrase
GOLD = Path(__file__).resolve().parents[2] / "demo" / "gold.yaml"


@pytest.mark.parametrize("question,kind,language", [
    ("Wie alt bist du?", "about", "de"),
    ("Wie heißt du?", "about", "de"),
    ("Who made you?", "about", "en"),
    ("What's your name?", "about", "en"),
    ("Wie ist dein Name?", "about", "de"),
    ("Wer hat dich gebaut?", "about", "de"),
    ("Hallo, wie geht es Ihnen?", "about", "de"),
    ("Wie geht's dir?", "about", "de"),
    ("Are you a robot?", "about", "en"),
    ("Thanks, that helped.", "thanks", "en"),
    ("Danke, das hat geholfen!", "thanks", "de"),
    ("Super, danke!", "thanks", "de"),
    ("How's it going?", "greeting", "en"),
    ("Wie geht's?", "greeting", "de"),
    ("Hallo, guten Tag!", "greeting", "de"),
    ("Wie spät ist es?", "time", "de"),
    ("Weißt du, wie spät es ist?", "time", "de"),
    ("what time is it", "time", "en"),
    ("What day is it today?", "time", "en"),
    ("Welches Datum haben wir heute?", "time", "de"),
    ("What's the date today?", "time", "en"),
    ("Welcher Tag ist heute?", "time", "de"),
    ("What time is it?", "time", "en"),
    ("How old are you?", "about", "en"),
    ("Are you a bot?", "about", "en"),
    ("Bist du ein Mensch?", "about", "de"),
    ("Are you human?", "about", "en"),
    ("Sind Sie eine KI?", "about", "de"),
    ("Who built you?", "about", "en"),
    ("Bist du müde?", "about", "de"),
    ("How are you?", "about", "en"),
    ("Wer bist du denn?", "about", "de"),
])
def test_a_question_of_empty_words_about_the_assistant_is_small_talk(question: str, kind: str,
                                                                     language: str) -> None:
    intent = no_retrieval_intent(question)
    assert intent is not None and intent.kind == "small-talk", question
    assert (intent.detail, intent.language) == (kind, language)
    assert CAPABILITIES[language] in intent.answer


def test_the_time_is_declined_not_guessed() -> None:
    intent = no_retrieval_intent("Wie spät ist es?")
    assert intent is not None and intent.answer.startswith("Die aktuelle Uhrzeit und das Datum kann ich nicht sagen.")
    intent = no_retrieval_intent("What time is it?")
    assert intent is not None and intent.answer.startswith("I cannot tell the current time or date.")


@pytest.mark.parametrize("question", [
    # "you"/"Sie" with a content word: documentation questions
    "Can you tell me how long webhooks are retried?",
    "How do you rotate a signing secret?",
    "Wie kann ich Sie erreichen?",
    "Was muss ich tun, wenn Sie einen Fehler E-4012 melden?",
    "Können Sie mir sagen, wie groß eine Nachricht sein darf?",
    "Can you help me with E-4012?",
    "Do you support MQTT?",
    # a pronoun that points back at an earlier question in a conversation
    "How do you build it?",
    "Was machst du damit?",
    "Thanks, and what about it?",
    "What is it?",
    "Wie geht das?",
    # lower-case "sie" is "they": "what do they do?"
    "Was machen sie?",
    # a time or date of something the documents may name
    "What is the date of the 3.0 release?",
    "Wie spät ist es in Tokio?",
    "How do I make an old credential stop working?",
])
def test_a_question_with_content_or_a_back_reference_goes_to_retrieval(question: str) -> None:
    assert no_retrieval_intent(question) is None, question


# Found by a red team in realistic support questions (English and German): "you", "Sie",
# "Ihre", "eure" are the company or the service, a first-person request for help or for a
# contact is a support question, and a follow-up with "it"/"es" or a question word after
# thanks needs the conversation. None of them is small talk, whatever their words.
RED_TEAM_NOT_SMALL_TALK = [
    "Who can help me?", "Wer kann mir helfen?", "Who can I ask?", "Wen kann ich fragen?",
    "Where can I ask questions?", "How do I ask for help?", "Wen kann ich um Hilfe fragen?", "Who should I ask?",
    "Hi, where can I ask?", "Hallo, wen kann ich fragen?",
    "What do you need from me?", "Was brauchst du von mir?", "What does your company do?", "Was macht Ihre Firma?",
    "Was macht eure Firma?", "Wo sind Sie?", "Where are you?", "When do you work?", "Wann arbeiten Sie?",
    "Are you there today?", "When are you there today?", "Which languages do you speak?",
    "Welche Sprachen sprechen Sie?", "Do you speak German?", "Sprechen Sie Englisch?",
    "Can I ask questions in German?", "Kann ich auf Deutsch fragen?", "Do you have anything in English?",
    "Which year was it?", "Welches Jahr war es?", "In which year was it?", "What day is it on?",
    "An welchem Tag ist es?", "How is it going to work?", "Thanks, but why?", "Danke, aber warum?",
    "Danke. Und wann?", "Thank you, and how?", "I need help", "Ich brauche Hilfe", "Ich habe eine Frage",
    "I have a question", "Can you tell me more?", "How do you know?", "What do you think?", "Was meinen Sie?",
    "Was denken Sie?", "What would you do?", "Was würdest du tun?",
    # the same shapes, unseen by the red team
    "Can you help me?", "Können Sie mir helfen?", "Kannst du mir mehr sagen?", "Bist du heute da?",
    "What time was it?", "Wie spät ist es dort?", "Who are you working for?", "Was machst du?",
    "Um wie viel Uhr ist es?", "At what time is it?", "Danke, aber wieso?", "Thanks, but whom?",
    "Wie geht es jetzt?", "Wie geht es weiter?",
]


@pytest.mark.parametrize("question", RED_TEAM_NOT_SMALL_TALK)
def test_support_questions_and_follow_ups_are_not_small_talk(question: str) -> None:
    assert no_retrieval_intent(question) is None, question


REPO = Path(__file__).resolve().parents[2]


def test_no_realdocs_gold_question_is_answered_by_rule() -> None:
    files = sorted((REPO / "benchmarks" / "realdocs").glob("*.gold.yaml")) + [GOLD]
    if len(files) < 2:
        pytest.skip("benchmarks/realdocs is not in this checkout")
    questions = [q["question"] for f in files for q in yaml.safe_load(f.read_text(encoding="utf-8"))["questions"]]
    assert len(questions) > 200
    assert {q: i.detail for q in questions if (i := no_retrieval_intent(q)) is not None} == {}


def test_no_demo_gold_question_is_answered_by_rule() -> None:
    questions = [q["question"] for q in yaml.safe_load(GOLD.read_text(encoding="utf-8"))["questions"]]
    assert len(questions) > 90
    caught = {q: no_retrieval_intent(q) for q in questions}
    assert {q: i for q, i in caught.items() if i is not None} == {}


@pytest.mark.parametrize("question,left", [
    ("Hello, how long is the retry window?", "how long is the retry window?"),
    ("Hi there, how long is the retry window, please?", "how long is the retry window?"),
    ("Hello how long is it?", "how long is it?"),
    ("Guten Tag, wie lange werden Webhooks wiederholt?", "wie lange werden Webhooks wiederholt?"),
    ("Können Sie mir bitte sagen, wie groß eine Nachricht sein darf?",
     "Können Sie mir sagen, wie groß eine Nachricht sein darf?"),
    # a greeting word that is the topic stays
    ("hello endpoint: what does it return?", "hello endpoint: what does it return?"),
    ("Hi-Fi mode?", "Hi-Fi mode?"),
])
def test_pleasantries_are_taken_off_the_question(question: str, left: str) -> None:
    assert without_pleasantries(question) == left
