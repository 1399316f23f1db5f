"""Questions that need no retrieval, recognised by rule and answered without sources.

* **arithmetic**: the whole question is a calculation ("What is 12 multiplied by 8?",
  "Was ist 7 mal 6?", "12*8", "what's 15% of 200"), computed exactly by
  :mod:`beleg.query.arithmetic` (no ``eval``);
* **small talk**: greetings, thanks, goodbyes and questions about the assistant itself
  ("hi", "danke", "what can you do?", "wer bist du"), answered with a fixed short text in
  English or German that says what Beleg does: never with a quote from some document.
  Beyond the fixed phrases, a question counts as small talk when every word is one no
  document could answer and it asks about the assistant's own nature ("Wie alt bist du?",
  "Who made you?", "Are you a bot?"), thanks without asking on ("Thanks, that helped"),
  greets, or asks for the present time or date ("Wie spät ist es?", declined: the index
  cannot know). "You" or "Sie" alone is not enough: it is as often the company or service
  ("Wo sind Sie?", "Which languages do you speak?"), and requests for help ("Who can help
  me?", "Can you help me?") and follow-ups ("Can you tell me more?", "Which year was it?")
  go to retrieval.

Everything else, including off-topic general-knowledge questions ("Who won the 2014
World Cup?"), goes to retrieval, which finds sources or refuses. The rules are anchored to
the whole question, so "hi, what does E-4012 mean?" or "What is 12 × 8 in the invoice?"
are not intercepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from beleg.query.arithmetic import PERCENT_TERM, Calculation, format_number, parse_calculation, word_language

_GREETING = (r"hi|hello|hey|hallo|moin|servus|grüß gott|gruess gott|guten (?:morgen|tag|abend)|"
             r"good (?:morning|afternoon|evening)|ok(?:ay)?")
_THANKS = r"danke(?: schön| sehr)?|vielen dank|dankeschön|thanks?(?: you)?(?: (?:so|very) much)?|thx|cheers"
# Farewells, by fixed phrase only: their words ("morgen", "night", "later") may be a topic
# elsewhere, so the whole question must be the phrase.
_BYE = (r"(?:good)?bye(?: for now)?|bye[- ]bye|tschüss|tschüs|ciao|adieu|farewell|take care|"
        r"bis (?:bald|morgen|später|spaeter|dann|nachher|gleich|zum nächsten mal)|auf wiedersehen|"
        r"gute nacht|good ?night|nighty? night|see (?:you|ya)(?: (?:later|soon|tomorrow|around))?|"
        r"(?:have a )?(?:nice|good|great) (?:day|evening|weekend)|"
        r"(?:einen )?schönen (?:tag|abend|feierabend|sonntag|wochenende)(?: noch)?")
_ABOUT = (r"(?:what|which things?) (?:can|could) you (?:do|help(?: me)? with)|who are you|what are you|"
          r"how can you help(?: me)?|help|hilfe|was kannst du(?: alles)?(?: tun| machen)?|wer bist du|"
          r"was bist du|wie kannst du (?:mir )?helfen")
_ADDRESS = r"(?:[\s,!.]+(?:there|again|everyone|beleg|bot))?"
_SMALL_TALK = re.compile(
    rf"^\W*(?:(?P<greeting>(?:{_GREETING}){_ADDRESS})|(?P<thanks>(?:{_THANKS}){_ADDRESS})|"
    rf"(?P<goodbye>(?:{_BYE})(?:[\s,!.]+(?:{_BYE}))*{_ADDRESS})|(?P<about>{_ABOUT}))\W*$",
    re.IGNORECASE,
)

# Words that say nothing a document could answer, by language: question words, auxiliaries,
# pronouns, articles, particles, greetings and politeness. Any word outside these lists
# (or any number) is taken as content, so a question keeps going to retrieval unless every
# word is known to be empty; an unknown word errs towards retrieval, never towards a rule.
_FUNCTION = {
    "en": set("""a an the and or but so to of for with about from in on at by as than then just really actually
        also too still again even ever anything something everything nothing any some all not no yes very much many
        more well here now today right what which who whom whose where when why how whats am is are was were be been
        being do does did doing done have has had can could will would shall should may might must need needs s re ve ll
        d m t don doesn didn isn aren cannot couldn won wouldn shouldn i me my mine myself we us our please pls plz
        kindly thanks thank thx cheers hi hello hey hiya yo greetings good morning afternoon evening dear there
        everyone all folks guys ok okay beleg bot""".split()),
    "de": set("""der die das den dem des ein eine einen einem einer eines und oder aber also so zu von für mit über
        um an auf in im am bei nach aus denn eigentlich mal doch ja nein noch schon auch nur gerade etwa etwas was
        irgendwas alles nichts sehr viel gern gerne jetzt heute hier da dort wer wen wem wessen welche welcher welches
        welchen welchem wo woher wann warum wieso weshalb wie bin bist ist sind seid sein war warst waren habe hab
        hast hat haben habt hatte kann kannst können könnt könntest könnte könnten will willst möchte möchtest mag
        magst darf darfst dürfen soll sollst sollte solltest muss musst wird wirst würde würdest tu tust tut tun
        brauche brauchst braucht bräuchte
        mache machst macht machen ich mich mir mein meine meinen meinem meiner wir uns man bitte danke dank
        dankeschön vielen hallo moin servus grüß gruß gott guten gute morgen abend zusammen leute liebe lieber
        ok okay beleg bot""".split()),
}
# What a question asks about the assistant's own nature: its name, age, maker, being a
# bot or a human, its mood. A second-person word alone does not make a question small
# talk: "you", "your", "Sie" and "Ihr" are just as often the company or the service
# behind the documents ("What does your company do?", "Wo sind Sie?", "When do you
# work?", "Which languages do you speak?"), so outside the fixed phrases one of these
# words must be there too. Words of asking, helping, doing, needing, speaking, working,
# knowing, thinking, telling are deliberately not in it: with them a question is a support
# question ("Who can help me?", "Können Sie mir helfen?") or a follow-up ("Can you tell me
# more?", "How do you know?", "What do you think?"), and retrieval answers or refuses those.
_NATURE = {
    "en": set("""name named called old age made built created developed programmed trained invented bot robot
        chatbot ai artificial intelligence human real alive machine feel feeling tired""".split()),
    "de": set("""heißt heißen heisst heissen name namen alt alter gebaut gemacht entwickelt erstellt programmiert
        trainiert erschaffen erfunden bot roboter chatbot ki künstliche intelligenz mensch echt maschine müde
        fühlst fühlen""".split()),
}
# "How are you?", "Wie geht's dir?", "Wie geht es Ihnen?": asking after the assistant's mood.
_HOW_ARE_YOU = re.compile(r"\b(?:how (?:are|r) (?:you|u)(?: doing)?|how have you been|"
                          r"wie geht(?: s| es)? (?:dir|you|euch)(?: gut)?|geht (?:s|es) (?:dir|you) gut)\b")
# Informal singular address ("du", "dich", "dir", "dein"): a user says "du" to the assistant,
# hardly to a company, so with it a question of empty words is small talk ("Wer bist du
# denn?") unless it asks the assistant to do, need or be somewhere ("Was brauchst du von
# mir?", "Was würdest du tun?", "Bist du da?"): those words count as content here.
_DU = set("du dich dir dein deine deinen deinem deiner deines".split())
_DOING = set("""do does did doing done need needs tu tust tut tun mache machst macht machen brauche brauchst braucht
    bräuchte here there hier da dort more mehr""".split())
# Words of talk with or about the assistant, by language: they only help to tell which
# language a question is in (the answer's language), they make nothing small talk.
_PERSONA = {
    "en": set("""name named called call old age made make built build created create developed develop wrote
        written programmed trained invented behind company help helping assist ask asking question questions tell
        say talk chat speak understand know think feel feeling going fine alright like love want real human person
        robot chatbot ai artificial intelligence machine computer program software assistant model llm gpt chatgpt
        language languages english german smart clever stupid bad nice great cool funny live from come work works working job
        purpose thing things able capable sleep favorite favourite color colour hobby friend married""".split()),
    "de": set("""heißt heißen heisst heissen nennen nennt name namen alt alter gebaut gemacht entwickelt erstellt
        programmiert trainiert geschrieben erschaffen erfunden hergestellt firma unternehmen helfen hilfst hilfe
        helfe fragen frage fragst sagen sag sagst erzählen reden sprechen sprichst sprache sprachen deutsch englisch verstehst
        verstehen weißt wissen kennst kennen denkst denken fühlst fühlen geht gehts gut schlecht echt wirklich
        mensch person roboter chatbot ki künstliche intelligenz maschine computer programm software assistent
        modell sprachmodell schlau klug dumm nett toll cool lustig lebst leben wohnst wohnen kommst kommen her
        arbeitest arbeiten funktionierst funktionieren aufgabe zweck job sache sachen dinge lieblingsfarbe hobby
        freund verheiratet""".split()),
}
# Feedback after an answer ("thanks, that helped", "danke, das hat geholfen").
_FEEDBACK = set("""helped helpful great perfect works worked nice awesome excellent lot geholfen hilfreich super
    toll prima perfekt klappt funktioniert passt genau""".split())
_YOU = set("you your yours yourself yourselves ya u du dich dir dein deine deinen deinem deiner deines euch euer eure".split())
# Formal "Sie" and its forms are also "they"/"her": they address the assistant only when
# capitalised inside the sentence ("Was machen Sie?"), except "Ihnen" in "wie geht es Ihnen".
_FORMAL = set("sie ihr ihre ihren ihrem ihrer ihres ihnen".split())
# Pronouns pointing at something said before ("How do you build it?", "Was machst du damit?"):
# in a conversation they carry the earlier question's topic, so such a question is no small talk.
_ANAPHORA = set("""it its this that these those they them their es das dies diese dieser dieses diesem diesen sie
    ihn ihm damit dafür dazu davon dabei darauf daran darüber dadurch darum darin""".split())
_QUESTION_WORDS = set("""what which who whom whose how where when why was wer wen wem wessen wie wo woher wohin wann
    warum wieso weshalb wozu wofür welche welcher welches welchen welchem""".split())
_THANKS_WORDS = set("thanks thank thx cheers danke dank dankeschön".split())
_GREETING_WORDS = set("hi hello hey hiya yo greetings hallo moin servus grüß guten".split())
# "How's it going?", "Wie geht's?" and nothing more: "Wie geht es jetzt?" asks how to go on.
_HOW_GOING = set("how s is it going so and wie geht gehts es und denn".split())
# Time and date: the documents cannot say what time or day it is now ("Wie spät ist es?").
# A clock question may rest on "it"/"es" ("What time is it?"), a date question needs a
# word for now ("What day is it today?", "Welcher Tag ist heute?"): "Which year was it?"
# and "An welchem Tag ist es?" ask about something said before.
_CLOCK_WORDS = set("time clock uhr uhrzeit spät".split())
_DATE_WORDS = set("date day weekday month year datum tag wochentag monat jahr wievielte wievielten".split())
_TIME_WORDS = _CLOCK_WORDS | _DATE_WORDS | {"zeit"}
_NOW = set("today now currently current heute jetzt gerade aktuell wir".split())
_CLOCK_NOW = _NOW | {"it", "es"}
# Past tense or a place: "What time was it?", "Wie spät ist es dort?" ask about something else.
# "Um wie viel Uhr ist es?", "At what time is it?" ask when something happens.
_NOT_NOW = set("was were war waren wäre there dort da at on um an am in".split())
_OPENING = re.compile(
    r"^\W*(?:(?:hello|hi|hey|hallo|moin|servus|grüß gott|good (?:morning|afternoon|evening|day)|"
    r"guten (?:morgen|tag|abend)|dear \w+|thanks?(?: you)?(?: (?:so|very) much)?|many thanks|"
    r"danke(?: schön| sehr)?|vielen dank|please|bitte)(?:\s+(?:there|all|everyone|zusammen|team|beleg))?"
    # followed by punctuation or by the question's first word: "hello endpoint" keeps its "hello"
    r"(?:\s*[,.!:;–]+\s*|\s+(?=(?:how|what|which|who|where|when|why|can|could|is|are|do|does|wie|was|welche\w*|"
    r"wer|wo|wann|warum|kann|kannst|können|gibt|ist|sind)\b)))+", re.IGNORECASE)
_PLEASE = re.compile(r",?\s*\b(?:please|pls|kindly|bitte)\b,?", re.IGNORECASE)
# Set phrases whose words would read as content on their own ("Tag" is also a day).
_SET_PHRASES = re.compile(r"\b(?:guten\s+tag|good\s+day)\b", re.IGNORECASE)
_EMPTY = _FUNCTION["en"] | _FUNCTION["de"]
_NATURE_ALL = _NATURE["en"] | _NATURE["de"]
_LANGUAGE_WORDS = {lang: _FUNCTION[lang] | _PERSONA[lang] | _NATURE[lang] for lang in ("en", "de")}
_LANGUAGE_WORDS["de"] |= {w for w in _YOU if w.startswith(("d", "e"))} | _FORMAL | {"spät", "uhr", "uhrzeit", "datum",
                                                                                   "wochentag", "geholfen", "tschüss", "tschüs",
                                                                                   "bis", "bald"}
_LANGUAGE_WORDS["en"] |= {w for w in _YOU if not w.startswith(("d", "e"))} | {"time", "date", "helped"}

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
    "en": {"greeting": "Hello.", "thanks": "You're welcome.", "goodbye": "Goodbye.", "about": "I am Beleg.",
           "time": "I cannot tell the current time or date."},
    "de": {"greeting": "Hallo.", "thanks": "Gern geschehen.", "goodbye": "Auf Wiedersehen.", "about": "Ich bin Beleg.",
           "time": "Die aktuelle Uhrzeit und das Datum kann ich nicht sagen."},
}


_PROBLEMS_DE = {
    "division by zero has no value": "eine Division durch null hat keinen Wert",
    "only whole-number exponents are computed exactly": "nur ganzzahlige Exponenten werden exakt berechnet",
    "the result is too large to compute here": "das Ergebnis ist zu groß",
    PERCENT_TERM: ("ein Prozentsatz, der zu einer Zahl addiert oder von ihr abgezogen wird, ist mehrdeutig (ein "
                   "Anteil dieser Zahl oder ein Hundertstel?); fragen Sie nach dem Anteil selbst, etwa '10 % von 200', und addieren Sie"),
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
    """``"greeting"``, ``"thanks"``, ``"goodbye"``, ``"about"`` or ``"time"`` when the whole question is small talk."""
    m = _SMALL_TALK.match(question.strip())
    if m is not None:
        return next(kind for kind, text in m.groupdict().items() if text)
    return _empty_words_kind(question)


def _words(question: str) -> list[str]:
    """The question's words, lower-cased; a formal "Sie"/"Ihnen" addressing the reader becomes "you"."""
    text = _SET_PHRASES.sub(" ", question)
    words = []
    for i, m in enumerate(re.finditer(r"[^\W_]+", text)):
        word = m.group().lower()
        if word in _FORMAL and (word == "ihnen" or (i > 0 and m.group()[0].isupper())):
            word = "you"
        words.append(word)
    return words


def _empty_words_kind(question: str) -> str | None:
    """Small talk that the fixed phrases miss ("Wie alt bist du?", "Who made you?", "Thanks, that
    helped", "Wie spät ist es?"). Narrow on purpose: a question missed here goes to retrieval,
    which finds sources or refuses, while a support question caught here is answered with
    nothing. Every word must be one no document could answer, and the question must ask
    about the assistant's own nature (see ``_NATURE``), thank without asking on, greet, or ask
    for the present time; any other word, a number or an identifier sends it to retrieval."""
    words = _words(question)
    if not words or len(words) > 12:
        return None
    seen = set(words)
    if _TIME_WORDS & seen and not _NOT_NOW & seen and seen <= _EMPTY | _TIME_WORDS | _CLOCK_NOW | _YOU | {"weißt"} and (
            _NOW & seen or _CLOCK_WORDS & seen and _CLOCK_NOW & seen):
        return "time"
    if _THANKS_WORDS & seen and seen <= _EMPTY | _FEEDBACK | _ANAPHORA | _YOU and not _QUESTION_WORDS & seen:
        return "thanks"  # "Thanks, but why?", "Danke. Und wann?" ask on: retrieval, with the conversation
    if _points_back(words):
        return None
    if _YOU & seen and seen <= _EMPTY | _NATURE_ALL | _YOU | {"geht", "gehts", "gut", "es", "doing"}:
        if _NATURE_ALL & seen or _HOW_ARE_YOU.search(" ".join(words)):
            return "about"
        if _DU & seen and seen <= _EMPTY - _DOING | _DU:
            return "about"  # "Wer bist du denn?"; not "Was brauchst du von mir?"
        return None
    if _GREETING_WORDS & seen and seen <= _EMPTY:
        return "greeting"  # "Hallo zusammen"
    if {"how", "wie"} & seen and {"going", "geht", "gehts"} & seen and seen <= _GREETING_WORDS | _HOW_GOING:
        return "greeting"  # "How's it going?", "Wie geht's?"; not "How is it going to work?"
    return None


def _points_back(words: list[str]) -> bool:
    """Whether a pronoun refers to something said before; the expletive "es" of "wie geht es" does not."""
    for i, word in enumerate(words):
        if word == "es" and i > 0 and words[i - 1] in ("geht", "gehts"):
            continue
        if word == "it" and words[i + 1:i + 2] == ["going"]:
            continue  # "how's it going"
        if word in _ANAPHORA:
            return True
    return False


def without_pleasantries(question: str) -> str:
    """``question`` without the greeting or thanks that opens it and without "please"/"bitte":
    "Hello, how long is the retry window, please?" → "how long is the retry window?". They are
    addressed to the assistant, not about the topic. A greeting is removed only at the start:
    elsewhere "hello" or "Tag" may be the topic (a hello endpoint, a Docker tag)."""
    return _PLEASE.sub("", _OPENING.sub("", question, count=1)).strip()


def question_language(question: str) -> str | None:
    """``"de"`` or ``"en"`` by which language's function words the question uses more, or None
    when neither leads ("12*8", "ok")."""
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", question)]
    de = sum(w in _LANGUAGE_WORDS["de"] or any(c in w for c in "äöüß") or word_language(w) == "de" for w in words)
    en = sum(w in _LANGUAGE_WORDS["en"] or word_language(w) == "en" for w in words)
    return None if de == en else ("de" if de > en else "en")


def is_small_talk(question: str) -> bool:
    """Greetings, thanks, goodbyes and questions about the assistant itself."""
    return small_talk_kind(question) is not None


def no_retrieval_intent(question: str) -> Intent | None:
    """The answer to a question that needs no retrieval, or None (then retrieval decides)."""
    asked_in = question_language(question)
    language = asked_in or "en"
    kind = small_talk_kind(question)
    if kind is not None:
        text = f"{_OPENERS[language][kind]} {CAPABILITIES[language]}".strip()
        return Intent("small-talk", text, kind, language)
    calc = parse_calculation(question, asked_in)  # an unknown language leaves "1.000" unread
    if calc is None:
        return None
    if calc.value is None:
        problem = calc.problem or ""
        if language == "de":
            text = f"{calc.expression} lässt sich nicht berechnen: {_PROBLEMS_DE.get(problem, problem)}."
        else:
            text = f"{calc.expression} cannot be computed: {problem}."
        return Intent("arithmetic", text, "problem", language, calc)
    result = format_number(calc.value, "," if language == "de" else ".")
    return Intent("arithmetic", f"{calc.expression} = {result}", "calculation", language, calc)


__all__ = ["CAPABILITIES", "Intent", "is_small_talk", "no_retrieval_intent", "question_language", "small_talk_kind",
           "without_pleasantries"]
