"""Where a PostgreSQL index lives: a ``postgresql://`` URL, plus which schema holds it.

``postgresql://user@host/db`` is handed to libpq as it is, except for two parameters of
Beleg's own: ``schema=NAME`` (default ``beleg``) names the schema of the index, so several
indexes (and the blue/green versions of one) share a database; ``statistics=tenant`` (or
``corpus``, the default) chooses the BM25 statistics scope of an index being created. Every
other query parameter (``host=/socket/dir``, ``sslmode=…``) is libpq's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from beleg.errors import ConfigError, MissingDependencyError

DEFAULT_SCHEMA = "beleg"
#: The role every search runs as, so Row-Level Security applies to it (it owns nothing).
READER_ROLE = "beleg_reader"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def is_postgres_url(location: object) -> bool:
    """Whether ``--index`` names a PostgreSQL database rather than a folder."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def check_schema_name(name: str) -> str:
    """A schema name Beleg accepts: lower-case letters, digits, underscores (never quoted input)."""
    if not _SCHEMA_NAME.fullmatch(name):
        raise ConfigError(f"schema name {name!r} is not allowed; use lower-case letters, digits and '_' "
                          "(at most 63, not starting with a digit)")
    if name.startswith("pg_"):
        raise ConfigError(f"schema name {name!r} is not allowed: PostgreSQL reserves the prefix 'pg_' for "
                          "system schemas; choose another name")
    return name


@dataclass(frozen=True)
class PostgresLocation:
    """A connection string for libpq and the schema of one index in that database."""

    conninfo: str
    schema: str = DEFAULT_SCHEMA
    #: "tenant" or "corpus" when the URL says so (used only when the schema is created).
    statistics: str | None = None

    @classmethod
    def parse(cls, url: str) -> PostgresLocation:
        if not is_postgres_url(url):
            raise ConfigError(f"expected a postgresql:// URL, got {url!r}")
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # "Invalid IPv6 URL": an unclosed '[' in the host
            raise ConfigError(f"cannot read the PostgreSQL URL {url!r}: {exc}") from None
        query = parse_qsl(parts.query, keep_blank_values=True)
        for own in ("schema", "statistics"):
            if sum(key == own for key, _ in query) > 1:
                raise ConfigError(f"{own}= is given more than once in {url!r}; give it once (which one was "
                                  "meant is ambiguous)")
        schema, statistics = DEFAULT_SCHEMA, None
        kept = []
        for key, value in query:
            if key == "schema":
                schema = value
            elif key == "statistics":
                if value not in ("tenant", "corpus"):
                    raise ConfigError(f"statistics={value!r} in {url!r}: expected statistics=tenant or statistics=corpus")
                statistics = value
            else:
                kept.append((key, value))
        conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept, safe="/"), parts.fragment))
        return cls(conninfo, check_schema_name(schema), statistics)

    def with_schema(self, schema: str) -> PostgresLocation:
        return PostgresLocation(self.conninfo, check_schema_name(schema), self.statistics)

    @property
    def url(self) -> str:
        """The URL with the schema parameter, as a user would write it."""
        extra = ([f"schema={self.schema}"] if self.schema != DEFAULT_SCHEMA else []) + (
            [f"statistics={self.statistics}"] if self.statistics else [])
        sep = "&" if "?" in self.conninfo else "?"
        return f"{self.conninfo}{sep}{'&'.join(extra)}" if extra else self.conninfo


def connect(location: PostgresLocation, **options: Any) -> Any:
    """A new psycopg connection (autocommit: transactions are explicit)."""
    try:
        import psycopg
    except ImportError:
        raise MissingDependencyError(
            'the PostgreSQL backend needs psycopg; install it with: pip install "beleg[postgres]"') from None
    try:
        return psycopg.connect(location.conninfo, autocommit=True, **options)
    except psycopg.ProgrammingError as exc:  # libpq could not read the URL: an unknown parameter, a bad value
        raise ConfigError(f"invalid PostgreSQL URL {location.conninfo}: {_first_line(exc)} (Beleg's own "
                          "parameters are schema= and statistics=; the others are libpq's)") from None
    except psycopg.OperationalError as exc:
        first = _first_line(exc)
        # Only when nothing answered: a server that refused the login, or a bad sslmode, is running.
        unreachable = ("connection to server" in first and "FATAL:" not in first) or "timeout expired" in first
        hint = "; is the server running (bash scripts/postgres.sh start)?" if unreachable else ""
        raise ConfigError(f"cannot connect to PostgreSQL at {location.conninfo}: {first}{hint}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: SQLSTATEs of a server refusing what the database's setup does not allow, not a fault of
#: Beleg's SQL: missing privileges, a reserved name, an unknown database or schema, a login.
_SETUP_STATES = {"42501", "42939", "3D000", "3F000", "28000", "28P01"}


def server_problem(exc: BaseException) -> str | None:
    """One line for a PostgreSQL error the user must fix (privileges, the server's state or
    configuration: the server's message with its hint); None for any other error, which is a
    bug and keeps its traceback."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return None
    if not (isinstance(exc, psycopg.OperationalError) or exc.sqlstate in _SETUP_STATES):
        return None
    hint = exc.diag.message_hint
    return f"PostgreSQL refused: {_first_line(exc)}" + (f" ({hint})" if hint else "")
