from __future__ import annotations

import numpy as np
import pytest

from beleg.errors import FilterError
from beleg.index.filters import MetadataColumns, combine, from_assignments, matches, parse

DOCS = [
    {"product": "ferrolink", "version": "3.0", "status": "current", "authority": "contract", "date": "2026-03-01", "acl": ["ops"]},
    {"product": "ferrolink", "version": "2.4", "status": "historical", "authority": "contract", "date": "2024-05-10"},
    {"product": "ferrolink", "version": "2.10", "status": "historical", "authority": "imported-note", "date": "2025-01-15"},
    {"product": "other", "version": "1.8", "status": "draft", "date": "2023-01-01"},
    {"title": "no metadata"},
]


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("version >= 2.4", [0, 1, 2]),
        ("version > 2.9", [0, 2]),  # 2.10 is a later version than 2.9
        ("status = current", [0]),
        ("status = CURRENT", [0]),
        ("status != current", [1, 2, 3, 4]),
        ("status in (current, draft)", [0, 3]),
        ("status not in (current, draft)", [1, 2, 4]),
        ("date >= 2025-01-01 and date < 2026-12-31", [0, 2]),
        ("product = ferrolink and not authority = imported-note", [0, 1]),
        ("(status = draft or version = 3.0) and product = other", [3]),
        ("acl = ops", [0]),
        ("authority = 'imported-note'", [2]),
    ],
)
def test_expressions_select_expected_documents(expr: str, expected: list[int]) -> None:
    e = parse(expr)
    assert [i for i, d in enumerate(DOCS) if matches(e, d)] == expected
    assert np.flatnonzero(MetadataColumns(DOCS).mask(e)).tolist() == expected


def test_dict_and_assignment_filters() -> None:
    cols = MetadataColumns(DOCS)
    assert np.flatnonzero(cols.mask(combine({"status": "historical", "version": {">=": "2.5"}}))).tolist() == [2]
    assert np.flatnonzero(cols.mask(from_assignments(["status=current", "status=draft"]))).tolist() == [0, 3]
    assert np.flatnonzero(cols.mask(combine({"product": "ferrolink"}, "version < 3"))).tolist() == [1, 2]


@pytest.mark.parametrize("bad", ["version >=", "status current", "(status = a", "status in current", "= x", "a = b c"])
def test_bad_expressions_raise_clear_errors(bad: str) -> None:
    with pytest.raises(FilterError):
        parse(bad)


def test_versions_of_any_length_compare_without_int_conversion() -> None:
    """int() refuses strings over 4,300 digits; a declared version (or a filter value) that
    long must neither crash a filter nor compare wrongly."""
    huge, bigger = "1" * 5000, "2" + "0" * 4999
    assert matches(parse(f"version < {bigger}"), {"version": huge})
    assert not matches(parse("version = 2.4"), {"version": huge})
    assert matches(parse("version >= 2.10"), {"version": f"2.{huge}"})
    assert matches(parse("version = 2.04"), {"version": "2.4"})  # leading zeros as before
    assert matches(parse("version > 2.9"), {"version": "2.10"})


def test_filter_values_are_folded_as_names_are() -> None:
    # Ingest stores "tenant: ＡＣＭＥ" as "acme" and "--tenant ＡＣＭＥ" folds to "acme"; a filter
    # must compare by the same rule, or "delete --where tenant = 'ＡＣＭＥ'" erases nothing.
    from beleg.index.filters import matches
    from beleg.index.filters import parse as parse_filter

    assert matches(parse_filter("tenant = 'ＡＣＭＥ'"), {"tenant": "acme"})
    assert matches(parse_filter("tenant = 'Ａcme'"), {"tenant": "acme"})
    assert matches(parse_filter("version >= '２.４'"), {"version": "3.0"})
    assert not matches(parse_filter("tenant = 'ＡＣＭＥ'"), {"tenant": "globex"})
