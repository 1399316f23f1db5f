"""The PostgreSQL tests fail, never skip, when the server they were given is missing; and
scripts/postgres.sh serves on a Unix socket only, as an unprivileged user."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from beleg.index.postgres.config import PostgresLocation

REPO = Path(__file__).resolve().parents[2]


def test_a_set_but_unreachable_url_fails_the_tests(tmp_path: Path) -> None:
    (tmp_path / "test_needs_pg.py").write_text(textwrap.dedent("""
        def test_uses_it(postgres_url):
            assert postgres_url
    """), encoding="utf-8")
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "postgres" / "conftest.py").read_text(), encoding="utf-8")
    env = {**os.environ, "BELEG_TEST_POSTGRES_URL": f"postgresql://nobody@/none?host={tmp_path}/no-such-socket"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode != 0
    assert "1 error" in proc.stdout and "skipped" not in proc.stdout and "cannot be reached" in proc.stdout


def test_the_local_server_listens_on_a_unix_socket_only_as_an_unprivileged_user(postgres_url: str) -> None:
    if os.environ.get("BELEG_TEST_POSTGRES_URL") and "host=/" not in postgres_url:
        pytest.fail("BELEG_TEST_POSTGRES_URL is not scripts/postgres.sh's server; this test checks that one")
    with psycopg.connect(postgres_url) as conn:
        settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name IN "
                                     "('listen_addresses', 'unix_socket_permissions')").fetchall())
        assert settings == {"listen_addresses": "", "unix_socket_permissions": "0700"}
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        # Read while the connection is open: its backend process exits when it closes.
        uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
    assert uid != 0


def test_urls_keep_libpq_parameters_and_take_the_schema() -> None:
    location = PostgresLocation.parse("postgresql://u@/db?host=/run/pg&sslmode=disable&schema=kb_two")
    assert location.schema == "kb_two"
    assert location.conninfo == "postgresql://u@/db?host=/run/pg&sslmode=disable"
    with pytest.raises(Exception, match="not allowed"):
        PostgresLocation.parse("postgresql://u@/db?schema=Robert'); DROP")
