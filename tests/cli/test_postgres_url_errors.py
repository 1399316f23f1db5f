"""A postgresql:// URL Beleg or libpq cannot use is one line on stderr and a non-zero exit,
never a traceback; the "is the server running" hint comes only when no server answered.
No server is needed: every URL here fails before a connection is made, or at one that cannot
be made (a socket folder that does not exist)."""

from __future__ import annotations

import pytest

from beleg.cli.main import main

pytest.importorskip("psycopg")  # the PostgreSQL extra

NOWHERE = "postgresql://postgres@/beleg?host=/nonexistent-beleg-socket-dir"


@pytest.mark.parametrize(("url", "expected"), [
    (f"{NOWHERE}&schema=pg_x", "reserves the prefix 'pg_'"),
    (f"{NOWHERE}&schema=one&schema=two", "schema= is given more than once"),
    (f"{NOWHERE}&statistics=tenant&statistics=corpus", "statistics= is given more than once"),
    (f"{NOWHERE}&schema=rt_q&bogus=1", 'invalid URI query parameter: "bogus"'),
    ("postgresql://[::1", "Invalid IPv6 URL"),
    (f"{NOWHERE}&sslmode=bogus", 'invalid sslmode value: "bogus"'),
    (NOWHERE, "is the server running"),
])
def test_an_unusable_url_is_one_line(url: str, expected: str, capsys) -> None:
    code = main(["init", "--index", url])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("beleg: error: ") and err.count("\n") == 1, err
    assert expected in err
    if "server running" not in expected:
        assert "server running" not in err  # nothing is wrong with reaching the server
