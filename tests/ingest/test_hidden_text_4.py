"""Hidden text, round 4: what a tester's probes of the hidden-text rules found.

Pathological inputs that made a pre-check or a style lookup super-linear, values a browser
or Word ignores that raised instead, and PDF pages whose rewrite lost their font encoding.
The speed tests use no timers: each input is sized so that the fixed code reads it at once
while the old code did not finish (minutes to hours), which a suite timeout would show.
"""

from __future__ import annotations

import pytest

from tests.ingest.test_hidden_text import pdf_text

# --- PDF: the pre-check that decides whether a page is parsed ---------------------------


@pytest.mark.parametrize("shown", [
    b"(" + b"7" * 3000 + b") Tj",  # a digit run: 2000 digits took 14 s, 20000 hours
    b"<" + b"0024" * 1000 + b"> Tj",  # a hex glyph string is a digit run too
    b"(" + b"1 " * 5 + b"7" * 3000 + b" ) Tj",  # five numbers, then the run as the sixth
])  # fmt: skip
def test_pdf_precheck_is_linear_on_long_digit_runs(shown: bytes) -> None:
    content = b"BT /F1 12 Tf 72 700 Td (Shown.) Tj 0 -20 Td " + shown + b" ET"
    assert pdf_text(content).startswith("Shown.")
