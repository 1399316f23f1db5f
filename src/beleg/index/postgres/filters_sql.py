"""Filter expressions (:mod:`beleg.index.filters`) compiled to parameterised SQL.

Beleg's comparisons are typed by the values (versions, dates, case-insensitive text, list
keys, missing keys), which no single SQL operator reproduces. So, as the embedded backend
does, each comparison is evaluated once per *distinct stored value* of its key with the
reference :func:`~beleg.index.filters.matches` rules, and becomes a membership test::

    CASE WHEN d.metadata->%(k)s IS NULL OR d.metadata->%(k)s = 'null'
         THEN <missing result> ELSE d.metadata->%(k)s = ANY(%(vals)s::text[]::jsonb[]) END

Keys and values only ever travel as parameters; the SQL text is built from the expression's
shape alone. The CASE never yields NULL, so ``NOT`` is safe.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from psycopg import sql

from beleg.index.filters import And, Cmp, Expr, Not, Or, matches

#: Reads the distinct stored values of one metadata key (as Python values).
DistinctValues = Callable[[str], list[Any]]


class FilterCompiler:
    """Compiles expressions against the values one view holds (values are read once per key)."""

    def __init__(self, distinct_values: DistinctValues, alias: str = "d") -> None:
        self._distinct = distinct_values
        self._values: dict[str, list[Any]] = {}
        self._alias = sql.Identifier(alias)

    def compile(self, expr: Expr | None) -> tuple[sql.Composable, dict[str, Any]]:
        """``(SQL boolean, parameters)``; TRUE when there is no filter."""
        params: dict[str, Any] = {}
        if expr is None:
            return sql.SQL("TRUE"), params
        return self._node(expr, params), params

    def _node(self, expr: Expr, params: dict[str, Any]) -> sql.Composable:
        if isinstance(expr, And):
            return sql.SQL("({})").format(sql.SQL(" AND ").join(self._node(e, params) for e in expr.items))
        if isinstance(expr, Or):
            return sql.SQL("({})").format(sql.SQL(" OR ").join(self._node(e, params) for e in expr.items))
        if isinstance(expr, Not):
            return sql.SQL("(NOT {})").format(self._node(expr.item, params))
        return self._comparison(expr, params)

    def _comparison(self, cmp: Cmp, params: dict[str, Any]) -> sql.Composable:
        values = self._values.get(cmp.key)
        if values is None:
            values = self._values[cmp.key] = self._distinct(cmp.key)
        matching = [json.dumps(v, ensure_ascii=False) for v in values if matches(cmp, {cmp.key: v})]
        n = len(params) // 3
        key, missing, vals = f"f{n}_key", f"f{n}_missing", f"f{n}_vals"
        params[key], params[missing], params[vals] = cmp.key, matches(cmp, {}), matching
        return sql.SQL("(CASE WHEN {a}.metadata->{k} IS NULL OR {a}.metadata->{k} = 'null'::jsonb THEN {m} "
                       "ELSE {a}.metadata->{k} = ANY({v}::text[]::jsonb[]) END)").format(
            a=self._alias, k=sql.Placeholder(key), m=sql.Placeholder(missing), v=sql.Placeholder(vals))
