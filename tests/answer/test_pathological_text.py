"""Text built to make the answer code's parsing super-linear (an outside tester's inputs).

These check what the parsers return on such text; how long they take is measured by the
tester's scripts (before the fix: 13 s for "1:30 " * 6,000, 22 s for as_read("[^" * 50,000),
5 s for a 50,000-space list gap), not asserted here.
"""

from __future__ import annotations

from beleg.answer.scoring import _ITEM_GAP
from beleg.answer.support import as_read
from beleg.answer.values import extract_values


def test_many_clock_times_are_each_read_once() -> None:
    values = extract_values("1:30 " * 6000)
    assert len(values) == 6000 and all(v.kind == "time" for v in values)
    assert not [v for v in extract_values("ratio 1:10 " * 3000) if v.kind == "time"]  # ratios stay no times
    assert [v.raw for v in extract_values("um 14:00 h und 2:30 h")] == ["14:00 h", "2:30 h"]
    assert [v.kind for v in extract_values("um 14:00 h und 2:30 h")] == ["time", "duration"]


def test_unclosed_brackets_and_long_runs_read_as_they_are() -> None:
    assert as_read("[^" * 50000) == "[^" * 50000
    assert as_read("[" * 100000) == "[" * 100000
    assert as_read("See [the guide](https://example.org/v2/) and mailcow[^1].") == "See the guide and mailcow."
    assert len(extract_values("9" * 20000 + "@")) <= 1  # a long run before "@": no e-mail address, no crash
    assert _ITEM_GAP.fullmatch(" " * 50000 + "x") is None and _ITEM_GAP.fullmatch("\n - ") is not None
