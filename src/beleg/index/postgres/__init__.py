"""The PostgreSQL + pgvector backend: :class:`PostgresStore` implements the ports of
:mod:`beleg.index.ports` over one schema of a database (see docs/postgres.md).

Modules: :mod:`.config` (URL, schema, connections), :mod:`.schema` (tables, migrations),
:mod:`.rls` (Row-Level Security), :mod:`.writes`, :mod:`.filters_sql`, :mod:`.search`,
:mod:`.store`. psycopg is imported only when a PostgreSQL index is opened.
"""

from beleg.index.postgres.config import PostgresLocation, is_postgres_url

__all__ = ["PostgresLocation", "PostgresStore", "is_postgres_url"]


def __getattr__(name: str):  # lazy: importing the package must not need psycopg
    if name == "PostgresStore":
        from beleg.index.postgres.store import PostgresStore

        return PostgresStore
    raise AttributeError(name)
