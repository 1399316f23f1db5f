"""A real PostgreSQL for these tests, never a skip.

With ``BELEG_TEST_POSTGRES_URL`` set (``.ci/run`` sets it after ``scripts/postgres.sh
start``), the tests use that server and fail when it cannot be reached. Without it, the
session starts the local server itself through ``scripts/postgres.sh`` (and leaves it
running for the next session; ``bash scripts/postgres.sh stop`` ends it).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from beleg.index.postgres.config import PostgresLocation

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "postgres.sh"


def _check(url: str) -> None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(f"BELEG_TEST_POSTGRES_URL={url} cannot be reached ({str(exc).strip()}); "
                    "start it with bash scripts/postgres.sh start", pytrace=False)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = os.environ.get("BELEG_TEST_POSTGRES_URL")
    if not url:
        subprocess.run(["bash", str(SCRIPT), "start"], check=True, timeout=300)
        url = subprocess.run(["bash", str(SCRIPT), "url"], check=True, capture_output=True, text=True).stdout.strip()
    _check(url)
    return url


def schema_url(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture
def pg_location(postgres_url: str) -> Iterator[str]:
    """A URL naming a fresh schema, dropped after the test."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema_url(postgres_url, schema)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(name="root")
def version_root(pg_location: str, postgres_url: str) -> Iterator[PostgresLocation]:
    """The index's root location (:func:`pg_location`); the version schemas (``<root>_v…``) a
    test builds with ``reindex`` are dropped with it."""
    import psycopg
    from psycopg import sql

    location = PostgresLocation.parse(pg_location)
    yield location
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                      (f"{location.schema}_v%",)).fetchall():
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
