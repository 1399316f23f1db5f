"""What the database does not allow is one line on stderr naming it, a non-zero exit and no
traceback: a role that may not enable pgvector, create a schema, or read an index's schema."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from beleg.cli.main import main

ROLE = "beleg_test_unprivileged"
DATABASE = "beleg_test_without_vector"


def as_role(url: str, database: str | None = None) -> str:
    """``url`` with ROLE as its user (and another database); the test server trusts local logins."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{ROLE}@{host}", f"/{database}" if database else parts.path, parts.query, ""))


@pytest.fixture(scope="module")
def unprivileged(postgres_url: str) -> Iterator[None]:
    """A login role with no privileges, owning a database where pgvector is not enabled."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(DATABASE), sql.Identifier(ROLE)))
    yield
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("beleg: error: ") and err.count("\n") == 1, err
    assert "server running" not in err  # the server answered
    return err


def test_a_role_that_may_not_enable_pgvector(unprivileged: None, postgres_url: str, capsys) -> None:
    url = as_role(postgres_url, DATABASE) + "&schema=rt_nv"
    err = one_line_error(capsys, "init", "--index", url)
    assert "pgvector is not enabled" in err and "CREATE EXTENSION vector" in err


def test_a_role_that_may_not_create_a_schema(unprivileged: None, postgres_url: str, capsys) -> None:
    err = one_line_error(capsys, "init", "--index", as_role(postgres_url) + "&schema=rt_nv")
    assert "permission denied for database" in err


def test_a_role_that_may_not_read_the_index(unprivileged: None, pg_location: str, postgres_url: str, capsys) -> None:
    assert main(["init", "--index", pg_location]) == 0
    capsys.readouterr()
    schema = pg_location.rsplit("schema=", 1)[1]
    err = one_line_error(capsys, "search", "relay", "--index", as_role(postgres_url) + f"&schema={schema}")
    assert f"permission denied for schema {schema}" in err
