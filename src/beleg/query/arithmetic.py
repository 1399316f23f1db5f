"""A safe, exact calculator for questions that are only arithmetic ("What is 12 multiplied by 8?").

No ``eval``: the text is tokenised into numbers and a fixed set of operators (symbols and
English/German words), parsed by a small recursive-descent parser and computed with
:class:`fractions.Fraction`, so ``0.1 + 0.2`` is exactly ``0.3``. Anything else in the text
(a word that is not an operator, a lone number, a date like ``2024-01-15``) means the
question is not arithmetic and :func:`parse_calculation` returns None: retrieval decides.

Grammar (usual precedence; ``^`` binds right and tighter than a leading minus)::

    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/" | "of" | "mod") unary)*   # "15% of 200": "of" multiplies
    unary   := ("-" | "+") unary | power
    power   := postfix ("^" unary)?
    postfix := atom ("%" | "squared" | "cubed")*          # "%" before a number is "mod": "10 % 3"
    atom    := NUMBER | "(" sum ")"

Numbers: ``12``, ``2.5``, ``2,5`` (decimal comma), ``1.000.000`` (thousands groups of three),
``1,234.5`` / ``1.234,5`` (the last separator is the decimal one). One separator before
exactly three digits (``1.000``, ``1,000``) is read by the question's language: thousands
for ``.`` in German and ``,`` in English, decimals otherwise; with no language it is not
guessed (:data:`AMBIGUOUS`). Number words, English and German, stand for their digits when
the whole question is arithmetic: ``seven``, ``twenty-one``, ``one hundred and five``,
``zwölf``, ``einundzwanzig``, ``zweihundertdreißig``; ``half of``/``die Hälfte von`` (and
thirds, quarters) are fractions, ``negative five``/``negativ fünf`` one number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 200
MAX_EXPONENT = 1000
MAX_RESULT_BITS = 4000
# "200 + 10%": 220 (10 % of 200, as a shop adds tax) or 200.1 (10 % as 0.1)? Refused by rule,
# saying how to ask, rather than computed either way with confidence 1.0.
PERCENT_TERM = ("a percentage added to or subtracted from a number is ambiguous (a share of that number, or "
                "a hundredth?); ask for the share itself, for example '10% of 200', and add it")
AMBIGUOUS = ("the question's language does not say whether a separator before three digits (1.000 or 1,000) "
             "marks thousands or decimals; write the number without it")

# Question phrasing around the expression, removed before tokenising.
_LEAD = re.compile(
    r"^\s*(?:(?:please|bitte)\s+)?(?:(?:can|could)\s+you\s+(?:please\s+)?(?:calculate|compute|tell\s+me)\s+|"
    r"what(?:'s|’s|\s+is|\s+are|s)\s+|how\s+much\s+(?:is|are)\s+|calculate\s+|compute\s+|evaluate\s+|"
    r"was\s+(?:ist|sind|ergibt|ergeben|gibt)\s+|wie\s*viel\s+(?:ist|sind|ergibt|ergeben|gibt)\s+|berechne\s+|"
    r"rechne\s+(?:mal\s+(?=\d))?|kannst\s+du\s+(?:mir\s+)?(?:bitte\s+)?(?:berechnen|ausrechnen)\s*:?\s*)?",
    re.IGNORECASE)
_TRAIL = re.compile(r"(?:\s*(?:=|\?|!|\.|equals?|ergibt|bitte|please|aus|berechnen|ausrechnen))+\s*$", re.IGNORECASE)
# Dates and phone-like runs are not sums: "2024-01-15", "15.01.2024", "01/15/2024".
# "0x80070005", "0b1010", "0o755" are literals in another base, usually error codes: the "x"
# right after a lone 0 is no multiplication ("0x80070005" read as 0 × 80070005 = 0).
_RADIX_LITERAL = re.compile(r"(?<![\w.,])0[xXbBoO][0-9a-fA-F]")
_DATE_LIKE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b")
# Notations that look like sums but are not: "16:9" or "15:30" (a ratio or a time: a colon
# between digits without spaces; "12 : 4" stays a division), "0800-123-456" (a phone number:
# more than one hyphen between digit groups without spaces), "2020–2024" (an en dash between
# digits is a range).
_NOT_A_SUM = re.compile(r"\d:\d|\d-\d+-\d|\d–\d")

_WORD_OPS = (  # longest first; each phrase and the operator it means
    ("to the power of", "^"), ("modulo", "mod"), ("mod", "mod"), ("raised to", "^"), ("multiplied by", "*"), ("multipliziert mit", "*"),
    ("divided by", "/"), ("geteilt durch", "/"), ("dividiert durch", "/"), ("percent of", "% of"),
    ("prozent von", "% of"), ("per cent of", "% of"), ("times", "*"), ("mal", "*"), ("plus", "+"),
    ("minus", "-"), ("over", "/"), ("durch", "/"), ("hoch", "^"), ("percent", "%"), ("prozent", "%"),
    ("squared", "squared"), ("quadriert", "squared"), ("cubed", "cubed"), ("of", "of"), ("von", "of"),
)
_WORDS = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w, _ in _WORD_OPS)
_FRACTION = (r"(?:(?:a|an|one)\s+)?(?P<en_part>half|third|quarter)\s+of|(?:die\s+)?(?P<de_half>hälfte)\s+von|"
             r"(?:ein\s+)?(?P<de_part>drittel|viertel)\s+von")
_TOKEN = re.compile(
    rf"\s*(?:(?P<num>\d+(?:[.,]\d+)*)|(?P<sym>\*\*|[-+*/×x·÷:^()%−–])|(?P<frac>(?:{_FRACTION})\b)|"
    rf"(?P<word>(?:{_WORDS})\b)|(?P<letters>[^\W\d_]+(?:-[^\W\d_]+)*)|(?P<bad>\S))",
    re.IGNORECASE)
_OPERATOR_WORDS = {
    "en": set("""times multiplied divided by over percent squared cubed calculate compute evaluate half third quarter
              negative""".split()),
    "de": set("""mal multipliziert geteilt dividiert durch hoch prozent von quadriert berechne rechne ergibt hälfte
              drittel viertel negativ""".split()),
}
_SYMBOLS = {"**": "^", "×": "*", "x": "*", "·": "*", "÷": "/", ":": "/", "−": "-", "–": "-"}
# One minus sign, ASCII, in the expression as in the result (format_number, the JSON
# "result"): "−5² = -25" mixed two characters for one sign.
_SHOW = {"*": "×", "/": "÷", "of": "of"}
_PARTS = {"half": "½", "hälfte": "½", "third": "⅓", "drittel": "⅓", "quarter": "¼", "viertel": "¼"}
_PART_VALUES = {"½": Fraction(1, 2), "⅓": Fraction(1, 3), "¼": Fraction(1, 4)}
_NEGATIVE = ("negative", "negativ")

_UNITS = {
    "en": dict(zip("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
                   sixteen seventeen eighteen nineteen""".split(), range(20))),
    "de": dict(zip("""null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn
                   sechzehn siebzehn achtzehn neunzehn""".split(), range(20))),
}
_TENS = {
    "en": dict(zip("twenty thirty forty fifty sixty seventy eighty ninety".split(), range(20, 100, 10))),
    "de": dict(zip("zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split(), range(20, 100, 10)))
    | {"dreissig": 30},
}
_SCALES = {"en": {"hundred": 100, "thousand": 1000, "million": 10**6},
           "de": {"hundert": 100, "tausend": 1000, "million": 10**6, "millionen": 10**6}}
# German compounds start with "ein" where the word alone is "eins": "einundzwanzig", "einhundert".
_DE_PREFIX_UNITS = {**{w: v for w, v in _UNITS["de"].items() if 1 <= v <= 9}, "ein": 1}


class ArithmeticProblem(Exception):
    """The expression is arithmetic but has no exact value here (division by zero, a huge power, ...)."""


@dataclass(frozen=True, slots=True)
class Calculation:
    """An arithmetic question: the expression as read, and its exact value or why there is none."""

    expression: str
    value: Fraction | None
    problem: str | None = None

    @property
    def result(self) -> str:
        return "" if self.value is None else format_number(self.value)


def parse_calculation(question: str, language: str | None = None) -> Calculation | None:
    """The calculation ``question`` asks for, or None when it is not purely arithmetic.
    ``language`` (``"en"``, ``"de"`` or None for unknown) decides what ``1.000`` and ``1,000`` are."""
    text = question.strip()
    if (not text or len(text) > MAX_CHARS or _DATE_LIKE.search(text) or _RADIX_LITERAL.search(text)
            or _NOT_A_SUM.search(text)):
        return None
    body = _TRAIL.sub("", _LEAD.sub("", text, count=1))
    tokens = _tokenize(body)
    if tokens is None:
        return None
    numbers = sum(1 for kind, _ in tokens if kind == "num")
    operators = [v for kind, v in tokens if kind == "op" and v not in ("(", ")")]
    bracketed = ("op", "(") in tokens  # "(((1)))" is written as an expression, "What is 2.4?" is not
    if numbers < 1 or (not bracketed and (not operators or numbers < 2 and not {"squared", "cubed"} & set(operators))):
        return None  # "What is 2.4?", "what is -5" are not sums
    parser = _Parser(tokens, language)
    try:
        value = parser.parse()
    except _Syntax:
        return None
    except ArithmeticProblem as exc:
        return Calculation(parser.shown(), None, str(exc))
    return Calculation(parser.shown(), value)


def _tokenize(body: str) -> list[tuple[str, str]] | None:
    """Numbers and operators; None as soon as anything else appears."""
    tokens: list[tuple[str, str]] = []
    words: list[str] = []  # number words read so far, one number together ("twenty one")
    negative = False  # "negative five": the next number is one negative value

    def push_number(digits: str) -> None:
        nonlocal negative
        tokens.extend([("op", "("), ("op", "-"), ("num", digits), ("op", ")")] if negative else [("num", digits)])
        negative = False

    def flush() -> bool:
        if words:
            value = words_value(words)
            if value is None:
                return False
            push_number(str(value))
            words.clear()
        return not negative  # "negative" must be followed by a number

    pos = 0
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if m is None or m.end() == pos:
            if body[pos:].strip() == "":
                break
            return None
        pos = m.end()
        if m.group("bad"):
            return None
        if m.group("letters"):
            word = m.group("letters").lower()
            if word_number(word) is not None:
                words.append(word)
            elif word == "and" and words and words[-1] in _SCALES["en"]:
                continue  # "one hundred and five"
            elif word in _NEGATIVE and not words and not negative:
                negative = True
            else:
                return None
            continue
        if not flush():
            return None
        if m.group("num"):
            push_number(m.group("num"))
            continue
        if m.group("frac"):
            part = m.group("en_part") or m.group("de_half") or m.group("de_part")
            tokens.extend([("num", _PARTS[part.lower()]), ("op", "of")])
            continue
        raw = (m.group("sym") or m.group("word")).casefold()
        raw = re.sub(r"\s+", " ", raw)
        if raw == "x" and (not tokens or tokens[-1][0] != "num" and tokens[-1][1] != ")"):
            return None  # "x" multiplies only after a number or ")"
        if raw == "%" and re.match(r"\s*[\d(]", body[pos:]):
            # "10 % 3", "10%3": a percent sign between two numbers is the remainder, but not
            # when it sticks to the first and a space follows: "10% 200" reads as a
            # percentage of 200 with the "of" left out, so it is no expression at all.
            if body[m.start("sym") - 1:m.start("sym")].isdigit() and body[pos:pos + 1].isspace():
                return None
            raw = "mod"
        op = _SYMBOLS.get(raw) or dict(_WORD_OPS).get(raw, raw)
        if op == "of" and tokens[-1:] != [("op", "%")]:
            return None  # "of" multiplies only in "15% of 200"
        for part in op.split():
            tokens.append(("op", part))
    return tokens if flush() else None


def word_number(word: str) -> int | None:
    """The value of one English or German number word: ``"seven"`` → 7, ``"twenty-one"`` → 21,
    ``"einundzwanzig"`` → 21, ``"zweihundertdreißig"`` → 230, ``"thousand"`` → 1000."""
    word = word.lower()
    for lang in ("en", "de"):
        for table in (_UNITS, _TENS, _SCALES):
            if word in table[lang]:
                return table[lang][word]
    tens, _, unit = word.partition("-")
    if tens in _TENS["en"] and _UNITS["en"].get(unit, 0) in range(1, 10):
        return _TENS["en"][tens] + _UNITS["en"][unit]
    return _german_compound(word)


def _german_compound(word: str) -> int | None:
    for scale_word, scale in (("tausend", 1000), ("hundert", 100)):
        if scale_word in word:
            head, _, tail = word.partition(scale_word)
            times = 1 if head in ("", "ein") else _german_compound(head)
            rest = 0 if tail == "" else _german_compound(tail)
            if times is None or rest is None or not 1 <= times < (1000 if scale == 1000 else 10) or rest >= scale:
                return None
            return times * scale + rest
    if word in _UNITS["de"] or word in _TENS["de"]:
        return _UNITS["de"].get(word, _TENS["de"].get(word))
    unit, und, tens = word.partition("und")
    if und and unit in _DE_PREFIX_UNITS and tens in _TENS["de"]:
        return _DE_PREFIX_UNITS[unit] + _TENS["de"][tens]
    return None


def words_value(words: list[str]) -> int | None:
    """One number written in words apart: ``["one", "hundred", "five"]`` → 105,
    ``["zwei", "tausend"]`` → 2000, ``["tausend", "millionen"]`` → 10⁹; None for a run that is
    no number ("five five", "thousand thousand", "five thousand three thousand").

    A scale word (thousand, million) larger than everything read so far multiplies all of it
    ("one hundred thousand million" is 10¹¹, British "thousand million" 10⁹); otherwise it
    closes one group and must be smaller than the scale that closed the group before
    ("three million two hundred thousand"). A scale that is neither (two "thousand" groups,
    a bare "thousand" after a number) is no well-formed number: adding it up gave
    "thousand thousand" = 2000 with confidence 1.0."""
    total, current, last_scale = 0, None, None
    for word in (w.lower() for w in words):
        value = word_number(word)
        if value is None:
            return None
        if word in _SCALES["en"] or word in _SCALES["de"]:
            if value == 100:  # scales only the group since the last thousand/million
                if current is None and total or current is not None and current >= 100:
                    return None  # "thousand hundred", "five hundred hundred"
                current = (1 if current is None else current) * 100
                continue
            if current is None and not total:
                current = 1  # a leading "thousand"
            if value > total + (current or 0):
                total, current = (total + (current or 0)) * value, None  # multiplies all before it
            elif current is None or (last_scale is not None and value >= last_scale):
                return None  # "thousand thousand", "five thousand three thousand"
            else:
                total, current = total + current * value, None
            last_scale = value
        elif current is None:
            current = value
        elif (current % 10 ** len(str(value)) == 0 if value >= 100 else
              current % 100 == 0 if value >= 10 else current % 100 == 0 or (current % 100 >= 20 and current % 10 == 0)):
            current += value  # "twenty one", "hundred five", "dreitausend fünfhundert"
        else:
            return None
    return total + (current or 0)


def word_language(word: str) -> str | None:
    """``"en"`` or ``"de"`` for an arithmetic operator or number word only one language uses."""
    word = word.lower()
    langs = {lang for lang in ("en", "de") if word in _UNITS[lang] or word in _TENS[lang] or word in _SCALES[lang]
             or word in _OPERATOR_WORDS[lang]}
    if not langs and _german_compound(word) is not None:
        langs = {"de"}
    return langs.pop() if len(langs) == 1 else None


def to_fraction(text: str, language: str | None = None) -> Fraction:
    """``"2,5"`` → 5/2, ``"1.000.000"`` → 1000000, ``"1.234,5"`` → 2469/2; ``"1.000"`` is 1000 in
    German and 1 in English, and raises :class:`ArithmeticProblem` (:data:`AMBIGUOUS`) without a
    language; see the module docstring."""
    if text in _PART_VALUES:
        return _PART_VALUES[text]
    seps = [c for c in text if c in ".,"]
    if not seps:
        return Fraction(int(text))
    if len(set(seps)) == 2:
        decimal = text[max(text.rfind("."), text.rfind(","))]
        whole, _, frac = text.rpartition(decimal)
        return Fraction(int(re.sub(r"[.,]", "", whole) or "0")) + _decimals(frac)
    groups = re.split(r"[.,]", text)
    grouped = 1 <= len(groups[0]) <= 3 and not groups[0].startswith("0") and all(len(g) == 3 for g in groups[1:])
    if len(groups) > 2:
        if grouped:  # two decimal marks are no number: 1.000.000 / 1,000,000 are thousands groups
            return Fraction(int("".join(groups)))
        raise _Syntax(text)  # "1.2.3" is a version
    if grouped:
        if language is None:
            raise ArithmeticProblem(AMBIGUOUS)
        if seps[0] == {"en": ",", "de": "."}.get(language):
            return Fraction(int("".join(groups)))
    return Fraction(int(groups[0])) + _decimals(groups[1])


def _decimals(digits: str) -> Fraction:
    return Fraction(int(digits), 10 ** len(digits)) if digits else Fraction(0)


def format_number(value: Fraction, decimal_mark: str = ".") -> str:
    """An exact rendering: ``96``, ``0.3``, ``-2.5``; a non-terminating value as ``1/3 (≈ 0.333333)``.
    ``decimal_mark=","`` writes ``0,3`` for German readers, who take ``1.125`` for 1125."""
    if decimal_mark != ".":
        return format_number(value).replace(".", decimal_mark)
    if value.denominator == 1:
        return str(value.numerator)
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d == 1:  # terminating decimal: print every digit
        places = 0
        while (value * 10**places).denominator != 1:
            places += 1
        scaled = abs(value.numerator * 10**places // value.denominator)
        digits = str(scaled).rjust(places + 1, "0")
        sign = "-" if value < 0 else ""
        return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return f"{value.numerator}/{value.denominator} (≈ {float(value):.6g})"


class _Syntax(Exception):
    """Not a well-formed expression (the question is then not arithmetic)."""


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], language: str | None = None) -> None:
        self.tokens = tokens
        self.language = language
        self.ambiguous = False
        self.percent_term = False  # "200 + 10%": see PERCENT_TERM
        self.pos = 0

    def shown(self) -> str:
        """The expression in canonical symbols: ``12 × 8``, ``15% of 200``, ``-3 + (2 × 4)``, ``10 mod 3``."""
        parts: list[str] = []
        glue = True  # the next token attaches without a space (start, after "(" or a unary sign)
        previous = None
        for kind, value in self.tokens:
            operand_before = previous is not None and (previous[0] == "num" or previous[1] in (")", "%", "squared",
                                                                                              "cubed"))
            if kind == "num":
                text, space = value, not glue
            elif value in ("%", ")", "squared", "cubed"):
                text, space = {"squared": "²", "cubed": "³"}.get(value, value), False
            elif value == "(":
                text, space = "(", not glue
            elif value in ("-", "+") and not operand_before:
                text, space = _SHOW.get(value, value), not glue  # a sign, not a subtraction
            else:
                text, space = _SHOW.get(value, value), True
            parts.append((" " if space and parts else "") + text)
            glue = value == "(" or (kind == "op" and value in ("-", "+") and not operand_before)
            previous = (kind, value)
        return "".join(parts)

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) and self.tokens[self.pos][0] == "op" else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise _Syntax("ends too early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def parse(self) -> Fraction:
        value = self.sum()
        if self.pos != len(self.tokens):
            raise _Syntax("trailing tokens")
        if self.ambiguous:  # only now: a malformed expression is no calculation at all
            raise ArithmeticProblem(AMBIGUOUS)
        if self.percent_term:
            raise ArithmeticProblem(PERCENT_TERM)
        return value

    def sum(self) -> Fraction:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            start = self.pos
            rhs = self.product()
            if [t[1] for t in self.tokens[start:self.pos]][1:] == ["%"]:
                self.percent_term = True  # "200 + 10%", "100 - 10 percent"
            value = value + rhs if op == "+" else value - rhs
        return value

    def product(self) -> Fraction:
        value = self.unary()
        while self.peek() in ("*", "/", "of", "mod"):
            op = self.take()[1]
            rhs = self.unary()
            if op in ("/", "mod"):
                if rhs == 0:
                    raise ArithmeticProblem("division by zero has no value")
                value = value / rhs if op == "/" else value % rhs
            else:
                value = value * rhs
            _check_size(value)
        return value

    def unary(self) -> Fraction:
        if self.peek() in ("-", "+"):
            op = self.take()[1]
            value = self.unary()
            return -value if op == "-" else value
        return self.power()

    def power(self) -> Fraction:
        base = self.postfix()
        if self.peek() != "^":
            return base
        self.take()
        return _power(base, self.unary())

    def postfix(self) -> Fraction:
        value = self.atom()
        while self.peek() in ("%", "squared", "cubed"):
            op = self.take()[1]
            value = value / 100 if op == "%" else _power(value, Fraction(2 if op == "squared" else 3))
        return value

    def atom(self) -> Fraction:
        kind, value = self.take()
        if kind == "num":
            try:
                return to_fraction(value, self.language)
            except ArithmeticProblem:
                self.ambiguous = True
                return Fraction(1)  # a stand-in, so that the rest is still checked for syntax
        if value == "(":
            inner = self.sum()
            if self.take() != ("op", ")"):
                raise _Syntax("unbalanced parenthesis")
            return inner
        raise _Syntax(f"unexpected {value!r}")


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise ArithmeticProblem("only whole-number exponents are computed exactly")
    e = exponent.numerator
    if abs(e) > MAX_EXPONENT or max(abs(base.numerator), base.denominator).bit_length() * abs(e) > MAX_RESULT_BITS:
        raise ArithmeticProblem("the result is too large to compute here")
    if base == 0 and e < 0:
        raise ArithmeticProblem("division by zero has no value")
    return base**e


def _check_size(value: Fraction) -> None:
    if max(abs(value.numerator), value.denominator).bit_length() > MAX_RESULT_BITS:
        raise ArithmeticProblem("the result is too large to compute here")


__all__ = ["AMBIGUOUS", "PERCENT_TERM", "ArithmeticProblem", "Calculation", "format_number", "parse_calculation", "to_fraction",
           "word_language", "word_number", "words_value"]
