"""Metadata filters: a tiny expression language, evaluated to a mask before top-k.

Examples of ``--where`` expressions::

    status = current and version >= 2.4
    product = ferrolink and (status in (current, draft) or not authority = imported-note)
    date >= 2025-01-01 and date < 2026-01-01
    acl != ops-nordwind

Comparison is typed by the values: two version-like values (``2.4``, ``v3.0``, ``10``)
compare as versions (so ``2.10 > 2.9``), ISO dates compare as dates, anything else as
case-insensitive text. A list-valued key (``acl``, ``tags``) matches ``=``/``in`` when any
element matches. A missing key makes ``=``, ``in`` and ranges false and ``!=``/``not in`` true;
so does a value that is neither a scalar nor a list (a mapping): it is never equal to, nor
before or after, anything. Parentheses and ``not`` nest at most :data:`MAX_DEPTH` levels.

Filters are evaluated once per distinct value of a key (a handful per corpus), and the
result is spread to documents and chunks through integer codes: that keeps filtering
linear numpy work even at 100k chunks, applied before any top-k is taken.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from beleg.errors import FilterError

OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")
#: How deeply parentheses and ``not`` may nest in a ``--where`` expression (far beyond any
#: real filter; deeper input would exhaust Python's recursion limit).
MAX_DEPTH = 50


@dataclass(frozen=True, slots=True)
class Cmp:
    key: str
    op: str
    value: Any  # a scalar, or a tuple for in / not in


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Expr


Expr = Cmp | And | Or | Not
FilterLike = Expr | str | Mapping[str, Any] | None

# ---------------------------------------------------------------- building filters


def combine(*filters: FilterLike) -> Expr | None:
    """AND together any mix of expressions, ``--where`` strings and dict filters."""
    parts = [p for p in (to_expr(f) for f in filters) if p is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def to_expr(f: FilterLike) -> Expr | None:
    if f is None or f == "" or f == {}:
        return None
    if isinstance(f, (Cmp, And, Or, Not)):
        return f
    if isinstance(f, str):
        return parse(f)
    if isinstance(f, Mapping):
        return _from_mapping(f)
    raise FilterError(f"a filter must be an expression string or a dict, got {type(f).__name__}")


def _from_mapping(f: Mapping[str, Any]) -> Expr:
    """``{"status": "current", "version": {">=": "2.4"}, "tenant": ["a", "b"]}``."""
    items: list[Expr] = []
    for key, cond in f.items():
        if isinstance(cond, Mapping):
            for op, value in cond.items():
                if op not in OPS:
                    raise FilterError(f"unknown operator {op!r} for {key!r}; use one of {', '.join(OPS)}")
                items.append(Cmp(str(key), op, tuple(value) if op in ("in", "not in") else value))
        elif isinstance(cond, (list, tuple, set)):
            items.append(Cmp(str(key), "in", tuple(cond)))
        else:
            items.append(Cmp(str(key), "=", cond))
    return items[0] if len(items) == 1 else And(tuple(items))


def from_assignments(pairs: Sequence[str]) -> Expr | None:
    """``--filter key=value`` options: ANDed across keys; a key given twice means either value."""
    by_key: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise FilterError(f"--filter expects key=value, got {pair!r}")
        by_key.setdefault(key.strip().lower(), []).append(value.strip())
    return _from_mapping({k: v[0] if len(v) == 1 else v for k, v in by_key.items()}) if by_key else None


# ---------------------------------------------------------------- parsing --where

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<op><=|>=|!=|==|=|<|>)
      | (?P<punct>[(),\[\]])
      | "(?P<dq>(?:[^"\\]|\\.)*)"
      | '(?P<sq>(?:[^'\\]|\\.)*)'
      | (?P<word>[^\s()\[\],=<>!"']+)
    )""",
    re.VERBOSE,
)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise FilterError(f"cannot read the filter at position {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.group("op"):
            tokens.append(("op", "=" if m.group("op") == "==" else m.group("op")))
        elif m.group("punct"):
            tokens.append(("punct", m.group("punct")))
        elif m.group("dq") is not None or m.group("sq") is not None:
            tokens.append(("str", m.group("dq") if m.group("dq") is not None else m.group("sq")))
        else:
            tokens.append(("word", m.group("word")))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterError(f"filter nests deeper than {MAX_DEPTH} levels of parentheses or 'not'; "
                              "write it flatter (a and b and c needs no parentheses)")

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise FilterError(f"filter {self.text!r} ends too early; expected more after it")
        self.i += 1
        return tok

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok and tok[0] == "word" and tok[1].lower() == word:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: str) -> None:
        tok = self.take()
        if tok != (kind, value):
            raise FilterError(f"in filter {self.text!r}: expected {value!r}, found {tok[1]!r}")

    def parse(self) -> Expr:
        expr = self.or_expr()
        if self.peek() is not None:
            raise FilterError(f"in filter {self.text!r}: unexpected {self.peek()[1]!r}; join conditions with 'and'/'or'")  # type: ignore[index]
        return expr

    def or_expr(self) -> Expr:
        items = [self.and_expr()]
        while self.keyword("or"):
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_expr(self) -> Expr:
        items = [self.not_expr()]
        while self.keyword("and"):
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_expr(self) -> Expr:
        if self.keyword("not"):
            self.nested()
            expr = Not(self.not_expr())
            self.depth -= 1
            return expr
        return self.atom()

    def atom(self) -> Expr:
        tok = self.peek()
        if tok == ("punct", "("):
            self.take()
            self.nested()
            expr = self.or_expr()
            self.expect("punct", ")")
            self.depth -= 1
            return expr
        kind, key = self.take()
        if kind != "word":
            raise FilterError(f"in filter {self.text!r}: expected a metadata key, found {key!r}")
        if self.keyword("not"):
            if not self.keyword("in"):
                raise FilterError(f"in filter {self.text!r}: expected 'not in' after {key!r}")
            return Cmp(key.lower(), "not in", self.value_list())
        if self.keyword("in"):
            return Cmp(key.lower(), "in", self.value_list())
        op_tok = self.take()
        if op_tok[0] != "op":
            raise FilterError(
                f"in filter {self.text!r}: expected an operator (=, !=, <, <=, >, >=, in) after {key!r}, found {op_tok[1]!r}"
            )
        return Cmp(key.lower(), op_tok[1], self.scalar())

    def scalar(self) -> str:
        kind, value = self.take()
        if kind not in ("word", "str"):
            raise FilterError(f"in filter {self.text!r}: expected a value, found {value!r}")
        return value

    def value_list(self) -> tuple[str, ...]:
        opener = self.take()
        if opener not in (("punct", "("), ("punct", "[")):
            raise FilterError(f"in filter {self.text!r}: 'in' needs a list like (a, b)")
        closer = ")" if opener[1] == "(" else "]"
        values = [self.scalar()]
        while self.peek() == ("punct", ","):
            self.take()
            values.append(self.scalar())
        self.expect("punct", closer)
        return tuple(values)


def parse(text: str) -> Expr:
    """Parse a ``--where`` expression (see module docstring)."""
    if not text.strip():
        raise FilterError("empty filter expression")
    return _Parser(text).parse()


# ---------------------------------------------------------------- typed comparison

_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)", re.IGNORECASE)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.+\-Z]*)?")


def number_key(digits: str) -> tuple[int, str]:
    """A run of digits as a key that orders like ``int(digits)`` at any length: ``int()``
    refuses strings over 4,300 digits, and a document may declare such a version."""
    significant = digits.lstrip("0")
    return len(significant), significant


def _key(value: Any) -> tuple[int, Any]:
    """A sort key that makes versions, dates, numbers and text comparable among themselves."""
    if isinstance(value, bool):
        return (3, str(value).lower())
    if isinstance(value, (int, float)):
        value = str(value)
    # Folded as tenants and ACL names are (types.Principal.fold): "ＡＣＭＥ" and "２.４" are the
    # "acme" and "2.4" ingest stored, so a filter compares names by the rule permissions use.
    text = unicodedata.normalize("NFKC", str(value)).strip()
    m = _VERSION.fullmatch(text)
    if m:
        return (0, tuple(number_key(p) for p in m.group(1).split(".")))
    if _DATE.fullmatch(text):
        return (1, text)
    return (3, unicodedata.normalize("NFKC", text.casefold()))


def _compare(actual: Any, op: str, wanted: Any) -> bool:
    if isinstance(actual, (list, tuple)):
        if op in ("!=", "not in"):
            positive = "=" if op == "!=" else "in"
            return not any(_compare(a, positive, wanted) for a in actual)
        return any(_compare(a, op, wanted) for a in actual)
    if isinstance(actual, (Mapping, set, frozenset)):
        return op in ("!=", "not in")  # no comparable value: like a missing key
    if op == "in":
        return any(_compare(actual, "=", w) for w in wanted)
    if op == "not in":
        return not any(_compare(actual, "=", w) for w in wanted)
    a, w = _key(actual), _key(wanted)
    if op == "=":
        return a == w
    if op == "!=":
        return a != w
    if a[0] != w[0]:
        return False  # a version is neither before nor after a date
    return {"<": a < w, "<=": a <= w, ">": a > w, ">=": a >= w}[op]


def matches(expr: Expr | None, metadata: Mapping[str, Any]) -> bool:
    """Evaluate a filter against one metadata dict (the reference semantics)."""
    if expr is None:
        return True
    if isinstance(expr, And):
        return all(matches(e, metadata) for e in expr.items)
    if isinstance(expr, Or):
        return any(matches(e, metadata) for e in expr.items)
    if isinstance(expr, Not):
        return not matches(expr.item, metadata)
    if expr.key not in metadata or metadata[expr.key] is None:
        return expr.op in ("!=", "not in")
    return _compare(metadata[expr.key], expr.op, expr.value)


def named_keys(expr: Expr | None) -> list[str]:
    """The metadata keys a filter names, each once, in the order written."""
    if expr is None:
        return []
    if isinstance(expr, Cmp):
        return [expr.key]
    items = (expr.item,) if isinstance(expr, Not) else expr.items
    return list(dict.fromkeys(key for item in items for key in named_keys(item)))


def unknown_key_notes(expr: Expr | None, known_keys: Collection[str]) -> list[str]:
    """A one-line note for each key the filter names that no document in ``known_keys`` has
    (a misspelt key silently matches nothing), with the closest known key as a suggestion.
    ``known_keys`` must hold only keys the asker may see: a suggestion would reveal the others."""
    import difflib

    notes = []
    for key in named_keys(expr):
        if key not in known_keys:
            close = difflib.get_close_matches(key, sorted(known_keys), n=1)
            notes.append(f"note: no document has the key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return notes


# ---------------------------------------------------------------- columnar evaluation


def _hashable(value: Any) -> Any:
    """A dictionary key for any metadata value (lists and mappings, nested, included)."""
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_hashable(v) for v in value))
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), _hashable(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(v) for v in value)))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value


class MetadataColumns:
    """Dictionary-encoded metadata of many documents, for fast mask evaluation.

    Each key is encoded lazily on first use: ``codes[i]`` is the index of document i's value
    among the key's distinct values (``-1`` when missing). A comparison is evaluated once per
    distinct value and broadcast with one numpy take.
    """

    def __init__(self, metadata: Sequence[Mapping[str, Any]]) -> None:
        self._metadata = metadata
        self._columns: dict[str, tuple[np.ndarray, list[Any]]] = {}

    def __len__(self) -> int:
        return len(self._metadata)

    def _column(self, key: str) -> tuple[np.ndarray, list[Any]]:
        col = self._columns.get(key)
        if col is None:
            index: dict[Any, int] = {}
            values: list[Any] = []
            codes = np.full(len(self._metadata), -1, dtype=np.int32)
            for i, meta in enumerate(self._metadata):
                value = meta.get(key)
                if value is None:
                    continue
                hashable = _hashable(value)
                code = index.get(hashable)
                if code is None:
                    code = index[hashable] = len(values)
                    values.append(value)
                codes[i] = code
            col = self._columns[key] = (codes, values)
        return col

    def mask(self, expr: Expr | None) -> np.ndarray:
        """Boolean mask over the documents that satisfy ``expr``."""
        n = len(self._metadata)
        if expr is None:
            return np.ones(n, dtype=bool)
        if isinstance(expr, And):
            out = np.ones(n, dtype=bool)
            for e in expr.items:
                out &= self.mask(e)
            return out
        if isinstance(expr, Or):
            out = np.zeros(n, dtype=bool)
            for e in expr.items:
                out |= self.mask(e)
            return out
        if isinstance(expr, Not):
            return ~self.mask(expr.item)
        codes, values = self._column(expr.key)
        # One extra slot at the end stands for "missing" (code -1 indexes it).
        table = np.array([_compare(v, expr.op, expr.value) for v in values] + [expr.op in ("!=", "not in")])
        return table[codes]


