"""A safe, exact calculator for questions that are only arithmetic ("What is 12 multiplied by 8?").

No ``eval``: the text is tokenised into numbers and a fixed set of operators (symbols and
English/German words), parsed by a small recursive-descent parser and computed with
:class:`fractions.Fraction`, so ``0.1 + 0.2`` is exactly ``0.3``. Anything else in the text
(a word that is not an operator, a lone number, a date like ``2024-01-15``) means the
question is not arithmetic and :func:`parse_calculation` returns None: retrieval decides.

Grammar (usual precedence; ``^`` binds right and tighter than a leading minus)::

    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/" | "of") unary)*        # "15% of 200": "of" multiplies
    unary   := ("-" | "+") unary | power
    power   := postfix ("^" unary)?
    postfix := atom ("%" | "squared" | "cubed")*
    atom    := NUMBER | "(" sum ")"

Numbers: ``12``, ``2.5``, ``2,5`` (decimal comma), ``1,000`` and ``1.000.000`` (thousands
groups of three), ``1,234.5`` / ``1.234,5`` (the last separator is the decimal one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 200
MAX_EXPONENT = 1000
MAX_RESULT_BITS = 4000

# Question phrasing around the expression, removed before tokenising.
_LEAD = re.compile(
    r"^\s*(?:(?:please|bitte)\s+)?(?:(?:can|could)\s+you\s+(?:please\s+)?(?:calculate|compute|tell\s+me)\s+|"
    r"what(?:'s|’s|\s+is|\s+are|s)\s+|how\s+much\s+(?:is|are)\s+|calculate\s+|compute\s+|evaluate\s+|"
    r"was\s+(?:ist|sind|ergibt|ergeben|gibt)\s+|wie\s*viel\s+(?:ist|sind|ergibt|ergeben|gibt)\s+|berechne\s+|"
    r"rechne\s+(?:mal\s+(?=\d))?|kannst\s+du\s+(?:mir\s+)?(?:bitte\s+)?(?:berechnen|ausrechnen)\s*:?\s*)?",
    re.IGNORECASE)
_TRAIL = re.compile(r"(?:\s*(?:=|\?|!|\.|equals?|ergibt|bitte|please|aus|berechnen|ausrechnen))+\s*$", re.IGNORECASE)
# Dates and phone-like runs are not sums: "2024-01-15", "15.01.2024", "01/15/2024".
_DATE_LIKE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b")

_WORD_OPS = (  # longest first; each phrase and the operator it means
    ("to the power of", "^"), ("raised to", "^"), ("multiplied by", "*"), ("multipliziert mit", "*"),
    ("divided by", "/"), ("geteilt durch", "/"), ("dividiert durch", "/"), ("percent of", "% of"),
    ("prozent von", "% of"), ("per cent of", "% of"), ("times", "*"), ("mal", "*"), ("plus", "+"),
    ("minus", "-"), ("over", "/"), ("durch", "/"), ("hoch", "^"), ("percent", "%"), ("prozent", "%"),
    ("squared", "squared"), ("quadriert", "squared"), ("cubed", "cubed"), ("of", "of"), ("von", "of"),
)
_WORDS = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w, _ in _WORD_OPS)
_TOKEN = re.compile(
    rf"\s*(?:(?P<num>\d+(?:[.,]\d+)*)|(?P<sym>\*\*|[-+*/×x·÷:^()%−–])|(?P<word>(?:{_WORDS})\b)|(?P<bad>\S))",
    re.IGNORECASE)
_SYMBOLS = {"**": "^", "×": "*", "x": "*", "·": "*", "÷": "/", ":": "/", "−": "-", "–": "-"}
_SHOW = {"*": "×", "/": "÷", "-": "−", "of": "of"}


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


def parse_calculation(question: str) -> Calculation | None:
    """The calculation ``question`` asks for, or None when it is not purely arithmetic."""
    text = question.strip()
    if not text or len(text) > MAX_CHARS or _DATE_LIKE.search(text):
        return None
    body = _TRAIL.sub("", _LEAD.sub("", text, count=1))
    tokens = _tokenize(body)
    if tokens is None:
        return None
    numbers = sum(1 for kind, _ in tokens if kind == "num")
    operators = [v for kind, v in tokens if kind == "op" and v not in "()"]
    if not operators or numbers < 1 or (numbers < 2 and not {"squared", "cubed"} & set(operators)):
        return None  # "What is 2.4?", "what is -5" are not sums
    parser = _Parser(tokens)
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
        if m.group("num"):
            tokens.append(("num", m.group("num")))
            continue
        raw = (m.group("sym") or m.group("word")).casefold()
        raw = re.sub(r"\s+", " ", raw)
        if raw == "x" and (not tokens or tokens[-1][0] != "num" and tokens[-1][1] != ")"):
            return None  # "x" multiplies only after a number or ")"
        op = _SYMBOLS.get(raw) or dict(_WORD_OPS).get(raw, raw)
        if op == "of" and tokens[-1:] != [("op", "%")]:
            return None  # "of" multiplies only in "15% of 200"
        for part in op.split():
            tokens.append(("op", part))
    return tokens


def to_fraction(text: str) -> Fraction:
    """``"2,5"`` → 5/2, ``"1,000"`` → 1000, ``"1.234,5"`` → 2469/2; see the module docstring."""
    seps = [c for c in text if c in ".,"]
    if not seps:
        return Fraction(int(text))
    if len(set(seps)) == 2:
        decimal = text[max(text.rfind("."), text.rfind(","))]
        whole, _, frac = text.rpartition(decimal)
        return Fraction(int(re.sub(r"[.,]", "", whole) or "0")) + _decimals(frac)
    groups = re.split(r"[.,]", text)
    if len(groups) > 2 or (len(groups) == 2 and len(groups[1]) == 3 and seps[0] == ","):
        if all(len(g) == 3 for g in groups[1:]):
            return Fraction(int("".join(groups)))  # thousands groups: 1,000 / 1.000.000
        raise _Syntax(text)
    return Fraction(int(groups[0])) + _decimals(groups[1])


def _decimals(digits: str) -> Fraction:
    return Fraction(int(digits), 10 ** len(digits)) if digits else Fraction(0)


def format_number(value: Fraction) -> str:
    """An exact rendering: ``96``, ``0.3``, ``-2.5``; a non-terminating value as ``1/3 (≈ 0.333333)``."""
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
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def shown(self) -> str:
        """The expression in canonical symbols: ``12 × 8``, ``15% of 200``, ``−3 + (2 × 4)``."""
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
        return value

    def sum(self) -> Fraction:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            rhs = self.product()
            value = value + rhs if op == "+" else value - rhs
        return value

    def product(self) -> Fraction:
        value = self.unary()
        while self.peek() in ("*", "/", "of"):
            op = self.take()[1]
            rhs = self.unary()
            if op == "/":
                if rhs == 0:
                    raise ArithmeticProblem("division by zero has no value")
                value = value / rhs
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
            return to_fraction(value)
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


__all__ = ["ArithmeticProblem", "Calculation", "format_number", "parse_calculation", "to_fraction"]
